"""Several items in one block (backends/hf/block.py): their item prefixes in one left-padded call, their trie rows
sharing calls, must equal the naive computation (max |delta log-prob| <= 1e-4, fp32) on both tiny architectures
(Gemma 3's sliding layers with a 16-token window, Llama's full attention), with and without a run prefix, under
budgets that split rows over many calls and item prefixes over several opening calls, with sdpa's boolean and
eager's additive masks. One item per block is the single-item path, bit for bit."""
import numpy as np
import pytest
import torch
from engine_requests import PREFIX, block_items, requests_for

from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores
from mcqa_toolkit.backends.hf.packing import lcp
from mcqa_toolkit.backends.hf.tokens import encode

TOL = 1e-4


def _delta(lm, items, got):
    return max(float(np.abs(a - b).max()) for reqs, res in zip(items, got, strict=True)
               for a, b in zip(naive_scores(lm, reqs), res, strict=True))


def _prefix_len(reqs, run):
    end = min(r.first_scored for r in reqs)
    return min([end] + [lcp(reqs[0].tokens, r.tokens) for r in reqs]) - run


@pytest.mark.parametrize("options", [dict(), dict(row_tokens=8, max_batch_tokens=96, max_batch_rows=5),
                                     dict(max_batch_tokens=60)])
def test_items_sharing_calls_equal_naive(tiny_lm, options):
    items = block_items(tiny_lm)
    shared = encode(tiny_lm, PREFIX)
    lengths = [_prefix_len(reqs, len(shared)) for reqs in items]
    assert min(lengths) < 15 < max(lengths) and len(set(lengths)) == len(lengths)
    scorer = PrefixScorer(tiny_lm, **options)
    got = scorer.score_block([(reqs, shared) for reqs in items])
    assert _delta(tiny_lm, items, got) <= TOL
    alone = PrefixScorer(tiny_lm, **options)
    for reqs in items:
        alone.score(reqs, shared)
    assert scorer.stats.forwarded == alone.stats.forwarded and scorer.stats.unique == alone.stats.unique
    if not options:  # one call for the run prefix, one for the item prefixes, one for every item's rows
        assert scorer.stats.calls == 3 and alone.stats.calls == 1 + 2 * len(items)
    assert scorer.stats.calls <= alone.stats.calls and scorer.stats.items == len(items)


def test_items_without_run_prefix_and_on_different_run_prefixes(tiny_lm):
    items = block_items(tiny_lm)
    other = encode(tiny_lm, PREFIX)[:40]  # a shorter run prefix of the same prompts
    blocks = [(items[0], ()), (items[1], encode(tiny_lm, PREFIX)), (items[2], other), (items[3], ())]
    scorer = PrefixScorer(tiny_lm)
    assert _delta(tiny_lm, items, scorer.score_block(blocks)) <= TOL
    assert scorer.stats.calls == 2 + 3 * 2  # two run prefixes; per run prefix (none, full, shorter): prefixes, rows


def test_eager_masks_and_the_unpacked_fallback(tiny_tokenizer):
    from tiny_models import tiny_model

    from mcqa_toolkit.backends.hf import wrap

    lm = wrap(tiny_model("gemma3", tiny_tokenizer, attn="eager"), tiny_tokenizer, name="tiny-gemma3-eager")
    items = block_items(lm)
    shared = encode(lm, PREFIX)
    assert _delta(lm, items, PrefixScorer(lm, row_tokens=12).score_block([(r, shared) for r in items])) <= TOL
    unpacked = PrefixScorer(lm, pack=False)
    assert _delta(lm, items, unpacked.score_block([(r, shared) for r in items])) <= TOL
    assert unpacked.stats.calls == 1 + 2 * len(items)  # no masks of ours: one item at a time


def test_one_item_block_is_the_single_item_path(tiny_lm):
    reqs = requests_for(tiny_lm)
    shared = encode(tiny_lm, PREFIX)
    one = PrefixScorer(tiny_lm).score(reqs, shared)
    block = PrefixScorer(tiny_lm).score_block([(reqs, shared)])[0]
    assert all(np.array_equal(a, b) for a, b in zip(one, block, strict=True))


def test_a_block_gives_the_same_numbers_whatever_ran_before(tiny_lm):
    """What a resumed run relies on: a block's numbers depend on the block only."""
    items = block_items(tiny_lm)
    shared = encode(tiny_lm, PREFIX)
    block = [(reqs, shared) for reqs in items[1:]]
    fresh = PrefixScorer(tiny_lm).score_block(block)
    used = PrefixScorer(tiny_lm)
    used.score_block([(items[0], shared)])
    again = used.score_block(block)
    assert all(np.array_equal(a, b) for x, y in zip(fresh, again, strict=True) for a, b in zip(x, y, strict=True))


def test_item_prefixes_are_packed_as_chains(tiny_gemma):
    from mcqa_toolkit.backends.hf.block import open_block, pack_chains

    assert pack_chains([3, 1, 0, 2]) == ([(0, 0), (1, 2), (0, 0), (1, 0)], 2, 3)  # longest first, first fit
    scorer = PrefixScorer(tiny_gemma)
    shared = encode(tiny_gemma, PREFIX)
    run_cache = scorer._prefix_cache(tuple(shared))
    r = len(shared)
    with torch.inference_mode():
        block = open_block(scorer, run_cache, r, [(5, 6, 7), (8,), ()], packed=True)
    assert block.bases == [r + 3, r + 1, r] and block.rows == [0, 1, 0] and block.cache_rows == 2
    assert scorer.stats.padded == 2 * 3 - 4  # two rows of width 3 for 4 tokens
    for name, keys in block.keys.items():
        assert keys[:, -3:].tolist() == [[r, r + 1, r + 2], [r, -1, -1], [-1, -1, -1]]
        window = block.windows[name]
        if window is None:
            assert keys.shape[1] == r + 3 and keys[:, :r].tolist() == [list(range(r))] * 3
        else:  # a sliding layer keeps every slot here: the run prefix's last window-1 keys and the 3 new slots
            assert keys.shape[1] == window - 1 + 3


def test_scored_slots_are_gathered_once_in_order_of_first_use():
    """scored_slots: every request's last n_scored path nodes, in request order along the path; a slot two
    requests read (options sharing their context) is gathered once; slots in order of first use, as the loop over
    rows and paths met them (the LM head then sees the same positions in the same order)."""
    import numpy as np

    from mcqa_toolkit.backends.hf.block import scored_slots
    from mcqa_toolkit.backends.hf.packing import Row

    a = Row(tokens=[1, 2, 3, 4], paths={2: [0, 1, 2], 0: [0, 1, 3]})  # two options after a shared context node 1
    b = Row(tokens=[5, 6], paths={1: [0, 1]})
    req, idx, (at, col) = scored_slots([a, b], [2, 1, 2])
    assert req.tolist() == [2, 2, 0, 0, 1]
    slots = list(zip(at.tolist(), col.tolist(), strict=True))
    assert slots == [(0, 1), (0, 2), (0, 3), (1, 1)]
    assert [slots[i] for i in idx] == [(0, 1), (0, 2), (0, 1), (0, 3), (1, 1)]
    assert isinstance(idx, np.ndarray)
