"""RunDir: every file of one run folder, and the readers that gather many run folders.

A run folder (`outputs/<model>__<dataset>__<language>__<strategy>/`) holds
  records.jsonl     one JSON object per (item, shuffle), appended, flushed and fsynced per unit of work
  run.json          what is being run (provenance without results), written at start; resume checks it
  records.parquet   the records sorted by item and shuffle, written when the run completes
  provenance.json   run.json + usage + complete=True + n_records, written when the run completes
  summary.json      headline numbers and the job parameters that produced them (resume contract of run.jobs)
  min_k.parquet     Min-K% prob of each question under the run's model (contamination)
  run_model.ipynb   the executed notebook, when the run came from `mcqa run`
  batch.json        batch-mode state (API batch ids, counts, failures), see run.batch
  items.jsonl       the items the records are about (Item.to_dict per line), written by runs that do not come
                    from a dataset loader (imported results, interop): the analyses read them instead of a loader
Nothing else in the package or the notebooks spells these names. A killed run leaves at most a partial last
JSONL line; on resume it is dropped (it was never a finished record) and the rest is kept, so re-running
never loses or duplicates records.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from mcqa_toolkit.run.columns import COLUMNS, LEGACY_STATUSES

RECORDS_JSONL = "records.jsonl"
RECORDS_PARQUET = "records.parquet"
RUN_INFO = "run.json"
PROVENANCE = "provenance.json"
SUMMARY = "summary.json"
MIN_K = "min_k.parquet"
NOTEBOOK = "run_model.ipynb"
BATCH = "batch.json"
ITEMS = "items.jsonl"


class RunDir:
    """The files of one run folder (paths as attributes; reading and writing as methods)."""

    def __init__(self, path: str | Path):
        self.dir = Path(path)
        self.jsonl = self.dir / RECORDS_JSONL
        self.parquet = self.dir / RECORDS_PARQUET
        self.run_info_file = self.dir / RUN_INFO
        self.provenance_file = self.dir / PROVENANCE
        self.summary_file = self.dir / SUMMARY
        self.min_k_file = self.dir / MIN_K
        self.notebook = self.dir / NOTEBOOK
        self.batch_file = self.dir / BATCH
        self.items_file = self.dir / ITEMS

    @property
    def name(self) -> str:
        return self.dir.name

    def is_complete(self) -> bool:
        if not self.provenance_file.exists() or not self.parquet.exists():
            return False
        return bool(json.loads(self.provenance_file.read_text()).get("complete"))

    # ---- records ---------------------------------------------------------------------------------------
    def read_records(self) -> list[dict[str, Any]]:
        """Finished records from the JSONL file, after dropping a partial last line left by a kill."""
        if not self.jsonl.exists():
            return []
        raw = self.jsonl.read_bytes()
        lines = raw.split(b"\n")
        complete, tail = lines[:-1], lines[-1]
        records = []
        for n, line in enumerate(complete, start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{self.jsonl}: line {n} is corrupt ({e.msg}); delete the run directory "
                                     "or the line to recompute it") from None
        if tail.strip():  # a line without its newline was being written when the run died
            with open(self.jsonl, "r+b") as f:
                f.truncate(len(raw) - len(tail))
        return records

    def done_keys(self) -> set[tuple[str, int]]:
        return {(r["item_id"], int(r["shuffle"])) for r in self.read_records()}

    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Append records and force them to disk (one write per unit keeps resume exact)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        data = "".join(json.dumps(r, ensure_ascii=False, default=_json_default) + "\n" for r in records)
        with open(self.jsonl, "a", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def finalize(self, provenance: dict[str, Any]) -> pd.DataFrame:
        """Compact the JSONL to Parquet (sorted by item and shuffle) and write provenance with complete=True."""
        df = records_frame(self.read_records())
        df = df.sort_values(["item_id", "shuffle"], kind="stable").reset_index(drop=True)
        df.to_parquet(self.parquet, index=False)
        _write_json(self.provenance_file, {**provenance, "complete": True, "n_records": len(df)})
        return df

    def load(self) -> pd.DataFrame:
        """The run's records: Parquet when complete, else what the JSONL holds so far."""
        if self.is_complete():
            return conform(pd.read_parquet(self.parquet))
        return records_frame(self.read_records())

    # ---- the JSON side files ---------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        return _read_json(self.provenance_file)

    def run_info(self) -> dict[str, Any]:
        return _read_json(self.run_info_file)

    def write_run_info(self, info: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_json(self.run_info_file, info)

    def summary(self) -> dict[str, Any]:
        return _read_json(self.summary_file)

    def write_summary(self, summary: dict[str, Any], params: dict[str, Any]) -> Path:
        """summary.json: headline numbers and the parameters that produced them."""
        _write_json(self.summary_file, {"params": params, **summary})
        return self.summary_file

    def batch_state(self) -> dict[str, Any]:
        return _read_json(self.batch_file)

    def write_batch_state(self, state: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_json(self.batch_file, state)

    def write_items(self, items: Iterable[Any]) -> Path:
        """items.jsonl: the run's items (Item.to_dict per line), for runs whose items no loader gives back."""
        self.dir.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(it.to_dict(), ensure_ascii=False, default=_json_default) + "\n" for it in items)
        self.items_file.write_text(text, encoding="utf-8")
        return self.items_file

    def read_items(self) -> list[dict[str, Any]]:
        """The item dicts of items.jsonl ([] when the run has none); `items.item_from_dict` makes Items."""
        if not self.items_file.exists():
            return []
        lines = self.items_file.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def write_min_k(self, table: pd.DataFrame) -> Path:
        table.to_parquet(self.min_k_file, index=False)
        return self.min_k_file


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Records -> DataFrame with the schema's columns first (plus `extra`, a JSON string of method details)."""
    df = pd.DataFrame.from_records(records)
    if df.empty:
        return pd.DataFrame(columns=list(COLUMNS) + ["extra"])
    return conform(df)


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """A records frame (legacy records upgraded) with the schema's columns first; missing columns raise."""
    df = upgrade_legacy(df)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"records lack column(s) {missing}")
    rest = [c for c in df.columns if c not in COLUMNS]
    return df[list(COLUMNS) + rest]


def upgrade_legacy(df: pd.DataFrame) -> pd.DataFrame:
    """Records written before the per-type schema (single-answer only; status answered | unanswered | refused,
    no points) in the current schema: answered becomes correct / incorrect from `correct`, the response is the
    choice, one point per keyed item (0 for an annulled one). Frames already in the schema pass unchanged."""
    if "points_earned" in df.columns or not set(df.get("status", pd.Series(dtype=str))) <= set(LEGACY_STATUSES):
        return df
    answered = df["status"] == "answered"
    keyed = df["answer"] >= 0
    return df.assign(
        answer_type="single", response=[json.dumps(int(c)) if c >= 0 else "null" for c in df["choice"]],
        points_possible=keyed.astype(float), points_earned=(df["correct"].astype(bool) & keyed).astype(float),
        status=df["status"].where(~answered, df["correct"].map({True: "correct", False: "incorrect"})),
        judgements="")


def run_dirs(outputs_dir: str | Path) -> list[RunDir]:
    """Every run folder under `outputs_dir` (any depth), sorted by path."""
    root = Path(outputs_dir)
    found = {p.parent for name in (RECORDS_JSONL, RECORDS_PARQUET) for p in root.rglob(name)}
    return [RunDir(d) for d in sorted(found)]


def load_results(outputs_dir: str | Path, complete_only: bool = True) -> pd.DataFrame:
    """Every run under `outputs_dir` (any depth) concatenated into one tidy frame."""
    frames = [r.load() for r in run_dirs(outputs_dir) if r.is_complete() or not complete_only]
    if not frames:
        raise FileNotFoundError(f"no {'complete ' if complete_only else ''}runs under {outputs_dir}")
    return pd.concat(frames, ignore_index=True)


def load_min_k(outputs_dir: str | Path) -> pd.DataFrame | None:
    """Every min_k.parquet under `outputs_dir` (model, language, item_id, parallel_id, min_k_prob, n_tokens),
    one row per model x item (runs of one model share the question texts); None when there is none."""
    files = sorted(Path(outputs_dir).rglob(MIN_K))
    if not files:
        return None
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    missing = [c for c in ("model", "item_id", "min_k_prob") if c not in df.columns]
    if missing:
        raise ValueError(f"{MIN_K} files under {outputs_dir} lack column(s) {missing}")
    return df.drop_duplicates(["model", "item_id"]).reset_index(drop=True)


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=_json_default))


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, tuple, Path)):
        return list(o) if not isinstance(o, Path) else str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
