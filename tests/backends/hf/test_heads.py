"""The LM head and the pick of log-probs at scored positions (backends/hf/heads.py): logits as the model's own
forward gives them (soft-capping included), and the same log-probs whether the head runs over every position at
once or a few at a time, over the whole vocabulary or slices of it (the running log-sum-exp of the slices)."""
import numpy as np
import torch
from engine_requests import PREFIX

from mcqa_toolkit.backends.hf.heads import head_logprobs, lm_head, request_logprobs
from mcqa_toolkit.backends.hf.request import EngineStats, Request
from mcqa_toolkit.backends.hf.tokens import encode


def test_lm_head_matches_model_logits(tiny_lm):
    ids = torch.tensor([encode(tiny_lm, PREFIX)])
    with torch.no_grad():
        full = tiny_lm.model(input_ids=ids).logits[0]
        hidden = tiny_lm.model.base_model(input_ids=ids).last_hidden_state[0]
        assert torch.allclose(lm_head(tiny_lm.model, hidden), full, atol=1e-5)


def test_head_logprobs_in_chunks_equal_full_logits(tiny_lm):
    ids = tuple(encode(tiny_lm, PREFIX))
    n = len(ids)
    reqs = [Request(ids, n, (5, 6, 7)), Request(ids, n - 4), Request(ids, n - 1)]
    with torch.no_grad():
        hidden = tiny_lm.model.base_model(input_ids=torch.tensor([ids])).last_hidden_state[0]
        logits = tiny_lm.model(input_ids=torch.tensor([ids])).logits[0]
    reads = [[n - 1], list(range(n - 5, n - 1)), [n - 2]]  # rows of `hidden` each request reads
    scored = (np.array(sum(reads, [])), np.array([len(x) for x in reads]))
    want = [request_logprobs(r, logits[r.n_context - 1:]) for r in reqs]
    for rows in (1, 3, 1000):
        for vocab in (None, 7, 64, 10_000):
            stats = EngineStats()
            with torch.no_grad():
                got = head_logprobs(tiny_lm.model, reqs, scored, hidden, rows, stats, vocab)
            assert stats.scored_positions == n
            assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(got, want, strict=True))
