"""Headline numbers of one run (what `summary.json` and the run notebook's last cell report)."""
from __future__ import annotations

from typing import Any

import pandas as pd

from mcqa_toolkit.measure.frames import check_status, single_answer
from mcqa_toolkit.measure.position import position_bias
from mcqa_toolkit.measure.scores import accuracy, kappa
from mcqa_toolkit.run.columns import ANSWERED, STATUSES


def summarize_run(records: pd.DataFrame) -> dict[str, Any]:
    """JSON-ready headline numbers of one run: record counts per status (and `answered` = correct + partial +
    incorrect), records per question type, points earned / possible (error records left out of both and
    counted in `error`), and, when the run has keyed single-answer items, accuracy (+95% item-bootstrap CI),
    kappa, the position-bias distance per number of options and the count of chosen positions (None / absent
    otherwise)."""
    status = check_status(records)
    graded = records[status != "error"]
    out: dict[str, Any] = {
        "n_items": int(records["item_id"].nunique()), "n_records": int(len(records)),
        "shuffles": int(records["shuffle"].nunique()),
        "accuracy": None, "accuracy_ci_low": None, "accuracy_ci_high": None, "kappa": None,
        "answered": int(status.isin(ANSWERED).sum()), **{s: int((status == s).sum()) for s in STATUSES},
        "records_by_type": {str(k): int(v) for k, v in records.groupby("answer_type").size().items()},
        "points_earned": float(graded["points_earned"].sum()),
        "points_possible": float(graded["points_possible"].sum()),
    }
    single = single_answer(records)
    if (single["answer"] >= 0).any():
        row = accuracy(single, by=()).iloc[0]
        out.update(accuracy=float(row["accuracy"]), accuracy_ci_low=float(row["ci_low"]),
                   accuracy_ci_high=float(row["ci_high"]), kappa=float(kappa(single, by=()).iloc[0]["kappa"]))
    chosen = single[single["choice_position"] >= 0]
    if len(chosen):
        pb = position_bias(chosen, by=())
        out["position_tvd"] = {str(int(k)): float(v) for k, v in zip(pb["n_options"], pb["tvd"])}
        counts = chosen.groupby("choice_position").size()
        out["position_counts"] = {str(int(k)): int(v) for k, v in counts.items()}
    return out
