"""The rows' own part of tree attention (tree.py): every query against its row's keys it can see, in few kernel calls.

In a depth-first layout the keys a block of queries [a, b) can see are the ancestors of its first node that precede
the block and the block itself (an ancestor of a later node that precedes the block is an ancestor of its first node
too). Each block is computed against those keys, gathered; blocks are batched into groups, one attention call per
group and layer, instead of one call per block: a call launches the same dozen kernels whatever its size, and a
launch is what a GPU waits on between small kernels (an ENEM tree call has ~13 blocks per layer).

A group pads its blocks to its longest ancestor list (padded keys masked: they add exp(-inf) = 0 to a query's
softmax), so batching buys launches with computed pairs: the groups are runs of the blocks sorted by ancestor count
that minimise calls x a call's worth in padded keys (`LAUNCH_KEYS`, per device) + padded keys, each within `WASTE`
times its own keys and a bound on its gathered keys (rows x blocks x keys: `GROUP_KEYS` per device, which keeps a
CPU's group in its cache, else `KEY_SLOTS`, which bounds the call's memory). The row's last block, shorter than a
block, is padded with queries that see one key and are dropped.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mcqa_toolkit.backends.hf.masks import upload

WASTE = 1.25  # at most this many computed pairs per pair of the blocks' own (ancestors + block) bound, per group
KEY_SLOTS = 1 << 14  # rows x blocks x keys gathered in one group (Gemma-3-270M fp32: 64 MB of keys and values)
FEWEST = float(KEY_SLOTS)  # a call's worth in padded keys where none is measured: the fewest calls within bounds
# Measured on a CPU (benchmarks/row_groups.py; results/benchmarks/engine6_2026-12-04/row_groups_*.json): a call's
# fixed work is worth ~100 padded keys per block row, and a group beyond a few blocks' keys leaves the core's cache
# (13 blocks in one call are slower than one call each); not measured on a GPU (none lent): the defaults above.
LAUNCH_KEYS = {"cpu": 100.0}
GROUP_KEYS = {"cpu": 768}


@dataclass
class RowGroup:
    """Blocks of `size` queries batched in one call: query slot q of group row (r, c) is `query_index`[r, c * size
    + q] (flat in rows x width), the first `valid` of each row's queries are real (the rest pad the row's last,
    short block); keys at `key_index` (rows x blocks x keys, flat in rows x width) under `mask[g]` (rows x blocks,
    1, size, keys) for layer group g. `whole`: the group is every block in order (its output is the rows' as is)."""

    size: int
    blocks: int
    keys: int
    valid: int
    query_index: torch.Tensor
    key_index: torch.Tensor
    positions: torch.Tensor
    mask: dict[str | None, torch.Tensor]
    whole: bool


def additive(visible: np.ndarray, dtype: torch.dtype, device: Any) -> torch.Tensor:
    """0 where visible, the dtype's lowest value elsewhere (as transformers' eager masks), on `device`."""
    mask = np.where(visible, 0.0, float(torch.finfo(dtype).min)).astype(np.float32)
    return torch.from_numpy(mask).to(device=device, dtype=dtype)


def _groups(ancestors: list[int], size: int, rows: int, launch: float, slots: int) -> list[list[int]]:
    """Blocks (by index) batched together, each group in block order: contiguous runs of the blocks sorted by
    ancestor count (a group pads to its longest list), chosen to minimise `launch` x groups + padded keys (per row;
    exact, by dynamic programming), a group of several blocks within WASTE x its own keys and `slots` keys
    (rows x blocks x keys)."""
    order = sorted(range(len(ancestors)), key=lambda j: (ancestors[j], j))
    cost = np.array([ancestors[j] + size for j in order], dtype=np.float64)
    own = np.concatenate([[0.0], np.cumsum(cost)])
    best = np.full(len(order) + 1, np.inf)
    best[0] = 0.0
    cut = np.zeros(len(order) + 1, dtype=np.int64)
    for j in range(len(order)):
        start = np.arange(j + 1)
        padded = (j + 1 - start) * cost[j]                                  # sorted: block j is each run's longest
        ok = (padded <= WASTE * (own[j + 1] - own[start])) & (rows * padded <= slots)
        ok[j] = True                                                       # a block alone always fits
        total = np.where(ok, best[start] + launch + padded, np.inf)
        cut[j + 1] = int(np.argmin(total))
        best[j + 1] = total[cut[j + 1]]
    out, j = [], len(order)
    while j > 0:
        out.append(sorted(order[cut[j]: j]))
        j = int(cut[j])
    return sorted(out)


def plan_rows(positions: np.ndarray, end: np.ndarray, windows: dict[str | None, int | None], size: int,
              dtype: torch.dtype, device: Any) -> list[RowGroup]:
    """The row groups of one call: `positions`, `end` (rows, width) each row slot's position and subtree end
    (masks.row_arrays), `windows` per layer group (None: full attention), blocks of `size` queries. Host arrays in."""
    n_rows, width = positions.shape
    starts = list(range(0, width, size))
    anc = [[np.flatnonzero(end[r, :a] > a) for r in range(n_rows)] for a in starts]  # ancestors of node a before it
    counts = [max(len(x) for x in per_row) for per_row in anc]
    kind = torch.device(device).type
    groups = _groups(counts, size, n_rows, LAUNCH_KEYS.get(kind, FEWEST), GROUP_KEYS.get(kind, KEY_SLOTS))
    out = []
    for group in groups:
        n_anc = max(counts[j] for j in group)
        keys = n_anc + size
        index = np.zeros((n_rows, len(group), keys), dtype=np.int64)
        real = np.zeros((n_rows, len(group), keys), dtype=bool)
        qi = np.zeros((len(group), size), dtype=np.int64)
        for c, j in enumerate(group):
            a = starts[j]
            for r, x in enumerate(anc[j]):
                index[r, c, : len(x)] = x
                real[r, c, : len(x)] = True
            qi[c] = np.arange(a, a + size)
        real[:, :, n_anc:] = (qi < width)[None]
        pad = qi >= width
        qi = np.minimum(qi, width - 1)
        index[:, :, n_anc:] = qi[None]
        keys_end = np.take_along_axis(end, index.reshape(n_rows, -1), axis=1).reshape(index.shape)
        key_pos = np.take_along_axis(positions, index.reshape(n_rows, -1), axis=1).reshape(index.shape)
        q_pos = positions[:, qi]                                               # (rows, blocks, size)
        tree = real[:, :, None, :] & (index[:, :, None, :] <= qi[None, :, :, None]) \
            & (qi[None, :, :, None] < keys_end[:, :, None, :])
        masks = {}
        for g, window in windows.items():
            vis = tree if window is None else tree & (q_pos[..., None] - key_pos[:, :, None, :] < window)
            vis[:, pad, n_anc] = True                                          # a pad query sees the block's first key
            masks[g] = additive(vis, dtype, device).reshape(n_rows * len(group), 1, size, keys)
        flat = np.arange(n_rows)[:, None] * width
        q_index = (flat + qi.reshape(1, -1)).reshape(-1)
        k_index = (flat[:, :, None] + index).reshape(-1)
        q_index_t, k_index_t, qi_t = upload([q_index, k_index, qi.reshape(-1)], device)
        out.append(RowGroup(size, len(group), keys, int((~pad).sum()), q_index_t, k_index_t, qi_t, masks,
                            group == list(range(len(starts)))))
    return out


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """Key/value heads repeated for the query heads (grouped-query attention); a stride-0 view for one KV head."""
    kv = x.shape[1]
    if kv == heads:
        return x
    if kv == 1:
        return x.expand(x.shape[0], heads, *x.shape[2:])
    return x[:, :, None].expand(x.shape[0], kv, heads // kv, *x.shape[2:]).reshape(x.shape[0], heads, *x.shape[2:])


def attend_rows(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, plan: list[RowGroup],
                group: str | None, scale: float, attend: Callable) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows' own part: query (rows, heads, width, dim) against the call's own key / value (rows, kv heads,
    width, dim) through `attend` (tree.attend) once per row group; (out (rows, width, heads, dim), lse (rows,
    width, heads) in fp32)."""
    rows, heads, width, dim = query.shape
    kv = key.shape[1]
    flat_q = query.transpose(1, 2).reshape(rows * width, heads, dim)
    flat_k = key.transpose(1, 2).reshape(rows * width, kv, dim)
    flat_v = value.transpose(1, 2).reshape(rows * width, kv, dim)
    out_b = lse_b = None
    for g in plan:
        n, size, keys = rows * g.blocks, g.size, g.keys
        q = flat_q.index_select(0, g.query_index).view(n, size, heads, dim).transpose(1, 2)
        k = flat_k.index_select(0, g.key_index).view(n, keys, kv, dim).transpose(1, 2)
        v = flat_v.index_select(0, g.key_index).view(n, keys, kv, dim).transpose(1, 2)
        o, lse = attend(q, _heads(k, heads), _heads(v, heads), g.mask[group], scale, sighted=True)  # each sees itself
        o = o.transpose(1, 2).reshape(rows, g.blocks * size, heads, dim)[:, : g.valid]
        lse = lse.transpose(1, 2).reshape(rows, g.blocks * size, heads)[:, : g.valid]
        if g.whole:
            return o, lse
        if out_b is None:
            out_b = query.new_empty(rows, width, heads, dim)
            lse_b = torch.empty((rows, width, heads), dtype=torch.float32, device=query.device)
        assert lse_b is not None
        out_b.index_copy_(1, g.positions[: g.valid], o)
        lse_b.index_copy_(1, g.positions[: g.valid], lse)
    assert out_b is not None and lse_b is not None
    return out_b, lse_b
