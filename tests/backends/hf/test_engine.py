"""KV-prefix sharing must equal the naive full-prompt computation (max |delta log-prob| <= 1e-4, fp32).

Tiny random models here (fast); the same check on the real Gemma-3-270M lives in test_hf_real_model.py.
The shared prefix is longer than the tiny Gemma's sliding window (16) so sliding layers are exercised, and the
long-option items make packed trie rows run past the window too (masks inside a row and against the cache).
Every layout is covered: split rows in many batches, one row per item, the unpacked fallback, chunked LM
head, and the eager attention implementation (additive masks) besides sdpa (boolean masks).
"""
import numpy as np
import pytest
import torch
from engine_requests import PREFIX, long_requests, requests_for

from mcqa_toolkit.backends.hf.engine import PrefixScorer, Request, naive_scores
from mcqa_toolkit.backends.hf.tokens import (
    context_continuation,
    context_continuations,
    encode,
    letter_requests,
    next_token_candidates,
)

TOL = 1e-4


@pytest.mark.parametrize("batch_tokens", [8192, 40])  # 40 forces many small suffix batches
def test_prefix_sharing_equals_naive(tiny_lm, batch_tokens):
    reqs = requests_for(tiny_lm)
    assert len(encode(tiny_lm, PREFIX)) > 16, "prefix must exceed the sliding window"
    naive = naive_scores(tiny_lm, reqs)
    trimmed = naive_scores(tiny_lm, reqs, full_logits=False)
    assert max(float(np.abs(a - b).max()) for a, b in zip(naive, trimmed, strict=True)) <= 1e-5
    scorer = PrefixScorer(tiny_lm, max_batch_tokens=batch_tokens)
    shared = encode(tiny_lm, PREFIX)
    half = len(reqs) // 2
    got = scorer.score(reqs[:half], shared) + scorer.score(reqs[half:], shared)
    delta = max(float(np.abs(a - b).max()) for a, b in zip(naive, got, strict=True))
    assert delta <= TOL
    st = scorer.stats
    assert st.forwarded < st.naive and st.unique <= st.forwarded <= st.naive
    # the run prefix is forwarded once although two calls used it
    assert st.forwarded < st.naive - len(shared)


def _max_suffix(reqs):
    plen = min(r.first_scored for r in reqs)
    return max(len(r.tokens) for r in reqs) - plen


def _assert_equal_to_naive(lm, reqs, got):
    naive = naive_scores(lm, reqs)
    assert max(float(np.abs(a - b).max()) for a, b in zip(naive, got, strict=True)) <= TOL
    assert all(int(np.argmax(a)) == int(np.argmax(b)) for a, b in zip(naive, got, strict=True) if a.size > 1)


@pytest.mark.parametrize("options", [dict(), dict(row_tokens=8, max_batch_tokens=64, max_batch_rows=3),
                                     dict(row_tokens=10_000), dict(pack=False), dict(head_rows=3)])
def test_packed_rows_equal_naive(tiny_lm, options):
    """Packed trie rows (split rows, many batches, one row, unpacked fallback, chunked LM head) = naive."""
    reqs = requests_for(tiny_lm, stems=("What colour is the sky?",))
    long_reqs = long_requests(tiny_lm)
    assert _max_suffix(long_reqs) > 3 * 16, "rows must run past the sliding window"
    shared = encode(tiny_lm, PREFIX)
    scorer = PrefixScorer(tiny_lm, **options)
    got = scorer.score(reqs, shared) + scorer.score(long_reqs, shared)
    _assert_equal_to_naive(tiny_lm, reqs + long_reqs, got)
    st = scorer.stats
    if options == dict(row_tokens=10_000):  # one row per item: every trie node forwarded exactly once
        assert st.forwarded == st.unique and st.padded == 0
        assert st.calls == 1 + 2 * 2  # run prefix, then per item: its prefix and one call for all its rows


@pytest.mark.parametrize("options", [dict(max_batch_rows=8), dict(max_batch_rows=4), dict(max_batch_tokens=2048)])
def test_scores_do_not_depend_on_how_many_rows_share_a_call(tiny_lm, options):
    """With one item per call (the CPU budget), how many rows a forward call may hold decides which call computes a
    row, not what it computes, as long as a row keeps its padded width (rows are grouped widest first, so calls of
    a few rows or more pad alike): the scores are bit-identical, not just within TOL (docs/invariance.md: 0 on the
    embedded model at real length, both scorings). What does move them, within TOL of the naive path: a row padded
    to another width (calls of 1-2 rows), another LM-head chunk size (`head_rows`), several items per call (the
    CUDA budget: other items' prefixes and rows beside an item's), all tested against naive above and in
    test_block.py."""
    reqs = requests_for(tiny_lm, stems=("What colour is the sky?",)) + long_requests(tiny_lm)
    shared = encode(tiny_lm, PREFIX)
    base = PrefixScorer(tiny_lm).score(reqs, shared)
    got = PrefixScorer(tiny_lm, **options).score(reqs, shared)
    assert all(np.array_equal(a, b) for a, b in zip(base, got, strict=True))


def test_packed_rows_with_eager_attention(tiny_tokenizer):
    """The eager implementation takes additive float masks; sliding and full layers, long suffixes."""
    from tiny_models import tiny_model

    from mcqa_toolkit.backends.hf import wrap

    lm = wrap(tiny_model("gemma3", tiny_tokenizer, attn="eager"), tiny_tokenizer, name="tiny-gemma3-eager")
    reqs = requests_for(lm)
    scorer = PrefixScorer(lm, row_tokens=12)
    _assert_equal_to_naive(lm, reqs, scorer.score(reqs, encode(lm, PREFIX)))
    assert scorer.stats.calls >= 3


def test_no_shared_prefix_and_short_item_prefix(tiny_lm):
    """Requests that share only BOS: no run prefix, the whole trie is packed rows."""
    texts = ["Options: (A) red (B) blue. Answer: (", "Question: What is 2 + 2? Answer: (",
             "Pregunta: la capital de España es Madrid. Answer: ("]
    reqs = []
    for t in texts:
        ids = encode(tiny_lm, t)
        reqs.append(Request(ids, len(ids), next_token_candidates(tiny_lm, ids, t, ["A", "B"])[0]))
        ctx, cont = context_continuation(tiny_lm, t, "A) red and blue")
        reqs.append(Request(ctx + cont, len(ctx)))
    _assert_equal_to_naive(tiny_lm, reqs, PrefixScorer(tiny_lm, row_tokens=16).score(reqs))


def test_wrong_shared_prefix_falls_back_correctly(tiny_lm):
    reqs = requests_for(tiny_lm, stems=("Why?",))
    scorer = PrefixScorer(tiny_lm)
    got = scorer.score(reqs, shared_prefix=encode(tiny_lm, "Completely different text"))
    naive = naive_scores(tiny_lm, reqs)
    assert max(float(np.abs(a - b).max()) for a, b in zip(naive, got, strict=True)) <= TOL


def test_duplicates_computed_once_and_results_in_order(tiny_lm):
    reqs = requests_for(tiny_lm, stems=("Why?",))
    scorer = PrefixScorer(tiny_lm)
    once = scorer.score(reqs)
    f1 = scorer.stats.forwarded
    twice = PrefixScorer(tiny_lm).score(reqs + reqs[::-1])
    assert all(np.array_equal(a, b) for a, b in zip(once + once[::-1], twice, strict=True))
    assert f1 > 0


def test_candidate_letters_follow_tokenizer(tiny_lm):
    text = "Answer: ("
    ids = encode(tiny_lm, text)
    cands, exact = next_token_candidates(tiny_lm, ids, text, ["A", "B"])
    assert len(set(cands)) == 2 and all(isinstance(c, int) for c in cands)
    with pytest.raises(ValueError, match="non-distinct"):
        next_token_candidates(tiny_lm, ids, text, ["A", "A"])


def test_batch_tokenising_equals_one_by_one(tiny_lm):
    """letter_requests / context_continuations (one tokenizer call per batch) give the one-at-a-time ids."""
    from types import SimpleNamespace

    texts = [PREFIX + "Question: Why?\nAnswer: (", "Options: (A) red (B) blue. Answer:", "Resposta: ("]
    prompts = [SimpleNamespace(text=t, messages=None, letter_continuations=["A", "B", " C"]) for t in texts]
    for p, (ids, cands, exact) in zip(prompts, letter_requests(tiny_lm, prompts), strict=True):
        assert ids == encode(tiny_lm, p.text)
        assert (cands, exact) == next_token_candidates(tiny_lm, ids, p.text, p.letter_continuations)
    pairs = [(t, c) for t in texts for c in (" red", "blue and green", "B) 4")]
    assert context_continuations(tiny_lm, pairs) == [context_continuation(tiny_lm, t, c) for t, c in pairs]


def test_lm_eval_split_moves_trailing_space(tiny_lm):
    ctx, cont = context_continuation(tiny_lm, "Answer: ", "blue")
    ctx2, cont2 = context_continuation(tiny_lm, "Answer:", " blue")
    assert (ctx, cont) == (ctx2, cont2)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_half_precision_paths_run_in_model_dtype(tiny_tokenizer, dtype, attn):
    """The CUDA dtypes on CPU: packed rows and the unpacked fallback run in bf16/fp16 (eager masks in the model's
    dtype with its own min value), give finite log-probs and the naive choices. Half-precision rounding differs
    between layouts, so the bound here is loose; the 1e-4 equality is an fp32 guarantee."""
    from tiny_models import tiny_model

    from mcqa_toolkit.backends.hf import wrap
    from mcqa_toolkit.backends.hf.masks import layer_groups, tree_masks

    model = tiny_model("gemma3", tiny_tokenizer, attn=attn).to(getattr(torch, dtype))
    lm = wrap(model, tiny_tokenizer, name="tiny-half")
    reqs = requests_for(lm)
    naive = naive_scores(lm, reqs)
    for pack in (True, False):
        got = PrefixScorer(lm, row_tokens=12, pack=pack).score(reqs, encode(lm, PREFIX))
        assert all(np.isfinite(a).all() for a in got)
        assert max(float(np.abs(a - b).max()) for a, b in zip(naive, got, strict=True)) <= 1e-2
        assert all(int(np.argmax(a)) == int(np.argmax(b)) for a, b in zip(naive, got, strict=True) if a.size > 1)
    cache = PrefixScorer(lm).new_cache()
    groups = layer_groups(lm.model, cache)
    depth, end = torch.tensor([[0, 1, 1]]), torch.tensor([[3, 2, 3]])
    masks = tree_masks({k: w for k, (w, _) in groups.items()}, depth, end, {}, attn, lm.dtype)
    for m in masks.values():
        if attn == "eager":
            assert m.dtype == lm.dtype and m.min() == torch.finfo(lm.dtype).min
        else:
            assert m.dtype == torch.bool


def test_engine_calls_on_cuda_leave_cudnn_attention_out():
    """On an H100 cuDNN's sdpa kernel cost ~5 ms of host time per call (a plan per new shape): the engine's
    forward calls on CUDA allow flash, memory-efficient and math only; on CPU PyTorch's own choice stands."""
    from mcqa_toolkit.backends.hf.masks import attention_kernels

    before = torch.backends.cuda.cudnn_sdp_enabled()
    with attention_kernels(torch.device("cuda")):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
        assert torch.backends.cuda.math_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with attention_kernels(torch.device("cpu")):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
