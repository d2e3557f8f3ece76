"""One block of items through the model: their item prefixes, then every item's trie rows in calls filled up to the
budget, then the hidden states at the scored positions (the LM head is heads.py's).

A block is one or several items, each a group of requests sharing an item prefix (the stem; for loglik the whole
prompt), on one run prefix (instruction + few-shot block, whose cache the engine keeps). Two steps:
1. `open_block`: the run cache gets the item prefixes. One item: its prefix is forwarded as one plain causal row on
   a view of the run cache (no mask of ours). Several items: their prefixes go in one
   call, packed as chains into rows as wide as the longest prefix (first fit, longest first: no padding beyond the
   rows' ends), with explicit masks (a real token sees the run prefix and the earlier tokens of its own chain; a
   pad slot sees itself only) and true positions, so each item's keys are those a call of its own would give, up
   to float rounding. Each item then sees its own chain's slots of its row; every other slot of that row is empty
   for it (position -1). The block's sliding layers keep every slot (masks.shared_cache's `keep_all`): a sliding
   layer keeps the batch's last window-1 slots, and for a short chain those would not be the keys it needs.
2. `forward_block`: the trie rows of all items (packing.plan_items), grouped by packing.plan_batches into calls of
   at most `max_batch_tokens` slots and `max_batch_rows` rows; each row sees its own item's cached slots
   (masks.rows_view, masks.tree_masks), so a call carries rows of several items.
Without masks of ours (attention implementations that take none) a block is one item: rows are then plain causal
sequences, which can only continue one contiguous cache. `score_parts` runs both steps and the LM head (heads.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import torch
from torch.profiler import record_function

from mcqa_toolkit.backends.hf.budget import ROW_TOKENS
from mcqa_toolkit.backends.hf.heads import head_logprobs
from mcqa_toolkit.backends.hf.masks import (
    layer_groups,
    row_arrays,
    rows_view,
    shared_cache,
    text_config,
    tree_masks,
    upload,
)
from mcqa_toolkit.backends.hf.packing import Row, plan_batches, plan_items
from mcqa_toolkit.backends.hf.tree import plan_call


class Unpackable(ValueError):
    """The model's cache after its run prefix takes no masks of ours: the block's items go one at a time."""


@dataclass
class BlockCache:
    """The cache rows continue. `cache` holds `cache_rows` batch entries; item i's keys are in entry `rows[i]`, and
    `bases[i]` is the position of its first trie node (run prefix + item prefix length). With masks of ours:
    `windows` per layer group (None: full attention) and `keys[group]` (items, slots): the position of each slot of
    the item's entry as the item sees it, -1 where a slot is empty (for it)."""

    cache: Any
    bases: list[int]
    rows: list[int]
    cache_rows: int = 1
    windows: dict[str | None, int | None] | None = None
    keys: dict[str | None, torch.Tensor] | None = None
    slots: dict[str | None, np.ndarray] | None = None  # `keys` on the host (tree attention plans from them)

    @property
    def items(self) -> int:
        return len(self.bases)


def pack_chains(lengths: Sequence[int]) -> tuple[list[tuple[int, int]], int, int]:
    """(row, start) of each chain, the number of rows and their width: first fit, longest first, into rows as wide
    as the longest chain (an empty chain sits at (0, 0) and takes no slot)."""
    width = max(lengths, default=0)
    used: list[int] = []
    place = [(0, 0)] * len(lengths)
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if not lengths[i]:
            continue
        row = next((r for r, u in enumerate(used) if u + lengths[i] <= width), len(used))
        if row == len(used):
            used.append(0)
        place[i] = (row, used[row])
        used[row] += lengths[i]
    return place, max(len(used), 1), width


def _slot_positions(run_slots: int, run_len: int, place: Sequence[tuple[int, int]], lengths: Sequence[int],
                    width: int, keep: int) -> np.ndarray:
    """(items, keep): the positions item i sees in the last `keep` slots of its row, [`run_slots` run slots ;
    `width` chain slots], its own chain at `place[i]`, every other chain slot -1."""
    new = np.full((len(lengths), width), -1, dtype=np.int64)
    for i, ((_, start), n) in enumerate(zip(place, lengths, strict=True)):
        new[i, start: start + n] = np.arange(run_len, run_len + n)
    run = np.broadcast_to(np.arange(run_len - run_slots, run_len), (len(lengths), run_slots))
    full = np.concatenate([run, new], axis=1)
    return full[:, full.shape[1] - keep:]


def _chain_rows(place: Sequence[tuple[int, int]], prefixes: Sequence[Sequence[int]], n_rows: int, width: int,
                run_len: int, pad: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, positions, ends) of the item prefixes packed as chains: a chain's node sees the chain's earlier nodes
    (end = the chain's end); a pad slot only itself (end = its index + 1)."""
    ids = np.full((n_rows, width), pad, dtype=np.int64)
    pos = np.full((n_rows, width), run_len, dtype=np.int64)
    end = np.tile(np.arange(1, width + 1, dtype=np.int64), (n_rows, 1))
    for (row, start), p in zip(place, prefixes, strict=True):
        ids[row, start: start + len(p)] = p
        pos[row, start: start + len(p)] = np.arange(run_len, run_len + len(p))
        end[row, start: start + len(p)] = start + len(p)
    return ids, pos, end


def open_block(engine: Any, run_cache: Any, run_len: int, prefixes: Sequence[Sequence[int]], packed: bool
               ) -> BlockCache:
    """The block's cache: a view of `run_cache` (None: no run prefix) plus each item's prefix tokens (`prefixes`,
    past the run prefix), forwarded in one call. Several items need `packed` (masks of ours)."""
    lm, stats = engine.lm, engine.stats
    n = len(prefixes)
    lengths = [len(p) for p in prefixes]
    place, n_rows, width = pack_chains(lengths) if n > 1 else ([(0, 0)], 1, lengths[0])
    with record_function("mcqa::cache"):
        cache = engine.new_cache() if run_cache is None else shared_cache(run_cache, n_rows, keep_all=n > 1)
        if run_cache is None and n > 1:
            cache = shared_cache(cache, 1, keep_all=True)
    groups = layer_groups(lm.model, cache) if packed else None
    if n > 1 and groups is None:
        raise Unpackable("several items in one block need packed rows (masks of ours)")
    if width and n == 1:
        engine.forward(upload([np.array([prefixes[0]])], lm.device)[0], cache)
    elif width:
        assert groups is not None  # n > 1 here, and several items without groups raised above
        with record_function("mcqa::masks"):
            ids, pos, end = _chain_rows(place, prefixes, n_rows, width, run_len, lm.tokenizer.pad_token_id or 0)
            keys = [_slot_positions(k, run_len, [(0, 0)] * n_rows, [0] * n_rows, 0, k) for _, k in groups.values()]
            ids_t, pos_t, end_t, *keys_t = upload([ids, pos, end, *keys], lm.device)
            masks = tree_masks({g: w for g, (w, _) in groups.items()}, pos_t, end_t,
                               dict(zip(groups, keys_t, strict=True)),
                               text_config(lm.model)._attn_implementation, engine.dtype)
        engine.forward(ids_t, cache, attention_mask=masks, position_ids=pos_t)
        stats.padded += n_rows * width - sum(lengths)
    stats.forwarded += sum(lengths)
    bases = [run_len + k for k in lengths]
    rows = [r for r, _ in place]
    after = layer_groups(lm.model, cache) if groups is not None else None
    if after is None:
        return BlockCache(cache, bases, rows, n_rows)
    assert groups is not None  # `after` is read only with groups
    keys = [_slot_positions(groups[g][1], run_len, place, lengths, width, k) for g, (_, k) in after.items()]
    return BlockCache(cache, bases, rows, n_rows, {g: w for g, (w, _) in after.items()},
                      dict(zip(after, upload(keys, lm.device), strict=True)), dict(zip(after, keys, strict=True)))


def _forward_rows(engine: Any, rows: list[Row], block: BlockCache) -> torch.Tensor:
    """Hidden states (rows, width, hidden) of one call of rows, each on its own item's cached slots."""
    if engine.tree and block.windows is not None:
        return _forward_tree(engine, rows, block)
    lm = engine.lm
    with record_function("mcqa::masks"):
        arrays = row_arrays(rows, [block.bases[r.item] for r in rows], lm.tokenizer.pad_token_id or 0)
        index = [np.array([r.item for r in rows])] if block.items > 1 else []
        index += [np.array([block.rows[r.item] for r in rows])] if block.cache_rows > 1 else []
        ids, positions, end, *index_t = upload([*arrays, *index], lm.device)
        items = index_t[0] if block.items > 1 else None
        cache_rows = index_t[-1] if block.cache_rows > 1 else None
        extra: dict[str, Any] = {}
        if block.windows is not None:
            assert block.keys is not None  # set with windows
            keys = {g: (k.expand(len(rows), -1) if items is None else k.index_select(0, items))
                    for g, k in block.keys.items()}
            extra = {"attention_mask": tree_masks(block.windows, positions, end, keys,
                                                  text_config(lm.model)._attn_implementation, engine.dtype),
                     "position_ids": positions}
    with record_function("mcqa::cache"):
        view = rows_view(block.cache, cache_rows)
    hidden = engine.forward(ids, view, **extra)
    real = sum(r.width for r in rows)
    engine.stats.forwarded += real
    engine.stats.padded += ids.numel() - real
    return hidden


def _forward_tree(engine: Any, rows: list[Row], block: BlockCache) -> torch.Tensor:
    """`_forward_rows` with tree attention (tree.py): the call's plan instead of masks and per-row cache views."""
    lm = engine.lm
    assert block.windows is not None and block.slots is not None  # set together with the block's keys
    with record_function("mcqa::masks"):
        ids, positions, end = row_arrays(rows, [block.bases[r.item] for r in rows], lm.tokenizer.pad_token_id or 0)
        plan = plan_call(block.cache, engine.groups(len(block.cache.layers)), block.windows, block.slots, positions,
                         end, np.array([r.item for r in rows]), np.array(block.rows), engine.dtype, lm.device,
                         engine.linear_fn)
        ids_t, positions_t = upload([ids, positions], lm.device)
    hidden = engine.forward_tree(ids_t, positions_t, plan)
    real = sum(r.width for r in rows)
    engine.stats.forwarded += real
    engine.stats.padded += ids.size - real
    return hidden


def scored_slots(batch: Sequence[Row], n_scored: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scored slots of one call: (request k of every scored node, in request order and along its path; the
    index of its slot among the call's distinct scored slots; those slots as (row, column), in order of first
    use). Options sharing a context share its slot (kept once)."""
    width = max(r.width for r in batch)
    ks, cols, rows = [], [], []
    for i, row in enumerate(batch):
        for k, path in row.paths.items():
            ks.append(k)
            cols.append(path[len(path) - n_scored[k]:])
            rows.append(i)
    n = np.fromiter(map(len, cols), dtype=np.int64, count=len(cols))
    req = np.repeat(np.asarray(ks, dtype=np.int64), n)
    flat = np.repeat(np.asarray(rows, dtype=np.int64), n) * width + np.fromiter(
        chain.from_iterable(cols), dtype=np.int64, count=int(n.sum()))
    slots, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # distinct slots in order of first use
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    used = slots[order]
    return req, rank[inverse.ravel()], np.stack([used // width, used % width])


def forward_block(engine: Any, block: BlockCache, batches: Sequence[list[Row]], n_scored: Sequence[int]
                  ) -> tuple[torch.Tensor, tuple[np.ndarray, np.ndarray]]:
    """(hidden states at the scored positions, (their indices into them in request order, the count per
    request)) over every call of `batches`. Request k (numbered across the block's items, as packing.plan_items
    numbers paths) reads the hidden states at the last `n_scored[k]` nodes of its path; a call's scored slots are
    gathered with one indexing of its output (scored_slots)."""
    hidden, reqs, index, offset = [], [], [], 0
    for batch in batches:
        req, idx, (at, col) = scored_slots(batch, n_scored)
        out = _forward_rows(engine, batch, block) if engine.static is None or block.windows is None else \
            engine.static.forward(batch, block)
        at_t, col_t = upload([at, col], out.device)
        hidden.append(out[at_t, col_t])
        reqs.append(req)
        index.append(idx + offset)
        offset += len(at)
    req, idx = np.concatenate(reqs), np.concatenate(index)
    order = np.argsort(req, kind="stable")  # a request's nodes are in one row, in path order
    return torch.cat(hidden), (idx[order], np.bincount(req, minlength=len(n_scored)))


def score_parts(engine: Any, parts: list[Any]) -> list[list[np.ndarray]]:
    """Items (parts.Part) on one run prefix: their prefixes in one call, their trie rows in budgeted calls, then one
    LM-head pass over the scored positions of all of them; one item at a time where the model's cache takes no
    masks of ours once it holds the run prefix (the engine then packs no more blocks)."""
    try:
        return _score_items(engine, parts)
    except Unpackable:
        if len(parts) == 1:
            raise
        engine._masks_ok = False
        return [_score_items(engine, [p])[0] for p in parts]


def _score_items(engine: Any, parts: list[Any]) -> list[list[np.ndarray]]:
    run = parts[0].run
    ends = [p.item_prefix_end for p in parts]
    run_cache = engine._prefix_cache(run) if run else None
    block = open_block(engine, run_cache, len(run),
                       [p.reqs[0].tokens[len(run):e] for p, e in zip(parts, ends, strict=True)],
                       engine.packed)
    with record_function("mcqa::plan"):
        width = engine.row_tokens or ROW_TOKENS["tree" if engine.tree else "masks"]
        rows = plan_items([[r.tokens[e: r.needed] for r in p.reqs] for p, e in zip(parts, ends, strict=True)], width,
                          packed=block.windows is not None)
        batches = plan_batches(rows, engine.max_batch_tokens, engine.max_batch_rows)
    reqs = [r for p in parts for r in p.reqs]
    hidden, scored = forward_block(engine, block, batches, [r.n_scored for r in reqs])
    with record_function("mcqa::head"):
        values = head_logprobs(engine.lm.model, reqs, scored, hidden, engine.head_rows, engine.stats,
                               engine.head_vocab, engine.linear_fn)
    out, k = [], 0
    for p in parts:
        out.append(values[k: k + len(p.reqs)])
        k += len(p.reqs)
    return out
