"""The readers that gather many run folders: every run under a folder as one tidy frame, and their Min-K%
tables. What measure/, report/, interop/ and the notebooks read."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from mcqa_toolkit.records.store import MIN_K, RECORDS_JSONL, RECORDS_PARQUET, RunDir

__all__ = ["run_dirs", "complete_runs", "load_results", "load_min_k"]


def run_dirs(outputs_dir: str | Path) -> list[RunDir]:
    """Every run folder under `outputs_dir` (any depth), sorted by path."""
    root = Path(outputs_dir)
    found = {p.parent for name in (RECORDS_JSONL, RECORDS_PARQUET) for p in root.rglob(name)}
    return [RunDir(d) for d in sorted(found)]


def complete_runs(outputs_dir: str | Path) -> list[RunDir]:
    """Every complete run folder under `outputs_dir` (RunDir.is_complete: what a report needs), sorted by path;
    [] when the folder does not exist."""
    return [r for r in run_dirs(outputs_dir) if r.is_complete()] if Path(outputs_dir).is_dir() else []


def load_results(outputs_dir: str | Path, complete_only: bool = True) -> pd.DataFrame:
    """Every complete run under `outputs_dir` (any depth; `complete_only=False`: every run folder, unfinished ones
    as far as they went) concatenated into one tidy frame."""
    frames = [r.load() for r in (complete_runs(outputs_dir) if complete_only else run_dirs(outputs_dir))]
    if not frames:
        raise FileNotFoundError(f"no {'complete ' if complete_only else ''}runs under {outputs_dir}")
    return pd.concat(frames, ignore_index=True)


def load_min_k(outputs_dir: str | Path) -> pd.DataFrame | None:
    """Every min_k.parquet under `outputs_dir` (model, language, item_id, parallel_id, min_k_prob, n_tokens),
    one row per model x item (runs of one model share the question texts); None when there is none."""
    files = sorted(Path(outputs_dir).rglob(MIN_K))
    if not files:
        return None
    frames = []
    for f in files:
        frame = pd.read_parquet(f)
        missing = [c for c in ("model", "item_id", "min_k_prob") if c not in frame.columns]
        if missing:
            raise ValueError(f"{f}: lacks column(s) {missing}")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).drop_duplicates(["model", "item_id"]).reset_index(drop=True)
