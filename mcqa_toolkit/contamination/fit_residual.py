"""The 3PL-residual detector: per item, the model's observed minus expected share correct under the human 3PL at the
model's ability. A seen item would be answered right beyond the model's ability; but a model's knowledge is not the
humans', and language models misfit human IRT for reasons of their own."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcqa_toolkit import irt
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.abilities import item_parameters, model_abilities, response_matrix

__all__ = ["fit_residual"]


def fit_residual(records: pd.DataFrame, items: ItemSet, by: Sequence[str] = ("model", "language")) -> pd.DataFrame:
    """Per model x language x item: observed minus expected share correct under the items' 3PL parameters at
    each shuffle's EAP theta (irt.item_residuals, persons = shuffles). Items without parameters are left out.
    Columns: by..., parallel_id, observed, expected, fit_residual."""
    by = list(by)
    params = item_parameters(items)
    out = []
    for key, g in records.groupby(by, sort=True):
        persons, ids, u = response_matrix(g, [*by, "shuffle"])
        keep = np.isin(ids, params.index)
        theta = model_abilities(g, items, [*by, "shuffle"])["theta"].to_numpy()
        p = params.loc[np.asarray(ids)[keep]]
        res = irt.item_residuals(u[:, keep], theta, p["a"], p["b"], p["c"])
        out.append(pd.DataFrame({**dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
                                 "parallel_id": np.asarray(ids)[keep], "observed": res.observed,
                                 "expected": res.expected, "fit_residual": res.residual}))
    return pd.concat(out, ignore_index=True)
