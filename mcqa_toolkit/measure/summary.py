"""Headline numbers of one run (what `summary.json` and the run notebook's last cell report)."""
from __future__ import annotations

from typing import Any

import pandas as pd

from mcqa_toolkit.measure.position import position_bias
from mcqa_toolkit.measure.scores import accuracy, kappa


def summarize_run(records: pd.DataFrame) -> dict[str, Any]:
    """Accuracy (+95% item-bootstrap CI), kappa, answer status counts, position-bias distance per number of
    options and the count of chosen positions. JSON-ready."""
    row = accuracy(records, by=()).iloc[0]
    out: dict[str, Any] = {
        "n_items": int(records["item_id"].nunique()), "n_records": int(len(records)),
        "shuffles": int(records["shuffle"].nunique()),
        "accuracy": float(row["accuracy"]), "accuracy_ci_low": float(row["ci_low"]),
        "accuracy_ci_high": float(row["ci_high"]), "kappa": float(kappa(records, by=()).iloc[0]["kappa"]),
        "answered": int((records["status"] == "answered").sum()),
        "unanswered": int((records["status"] == "unanswered").sum()),
        "refused": int((records["status"] == "refused").sum()),
    }
    answered = records[records["choice_position"] >= 0]
    if len(answered):
        pb = position_bias(answered, by=())
        out["position_tvd"] = {str(int(k)): float(v) for k, v in zip(pb["n_options"], pb["tvd"])}
        counts = answered.groupby("choice_position").size()
        out["position_counts"] = {str(int(k)): int(v) for k, v in counts.items()}
    return out
