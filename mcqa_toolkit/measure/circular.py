"""CircularEval (MMBench; Liu et al. 2023): a question counts as solved only if it is answered correctly under
every circular rotation of its options.

With k options the k rotations of one base order put every option once at every position, so a model that
prefers a position (or an option letter) cannot be right on all of them by that preference alone. The
records of an item are its shuffles; `rotations(base)` gives the k orders, and `circular_eval` checks that an
item's recorded permutations are exactly the rotations of its first one (`require_rotations=True`), or, with
False, counts an item as solved when all of its shuffles, whatever they are, are correct.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcqa_toolkit.measure.frames import DEFAULT_BY, finish, groups, prepare, single_answer, status_flags

__all__ = ["rotations", "is_rotation_set", "circular_eval"]


def rotations(base: Sequence[int]) -> list[tuple[int, ...]]:
    """The k circular rotations of the order `base` (base first): rotation r shows base[(pos + r) % k] at pos."""
    b = tuple(int(x) for x in base)
    return [b[r:] + b[:r] for r in range(len(b))]


def is_rotation_set(perms: Sequence[Sequence[int]]) -> bool:
    """True when `perms` are exactly the k rotations of one order, each once."""
    rows = [tuple(int(x) for x in p) for p in perms]
    return bool(rows) and sorted(rows) == sorted(rotations(rows[0]))


def circular_eval(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY,
                  require_rotations: bool = True) -> pd.DataFrame:
    """CircularEval per group over keyed single-answer items. Columns: by..., n_items, n_records, accuracy
    (share of correct records, the usual vanilla score), circular_accuracy (share of items correct under
    every rotation), n_rotation_sets (items whose permutations are the k rotations). With
    require_rotations=True an item whose permutations are not its k rotations raises ValueError (naming it)."""
    f, by = prepare(frame, by, ("item_id", "shuffle", "permutation", "answer", "correct", "status", "n_options"))
    f = single_answer(f)
    f = f[f["answer"] >= 0]
    if f.empty:
        raise ValueError("no keyed single-answer records: CircularEval needs one key among k options")
    f = f.assign(correct=status_flags(f)["correct"])
    rows = []
    for key, g in groups(f, by):
        per_item = g.sort_values("shuffle").groupby("item_id", sort=True)
        solved, rotated = [], 0
        for item_id, it in per_item:
            ok = is_rotation_set(list(it["permutation"]))
            if require_rotations and not ok:
                k = int(it["n_options"].iloc[0])
                raise ValueError(f"{key}: item {item_id!r} has {len(it)} shuffle(s) that are not the {k} rotations of "
                                 "one order; run k = n_options rotations, or pass require_rotations=False")
            rotated += ok
            solved.append(bool(it["correct"].all()))
        rows.append({**key, "n_items": len(solved), "n_records": len(g), "accuracy": float(g["correct"].mean()),
                     "circular_accuracy": float(np.mean(solved)), "n_rotation_sets": rotated})
    return finish(pd.DataFrame(rows))
