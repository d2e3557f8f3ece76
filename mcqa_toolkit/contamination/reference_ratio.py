"""The reference-ratio detector (Carlini et al. 2021): the text's log-prob per byte minus a reference model's on the
same text (per byte, so the two may tokenise differently). It needs a reference that did not see the exam and is
otherwise alike; the best one, the model before its fine-tuning, only whoever trained the model has, so what it
measures is an upper bound on what an auditor of someone else's model can see."""
from __future__ import annotations

import pandas as pd

__all__ = ["reference_score"]


def reference_score(familiarity: pd.DataFrame, reference: pd.DataFrame) -> pd.Series:
    """Log-prob per byte minus the reference model's on the same item (matched on item_id); NaN for the
    reference model itself and for items it did not read. Both are familiarity tables."""
    models = set(reference["model"])
    if len(models) != 1:
        raise ValueError(f"the reference table must hold one model, it holds {sorted(models)}")
    ref = reference.drop_duplicates("item_id").set_index("item_id")
    per_byte = ref["loglik_sum"] / ref["n_bytes"]
    out = familiarity["loglik_sum"] / familiarity["n_bytes"] - familiarity["item_id"].map(per_byte)
    return out.where(familiarity["model"] != next(iter(models)))
