"""The runs of a results folder at a glance: one row per run from its summary.json (what `mcqa run` prints as
each run finishes), and the headline table `mcqa demo` / `mcqa report` print at the end and the HTML report
opens with (accuracy and kappa per model x strategy, one column per language).

Only the side files of each run folder are read (summary, run.json, provenance), never the records, so this is instant
even for large grids.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from mcqa_toolkit.records.dataset import run_dataset
from mcqa_toolkit.records.results import complete_runs

# the headline numbers of a run's summary.json shown per run, and the overview table's columns
SUMMARY_KEYS = ("n_items", "shuffles", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "kappa", "unanswered",
                "points_earned", "points_possible", "min_k_prob_mean")
OVERVIEW_COLUMNS = ("model", "dataset", "language", "strategy", *SUMMARY_KEYS, "run_dir", "notebook")


def runs_frame(results_dir: str | Path) -> pd.DataFrame:
    """One row per complete run under `results_dir` (any depth) with its headline numbers and its files."""
    rows = []
    for rd in complete_runs(results_dir):   # records.store.RunDir.is_complete: records compacted, summary written
        summary, prov = rd.summary(), rd.provenance()
        strategy = prov.get("strategy", {})
        rows.append({
            "model": (prov.get("model") or {}).get("model", ""), "dataset": prov.get("dataset", ""),
            "language": run_dataset(rd).language or "all",
            "strategy": strategy.get("name", ""),
            **{k: summary.get(k) for k in SUMMARY_KEYS},
            "run_dir": rd.dir, "notebook": rd.notebook if rd.notebook.exists() else None})
    frame = pd.DataFrame(rows, columns=list(OVERVIEW_COLUMNS))
    return frame.sort_values(["model", "dataset", "strategy", "language"], kind="stable").reset_index(drop=True)


def _headline_cell(run: pd.Series) -> str:
    """ "accuracy (kappa)"; a run without single-answer items (no accuracy) shows its points instead."""
    if pd.notna(run["accuracy"]):
        return f"{run['accuracy']:.3f} ({run['kappa']:+.2f})" if pd.notna(run["kappa"]) else f"{run['accuracy']:.3f}"
    if pd.notna(run["points_possible"]) and run["points_possible"]:
        return f"{run['points_earned']:g}/{run['points_possible']:g} pts"
    return "n/a"


def headline_table(runs: pd.DataFrame, languages: list[str] | None = None) -> pd.DataFrame:
    """model x dataset x strategy rows, one "accuracy (kappa)" column per language, params order of languages."""
    if runs.empty:
        return pd.DataFrame()
    cells = runs.assign(cell=[_headline_cell(r) for _, r in runs.iterrows()])
    table = cells.pivot_table(index=["model", "dataset", "strategy"], columns="language", values="cell",
                              aggfunc="first")
    order = [lang for lang in (languages or []) if lang in table.columns]
    table = table[order + sorted(set(table.columns) - set(order))]
    table.columns.name = None
    return table.fillna("")


def headline_text(results_dir: str | Path, languages: list[str] | None = None) -> str:
    """The headline table as text: accuracy (kappa) per model x strategy x language."""
    runs = runs_frame(results_dir)
    if runs.empty:
        return f"no complete runs under {results_dir}"
    table = headline_table(runs, languages)
    counts = sorted(runs["n_items"].dropna().unique())
    items = ", ".join(f"{n:g}" for n in counts) if len(counts) <= 3 else f"{counts[0]:g} to {counts[-1]:g}"
    title = f"accuracy (Cohen's kappa) per model x strategy x language; {items} questions per run"
    return title + "\n" + table.to_string()


__all__ = ["runs_frame", "headline_table", "headline_text", "OVERVIEW_COLUMNS"]
