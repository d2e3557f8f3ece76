"""Attention masks and shared cache views for forwarding packed trie rows (see `packing.py`) on top of a cache.

A packed row is not a causal sequence: a node attends to the cached prefix and to its ancestors only, at its
true position (prefix length + depth), and on sliding-window layers only to keys less than `window`
positions back. We therefore pass the model explicit `position_ids` and ready-made 4D masks, one per layer
type ({"full_attention": ..., "sliding_attention": ...} for hybrid models such as Gemma 2/3, one tensor
otherwise), which transformers uses as given. That works for the "sdpa" (boolean mask, True = attend) and
"eager" (additive float mask) attention implementations with plain `DynamicCache` layers; for anything else
(flash-attention, flex, paged or quantised caches, other layer types) `layer_groups` returns None and the
engine falls back to unpacked, right-padded rows that need no mask.

The cache is shared, not copied: `shared_cache` gives a new cache object whose layers point at the same
key/value tensors (broadcast along the batch by a stride-0 view). `DynamicLayer.update` concatenates into new
tensors, so forwarding on the view never modifies the original prefix cache.
"""
from __future__ import annotations

import contextlib
import copy
from typing import Any, Sequence

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from mcqa_toolkit.backends.hf.packing import Row

MASKED_IMPLEMENTATIONS = ("sdpa", "eager")
# sdpa kernels for the engine's calls on CUDA, in PyTorch's order of preference, without cuDNN's (see below)
CUDA_SDPA_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
LAYER_TYPES = ("full_attention", "sliding_attention")


def attention_kernels(device: torch.device) -> contextlib.AbstractContextManager:
    """The sdpa kernels the engine's forward calls may use on `device`. On CUDA, cuDNN's attention (PyTorch's
    first choice on Hopper) is left out: it builds an execution plan for every new shape, about 5 ms of host time
    per call measured on an H100 (PyTorch 2.11, Gemma-3-1B shape: 0.25 s of an item's 0.44 s, for 19 ms of GPU
    work), and every call of ours has new shapes; the flash and memory-efficient kernels take our masks without
    that cost. Elsewhere PyTorch's own choice stands."""
    return sdpa_kernel(CUDA_SDPA_BACKENDS) if device.type == "cuda" else contextlib.nullcontext()


def _cached(layer: Any) -> int:
    """Number of cached keys a cache layer holds (0 before its first update)."""
    keys = getattr(layer, "keys", None)
    ready = getattr(layer, "is_initialized", False) and keys is not None and keys.dim() == 4
    return int(keys.shape[-2]) if ready else 0


def layer_groups(model: Any, cache: Any) -> dict[str | None, tuple[int | None, int]] | None:
    """Per layer type (None when the model has one kind of layer): (sliding window or None, cached keys).

    None when packed rows are unsupported: an attention implementation that takes no custom 4D mask, a cache
    layer other than DynamicLayer / DynamicSlidingWindowLayer, or layers of one type that disagree.
    """
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    config = model.config
    if getattr(config, "_attn_implementation", None) not in MASKED_IMPLEMENTATIONS:
        return None
    types = getattr(config, "layer_types", None)
    layers = getattr(cache, "layers", None)
    if not layers or (types is not None and len(types) != len(layers)):
        return None
    groups: dict[str | None, tuple[int | None, int]] = {}
    for i, layer in enumerate(layers):
        if type(layer) is DynamicSlidingWindowLayer:
            spec = (int(layer.sliding_window), _cached(layer))
        elif type(layer) is DynamicLayer:
            spec = (None, _cached(layer))
        else:
            return None
        name = None
        if types is not None and "sliding_attention" in types:
            name = types[i]
            if name not in LAYER_TYPES:
                return None
        if groups.setdefault(name, spec) != spec:
            return None
    return groups


def shared_cache(cache: Any, rows: int) -> Any:
    """A cache object over the same tensors as `cache`, repeated `rows` times along the batch without copying."""
    view = copy.copy(cache)
    view.layers = [copy.copy(layer) for layer in cache.layers]
    if rows > 1:
        for layer in view.layers:
            if _cached(layer):
                layer.keys = layer.keys.expand(rows, -1, -1, -1)
                layer.values = layer.values.expand(rows, -1, -1, -1)
    return view


def batch_inputs(rows: Sequence[Row], prefix_len: int, pad_id: int, device: Any
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, position_ids, depth, end) of right-padded rows, as (rows, width) tensors on `device`.

    A pad slot gets depth 0 and end = its own index + 1, so it is nobody's ancestor and attends only to itself
    (no query row is fully masked, which would make softmax return NaN).
    """
    width = max(r.width for r in rows)
    ids, depth, end = [], [], []
    for r in rows:
        pad = width - r.width
        ids.append(r.tokens + [pad_id] * pad)
        depth.append(r.depth + [0] * pad)
        end.append(r.end + list(range(r.width + 1, width + 1)))
    depth_t = torch.tensor(depth, device=device)
    return (torch.tensor(ids, device=device), depth_t + prefix_len, depth_t, torch.tensor(end, device=device))


def tree_masks(groups: dict[str | None, tuple[int | None, int]], depth: torch.Tensor, end: torch.Tensor,
               implementation: str, dtype: torch.dtype) -> Any:
    """The 4D masks (rows, 1, width, cached + width) of packed rows, per layer type (a dict) or one tensor.

    Key j of the row is visible to query i when j is i or an ancestor of i (`j <= i < end[j]`, depth-first
    layout) and, on a sliding layer, `depth[i] - depth[j] < window`. Cached key k (of n, the last n prefix
    positions) is `depth[i] + n - k` positions back from query i.
    """
    width = depth.shape[1]
    idx = torch.arange(width, device=depth.device)
    tree = (idx[None, None, :] <= idx[None, :, None]) & (idx[None, :, None] < end[:, None, :])
    out: dict[str | None, torch.Tensor] = {}
    for name, (window, n) in groups.items():
        m = tree if window is None else tree & ((depth[:, :, None] - depth[:, None, :]) < window)
        if n:
            if window is None:
                cm = torch.ones(depth.shape[0], width, n, dtype=torch.bool, device=depth.device)
            else:
                back = depth[:, :, None] + n - torch.arange(n, device=depth.device)[None, None, :]
                cm = back < window
            m = torch.cat([cm, m], dim=-1)
        m = m[:, None]
        if implementation == "eager":  # additive, in the model's dtype, as transformers' eager masks
            m = torch.zeros(m.shape, dtype=dtype, device=m.device).masked_fill_(~m, torch.finfo(dtype).min)
        out[name] = m
    return out if None not in out else out[None]
