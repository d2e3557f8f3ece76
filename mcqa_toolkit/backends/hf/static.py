"""Static shapes for the packed rows' forward calls, captured as CUDA graphs on CUDA (the engine's `graphs` option).

Why: on a GPU a forward call launches a few thousand kernels, and their host cost (Python, modules, dispatcher:
~36 us a launch, ~80 ms a call for Gemma-3-1B on an H100) exceeds a small call's GPU work. A CUDA graph replays a
captured call in one launch, but only on the shapes and memory it was captured with. So here a call's shape is
bucketed: rows rounded up to a power of two (up to 16, then to a multiple of 16), width to a multiple of 64, each
layer group's cached slots to a multiple of 256, the block's items and cache entries to powers of two; the call's
inputs (token ids, positions, subtree ends, each row's item and cache entry) and the block's cache are copied into
buffers preallocated per bucket, and the masks are computed from them inside the call. Extra rows are all pads
(each attends to itself), extra width is pads, extra cached slots are empty (position -1): every real token
attends exactly as in the dynamic path, so results differ from it by float rounding only.

On CUDA each call bucket is captured once (after a warm-up on a side stream; one memory pool for all of them) and
replayed; on other devices, or after a capture failed (one warning; the run goes on), the very same static call
runs eagerly, which is what the CPU tests exercise. Item and run prefixes stay dynamic (one call per block and
one per run). Memory: buffers and graphs are kept per bucket, and a padded call may hold up to twice the rows
planned under `max_batch_rows`.
"""
from __future__ import annotations

import copy
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.profiler import record_function

from mcqa_toolkit.backends.hf.masks import (
    attention_kernels,
    cached,
    group_names,
    row_arrays,
    rows_view,
    text_config,
    tree_masks,
)
from mcqa_toolkit.backends.hf.packing import Row

WIDTH_STEP, SLOT_STEP, ROW_STEP = 64, 256, 16
MAX_CACHE_BUCKETS = 4   # cache buckets kept (each holds a block's K/V and the graphs captured on it)


def round_up(n: int, step: int) -> int:
    """`n` rounded up to a multiple of `step` (0 stays 0)."""
    return -(-n // step) * step


def row_bucket(n: int) -> int:
    """Rows of a call's bucket: a power of two up to ROW_STEP, then a multiple of ROW_STEP."""
    return 1 << max(0, n - 1).bit_length() if n <= ROW_STEP else round_up(n, ROW_STEP)


@dataclass
class _CacheBucket:
    """Preallocated copies of a block's cache: K/V per layer (items, heads, slots, dim), the position of every
    slot per layer group (-1: empty), and the cache object whose layers hold them."""

    cache: Any
    keys: dict[str | None, torch.Tensor]
    windows: dict[str | None, int | None]


@dataclass
class _Call:
    """One call bucket: its input buffer (ids, positions, ends, row items, flat), its graph and output."""

    inputs: torch.Tensor
    rows: int
    width: int
    graph: Any = None
    out: torch.Tensor | None = None
    run: Callable[[], torch.Tensor] = field(kw_only=True, repr=False)


class StaticRows:
    """Runs the rows' calls of packed blocks on bucketed static shapes; `capture` (CUDA only) records each bucket's
    call as a CUDA graph and replays it."""

    def __init__(self, engine: Any, capture: bool = True):
        self.engine = engine
        self.capture = capture and engine.lm.device.type == "cuda"
        self.failed = False
        self._caches: dict[tuple, _CacheBucket] = {}
        self._calls: dict[tuple, _Call] = {}
        self._loaded: tuple[Any, tuple] | None = None   # (weak reference to the block, its cache bucket key)
        self._pool: Any = None

    def _load(self, block: Any) -> tuple:
        """Copy `block`'s cache into its cache bucket (created on first use); returns the bucket's key."""
        if self._loaded is not None and self._loaded[0]() is block:
            return self._loaded[1]
        items = 1 << max(0, block.items - 1).bit_length()
        entries = 1 << max(0, block.cache_rows - 1).bit_length()
        slots = {g: round_up(k.shape[1], SLOT_STEP) for g, k in block.keys.items()}
        key = (entries, items, tuple(sorted(slots.items(), key=lambda kv: str(kv[0]))))
        bucket = self._caches.get(key)
        names = group_names(self.engine.lm.model, len(block.cache.layers))
        if bucket is None:
            while len(self._caches) >= MAX_CACHE_BUCKETS:  # the oldest bucket goes, with the graphs captured on it
                old = next(iter(self._caches))
                del self._caches[old]
                self._calls = {k: c for k, c in self._calls.items() if k[0] != old}
            layers = []
            for layer, name in zip(block.cache.layers, names, strict=True):
                static = copy.copy(layer)
                if cached(layer):
                    shape = (entries, layer.keys.shape[1], slots[name], layer.keys.shape[3])
                    static.keys = torch.zeros(shape, dtype=layer.keys.dtype, device=layer.keys.device)
                    static.values = torch.zeros(shape, dtype=layer.values.dtype, device=layer.values.device)
                layers.append(static)
            cache = copy.copy(block.cache)
            cache.layers = layers
            keys = {g: torch.full((items, n), -1, dtype=torch.long, device=self.engine.lm.device)
                    for g, n in slots.items()}
            bucket = self._caches[key] = _CacheBucket(cache, keys, dict(block.windows))
        for static, layer in zip(bucket.cache.layers, block.cache.layers, strict=True):
            n = cached(layer)
            if n:
                static.keys[: block.cache_rows, :, :n].copy_(layer.keys.expand(block.cache_rows, -1, -1, -1))
                static.values[: block.cache_rows, :, :n].copy_(layer.values.expand(block.cache_rows, -1, -1, -1))
        for g, k in block.keys.items():
            bucket.keys[g].fill_(-1)
            bucket.keys[g][: block.items, : k.shape[1]].copy_(k)
        self._loaded = (weakref.ref(block), key)
        return key

    def _new_call(self, bucket: _CacheBucket, rows: int, width: int) -> _Call:
        engine = self.engine
        lm = engine.lm
        inputs = torch.zeros(3 * rows * width + 2 * rows, dtype=torch.long, device=lm.device)
        ids, pos, end = (inputs[k * rows * width: (k + 1) * rows * width].view(rows, width) for k in range(3))
        items, entries = inputs[3 * rows * width: 3 * rows * width + rows], inputs[3 * rows * width + rows:]
        impl = text_config(lm.model)._attn_implementation

        def run() -> torch.Tensor:
            with attention_kernels(lm.device):
                keys = {g: k.index_select(0, items) for g, k in bucket.keys.items()}
                masks = tree_masks(bucket.windows, pos, end, keys, impl, engine.dtype)
                return lm.body(input_ids=ids, **{engine._cache_arg: rows_view(bucket.cache, entries)},
                                           use_cache=True, attention_mask=masks, position_ids=pos).last_hidden_state
        return _Call(inputs, rows, width, run=run)

    def _capture(self, call: _Call) -> None:
        """Warm up on a side stream, capture the call as a CUDA graph (shared memory pool) and replay it; on any
        failure warn once and run the static calls eagerly from then on."""
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                call.run()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                out = call.run()
            self._pool = graph.pool()
            call.graph, call.out = graph, out
            graph.replay()
        except Exception as e:  # a model or kernel that cannot be captured: same numbers, eager
            self.failed = True
            warnings.warn(f"CUDA graph capture failed ({type(e).__name__}: {e}); the engine's static calls run "
                          "without graphs", RuntimeWarning, stacklevel=3)
            call.graph, call.out = None, call.run()

    def forward(self, rows: Sequence[Row], block: Any) -> torch.Tensor:
        """Hidden states (rows, width, hidden) of one call of `rows` (of a packed block), on static shapes."""
        engine = self.engine
        with record_function("mcqa::cache"):
            key = self._load(block)
        width = max(r.width for r in rows)
        n_rows, n_width = row_bucket(len(rows)), round_up(width, WIDTH_STEP)
        call = self._calls.get((key, n_rows, n_width))
        fresh = call is None
        if call is None:
            call = self._calls[key, n_rows, n_width] = self._new_call(self._caches[key], n_rows, n_width)
        with record_function("mcqa::masks"):
            ids, pos, end = row_arrays(rows, [block.bases[r.item] for r in rows], engine.lm.tokenizer.pad_token_id or 0,
                                       n_width, n_rows)
            index = np.zeros((2, n_rows), dtype=np.int64)  # each row's item, and its item's cache entry
            index[0, : len(rows)] = [r.item for r in rows]
            index[1, : len(rows)] = [block.rows[r.item] for r in rows]
            host = torch.from_numpy(np.concatenate([ids.ravel(), pos.ravel(), end.ravel(), index.ravel()]))
            call.inputs.copy_(host.pin_memory() if call.inputs.is_cuda else host, non_blocking=True)
        engine.stats.calls += 1
        with record_function("mcqa::body"):
            if call.graph is not None:
                call.graph.replay()
            elif fresh and self.capture and not self.failed:
                self._capture(call)
            else:
                call.out = call.run()
        real = sum(r.width for r in rows)
        engine.stats.forwarded += real
        engine.stats.padded += n_rows * n_width - real
        assert call.out is not None  # set by the run or the capture above
        return call.out[: len(rows), :width]
