"""A block's items as the engine schedules them: each item's distinct requests and its run prefix (`Part`), and
which items share forward calls (`chunks`).

Host work per request is a few C-level operations on its token key (packing.token_key: one conversion per
request, then hashing, sorting and common prefixes in C), not a Python loop over its ~1,500 tokens: on a GPU the
host prepares the next calls while the device computes, and this is part of what it prepares.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from mcqa_toolkit.backends.hf.packing import key_lcp, token_key
from mcqa_toolkit.backends.hf.request import Request


@dataclass
class Part:
    """One item of a block: its distinct requests, where each caller request went, and its run prefix."""

    reqs: list[Request]
    order: list[int]
    run: tuple[int, ...]

    @cached_property
    def item_prefix_end(self) -> int:
        """End of the item prefix: common to all sequences, before the first position whose logits are needed."""
        plen = min(r.first_scored for r in self.reqs)
        first = token_key(self.reqs[0].tokens)
        for r in self.reqs[1:]:
            plen = min(plen, key_lcp(first, token_key(r.tokens[:plen])))
        return max(plen, len(self.run))


def make_part(requests: Sequence[Request], shared_prefix: Sequence[int]) -> Part:
    """An item's Part: identical requests kept once (`order`: each caller request's index among them), its run
    prefix `shared_prefix` kept only when every request extends it past its first scored position."""
    uniq: dict[tuple, int] = {}
    order = [uniq.setdefault((r.tokens, r.n_context, r.candidates), len(uniq)) for r in requests]
    reqs = [Request(*k) for k in uniq]
    run = tuple(shared_prefix)
    n = len(run)
    if run and not all(len(r.tokens) > n and r.first_scored >= n and r.tokens[:n] == run for r in reqs):
        run = ()
    return Part(reqs, order, run)


def chunks(parts: list[Part], packed: bool, max_tokens: int, max_rows: int) -> list[list[int]]:
    """Indices of the items scored together: same run prefix (in order of first appearance), item prefixes
    fitting one call (items x longest item prefix <= max_tokens, items <= max_rows); one item per chunk without
    packed rows."""
    by_run: dict[tuple[int, ...], list[int]] = {}
    for i, p in enumerate(parts):
        if p.reqs:
            by_run.setdefault(p.run, []).append(i)
    if not packed:
        return [[i] for idx in by_run.values() for i in idx]
    out: list[list[int]] = []
    for idx in by_run.values():
        chunk: list[int] = []
        width = 0
        for i in idx:
            w = max(width, parts[i].item_prefix_end - len(parts[i].run))
            if chunk and (len(chunk) >= max_rows or (len(chunk) + 1) * w > max_tokens):
                out.append(chunk)
                chunk, w = [], parts[i].item_prefix_end - len(parts[i].run)
            chunk.append(i)
            width = w
        out.append(chunk)
    return out
