"""Headline numbers of one run (what `summary.json` and the run notebook's last cell report), including the
cost of an adaptive (CAT) run against the full test."""
from __future__ import annotations

import json
from typing import Any

import pandas as pd

from mcqa_toolkit.measure.frames import check_status, single_answer
from mcqa_toolkit.measure.position import position_bias
from mcqa_toolkit.measure.scores import accuracy, kappa
from mcqa_toolkit.records.columns import ANSWERED, STATUSES


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
        out["position_tvd"] = {str(int(k)): float(v) for k, v in zip(pb["n_options"], pb["tvd"], strict=True)}
        counts = chosen.groupby("choice_position").size()
        out["position_counts"] = {str(int(k)): int(v) for k, v in counts.items()}
    adaptive = adaptive_summary(records)
    if adaptive is not None:
        out["adaptive"] = adaptive
    return out


def adaptive_summary(records: pd.DataFrame) -> dict[str, Any] | None:
    """For a CAT run (records with extra["cat"]): items given per shuffle, why each CAT stopped, final theta
    and SE, and the cost in items and forwarded tokens next to the full test's. The full test's tokens are an
    estimate at this run's tokens per item (a real full run shares more prefix between shuffles, so compare
    with one for the exact saving: notebooks/15_adaptive). None for a fixed-form run."""
    cats = records["extra"].map(lambda e: json.loads(e).get("cat") if isinstance(e, str) else None)
    if cats.isna().any() or cats.empty:
        return None
    f = records.assign(position=[c["position"] for c in cats], theta_cat=[c["theta"] for c in cats],
                       se_cat=[c["se"] for c in cats], stop=[c["stop"] for c in cats])
    last = f.sort_values("position").groupby("shuffle").tail(1)
    n_bank, shuffles = int(cats.iloc[0]["n_bank"]), int(f["shuffle"].nunique())
    tokens = float(f["n_forwarded_tokens"].sum())
    full_tokens = tokens / len(f) * n_bank * shuffles
    return {"items_per_shuffle_mean": float(f.groupby("shuffle").size().mean()), "items_full_test": n_bank,
            "items_saved_pct": 100.0 * (1 - len(f) / (n_bank * shuffles)),
            "stop_reasons": {str(k): int(v) for k, v in last["stop"].value_counts().items()},
            "theta_final_mean": float(last["theta_cat"].mean()), "se_final_mean": float(last["se_cat"].mean()),
            "tokens_forwarded": tokens, "tokens_per_item": tokens / len(f),
            "tokens_full_test_estimate": full_tokens}
