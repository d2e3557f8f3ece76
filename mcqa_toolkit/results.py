"""ResultStore: append-only per-record results of one run (JSONL while running, Parquet when done).

Layout of a run directory:  records.jsonl (one JSON object per (item, shuffle), flushed and fsynced per
item), records.parquet + provenance.json (written when the run completes). A killed run leaves at most a
partial last line; on resume it is dropped (it was never a finished record) and the rest is kept, so
re-running never loses or duplicates records.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from mcqa_toolkit.schema import COLUMNS

RECORDS_JSONL = "records.jsonl"
RECORDS_PARQUET = "records.parquet"
PROVENANCE = "provenance.json"


class ResultStore:
    """The files of one run directory."""

    def __init__(self, out_dir: str | Path):
        self.dir = Path(out_dir)
        self.jsonl = self.dir / RECORDS_JSONL
        self.parquet = self.dir / RECORDS_PARQUET
        self.provenance_file = self.dir / PROVENANCE

    def is_complete(self) -> bool:
        if not self.provenance_file.exists() or not self.parquet.exists():
            return False
        return bool(json.loads(self.provenance_file.read_text()).get("complete"))

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
        """Append records and force them to disk (one write per item keeps resume exact)."""
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
        self.provenance_file.write_text(json.dumps({**provenance, "complete": True, "n_records": len(df)},
                                                   indent=2, ensure_ascii=False, default=_json_default))
        return df

    def load(self) -> pd.DataFrame:
        """The run's records: Parquet when complete, else what the JSONL holds so far."""
        if self.is_complete():
            return pd.read_parquet(self.parquet)
        return records_frame(self.read_records())

    def provenance(self) -> dict[str, Any]:
        return json.loads(self.provenance_file.read_text()) if self.provenance_file.exists() else {}


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Records -> DataFrame with the schema's columns first (plus `extra`, a JSON string of method details)."""
    df = pd.DataFrame.from_records(records)
    if df.empty:
        return pd.DataFrame(columns=list(COLUMNS) + ["extra"])
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"records lack column(s) {missing}")
    rest = [c for c in df.columns if c not in COLUMNS]
    return df[list(COLUMNS) + rest]


def load_results(outputs_dir: str | Path, complete_only: bool = True) -> pd.DataFrame:
    """Every run under `outputs_dir` (any depth) concatenated into one tidy frame."""
    frames = []
    root = Path(outputs_dir)
    run_dirs = {p.parent for name in (RECORDS_JSONL, RECORDS_PARQUET) for p in root.rglob(name)}
    for run_dir in sorted(run_dirs):
        store = ResultStore(run_dir)
        if complete_only and not store.is_complete():
            continue
        frames.append(store.load())
    if not frames:
        raise FileNotFoundError(f"no {'complete ' if complete_only else ''}runs under {outputs_dir}")
    return pd.concat(frames, ignore_index=True)


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
