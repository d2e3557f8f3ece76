"""Attention masks and shared cache views for forwarding packed trie rows (see `packing.py`) on top of a cache.

A packed row is not a causal sequence: a node attends to the cached keys of its item and to its ancestors only,
at its true position, and on sliding-window layers only to keys less than `window` positions back. We therefore
pass the model explicit `position_ids` and ready-made 4D masks, one per layer type ({"full_attention": ...,
"sliding_attention": ...} for hybrid models such as Gemma 2/3, one tensor otherwise), which transformers uses as
given. That works for the "sdpa" (boolean mask, True = attend) and "eager" (additive float mask) attention
implementations with plain `DynamicCache` layers; for anything else (flash-attention, flex, paged or quantised
caches, other layer types) `layer_groups` returns None and the engine falls back to unpacked, right-padded rows
that need no mask.

Masks are written in positions, not slots: every cached slot has a position (-1 for an empty slot: the left
padding of a shorter item prefix when several items share a call, see `block.py`), so one rule covers a single
item's contiguous cache and a block of items whose caches were padded to one length. A cached key is visible when
its slot is filled and, on a sliding layer, when it is less than `window` positions behind the query.

The cache is shared, not copied: `shared_cache` gives a new cache object whose layers point at the same
key/value tensors (broadcast along the batch by a stride-0 view), and `DynamicLayer.update` concatenates into new
tensors, so forwarding on it never modifies the original. `rows_view` goes one step further for the packed rows'
calls: its layers give each row its item's cached keys (a stride-0 view for one item, a gather for several) beside
the call's new keys without keeping the concatenation, so a call holds one layer's per-row copies at a time
instead of every layer's (which bounded the rows per call on a GPU).
"""
from __future__ import annotations

import contextlib
import copy
import types
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
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


def text_config(model: Any) -> Any:
    """The configuration the model's text layers read (a composite's text configuration; the model's own
    otherwise): attention implementation, layer types, soft-capping."""
    config = model.config
    get = getattr(config, "get_text_config", None)
    return get(decoder=True) if get is not None else config


def cached(layer: Any) -> int:
    """Number of cached key slots a cache layer holds (0 before its first update)."""
    keys: Any = getattr(layer, "keys", None)
    ready = getattr(layer, "is_initialized", False) and keys is not None and keys.dim() == 4
    return int(keys.shape[-2]) if ready else 0


def layer_groups(model: Any, cache: Any) -> dict[str | None, tuple[int | None, int]] | None:
    """Per layer type (None when the model has one kind of layer): (sliding window or None, cached slots).

    None when packed rows are unsupported: an attention implementation that takes no custom 4D mask, a cache
    layer other than DynamicLayer / DynamicSlidingWindowLayer, or layers of one type that disagree.
    """
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    config = text_config(model)
    if getattr(config, "_attn_implementation", None) not in MASKED_IMPLEMENTATIONS:
        return None
    types_ = getattr(config, "layer_types", None)
    layers = getattr(cache, "layers", None)
    if not layers or (types_ is not None and len(types_) != len(layers)):
        return None
    groups: dict[str | None, tuple[int | None, int]] = {}
    spec: tuple[int | None, int]
    for i, layer in enumerate(layers):
        if type(layer) is DynamicSlidingWindowLayer:
            spec = (int(layer.sliding_window), cached(layer))
        elif type(layer) is DynamicLayer:
            spec = (None, cached(layer))
        else:
            return None
        name = None
        if types_ is not None and "sliding_attention" in types_:
            name = types_[i]
            if name not in LAYER_TYPES:
                return None
        if groups.setdefault(name, spec) != spec:
            return None
    return groups


def _keep_all_update(layer: Any, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """DynamicLayer.update on any layer: every slot kept, a sliding layer's too (its window is the masks' job)."""
    if not layer.is_initialized:
        layer.lazy_initialization(key_states, value_states)
    layer.keys = torch.cat([layer.keys, key_states], dim=-2)
    layer.values = torch.cat([layer.values, value_states], dim=-2)
    if isinstance(getattr(layer, "cumulative_length", None), int):
        layer.cumulative_length += key_states.shape[-2]
    return layer.keys, layer.values


def group_names(model: Any, n_layers: int) -> list[str | None]:
    """The layer group (as `layer_groups` names them) of each of the model's `n_layers` cache layers."""
    types_ = getattr(text_config(model), "layer_types", None)
    return list(types_) if types_ is not None and "sliding_attention" in types_ else [None] * n_layers


def shared_cache(cache: Any, rows: int, keep_all: bool = False) -> Any:
    """A cache object over the same tensors as `cache`, repeated `rows` times along the batch without copying.
    `keep_all`: its sliding layers keep every slot a call adds (a sliding layer otherwise keeps the batch's last
    window-1 slots, which for left-padded rows of several lengths are not every row's last window-1 keys)."""
    view = copy.copy(cache)
    view.layers = [copy.copy(layer) for layer in cache.layers]
    for layer in view.layers:
        if rows > 1 and cached(layer):
            layer.keys = layer.keys.expand(rows, -1, -1, -1)
            layer.values = layer.values.expand(rows, -1, -1, -1)
        if keep_all:
            layer.update = types.MethodType(_keep_all_update, layer)
    return view


def _rows_update(layer: Any, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """A `rows_view` layer's update: [each row's cached keys ; the new keys], nothing kept."""
    if not cached(layer):
        return key_states, value_states
    keys, values, index = layer.keys, layer.values, layer.row_items
    if index is None:  # one item: a stride-0 view, concatenated exactly as DynamicLayer.update does
        shape = (key_states.shape[0], -1, -1, -1)
        keys, values = keys.expand(*shape), values.expand(*shape)
    else:
        keys, values = keys.index_select(0, index), values.index_select(0, index)
    return torch.cat([keys, key_states], dim=-2), torch.cat([values, value_states], dim=-2)


def rows_view(cache: Any, row_items: torch.Tensor | None) -> Any:
    """A cache object whose layers give row r the cached keys of item `row_items[r]` of `cache` (batch = items;
    `row_items` None: `cache` holds one item, shared by every row) beside the call's new keys, without storing them.
    `cache` is never modified."""
    view = copy.copy(cache)
    view.layers = []
    for layer in cache.layers:
        v = copy.copy(layer)
        v.row_items = row_items
        v.update = types.MethodType(_rows_update, v)  # the instance's own update; the class's stays as it is
        view.layers.append(v)
    return view


def upload(arrays: Sequence[np.ndarray], device: Any) -> list[torch.Tensor]:
    """Integer host arrays as int64 tensors on `device`, in one copy. On CUDA the copy goes through pinned memory
    without waiting: a copy from pageable memory first waits for every kernel already queued, so the host could
    not queue the next forward call while the GPU runs this one."""
    flat = np.concatenate([np.asarray(a, dtype=np.int64).ravel() for a in arrays]) if arrays else np.zeros(0, np.int64)
    t = torch.from_numpy(flat)
    device = torch.device(device)
    if device.type == "cuda":
        t = t.pin_memory().to(device, non_blocking=True)
    elif device.type != "cpu":
        t = t.to(device)
    out, k = [], 0
    for a in arrays:
        n = int(np.asarray(a).size)
        out.append(t[k: k + n].view(np.asarray(a).shape))
        k += n
    return out


def row_arrays(rows: Sequence[Row], bases: Sequence[int], pad_id: int, width: int = 0, n_rows: int = 0
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input_ids, position_ids, end) of right-padded rows as (rows, width) host arrays (at least `n_rows` x
    `width`: extra rows are all pads); row r's nodes sit at `bases[r] + depth` (its item's prefix length plus the
    node's depth).

    A pad slot gets the row's base position and end = its own index + 1, so it is nobody's ancestor and attends
    only to itself (no query row is fully masked, which would make softmax return NaN).
    """
    width = max([width] + [r.width for r in rows])
    n = max(n_rows, len(rows))
    ids = np.full((n, width), pad_id, dtype=np.int64)
    pos = np.zeros((n, width), dtype=np.int64)
    end = np.tile(np.arange(1, width + 1, dtype=np.int64), (n, 1))
    for i, (r, base) in enumerate(zip(rows, bases, strict=True)):
        ids[i, : r.width] = r.tokens
        pos[i] = base
        pos[i, : r.width] += r.depth
        end[i, : r.width] = r.end
    return ids, pos, end


def batch_inputs(rows: Sequence[Row], bases: Sequence[int], pad_id: int, device: Any
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`row_arrays` as (rows, width) tensors on `device` (one copy)."""
    ids, pos, end = upload(row_arrays(rows, bases, pad_id), device)
    return ids, pos, end


def tree_masks(windows: dict[str | None, int | None], positions: torch.Tensor, end: torch.Tensor,
               key_positions: Mapping[str | None, torch.Tensor | None], implementation: str, dtype: torch.dtype) -> Any:
    """The 4D masks (rows, 1, width, cached + width) of packed rows, per layer type (a dict) or one tensor.

    Key j of the row is visible to query i when j is i or an ancestor of i (`j <= i < end[j]`, depth-first
    layout) and, on a sliding layer, `positions[i] - positions[j] < window`. `key_positions[name]` (rows, n) gives
    the position of each cached slot the rows see (-1: empty, never visible; None: no cached slot); cached slot k
    is visible when filled and, on a sliding layer, less than `window` positions behind the query.
    """
    rows, width = positions.shape
    idx = torch.arange(width, device=positions.device)
    tree = (idx[None, None, :] <= idx[None, :, None]) & (idx[None, :, None] < end[:, None, :])
    out: dict[str | None, torch.Tensor] = {}
    for name, window in windows.items():
        keys = key_positions.get(name)
        n_cached = keys.shape[-1] if keys is not None else 0
        m = torch.empty((rows, 1, width, n_cached + width), dtype=torch.bool, device=positions.device)
        # a key at position p is visible from position q when p > q - window: compared directly (no (rows, width,
        # keys) tensor of differences); a cached slot also needs p >= 0 (filled)
        low = None if window is None else positions - window
        if n_cached:
            assert keys is not None  # n_cached is 0 without cached slots
            if low is None:
                m[:, 0, :, :n_cached] = (keys >= 0)[:, None, :]
            else:
                torch.gt(keys[:, None, :], low.clamp(min=-1)[:, :, None], out=m[:, 0, :, :n_cached])
        if low is None:
            m[:, 0, :, n_cached:] = tree
        else:
            torch.logical_and(tree, positions[:, None, :] > low[:, :, None], out=m[:, 0, :, n_cached:])
        if implementation == "eager":  # additive, in the model's dtype, as transformers' eager masks
            m = torch.zeros(m.shape, dtype=dtype, device=m.device).masked_fill_(~m, torch.finfo(dtype).min)
        out[name] = m
    return out if None not in out else out[None]
