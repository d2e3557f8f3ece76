"""What every DIF method shares: the persons x items input checked (two groups of at least MIN_GROUP persons,
complete 0/1 patterns), block labels as codes, Benjamini-Hochberg control across items, and DifResult.

Input of every method: `responses`, persons x items of 0/1 (a DataFrame whose columns are the item ids; complete:
DIF needs every person's answer to every item), `group`, one label per person; persons in neither `focal` nor
`reference` are left out. Below MIN_GROUP persons in either group every method raises ValueError: with fewer, most
score strata hold one group only and the chi-square approximations have nothing to stand on (20 is this toolkit's
floor, not a literature value; operational DIF programmes use hundreds per group).
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from statsmodels.stats.multitest import multipletests

__all__ = ["MIN_GROUP", "DifResult", "check_groups", "block_codes", "bh_adjust", "with_bh"]

MIN_GROUP = 20          # persons per group below which every DIF function refuses (see the module docstring)


@dataclass(frozen=True)
class DifResult:
    """One DIF analysis: `table` has one row per item (its columns depend on `method`); `anchor` are the items
    in the matching criterion at the end (all items without purification), after `iterations` passes."""

    method: str
    focal: Hashable
    reference: Hashable
    table: pd.DataFrame
    anchor: tuple[str, ...] = ()
    iterations: int = 1
    converged: bool = True

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def summary(self) -> str:
        t = self.table
        classes = t["ets_class"] if "ets_class" in t else t.get("effect", pd.Series(dtype=str))
        counts = ", ".join(f"{k}: {v}" for k, v in classes.value_counts().sort_index().items())
        return (f"{self.method}, focal {self.focal!r} vs reference {self.reference!r}: {len(t)} items"
                + (f" ({counts})" if counts else "") + f"; {int(t['flag_bh'].sum())} flagged after Benjamini-Hochberg; "
                f"{int((t['note'] != '').sum())} with a note")


def check_groups(responses: pd.DataFrame, group: ArrayLike, focal: Hashable, reference: Hashable,
                 min_group: int = MIN_GROUP) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """(u, is_focal, item ids, kept): u (n, items) 0/1 of the persons in either group, is_focal (n,), and the mask
    of those persons among the input rows. Raises ValueError on a small group, missing or non-0/1 answers."""
    if not isinstance(responses, pd.DataFrame):
        raise TypeError("responses must be a persons x items DataFrame whose columns are the item ids")
    g = np.asarray(group, dtype=object)
    if g.shape != (len(responses),):
        raise ValueError(f"group has {g.size} labels for {len(responses)} persons")
    if focal == reference:
        raise ValueError(f"focal and reference are the same group {focal!r}")
    is_f, is_r = g == focal, g == reference
    n_f, n_r = int(is_f.sum()), int(is_r.sum())
    if min(n_f, n_r) < min_group:
        raise ValueError(f"DIF needs at least {min_group} persons per group: focal {focal!r} has {n_f}, reference "
                         f"{reference!r} has {n_r} (with language models, count every shuffle as a person)")
    kept = is_f | is_r
    u = responses.to_numpy(dtype=float)[kept]
    bad = np.isnan(u).any(axis=0)
    if bad.any():
        raise ValueError(f"item {responses.columns[int(np.argmax(bad))]!r} has missing answers: DIF needs complete "
                         "0/1 patterns (drop the item or the persons; dif_persons does)")
    if not np.isin(u, (0.0, 1.0)).all():
        raise ValueError("responses must be 0/1")
    return u, is_f[kept], [str(c) for c in responses.columns], kept


def block_codes(within: ArrayLike | None, kept: np.ndarray) -> np.ndarray:
    """Integer codes 0..B-1 of the block labels of the kept persons (all 0 without blocks)."""
    if within is None:
        return np.zeros(int(kept.sum()), dtype=np.int64)
    w = np.asarray(within, dtype=object)
    if w.shape != kept.shape:
        raise ValueError(f"within has {w.size} labels for {kept.size} persons")
    return pd.factorize(pd.Series(w[kept]).astype(str))[0].astype(np.int64)


def bh_adjust(p_values: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (statsmodels' multipletests, 'fdr_bh') over the finite entries;
    NaN stays NaN. An item is flagged at false-discovery rate q when its adjusted p-value is below q."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="fdr_bh")[1]
    return out


def with_bh(table: pd.DataFrame, alpha: float, p_column: str = "p_value") -> pd.DataFrame:
    """`table` with p_bh (Benjamini-Hochberg across its items) and flag_bh (p_bh < alpha) before `note`."""
    p_bh = bh_adjust(table[p_column])
    t = table.drop(columns=["p_bh", "flag_bh"], errors="ignore")
    at = t.columns.get_loc("note") if "note" in t else len(t.columns)
    t.insert(at, "p_bh", p_bh)
    t.insert(at + 1, "flag_bh", np.nan_to_num(p_bh, nan=1.0) < alpha)
    return t
