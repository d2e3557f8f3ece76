"""Plan how a block's token tries are forwarded: packed rows of trie nodes, rows grouped into forward calls.

Below the item prefix, an item's sequences (every shuffle, and for loglik every option of every shuffle) form
a token trie. Each trie node must be forwarded once, attending to the cached prefix and to its own ancestors.
The trie is laid out depth-first, so the ancestors of a node are exactly the earlier nodes whose subtree
span covers it (`j <= i < end[j]`), which is what a row's attention mask encodes (see `masks.py`). The layout
is cut into rows of nearly equal width, each row starting with the ancestors of its first node, and rows are
right-padded into batches on a shared view of the cache: one forward call covers hundreds of tokens instead
of one call per trie node.

Row width is a trade-off: attention inside a row is computed densely under a mask, so every token pays for
every key of its row (cost ~ width), while each row costs one copy of the cached keys/values and repeats the
ancestors of its first node. Rows are planned per item (each item's trie hangs off its own cached prefix) and
tagged with the item; `plan_batches` then fills each forward call with the rows of several items up to the token
and row budgets. No torch here: plans are plain lists, tested on their own.
"""
from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np


def lcp(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences (tuples, lists) or of two `token_key`s (bytes:
    the length in bytes). Equal slices are compared in C (a binary search over slice comparisons), not element by
    element in Python: prompts of ~1,500 tokens share most of them."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def token_key(tokens: Sequence[int]) -> bytes:
    """A token sequence as big-endian uint32 bytes: bytes compare in the order tuples do (token by token, by
    value), sort and hash in C, and `lcp` of two keys // 4 is the tokens' common prefix."""
    a = array("I", tokens)
    if sys.byteorder == "little":
        a.byteswap()
    return a.tobytes()


def key_lcp(a: bytes, b: bytes) -> int:
    """The common prefix of two `token_key`s, in tokens."""
    return lcp(a, b) // 4


def unique_tokens(seqs: Sequence[Sequence[int]]) -> int:
    """Number of nodes in the token trie of `seqs` (sorted neighbours' common prefixes are shared)."""
    ordered = sorted(set(map(token_key, seqs)))
    return (sum(map(len, ordered)) // 4 - sum(key_lcp(a, b) for a, b in pairwise(ordered)))


@dataclass
class Row:
    """Trie nodes in depth-first order. `depth[i]` is the node's offset past the item prefix (its position is
    prefix length + depth), `end[i]` is one past the last node of its subtree in the row, `parent[i]` its parent
    (-1: the cached prefix), `paths[k]` the row indices of sequence k's tokens (k = the caller's index), `item`
    the item of the block whose cached prefix the row continues."""

    tokens: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    paths: dict[int, list[int]] = field(default_factory=dict)
    item: int = 0

    @property
    def width(self) -> int:
        return len(self.tokens)


def layout(seqs: Sequence[tuple[int, Sequence[int]]]) -> Row:
    """The trie of (key, tokens) pairs laid out depth-first: sorted sequences share their common prefixes."""
    row = Row()
    parent = row.parent
    prev = b""
    prev_path: list[int] = []
    for tk, key, seq in sorted(((token_key(seq), key, seq) for key, seq in seqs), key=lambda x: x[0]):
        path = prev_path[: key_lcp(prev, tk)]
        for d in range(len(path), len(seq)):
            parent.append(path[-1] if path else -1)
            row.tokens.append(seq[d])
            row.depth.append(d)
            path.append(len(row.tokens) - 1)
        row.paths[key] = path
        prev, prev_path = tk, path
    size = [1] * len(parent)
    for i in range(len(parent) - 1, -1, -1):
        if parent[i] >= 0:
            size[parent[i]] += size[i]
    row.end = [i + s for i, s in enumerate(size)]
    return row


def _cuts(depth: np.ndarray, width: int) -> list[int]:
    """Start indices of consecutive chunks of a depth-first layout, each fitting `width` with its ancestors.

    A chunk [a, b) costs (b - a) + depth[a] slots (its nodes plus the ancestors of its first node, repeated as
    its head). Each chunk ends where the next one is cheapest: at the b in (a, a + width - depth[a]] that
    maximises b - depth[b] (ending early pads this row by the same amount as a shallower next head saves).
    """
    n = len(depth)
    gain = np.arange(n) - depth
    cuts, a = [0], 0
    while True:
        last = a + width - int(depth[a])  # largest end of a chunk starting at a
        if last >= n:
            return cuts
        seg = gain[a + 1: last + 1]
        a = a + 1 + len(seg) - 1 - int(np.argmax(seg[::-1]))  # the latest of equally good ends
        cuts.append(a)


def plan_rows(seqs: Sequence[Sequence[int]], row_tokens: int) -> list[Row]:
    """Rows of about `row_tokens` trie nodes (at least the longest sequence) covering every sequence.

    The whole trie is laid out depth-first once and cut into about n_nodes / row_tokens consecutive chunks of
    (nearly) equal width, so rows batch with little padding; each chunk is preceded by the ancestors of its
    first node (the only nodes above it any of its nodes needs). A sequence goes to the row of its last node.
    """
    whole = layout(list(enumerate(seqs)))
    return _cut_rows(whole, _row_width(whole, row_tokens))


def _row_width(whole: Row, row_tokens: int) -> int:
    """The narrowest width that cuts the layout `whole` into no more rows than n_nodes / row_tokens (rounded up);
    at least its deepest path."""
    depth = np.asarray(whole.depth)
    n_nodes, longest = whole.width, int(depth.max(initial=-1)) + 1
    n_rows = max(1, -(-n_nodes // max(1, row_tokens)))
    lo, hi = max(longest, -(-n_nodes // n_rows)), max(longest, n_nodes)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if len(_cuts(depth, mid)) <= n_rows else (mid + 1, hi)
    return lo


def _cut_rows(whole: Row, width: int) -> list[Row]:
    """The layout `whole` cut into rows of at most `width` slots (`_cuts`), each with its first node's ancestors."""
    n_nodes = whole.width
    cuts = _cuts(np.asarray(whole.depth), width) + [n_nodes]
    owner = np.searchsorted(cuts, [path[-1] for path in whole.paths.values()], side="right") - 1
    members: dict[int, list[int]] = {}
    for key, c in zip(whole.paths, owner, strict=True):
        members.setdefault(int(c), []).append(key)
    rows = []
    for c, (a, b) in enumerate(pairwise(cuts)):
        head, g = [], whole.parent[a]
        while g >= 0:
            head.append(g)
            g = whole.parent[g]
        nodes = head[::-1] + list(range(a, b))
        local = {g: i for i, g in enumerate(nodes)}
        rows.append(Row(tokens=[whole.tokens[g] for g in nodes], depth=[whole.depth[g] for g in nodes],
                        end=[len(head) + min(b, whole.end[g]) - a for g in nodes],
                        parent=[local.get(whole.parent[g], -1) for g in nodes],
                        paths={k: [local[g] for g in whole.paths[k]] for k in members.get(c, [])}))
    return rows


def plan_chains(seqs: Sequence[Sequence[int]]) -> list[Row]:
    """One row per distinct sequence, no sharing: the layout for attention implementations that take no
    custom mask (rows are then plain causal sequences, right-padded)."""
    rows: dict[tuple[int, ...], Row] = {}
    for k, s in enumerate(seqs):
        t = tuple(s)
        if t not in rows:
            rows[t] = layout([(k, t)])
        else:
            rows[t].paths[k] = list(range(len(t)))
    return list(rows.values())


def plan_items(items: Sequence[Sequence[Sequence[int]]], row_tokens: int, packed: bool = True) -> list[Row]:
    """Rows of several items' sequences (`plan_rows`, or `plan_chains` when not `packed`), each row tagged with
    its item; path keys are numbered across the items in order (item 0's sequences first). Several items' rows
    are cut to one width (the widest any of them would get alone), so rows of different items share a call with
    little padding."""
    out, offset = [], 0
    wholes = [layout(list(enumerate(seqs))) for seqs in items] if packed else []
    width = max((_row_width(w, row_tokens) for w in wholes), default=0)
    for i, seqs in enumerate(items):
        if not packed:
            rows = plan_chains(seqs)
        else:
            rows = _cut_rows(wholes[i], width if len(items) > 1 else _row_width(wholes[i], row_tokens))
        for row in rows:
            row.item = i
            row.paths = {k + offset: p for k, p in row.paths.items()}
        out += rows
        offset += len(seqs)
    return out


def plan_batches(rows: Sequence[Row], max_tokens: int, max_rows: int) -> list[list[Row]]:
    """Group rows (widest first) into forward calls of at most `max_rows` rows and rows x width <= `max_tokens`
    (a single row wider than `max_tokens` is its own call)."""
    out: list[list[Row]] = []
    for row in sorted(rows, key=lambda r: -r.width):
        if out and len(out[-1]) < max_rows and (len(out[-1]) + 1) * out[-1][0].width <= max_tokens:
            out[-1].append(row)
        else:
            out.append([row])
    return out
