"""The familiarity table (contamination.familiarity) on the tiny Gemma 3: Min-K% prob is computed in one place
(scoring.min_k.min_k_prob): the run's min_k.parquet (min_k_table) and the audit's familiarity table call that one
function, and both equal Min-K% written again here from its definition within 1e-4; Min-K%++ equal to the reference
implementation's formula (zjysteven/mink-plus-plus: softmax, (log p - mu) / sqrt of sigma^2, the int(len x k)
lowest, written again here in torch, in float64) within 1e-4 (observed 6e-6), zlib sizes and byte counts as Python
computes them; a backend without the next-token distributions leaves Min-K%++ NaN."""
import zlib

import numpy as np
import pytest
import torch
from lookup_backend import LookupBackend

from mcqa_toolkit.backends import Capabilities
from mcqa_toolkit.backends.hf.tokens import encode
from mcqa_toolkit.contamination import familiarity as familiarity_module
from mcqa_toolkit.contamination.familiarity import FAMILIARITY_COLUMNS, familiarity_table
from mcqa_toolkit.datasets import load
from mcqa_toolkit.run import recipe as run_recipe
from mcqa_toolkit.scoring import min_k as min_k_module
from mcqa_toolkit.scoring.min_k import min_k_table, question_text


def _naive_min_k(lm, text):
    """Min-K% prob (k = 20%) from its definition: the log-prob of each token after the text before it (BOS first),
    in float64 from the model's logits, the n // 5 lowest (at least one), their mean, negated."""
    ids = torch.tensor([encode(lm, text, True)])
    with torch.no_grad():
        logp = lm.model(ids).logits.double().log_softmax(-1)[0, :-1]
    lp = sorted(logp.gather(-1, ids[0, 1:, None])[:, 0].tolist())
    n = max(1, len(lp) // 5)
    return -sum(lp[:n]) / n


def test_the_run_and_the_audit_compute_min_k_with_one_function_equal_to_the_naive_one(tiny_backend):
    assert familiarity_module.min_k_prob is min_k_module.min_k_prob      # one function ...
    assert run_recipe.min_k_table is min_k_module.min_k_table            # ... the one the run's table calls
    items = load("demo", language="pt").filter(subject=["chemistry", "history"])
    naive = [_naive_min_k(tiny_backend.lm, question_text(it)) for it in items]
    run_table = min_k_table(tiny_backend, items)                         # every run's min_k.parquet
    audit_table = familiarity_table(tiny_backend, items, block_size=3)    # the audit's familiarity.parquet
    np.testing.assert_allclose(run_table["min_k_prob"], naive, atol=1e-4)
    np.testing.assert_allclose(audit_table["min_k_prob"], naive, atol=1e-4)


def _reference_mink_pp(lm, text, ratio=0.2):
    ids = torch.tensor([encode(lm, text)])
    with torch.no_grad():
        logits = lm.model(ids).logits.double()   # float32 cancels in sigma^2 on the tiny model's flat distributions
    probs = torch.softmax(logits[0, :-1], dim=-1)
    log_probs = torch.log_softmax(logits[0, :-1], dim=-1)
    token_log_probs = log_probs.gather(dim=-1, index=ids[0][1:].unsqueeze(-1)).squeeze(-1)
    mu = (probs * log_probs).sum(-1)
    sigma = (probs * torch.square(log_probs)).sum(-1) - torch.square(mu)
    mink_plus = (token_log_probs - mu) / sigma.sqrt()
    return float(np.mean(np.sort(mink_plus.numpy())[:int(len(mink_plus) * ratio)]))


def test_table_equals_min_k_and_the_reference_min_k_plus_plus(tiny_backend):
    items = load("demo", language="pt").filter(subject=["chemistry", "history"])
    got = familiarity_table(tiny_backend, items, block_size=3)
    assert list(got.columns) == list(FAMILIARITY_COLUMNS) and list(got["item_id"]) == items.ids
    min_k = min_k_table(tiny_backend, items)
    np.testing.assert_allclose(got["min_k_prob"], min_k["min_k_prob"], atol=1e-4)
    assert list(got["n_tokens"]) == list(min_k["n_tokens"])
    want = [_reference_mink_pp(tiny_backend.lm, question_text(it)) for it in items]
    np.testing.assert_allclose(got["min_k_pp"], want, atol=1e-4)
    texts = [question_text(it) for it in items]
    assert list(got["zlib_bytes"]) == [len(zlib.compress(t.encode("utf-8"))) for t in texts]
    assert list(got["n_bytes"]) == [len(t.encode("utf-8")) for t in texts]
    lp_sum = [float(np.sum(x)) for x in (d.logprobs for d in tiny_backend.token_distributions(texts))]
    np.testing.assert_allclose(got["loglik_sum"], lp_sum, atol=1e-3)


def test_without_next_token_distributions_min_k_plus_plus_is_missing():
    items = load("demo", language="en")[:3]

    class Texts(LookupBackend):   # continuation log-probs of any text: -1 per word
        def loglikelihoods(self, requests):
            from mcqa_toolkit.backends import ContinuationLogprobs
            return [ContinuationLogprobs(-np.ones(len(r.continuation.split())), r.continuation, 1) for r in requests]

    got = familiarity_table(Texts({}), items)
    assert got["min_k_pp"].isna().all() and (got["min_k_prob"] == 1.0).all()
    assert list(got["n_tokens"]) == [len(question_text(it).split()) for it in items]
    with pytest.raises(ValueError, match="familiarity"):
        familiarity_table(LookupBackend({}, Capabilities(next_token_logprobs=True)), items)
