"""The rows' own part of tree attention (backends/hf/tree_rows.py) equals a dense masked softmax over each row's
whole width (float32 against float64, |delta| <= 1e-5 in output and log-sum-exp), however its blocks are batched:
one block per call, every block in one call, some blocks sharing a call; full and sliding windows, one and several
KV heads, a row whose last block is short. The groups are the least costly (a call's worth in padded keys x calls
+ padded keys) within WASTE x their own keys and the group's key bound."""
import itertools

import numpy as np
import pytest
import torch

import mcqa_toolkit.backends.hf.tree as tree
import mcqa_toolkit.backends.hf.tree_rows as tree_rows
from mcqa_toolkit.backends.hf.packing import plan_rows as pack

WINDOW = 9


def _rows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """positions, end (rows, width) of a trie of 12 paths of uneven depth, packed in rows of at most 70 slots."""
    rng = np.random.default_rng(seed)
    seqs = [[1, 2, 3] + list(rng.integers(10, 13, 2)) + list(rng.integers(100, 10_000, int(rng.integers(3, 30))))
            for _ in range(12)]
    rows = pack(seqs, 70)
    width = max(r.width for r in rows)
    positions = np.zeros((len(rows), width), dtype=np.int64)
    end = np.tile(np.arange(1, width + 1), (len(rows), 1))  # pad slots see themselves only
    for i, r in enumerate(rows):
        positions[i, : r.width] = r.depth
        end[i, : r.width] = r.end
    return positions, end


def _dense(q, k, v, positions, end, window):
    """Each query against every key of its row it sees (ancestor or itself, within the window): out, lse."""
    rows, heads, width, _ = q.shape
    i = np.arange(width)
    vis = (i[None, None, :] <= i[None, :, None]) & (i[None, :, None] < end[:, None, :])
    if window is not None:
        vis &= positions[:, :, None] - positions[:, None, :] < window
    scores = torch.einsum("rhqd,rhkd->rhqk", q, tree_rows._heads(k, heads) if k.shape[1] > 1 else
                          k.expand(rows, heads, width, -1)) * 0.5
    scores = scores.masked_fill(~torch.from_numpy(vis)[:, None], float("-inf"))
    lse = scores.logsumexp(-1)
    out = torch.einsum("rhqk,rhkd->rhqd", (scores - lse[..., None]).exp(),
                       v if v.shape[1] == heads else tree_rows._heads(v, heads))
    return out.transpose(1, 2), lse.transpose(1, 2)


@pytest.mark.parametrize("waste, slots, launch", [(1.0, 1, 0.0), (1e9, 1 << 30, 1e12), (1.5, 400, 8.0),
                                                  (tree_rows.WASTE, tree_rows.KEY_SLOTS, tree_rows.FEWEST)])
@pytest.mark.parametrize("kv", [1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_rows_part_equals_the_dense_softmax(monkeypatch, waste, slots, launch, kv, seed):
    monkeypatch.setattr(tree_rows, "WASTE", waste)
    monkeypatch.setattr(tree_rows, "GROUP_KEYS", {"cpu": slots})
    monkeypatch.setattr(tree_rows, "LAUNCH_KEYS", {"cpu": launch})
    positions, end = _rows(seed)
    rows, width = positions.shape
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(rows, 4, width, 8, generator=g, dtype=torch.float64)
    k, v = (torch.randn(rows, kv, width, 8, generator=g, dtype=torch.float64) for _ in range(2))
    q32, k32, v32 = (x.float() for x in (q, k, v))
    windows = {"full": None, "sliding": WINDOW}
    plan = tree_rows.plan_rows(positions, end, windows, 8, torch.float32, "cpu")
    if slots == 1:
        assert all(p.blocks == 1 for p in plan) and len(plan) == -(-width // 8)
    if waste == 1e9:
        assert len(plan) == 1 and plan[0].whole
    if slots == 400:
        assert 1 < len(plan) < -(-width // 8)  # some blocks share a call, not all
    for name, window in windows.items():
        out, lse = tree_rows.attend_rows(q32, k32, v32, plan, name, 0.5, tree.attend)
        want_out, want_lse = _dense(q, k, v, positions, end, window)
        assert float((out - want_out).abs().max()) <= 1e-5
        assert float((lse - want_lse).abs().max()) <= 1e-5


def _cost(groups, ancestors, size, launch):
    return sum(launch + len(g) * (max(ancestors[j] for j in g) + size) for g in groups)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("launch", [0.0, 50.0, tree_rows.FEWEST])
def test_groups_stay_within_their_bounds_at_the_least_cost(seed, launch):
    """Every block once, each group in block order and within WASTE and KEY_SLOTS; no grouping of the blocks
    sorted by ancestor count into contiguous runs within those bounds costs less (all 2^(n-1) checked, n = 9)."""
    rng = np.random.default_rng(seed)
    ancestors = [int(x) for x in rng.integers(0, 300, 9)]
    groups = tree_rows._groups(ancestors, 64, 3, launch, tree_rows.KEY_SLOTS)
    assert sorted(j for grp in groups for j in grp) == list(range(9))

    def fits(g):
        padded = len(g) * (max(ancestors[j] for j in g) + 64)
        return len(g) == 1 or (padded <= tree_rows.WASTE * sum(ancestors[j] + 64 for j in g)
                               and 3 * padded <= tree_rows.KEY_SLOTS)
    assert all(fits(g) and g == sorted(g) for g in groups)
    order = sorted(range(9), key=lambda j: (ancestors[j], j))
    least = min(_cost(runs, ancestors, 64, launch) for cuts in itertools.product([0, 1], repeat=8)
                for runs in [_runs(order, cuts)] if all(fits(r) for r in runs))
    assert _cost(groups, ancestors, 64, launch) == pytest.approx(least)
    if launch == 0.0:
        assert len(groups) == 9  # padding costs, a call does not: every block alone


def _runs(order, cuts):
    runs, run = [], [order[0]]
    for j, cut in zip(order[1:], cuts, strict=True):
        if cut:
            runs.append(run)
            run = []
        run.append(j)
    return runs + [run]
