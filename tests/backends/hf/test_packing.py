"""Packed trie rows (backends/hf/packing.py) and their attention masks (backends/hf/masks.py), without a model.

Every plan must cover every sequence exactly once, keep each sequence's tokens on an ancestor chain at the
right depth, and respect its width limit; the vectorised masks must equal the definition written as loops.
"""
import random
from itertools import pairwise

import pytest
import torch

from mcqa_toolkit.backends.hf.masks import batch_inputs, tree_masks
from mcqa_toolkit.backends.hf.packing import layout, plan_batches, plan_chains, plan_items, plan_rows, unique_tokens


def _random_seqs(rng, n=40):
    """Shuffle-like sequences: a few shared heads, then branching tails of mixed length (some are prefixes)."""
    heads = [[rng.randrange(5) for _ in range(rng.randrange(1, 6))] for _ in range(4)]
    out = []
    for _ in range(n):
        s = list(rng.choice(heads)) + [rng.randrange(6) for _ in range(rng.randrange(0, 25))]
        out.append(s or [0])
    return out


def _check_rows(rows, seqs):
    seen = sorted(k for row in rows for k in row.paths)
    assert seen == list(range(len(seqs)))  # every sequence exactly once
    for row in rows:
        assert len(row.tokens) == len(row.depth) == len(row.end) == len(row.parent) == row.width
        assert all(p < i and i < row.end[p] if p >= 0 else row.depth[i] == 0 for i, p in enumerate(row.parent))
        for k, path in row.paths.items():
            assert [row.tokens[i] for i in path] == list(seqs[k])
            assert [row.depth[i] for i in path] == list(range(len(path)))
            for a, b in pairwise(path):  # each token's predecessor is an ancestor in the depth-first layout
                assert a < b < row.end[a]


def test_layout_shares_prefixes_depth_first():
    row = layout([(0, [1, 2, 3]), (1, [1, 2, 4, 5]), (2, [1, 6]), (3, [1, 2, 3])])
    assert row.tokens == [1, 2, 3, 4, 5, 6]
    assert row.depth == [0, 1, 2, 2, 3, 1]
    assert row.end == [6, 5, 3, 5, 5, 6]
    assert row.paths == {0: [0, 1, 2], 3: [0, 1, 2], 1: [0, 1, 3, 4], 2: [0, 5]}


@pytest.mark.parametrize("row_tokens", [1, 16, 64, 10_000])
def test_plan_rows_covers_every_sequence(row_tokens):
    rng = random.Random(row_tokens)
    for _ in range(20):
        seqs = _random_seqs(rng)
        rows = plan_rows(seqs, row_tokens)
        _check_rows(rows, seqs)
        assert len(rows) <= -(-unique_tokens(seqs) // row_tokens)  # about row_tokens nodes per row, or wider
        assert sum(r.width for r in rows) >= unique_tokens(seqs)  # heads above a cut are repeated
    one = plan_rows(seqs, 10_000)
    assert len(one) == 1 and one[0].width == unique_tokens(seqs)


def test_plan_items_cuts_every_item_to_one_width():
    rng = random.Random(5)
    items = [_random_seqs(rng, 30), _random_seqs(rng, 8), [[1, 2, 3]]]
    rows = plan_items(items, 16)
    width = max(max(r.width for r in plan_rows(seqs, 16)) for seqs in items)
    assert max(r.width for r in rows) <= width
    offset = 0
    for i, seqs in enumerate(items):
        mine = [r for r in rows if r.item == i]
        for r in mine:
            r.paths = {k - offset: p for k, p in r.paths.items()}
        _check_rows(mine, seqs)
        offset += len(seqs)
    alone = plan_items(items[:1], 16)  # one item: exactly plan_rows
    assert [(r.tokens, r.paths) for r in alone] == [(r.tokens, r.paths) for r in plan_rows(items[0], 16)]


def test_plan_chains_one_row_per_distinct_sequence():
    seqs = [[1, 2, 3], [1, 2], [1, 2, 3], [4]]
    rows = plan_chains(seqs)
    _check_rows(rows, seqs)
    assert sorted(r.width for r in rows) == [1, 2, 3]


def test_plan_batches_limits():
    rows = plan_rows(_random_seqs(random.Random(3), 60), 8)
    for max_tokens, max_rows in [(64, 4), (1, 64), (10_000, 3)]:
        batches = plan_batches(rows, max_tokens, max_rows)
        assert sorted(id(r) for b in batches for r in b) == sorted(id(r) for r in rows)
        for b in batches:
            assert len(b) <= max_rows
            assert len(b) == 1 or len(b) * max(r.width for r in b) <= max_tokens


def _brute_mask(row, width, window, n):
    """The definition: cached key k is n - k + depth positions back; row key j visible if ancestor-or-self."""
    m = torch.zeros(width, n + width, dtype=torch.bool)
    for i in range(width):
        real = i < row.width
        di = row.depth[i] if real else 0
        for k in range(n):
            m[i, k] = window is None or di + n - k < window
        for j in range(width):
            if not real:
                m[i, n + j] = i == j
            elif j < row.width and j <= i < row.end[j]:
                m[i, n + j] = window is None or di - row.depth[j] < window
    return m


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
def test_tree_masks_match_definition(implementation):
    seqs = _random_seqs(random.Random(7), 12)
    rows = plan_rows(seqs, 24)
    groups = {"full_attention": (None, 9), "sliding_attention": (6, 5)}
    ids, pos, end = batch_inputs(rows, [30] * len(rows), 0, "cpu")
    depth = pos - 30
    assert ids.shape == depth.shape and all((depth[r, :row.width] == torch.tensor(row.depth)).all()
                                            for r, row in enumerate(rows))
    keys = {name: torch.arange(30 - n, 30)[None, :].expand(len(rows), -1) for name, (_, n) in groups.items()}
    masks = tree_masks({k: w for k, (w, _) in groups.items()}, pos, end, keys, implementation, torch.float32)
    for name, (window, n) in groups.items():
        got = masks[name]
        assert got.shape == (len(rows), 1, depth.shape[1], n + depth.shape[1])
        if implementation == "eager":
            assert got.dtype == torch.float32
            got = got == 0
        for r, row in enumerate(rows):
            assert torch.equal(got[r, 0], _brute_mask(row, depth.shape[1], window, n))
    single = tree_masks({None: None}, pos, end, {None: None}, "sdpa", torch.float32)
    assert isinstance(single, torch.Tensor) and single.shape[-1] == depth.shape[1]


def test_tree_masks_hide_empty_slots_and_use_each_rows_positions():
    """Rows of two items in one call: each sees its own item's cached slots (-1 = an empty, left-padded slot), and
    a sliding window counts positions, not slots."""
    rows = plan_items([[[1, 2]], [[3]]], 8)
    assert [r.item for r in rows] == [0, 1] and sorted(k for r in rows for k in r.paths) == [0, 1]
    ids, pos, end = batch_inputs(rows, [5, 3], 0, "cpu")
    assert pos.tolist() == [[5, 6], [3, 3]]
    keys = torch.tensor([[0, 1, 2, 3, 4], [-1, -1, 0, 1, 2]])
    m = tree_masks({"full_attention": None, "sliding_attention": 3}, pos, end,
                   {"full_attention": keys, "sliding_attention": keys}, "sdpa", torch.float32)
    full, sliding = m["full_attention"][:, 0], m["sliding_attention"][:, 0]
    assert full[1, 0, :5].tolist() == [False, False, True, True, True]       # empty slots never seen
    assert full[1, 1, 5:].tolist() == [False, True]                           # in its row, a pad sees itself only
    assert sliding[0, 1, :5].tolist() == [False, False, False, False, True]   # position 6 sees 4..6 only
    assert sliding[1, 0, :5].tolist() == [False, False, False, True, True]    # position 3 sees 1..3 only


def _naive_lcp(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_keys_sort_and_share_prefixes_as_the_tokens_do():
    """token_key bytes sort in the tuples' order and their common prefix is the tokens' (ids across byte
    boundaries, up to 2^32 - 1); lcp of sequences (C slice comparisons) is the element-by-element one."""
    import random

    from mcqa_toolkit.backends.hf.packing import key_lcp, lcp, token_key

    rng = random.Random(0)
    values = [0, 1, 255, 256, 65_535, 65_536, 262_143, 2 ** 32 - 1]
    seqs = [tuple(rng.choice(values) for _ in range(rng.randrange(0, 7))) for _ in range(300)]
    seqs += [(7,) * 1500 + (k,) for k in (1, 2)] + [(7,) * 1500, ()]
    assert sorted(seqs, key=token_key) == sorted(seqs)
    for a, b in zip(seqs, seqs[1:] + seqs[:1], strict=True):
        assert lcp(a, b) == _naive_lcp(a, b) == key_lcp(token_key(a), token_key(b))
        assert lcp(list(a), list(b)) == _naive_lcp(a, b)
