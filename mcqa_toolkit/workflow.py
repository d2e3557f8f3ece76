"""Job-level steps that run_model.ipynb and the CLI call: load items, build the strategy, summarise a run,
compute Min-K% prob, and write the run's summary JSON. Thin glue: the numbers come from metrics/stats.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.metrics import accuracy, kappa, position_bias
from mcqa_toolkit.runner import Strategy, strategy

SUMMARY = "summary.json"
MIN_K = "min_k.parquet"


def load_items(dataset: str, dataset_args: dict[str, Any] | None = None, language: str | None = None) -> ItemSet:
    """Items of a registered dataset, restricted to `language` (demo: loaded in that language only)."""
    args = dict(dataset_args or {})
    if dataset == "demo" and language is not None:
        args.setdefault("language", language)
    items = load(dataset, **args)
    if language is not None:
        items = items.filter(language=language)
        if not len(items):
            raise ValueError(f"dataset {dataset!r} has no items in language {language!r}")
    return items.filter(answer_type="single")


def build_strategy(spec: str | dict[str, Any], shots: int | None = None, shuffles: int | None = None,
                   seed: int | None = None, **fields: Any) -> Strategy:
    """A named or dict strategy with the notebook's overrides (None = keep the strategy's own value)."""
    overrides = {k: v for k, v in dict(shots=shots, shuffles=shuffles, seed=seed, **fields).items() if v is not None}
    return strategy(spec, **overrides)


def summarize_run(records: pd.DataFrame) -> dict[str, Any]:
    """Headline numbers of one run: accuracy (+CI), kappa, answer status counts, position-bias distance."""
    acc = accuracy(records, by=())
    kap = kappa(records, by=())
    row = acc.iloc[0]
    out: dict[str, Any] = {
        "n_items": int(records["item_id"].nunique()), "n_records": int(len(records)),
        "shuffles": int(records["shuffle"].nunique()),
        "accuracy": float(row["accuracy"]), "accuracy_ci_low": float(row["ci_low"]),
        "accuracy_ci_high": float(row["ci_high"]), "kappa": float(kap.iloc[0]["kappa"]),
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


def min_k_table(lm: Any, items: ItemSet, k: float = 0.2, with_options: bool = True) -> pd.DataFrame:
    """Min-K% prob of each item's question text (stem, and options when `with_options`) under `lm`."""
    from mcqa_toolkit.scoring.loglik import token_logprobs
    from mcqa_toolkit.scoring.prefix import PrefixScorer
    from mcqa_toolkit.stats import min_k_prob

    scorer = PrefixScorer(lm)
    rows = []
    for it in items:
        text = it.stem + ("\n" + "\n".join(it.options) if with_options and it.options else "")
        lp = token_logprobs(lm, text, scorer)
        rows.append({"model": lm.name, "language": it.language, "item_id": it.item_id,
                     "parallel_id": it.parallel_id, "min_k_prob": float(min_k_prob(lp, k)), "n_tokens": len(lp)})
    return pd.DataFrame(rows)


def write_summary(out_dir: str | Path, summary: dict[str, Any], params: dict[str, Any]) -> Path:
    """summary.json next to the run's records: headline numbers and the parameters that produced them."""
    path = Path(out_dir) / SUMMARY
    path.write_text(json.dumps({"params": params, **summary}, indent=2, default=str))
    return path
