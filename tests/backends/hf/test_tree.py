"""Tree attention (backends/hf/tree.py) must equal the naive computation (max |delta log-prob| <= 1e-4, fp32) on
both tiny architectures (Gemma 3's sliding layers with a 16-token window, Llama's full attention): one item with
rows split many ways, query blocks of 4 (many blocks per row, ancestors gathered) and the cached part in small
chunks, several items per block, the CPU flash kernel and the plain matrix-product path other devices take; it
computes fewer (query, key) pairs than the dense masks on a deep trie; the model's attention implementation is back
after every call."""
import numpy as np
import pytest
import torch
from engine_requests import PREFIX, block_items, long_requests, requests_for

import mcqa_toolkit.backends.hf.tree as tree
from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores
from mcqa_toolkit.backends.hf.packing import plan_rows
from mcqa_toolkit.backends.hf.tokens import encode

TOL = 1e-4


@pytest.fixture(scope="module")
def naive():
    """naive_scores, each request computed once per model for the whole module (the naive path is the slow part)."""
    memo = {}

    def scores(lm, reqs):
        todo = [r for r in reqs if (lm.name, r) not in memo]
        for r, v in zip(todo, naive_scores(lm, todo) if todo else [], strict=True):
            memo[lm.name, r] = v
        return [memo[lm.name, r] for r in reqs]
    return scores


def _delta(naive, lm, items, got):
    return max(float(np.abs(a - b).max()) for reqs, res in zip(items, got, strict=True)
               for a, b in zip(naive(lm, reqs), res, strict=True))


@pytest.mark.parametrize("options, block", [(dict(), tree.QUERY_BLOCK),
                                            (dict(row_tokens=8, max_batch_tokens=64, max_batch_rows=3), 4),
                                            (dict(row_tokens=40), 4)])
def test_tree_attention_equals_naive(tiny_lm, options, block, monkeypatch, naive):
    monkeypatch.setattr(tree, "QUERY_BLOCK", block)
    if block == 4:  # the cached part in many products of a few query positions each
        monkeypatch.setattr(tree, "SCORE_CHUNK", 256)
    items = [requests_for(tiny_lm, stems=("What colour is the sky?",)), long_requests(tiny_lm)]
    scorer = PrefixScorer(tiny_lm, attention="tree", **options)
    assert scorer.tree
    got = [scorer.score(reqs, encode(tiny_lm, PREFIX)) for reqs in items]
    assert _delta(naive, tiny_lm, items, got) <= TOL
    assert tiny_lm.model.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("flash", [True, False])
def test_several_items_per_block_and_both_kernels(tiny_lm, flash, monkeypatch, naive):
    real = tree.attend
    monkeypatch.setattr(tree, "attend", lambda *a, **kw: real(*a, flash=flash, **kw))
    monkeypatch.setattr(tree, "QUERY_BLOCK", 8)
    items = block_items(tiny_lm)
    shared = encode(tiny_lm, PREFIX)
    options = dict() if flash else dict(row_tokens=8, max_batch_tokens=96, max_batch_rows=5)
    scorer = PrefixScorer(tiny_lm, attention="tree", **options)
    assert _delta(naive, tiny_lm, items, scorer.score_block([(r, shared) for r in items])) <= TOL


def test_blocks_compute_the_visible_pairs_not_the_width():
    """On a trie of 30 paths of 40 tokens below a 10-token chain, each query block is computed against the ancestors
    of its first node and the block: far fewer pairs than the dense rows x width x width, never fewer than the
    visible pairs (each query and its ancestors)."""
    rng = np.random.default_rng(0)
    seqs = [list(range(10)) + list(rng.integers(100, 105, 2)) + list(rng.integers(200, 10_000, 38)) for _ in range(30)]
    rows = plan_rows(seqs, 256)
    width = max(r.width for r in rows)
    positions = np.zeros((len(rows), width), dtype=np.int64)
    end = np.tile(np.arange(1, width + 1), (len(rows), 1))
    for i, r in enumerate(rows):
        positions[i, : r.width] = r.depth
        end[i, : r.width] = r.end
    plan = tree.plan_call(None, [None], {None: None}, {None: np.zeros((1, 0), dtype=np.int64)}, positions, end,
                          np.zeros(len(rows), dtype=np.int64), np.zeros(1, dtype=np.int64), torch.float32, "cpu")
    computed = sum(len(rows) * g.blocks * g.size * g.keys for g in plan.blocks)
    visible = sum(int((g.mask[None].view(len(rows), g.blocks * g.size, g.keys)[:, : g.valid] == 0).sum())
                  for g in plan.blocks)
    idx = np.arange(width)
    dense_visible = int(sum(((idx[None, :] <= idx[:, None]) & (idx[:, None] < end[r][None, :])).sum()
                            for r in range(len(rows))))
    assert visible == dense_visible  # every visible pair is computed, once
    assert computed < 0.6 * len(rows) * width * width


def test_the_implementation_is_restored_after_a_failure(tiny_gemma, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("kernel failure")

    monkeypatch.setattr(tree, "attend", broken)
    scorer = PrefixScorer(tiny_gemma, attention="tree")
    with pytest.raises(RuntimeError, match="kernel failure"):
        scorer.score(requests_for(tiny_gemma), encode(tiny_gemma, PREFIX))
    assert tiny_gemma.model.config._attn_implementation == "sdpa"


def test_tree_needs_packed_rows_and_no_soft_capping(tiny_gemma, monkeypatch):
    assert not PrefixScorer(tiny_gemma, attention="tree", pack=False).tree
    assert not PrefixScorer(tiny_gemma, attention="masks").tree
    monkeypatch.setattr(tiny_gemma.model.config, "attn_logit_softcapping", 50.0, raising=False)
    assert not PrefixScorer(tiny_gemma, attention="tree").tree
    with pytest.raises(ValueError, match="attention 'flex'"):
        PrefixScorer(tiny_gemma, attention="flex")


def test_a_query_that_sees_nothing_in_a_part_has_no_weight_there():
    q, k, v = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)
    mask = torch.zeros(1, 1, 3, 4)
    mask[..., 1, :] = torch.finfo(torch.float32).min
    for flash in (True, False):
        out, lse = tree.attend(q, k, v, mask, 0.5, flash=flash)
        assert torch.isneginf(lse[..., 1]).all() and (out[..., 1, :] == 0).all()
        assert torch.isfinite(lse[..., [0, 2]]).all()


def test_tree_on_a_model_configured_for_eager_attention(tiny_tokenizer, naive):
    from tiny_models import tiny_model

    from mcqa_toolkit.backends.hf import wrap

    lm = wrap(tiny_model("gemma3", tiny_tokenizer, attn="eager"), tiny_tokenizer, name="tiny-gemma3-eager")
    items = [requests_for(lm, stems=("Why?",)), long_requests(lm)]
    scorer = PrefixScorer(lm, attention="tree", row_tokens=12)
    assert scorer.tree
    assert _delta(naive, lm, items, [scorer.score(r, encode(lm, PREFIX)) for r in items]) <= TOL
    assert lm.model.config._attn_implementation == "eager"
