"""Seeded option permutations, and the maps between shown positions and original option indices.

A permutation is a tuple where `permutation[pos]` is the ORIGINAL option index shown at position `pos`
(the convention of `records.columns.RESPONSE_COLUMNS`). Permutations are drawn from a generator seeded by a
sha256 of (seed, key), with key usually the item_id, so an item's shuffles never depend on the order in
which items are processed, on the other items of the run, or on PYTHONHASHSEED.
"""
from __future__ import annotations

import hashlib
import itertools
import math
import random
from collections.abc import Sequence

__all__ = ["stable_seed", "permutations", "identity", "to_original", "to_position", "check_permutation"]


def stable_seed(*parts: object) -> int:
    """A 64-bit integer derived from `parts` with sha256: same parts -> same seed on every machine and run."""
    h = hashlib.sha256("\x1f".join(repr(p) for p in parts).encode("utf-8"))
    return int.from_bytes(h.digest()[:8], "big")


def identity(n_options: int) -> tuple[int, ...]:
    """The original order: (0, 1, ..., n_options - 1)."""
    return tuple(range(n_options))


def check_permutation(permutation: Sequence[int], n_options: int, name: str = "permutation") -> tuple[int, ...]:
    """`permutation` as a tuple, or ValueError naming `name` if it is not a permutation of range(n_options)."""
    perm = tuple(permutation)
    if not all(isinstance(p, int) for p in perm) or sorted(perm) != list(range(n_options)):
        raise ValueError(f"{name} {perm!r} is not a permutation of range({n_options})")
    return perm


def permutations(
    n_options: int, n_shuffles: int, *, seed: int, key: str, keep_original: bool = True
) -> list[tuple[int, ...]]:
    """`n_shuffles` option orders for one item, reproducible from (seed, key).

    Shuffle 0 is the identity when `keep_original`. The orders are all distinct while n_options! allows it;
    beyond that every order is used once before any repeats (a fresh shuffled pass over all orders),
    so with 3 options and 30 shuffles each of the 6 orders appears exactly 5 times.
    """
    if not isinstance(n_options, int) or n_options < 1:
        raise ValueError(f"n_options must be a positive int, got {n_options!r}")
    if not isinstance(n_shuffles, int) or n_shuffles < 1:
        raise ValueError(f"n_shuffles must be a positive int, got {n_shuffles!r}")
    if not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty str (e.g. the item_id), got {key!r}")
    rng = random.Random(stable_seed("permutations", seed, key, n_options))
    first = [identity(n_options)] if keep_original else []
    if math.factorial(n_options) <= n_shuffles + len(first):
        return (first + _cycled_passes(n_options, n_shuffles, rng, exclude_first=bool(first)))[:n_shuffles]
    out = list(first)
    seen = set(out)
    base = list(range(n_options))
    while len(out) < n_shuffles:  # rejection sampling: n! > n_shuffles, so collisions stay rare
        rng.shuffle(base)
        perm = tuple(base)
        if perm not in seen:
            seen.add(perm)
            out.append(perm)
    return out


def _cycled_passes(n_options: int, n: int, rng: random.Random, exclude_first: bool) -> list[tuple[int, ...]]:
    """Shuffled passes over all n_options! orders; the first pass skips the identity when it is already used."""
    every = list(itertools.permutations(range(n_options)))
    out: list[tuple[int, ...]] = []
    first_pass = True
    while len(out) < n:
        batch = [p for p in every if not (first_pass and exclude_first and p == identity(n_options))]
        rng.shuffle(batch)
        out.extend(batch)
        first_pass = False
    return out[:n]


def to_original(position: int, permutation: Sequence[int]) -> int:
    """Original option index of the option shown at `position`."""
    if not isinstance(position, int) or not 0 <= position < len(permutation):
        raise ValueError(f"position {position!r} is outside 0..{len(permutation) - 1}")
    return permutation[position]


def to_position(option_index: int, permutation: Sequence[int]) -> int:
    """Shown position of the original option `option_index`."""
    if not isinstance(option_index, int) or option_index not in permutation:
        raise ValueError(f"option_index {option_index!r} is not in permutation {tuple(permutation)!r}")
    return list(permutation).index(option_index)
