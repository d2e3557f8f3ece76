"""Simulated two-group DIF data shared by the DIF tests (tests/measure/dif/)."""
import numpy as np
import pandas as pd
from statsmodels.stats.contingency_tables import StratifiedTable

from mcqa_toolkit import irt


def simulate(n=500, n_items=20, shift=0.8, dif=(0, 1, 2, 3), impact=-0.5, seed=0, a=None, c=None, a_focal=None):
    """Seeded reference (theta ~ N(0, 1)) and focal (N(impact, 1)) groups, b ~ U(-1.5, 1.5); the `dif` items are
    `shift` harder for the focal group (b + shift); a_focal: the focal group's discriminations (non-uniform DIF)."""
    rng = np.random.default_rng(seed)
    a = np.ones(n_items) if a is None else a
    c = np.zeros(n_items) if c is None else c
    b = rng.uniform(-1.5, 1.5, n_items)                         # no item so extreme that it has no power
    b_f = b.copy()
    b_f[list(dif)] += shift
    u_r = irt.simulate_3pl(rng.normal(0, 1, n), a, b, c, rng)
    u_f = irt.simulate_3pl(rng.normal(impact, 1, n), a if a_focal is None else a_focal, b_f, c, rng)
    frame = pd.DataFrame(np.vstack([u_r, u_f]).astype(int), columns=[f"i{k:02d}" for k in range(n_items)])
    return frame, np.array(["ref"] * n + ["foc"] * n), pd.DataFrame({"a": a, "b": b, "c": c}, index=frame.columns)


def stratified_table(u, ref, codes, i):
    """statsmodels' StratifiedTable of item i over the strata `codes`, leaving out strata of one person (they carry
    no information and make its variance 0/0)."""
    tables = [[[(u[m & ref, i] == 1).sum(), (u[m & ref, i] == 0).sum()],
               [(u[m & ~ref, i] == 1).sum(), (u[m & ~ref, i] == 0).sum()]]
              for s in np.unique(codes[:, i]) if (m := codes[:, i] == s).sum() > 1]
    return StratifiedTable(np.moveaxis(np.array(tables, dtype=float), 0, -1))
