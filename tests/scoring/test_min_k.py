"""Min-K% prob (scoring.min_k): the formula by hand and against the reference implementation's rule, and per question
(min_k_table) on the tiny Gemma 3: questions scored in batches equal the
naive computation (each question alone through the model's own forward, log-softmax at every position) within
1e-4 (fp32; observed ~1e-6), whatever the batch size."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mcqa_toolkit.backends.hf.tokens import encode
from mcqa_toolkit.datasets import load
from mcqa_toolkit.scoring.min_k import min_k_prob, min_k_table, question_text


def _naive_min_k(lm, text: str, k: float) -> tuple[float, int]:
    ids = torch.tensor([encode(lm, text, True)], device=lm.device)  # BOS, then the question's tokens
    with torch.inference_mode():
        logp = lm.model(ids).logits.float().log_softmax(-1)[0, :-1]
    lp = logp.gather(-1, ids[0, 1:, None])[:, 0].cpu().double().numpy()
    return float(min_k_prob(lp, k)), len(lp)


@pytest.mark.parametrize("block_size", [1, 5, 16])
def test_min_k_table_equals_one_question_at_a_time(tiny_backend, block_size):
    items = load("demo", language="it").filter(subject=["chemistry", "history"])
    got = min_k_table(tiny_backend, items, k=0.2, block_size=block_size)
    assert list(got["item_id"]) == items.ids and set(got["model"]) == {tiny_backend.name}
    want = [_naive_min_k(tiny_backend.lm, question_text(it), 0.2) for it in items]
    assert list(got["n_tokens"]) == [n for _, n in want]
    assert np.abs(got["min_k_prob"].to_numpy() - np.array([v for v, _ in want])).max() <= 1e-4


def test_min_k_table_rejects_a_block_size_below_one(tiny_backend):
    with pytest.raises(ValueError, match="block_size"):
        min_k_table(tiny_backend, load("demo", language="en")[:2], block_size=0)


def test_min_k_prob():
    lp = [-1, -5, -2, -0.5, -3, -0.1, -4, -0.2, -0.3, -0.4]
    assert min_k_prob(lp) == pytest.approx(4.5)                 # floor(0.2 * 10) = 2 lowest: -5, -4
    assert min_k_prob(lp, k=0.3) == pytest.approx(4.0)          # -5, -4, -3
    assert min_k_prob([-1.0, -2.0, -0.5]) == pytest.approx(2.0)  # floor(0.6) = 0 -> at least one token
    assert min_k_prob(lp, k=1.0) == pytest.approx(-np.mean(lp))
    x = -np.arange(1, 101) / 10
    assert min_k_prob(x, k=0.29) == pytest.approx(-np.sort(x)[:29].mean())  # 0.29 * 100 = 28.999... -> 29
    rng = np.random.default_rng(0)
    for n in (5, 17, 60):  # agrees with the reference implementation whenever it keeps >= 1 token
        v = np.log(rng.uniform(0.01, 1, n))
        assert min_k_prob(v) == pytest.approx(-np.mean(np.sort(v)[:int(len(v) * 0.2)]))
    for bad, k in (([], 0.2), ([-1.0], 20), ([0.5], 0.2), ([np.nan], 0.2)):
        with pytest.raises(ValueError):
            min_k_prob(bad, k)
