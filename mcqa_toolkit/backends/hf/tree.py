"""Tree attention for packed rows: each query is computed against the keys it can see, not the row's whole width
times its item's whole cache (the engine's `attention="tree"`).

Visible pairs (masks.tree_masks writes the same rule densely, for sdpa / eager): a query sees a cached slot of its
item when the slot is filled and, on a sliding layer, less than `window` positions behind it; and a key of its own
row when that key is itself or an ancestor (`j <= i < end[j]`, depth-first layout), within the window on a sliding
layer. The dense call gives every row a copy of its item's whole cache and computes every pair of [cache ; row]
under a mask. On Gemma 3's sliding layers (15 of 18 in the 270M model) the rows' queries, at positions ~1,300-1,550
of an ENEM prompt, see at most 511 of ~1,300 cached keys, and inside a row a query sees its ancestors only, not the
other shuffles' paths. Here every layer computes two parts and merges them exactly through their log-sum-exps:
1. cached keys: all rows continuing one cache entry (an item) form one long query sequence against one copy of the
   slots any of them can see (on a sliding layer, from the earliest query's window start on), masked inside that
   range only where needed (sliding windows, empty slots);
2. the rows' own keys, per block of `QUERY_BLOCK` queries (tree_rows.py): in a depth-first layout the keys a
   block's queries can see are the ancestors of its first node and the block itself, so each block is computed
   against those (gathered) instead of the row's width, blocks batched into a few calls per layer.
out = (e^(lse1 - m) out1 + e^(lse2 - m) out2) / (e^(lse1 - m) + e^(lse2 - m)), m = max(lse1, lse2), in fp32; a
part a query sees nothing of (a sliding query deeper than the window has no cached key left) has lse = -inf and
weight 0. Pad slots see themselves only, as in masks.py.

The model's own attention layers call this function (registered with transformers' AttentionInterface under
`IMPLEMENTATION`, switched on for the call by `tree_implementation`); the call's `TreePlan` reaches it as a keyword
argument (transformers passes the forward's extra keyword arguments down to the attention function); the call has no
cache object: the cached keys are read from the plan. Latent attention (DeepSeek V2/V3, Kimi: a module with
`expand_kv`) caches its compressed latents: the cached part expands them per query head first, as the model's own
attention does after reading its cache. A model whose attention layers do not go through the implementation switch
(they call their own attention) would ignore the plan: each call counts the layers that used it (`TreePlan.calls`)
and the engine refuses a call where not every layer did. Kernels: on CPU PyTorch's flash-attention kernel, which
returns the log-sum-exp and takes a stride-0 (shared) key tensor; on other devices the same two parts in plain
matrix products (exact, not tuned).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mcqa_toolkit.backends.hf.masks import upload
from mcqa_toolkit.backends.hf.tree_rows import RowGroup, additive, plan_rows
from mcqa_toolkit.backends.hf.tree_rows import attend_rows as _attend_rows

IMPLEMENTATION = "mcqa_tree"
QUERY_BLOCK = 64  # queries per block of a row's own part
SCORE_CHUNK = 1 << 21  # fp32 scores per product of the cached part (8 MB: within the reference CPU's L3)


@dataclass
class _CachedPart:
    """The cached-key part of one item: its rows (None: every row of the call), the cache entry holding its slots,
    its visible slot range and the additive mask over its folded queries (rows x width, slots), None when every
    slot in range is visible."""

    rows: torch.Tensor | None
    entry: int
    lo: int
    hi: int
    mask: torch.Tensor | None


@dataclass
class TreePlan:
    """Everything the layers of one packed-rows call need, built once per call (`plan_call`)."""

    cache: Any                                       # the block's cache: layer l's keys (entries, kv heads, slots, dim)
    groups: list[str | None]                          # layer index -> layer group
    cached: dict[str | None, list[_CachedPart]]       # per group, per item
    blocks: list[RowGroup]                           # the rows' own part (tree_rows.py)
    rows: int
    width: int
    linear: Callable = torch.nn.functional.linear     # the engine's matrix product (kernels.py) for the cached part
    calls: int = 0                                    # attention layers that used the plan in this call


def plan_call(cache: Any, groups: list[str | None], windows: dict[str | None, int | None],
              slot_positions: dict[str | None, np.ndarray], positions: np.ndarray, end: np.ndarray,
              row_items: np.ndarray, item_entries: np.ndarray, dtype: torch.dtype, device: Any,
              linear: Callable = torch.nn.functional.linear) -> TreePlan:
    """The plan of one call of packed rows. `slot_positions[g]` (items, slots): the position of every cached slot
    of group g's layers as each item sees it (-1: empty or another item's); `positions`, `end` (rows, width): each
    row slot's position and subtree end (masks.row_arrays); `row_items` (rows,): each row's item; `item_entries`
    (items,): the cache entry holding each item's slots. Host arrays in."""
    n_rows, width = positions.shape
    cached: dict[str | None, list[_CachedPart]] = {}
    items = sorted(set(int(i) for i in row_items))
    for g, window in windows.items():
        parts = []
        for item in items:
            rows = np.flatnonzero(row_items == item)
            slots = slot_positions[g][item]
            q = positions[rows].reshape(-1)
            lowest = int(q.min()) - window + 1 if window is not None else 0
            filled = np.flatnonzero((slots >= 0) & (slots >= lowest))
            lo, hi = (int(filled[0]), int(filled[-1]) + 1) if filled.size else (0, 0)
            s = slots[lo:hi]
            visible = np.broadcast_to(s >= 0, (q.size, hi - lo))
            if window is not None:
                visible = visible & (q[:, None] - s[None, :] < window)
            mask = None if visible.all() else additive(visible, dtype, device)[None, None]
            row_index = None if len(items) == 1 else upload([rows], device)[0]
            parts.append(_CachedPart(row_index, int(item_entries[item]), lo, hi, mask))
        cached[g] = parts
    blocks = plan_rows(positions, end, windows, QUERY_BLOCK, dtype, device)
    return TreePlan(cache, groups, cached, blocks, n_rows, width, linear)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float,
           flash: bool | None = None, sighted: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(softmax(q k^T scale + mask) v, log-sum-exp of the scores) per query, the log-sum-exp in fp32; -inf (and a
    zero output) for a query that sees no key, unless the caller knows every query sees one (`sighted`: two
    passes over the output saved). `flash`: PyTorch's CPU flash kernel (default on a CPU) or plain matrix
    products."""
    if flash if flash is not None else q.device.type == "cpu":
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, False, attn_mask=mask,
                                                                              scale=scale)
    else:
        scores = torch.matmul(q, k.transpose(-1, -2)).float() * scale
        if mask is not None:
            scores = scores + mask.float()
        lse = scores.logsumexp(-1)
        out = torch.matmul((scores - lse[..., None]).exp().to(v.dtype), v)
    if sighted:
        return out, lse.float()
    blind = lse <= torch.finfo(torch.float32).min / 2  # every key masked: additive masks make the sum tiny, not 0
    lse = lse.float().masked_fill(blind, float("-inf"))
    return out.masked_fill(blind[..., None], 0), lse


def attend_cached(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float,
                  linear: Callable) -> tuple[torch.Tensor, torch.Tensor]:
    """The cached part: queries `q` (rows, width, heads, dim) against one entry's slots `k`, `v` (kv heads, slots,
    dim) under `mask` (rows x width, slots) or none; (out (rows, width, heads, dim), lse (rows, width, heads)).

    Two matrix products per KV head through `linear` (scores = Q K^T, out = P V with V^T as the weight), over
    chunks of query positions whose fp32 scores stay within SCORE_CHUNK floats, the softmax in place between them.
    The products run at the engine's GEMM rate (oneDNN on a CPU), which PyTorch's CPU flash kernel does not reach
    (it calls MKL's GEMM: AVX2 on the reference machine)."""
    rows, width, heads, dim = q.shape
    kv, slots = k.shape[0], k.shape[1]
    group = heads // kv
    positions = rows * width
    flat = q.reshape(positions, heads, dim)
    out = torch.empty_like(flat)
    lse = torch.empty((positions, heads), dtype=torch.float32, device=q.device)
    step = max(1, SCORE_CHUNK // (heads * max(slots, 1)))
    for g in range(kv):
        kg, vt = k[g], v[g].t().contiguous()
        qg = flat[:, g * group: (g + 1) * group]
        for a in range(0, positions, step):
            b = min(positions, a + step)
            s = linear(qg[a:b].reshape(-1, dim), kg).float().mul_(scale).view(b - a, group, slots)
            if mask is not None:
                s.add_(mask[a:b, None, :])
            m = s.amax(-1, keepdim=True)
            s.sub_(m).exp_()
            total = s.sum(-1, keepdim=True)
            o = linear(s.view(-1, slots).to(vt.dtype), vt).view(b - a, group, dim)
            out[a:b, g * group: (g + 1) * group] = o / total.to(o.dtype)
            lse[a:b, g * group: (g + 1) * group] = (m + total.log()).squeeze(-1)
    blind = lse <= torch.finfo(torch.float32).min / 2
    lse = lse.masked_fill(blind, float("-inf"))
    return out.masked_fill(blind[..., None], 0).view(rows, width, heads, dim), lse.view(rows, width, heads)


def tree_attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask: Any,
                   scaling: float | None = None, dropout: float = 0.0, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """The attention function of a tree call (AttentionInterface signature): query (rows, heads, width, dim), key /
    value the call's own (rows, kv heads, width, dim); returns (rows, width, heads, dim)."""
    plan: TreePlan | None = kwargs.get("mcqa_tree")
    if plan is None:
        raise TreeNotUsed(f"{type(module).__name__} does not pass the engine's tree plan to its attention function "
                          "(attention='masks' scores this model)")
    return merge(*tree_parts(module, query, key, value, plan, scaling)), None


def merge(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor, lse_b: torch.Tensor) -> torch.Tensor:
    """The two parts' outputs (rows, width, heads, dim) weighted by their log-sum-exps (rows, width, heads), in
    fp32, in the parts' dtype: exactly the softmax over both parts' keys."""
    m = torch.maximum(lse_a, lse_b)
    wa, wb = (lse_a - m).exp(), (lse_b - m).exp()
    out = (out_a.float() * wa[..., None] + out_b.float() * wb[..., None]) / (wa + wb)[..., None]
    return out.to(out_a.dtype)


def tree_parts(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, plan: TreePlan,
               scaling: float | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The cached part's and the rows' own part's (out, lse) of one layer (counted in `plan.calls`)."""
    plan.calls += 1
    layer = module.layer_idx
    group = plan.groups[layer]
    rows, heads, width, dim = query.shape
    scale = scaling if scaling is not None else dim ** -0.5
    cache_layer = plan.cache.layers[layer]
    by_position = query.transpose(1, 2)  # (rows, width, heads, dim): the projection's own memory layout
    lse_a = torch.full((rows, width, heads), float("-inf"), device=query.device)
    out_a = torch.zeros_like(by_position)
    for part in plan.cached[group]:
        if part.hi <= part.lo:
            continue
        q = by_position if part.rows is None else by_position.index_select(0, part.rows)
        e = part.entry
        mask = None if part.mask is None else part.mask[0, 0]
        keys, values = cache_layer.keys[e, :, part.lo: part.hi], cache_layer.values[e, :, part.lo: part.hi]
        if hasattr(module, "expand_kv"):  # latent attention caches its compressed latents: expanded per query head
            keys, values = (x[0] for x in module.expand_kv(keys[None], values[None]))
        o, lse = attend_cached(q, keys, values, mask, scale, plan.linear)
        if part.rows is None:
            out_a, lse_a = o, lse
        else:
            out_a.index_copy_(0, part.rows, o)
            lse_a.index_copy_(0, part.rows, lse)
    out_b, lse_b = _attend_rows(query, key, value, plan.blocks, group, scale, attend)
    return out_a, lse_a, out_b, lse_b


def register() -> None:
    """Make `tree_attention` known to transformers under IMPLEMENTATION (idempotent)."""
    from transformers import AttentionInterface

    AttentionInterface.register(IMPLEMENTATION, tree_attention)


class TreeNotUsed(RuntimeError):
    """A model's attention layers did not all call tree_attention (they compute attention their own way)."""


@contextlib.contextmanager
def tree_implementation(model: Any) -> Iterator[None]:
    """The model's attention layers call `tree_attention` for the duration of the block (its configured
    implementation is put back afterwards, whatever happens)."""
    from mcqa_toolkit.backends.hf.masks import text_config

    register()
    config = text_config(model)
    before = config._attn_implementation
    config._attn_implementation = IMPLEMENTATION
    try:
        yield
    finally:
        config._attn_implementation = before
