"""KV-prefix sharing must equal the naive full-prompt computation (max |delta log-prob| <= 1e-4, fp32).

Tiny random models here (fast); the same check on the real Gemma-3-270M lives in test_real_model.py.
The shared prefix is longer than the tiny Gemma's sliding window (16) so sliding layers are exercised.
"""
import numpy as np
import pytest
import torch

from mcqa_toolkit.backends.hf.tokens import context_continuation, encode, next_token_candidates
from mcqa_toolkit.backends.hf.engine import PrefixScorer, Request, lm_head, naive_scores, unique_tokens

TOL = 1e-4

PREFIX = "Here are some questions from a college entrance exam.\n\n" + \
         "Question: What is 2 + 2?\nOptions:\n(A) 3\n(B) 4\n(C) 5\nAnswer: (B) 4\n\n" * 3


def _requests(lm, stems=("What colour is the sky?", "Qual é a capital do Brasil?")):
    reqs = []
    letters = ["A", "B", "C"]
    for stem in stems:
        for perm in (("red", "blue", "green"), ("blue", "green", "red"), ("green", "red", "blue")):
            text = PREFIX + f"Question: {stem}\nOptions:\n" + "".join(
                f"({l}) {o}\n" for l, o in zip(letters, perm)) + "Answer: ("
            ids = encode(lm, text)
            cands, _ = next_token_candidates(lm, ids, text, letters)
            reqs.append(Request(ids, len(ids), cands))
            for o in perm:
                ctx, cont = context_continuation(lm, text[: -len(" (")], " " + o)
                reqs.append(Request(ctx + cont, len(ctx)))
    return reqs


def test_lm_head_matches_model_logits(tiny_lm):
    ids = torch.tensor([encode(tiny_lm, PREFIX)])
    with torch.no_grad():
        full = tiny_lm.model(input_ids=ids).logits[0]
        hidden = tiny_lm.model.base_model(input_ids=ids).last_hidden_state[0]
        assert torch.allclose(lm_head(tiny_lm.model, hidden), full, atol=1e-5)


@pytest.mark.parametrize("batch_tokens", [8192, 40])  # 40 forces many small suffix batches
def test_prefix_sharing_equals_naive(tiny_lm, batch_tokens):
    reqs = _requests(tiny_lm)
    assert len(encode(tiny_lm, PREFIX)) > 16, "prefix must exceed the sliding window"
    naive = naive_scores(tiny_lm, reqs)
    trimmed = naive_scores(tiny_lm, reqs, full_logits=False)
    assert max(float(np.abs(a - b).max()) for a, b in zip(naive, trimmed)) <= 1e-5
    scorer = PrefixScorer(tiny_lm, max_batch_tokens=batch_tokens)
    shared = encode(tiny_lm, PREFIX)
    half = len(reqs) // 2
    got = scorer.score(reqs[:half], shared) + scorer.score(reqs[half:], shared)
    delta = max(float(np.abs(a - b).max()) for a, b in zip(naive, got))
    assert delta <= TOL
    st = scorer.stats
    assert st.forwarded < st.naive and st.unique <= st.forwarded <= st.naive
    # the run prefix is forwarded once although two calls used it
    assert st.forwarded < st.naive - len(shared)


def test_wrong_shared_prefix_falls_back_correctly(tiny_lm):
    reqs = _requests(tiny_lm, stems=("Why?",))
    scorer = PrefixScorer(tiny_lm)
    got = scorer.score(reqs, shared_prefix=encode(tiny_lm, "Completely different text"))
    naive = naive_scores(tiny_lm, reqs)
    assert max(float(np.abs(a - b).max()) for a, b in zip(naive, got)) <= TOL


def test_duplicates_computed_once_and_results_in_order(tiny_lm):
    reqs = _requests(tiny_lm, stems=("Why?",))
    scorer = PrefixScorer(tiny_lm)
    once = scorer.score(reqs)
    f1 = scorer.stats.forwarded
    twice = PrefixScorer(tiny_lm).score(reqs + reqs[::-1])
    assert all(np.array_equal(a, b) for a, b in zip(once + once[::-1], twice))
    assert f1 > 0


def test_candidate_letters_follow_tokenizer(tiny_lm):
    text = "Answer: ("
    ids = encode(tiny_lm, text)
    cands, exact = next_token_candidates(tiny_lm, ids, text, ["A", "B"])
    assert len(set(cands)) == 2 and all(isinstance(c, int) for c in cands)
    with pytest.raises(ValueError, match="non-distinct"):
        next_token_candidates(tiny_lm, ids, text, ["A", "A"])


def test_request_validation():
    with pytest.raises(ValueError):
        Request((1, 2, 3), 3)  # continuation request without continuation
    with pytest.raises(ValueError):
        Request((1, 2, 3), 2, (5, 6))  # candidates must score the next token
    assert unique_tokens([(1, 2, 3), (1, 2, 4), (1, 2, 3)]) == 4


def test_lm_eval_split_moves_trailing_space(tiny_lm):
    ctx, cont = context_continuation(tiny_lm, "Answer: ", "blue")
    ctx2, cont2 = context_continuation(tiny_lm, "Answer:", " blue")
    assert (ctx, cont) == (ctx2, cont2)
