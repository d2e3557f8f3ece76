"""Paired bootstrap of the accuracy difference between two runs (or models, strategies, languages) on the same
items, beside the McNemar test of measure.compare.

Each item is one pair: its accuracy under a and under b (the mean over its shuffles, so shuffles are not
counted as independent items), d_i = acc_a,i - acc_b,i. The difference is mean(d); resampling the items with
replacement n_boot times gives its percentile interval, and the two-sided p-value of "no difference" is the
share of resampled differences at least as far from the observed one as the observed one is from 0
((1 + #{|d* - d| >= |d|}) / (n_boot + 1), the shifted paired bootstrap of Berg-Kirkpatrick et al. 2012).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from mcqa_toolkit.measure.frames import finish, groups, per_item, two_conditions
from mcqa_toolkit.measure.scores import bootstrap_means

__all__ = ["paired_bootstrap"]


def paired_bootstrap(frame: pd.DataFrame, between: str = "run_id", a: str = "", b: str = "",
                     pair_on: str = "item_id", by: str | Sequence[str] = (), n_boot: int = 10_000,
                     level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap per group of accuracy(a) - accuracy(b) over the items both answered (see the module
    docstring). between: the column telling a from b (run_id, model, strategy, language); pair_on: what
    pairs records (item_id; parallel_id for two languages). Columns: by..., a, b, n_items, n_unpaired,
    accuracy_a, accuracy_b, diff, ci_low, ci_high, p_value, n_boot."""
    if n_boot < 1 or not 0 < level < 1:
        raise ValueError(f"n_boot must be >= 1 and level in (0, 1), got {n_boot}, {level}")
    f, by = two_conditions(frame, by, (between, pair_on, "item_id", "correct", "status"), between, a, b)
    ids = f[list(dict.fromkeys([*by, between, "item_id", pair_on]))].drop_duplicates()
    items = per_item(f, [*by, between]).merge(ids, on=[*by, between, "item_id"])
    if items.duplicated([*by, between, pair_on]).any():
        raise ValueError(f"several items share one {pair_on} within a {between}: pairs are ambiguous")
    wide = items.set_index([*by, pair_on, between])["accuracy"].unstack(between).reindex(columns=[a, b])
    rows = []
    rng = np.random.default_rng(seed)
    for key, g in groups(wide.reset_index(), by):
        paired = g[[a, b]].notna().all(axis=1)
        d = (g.loc[paired, a] - g.loc[paired, b]).to_numpy(dtype=float)
        row = {**key, "a": a, "b": b, "n_items": int(d.size), "n_unpaired": int((~paired).sum()),
               "accuracy_a": float(g.loc[paired, a].mean()) if d.size else np.nan,
               "accuracy_b": float(g.loc[paired, b].mean()) if d.size else np.nan,
               "diff": float(d.mean()) if d.size else np.nan, "ci_low": np.nan, "ci_high": np.nan,
               "p_value": np.nan, "n_boot": n_boot}
        if d.size:
            draws = bootstrap_means(d[:, None], n_boot, rng)[:, 0]
            lo, hi = np.quantile(draws, [(1 - level) / 2, 1 - (1 - level) / 2])
            far = int((np.abs(draws - row["diff"]) >= abs(row["diff"]) - 1e-12).sum())
            row.update(ci_low=float(lo), ci_high=float(hi), p_value=(1 + far) / (n_boot + 1))
        rows.append(row)
    return finish(pd.DataFrame(rows))
