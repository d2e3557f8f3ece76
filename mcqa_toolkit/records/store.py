"""RunDir: every file of one run folder, and the readers that gather many run folders.

A run folder (`outputs/<model>__<dataset>__<language>__<strategy>/`) holds
  records.jsonl     one JSON object per (item, shuffle), appended per unit of work (fsynced every second or so)
  run.json          what is being run: provenance without results, the dataset (name, loader arguments, exam
                    version, fingerprint) and the run's identity (records.identity), written at start; resume
                    checks it (records.state)
  items.jsonl       the items the run was given (Item.to_dict per line; the records are about some of them),
                    written at start: reports, the inspector and the analyses read them, never a loader
  records.parquet   the records sorted by item and shuffle, written once every record is in (compacted)
  provenance.json   run.json + usage + complete=True + n_records, written with records.parquet
  summary.json      headline numbers and the identity that produced them, written last: it marks the run
                    complete (is_complete: compacted records and summary.json, what a report needs)
  min_k.parquet     Min-K% prob of each question under the run's model (contamination)
  run_model.ipynb   the executed notebook, when the run came from `mcqa run`
  batch.json        batch-mode state (API batch ids, counts, failures), see run.batch
  run.lock          the one-writer lock (records.lock): who is writing the folder now
Nothing else in the package or the notebooks spells these names. A killed run leaves at most a partial last
JSONL line; on resume it is dropped (it was never a finished record) and the rest is kept, so re-running
never loses or duplicates records. Every other file is written to a temporary name, forced to disk and renamed,
so a kill or a full disk never leaves half a file behind; a write that fails (disk full, file too large) raises
RunWriteError naming the file, after putting records.jsonl back as it was before the failed append. A line of
records.jsonl that is not a record (damaged outside our writes) is an error naming the file and line, never
skipped; finalising keeps one record per (item, shuffle) even if a folder holds two (two writers before the lock).
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from mcqa_toolkit.items import ItemSet, item_from_dict
from mcqa_toolkit.records.columns import KEY, conform, records_frame, unique_records
from mcqa_toolkit.records.files import RunWriteError, atomic, json_default, read_json, write_json
from mcqa_toolkit.records.lock import LOCK_FILE, RunLock, lock_holder

RECORDS_JSONL = "records.jsonl"
RECORDS_PARQUET = "records.parquet"
RUN_INFO = "run.json"
PROVENANCE = "provenance.json"
SUMMARY = "summary.json"
MIN_K = "min_k.parquet"
NOTEBOOK = "run_model.ipynb"
BATCH = "batch.json"
ITEMS = "items.jsonl"
SUMMARY_IDENTITY = ("identity", "identity_hash", "params")  # summary.json keys that are not numbers ("params":
                                                            # the notebook parameters folders wrote before)
SYNC_SECONDS = 1.0  # append forces records.jsonl to disk when this long has passed since it last did


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
        self.lock_file = self.dir / LOCK_FILE
        self._synced = float("-inf")  # when append last forced records.jsonl to disk (monotonic seconds)

    @property
    def name(self) -> str:
        return self.dir.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunDir) and other.dir == self.dir

    def __hash__(self) -> int:
        return hash(self.dir)

    def __fspath__(self) -> str:
        return str(self.dir)

    def __repr__(self) -> str:
        return f"RunDir({str(self.dir)!r})"

    def lock(self) -> RunLock:
        """The folder's one-writer lock (records.lock): `with rd.lock(): ...`; RunLocked when another writer holds
        it."""
        return RunLock(self.dir)

    def remove_leftovers(self) -> None:
        """Remove temporary files a killed writer left (`.<name>.<pid>.tmp`); call with the lock held."""
        if self.dir.is_dir():
            for tmp in self.dir.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)

    def held_output(self) -> str:
        """What the folder holds of a run's output, named ('' for nothing): records in records.jsonl. A folder whose
        run.json does not say what produced it is refused when it holds some (records.state.run_state)."""
        return "records" if self.jsonl.exists() and self.read_records() else ""

    def holder(self) -> dict[str, Any] | None:
        """Who is writing this folder now (pid, host, started), None when nobody is (records.lock.lock_holder)."""
        return lock_holder(self.dir)

    def is_compacted(self) -> bool:
        """The records are compacted: records.parquet holds them all and provenance.json says so (finalize). Only
        where to read the records from (load); a compacted run is not complete until its summary.json is written."""
        if not self.provenance_file.exists() or not self.parquet.exists():
            return False
        return bool(json.loads(self.provenance_file.read_text()).get("complete"))

    def is_complete(self) -> bool:
        """Every step of the run is done: the records compacted and summary.json written, i.e. what a report needs.
        The one definition of a complete run: records.state, records.results and report/ all read it."""
        return self.summary_file.exists() and self.is_compacted()

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
                records.append(self._record(line, n))
        if tail.strip():  # a line without its newline was being written when the run died
            with open(self.jsonl, "r+b") as f:
                f.truncate(len(raw) - len(tail))
        return records

    def _record(self, line: bytes, n: int) -> dict[str, Any]:
        """One JSONL line as a record; anything else is an error naming the file and line (never skipped)."""
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{self.jsonl}: line {n} is corrupt ({getattr(e, 'msg', e)}); delete the run "
                             "folder or that line to recompute it") from None
        if not (isinstance(rec, dict) and isinstance(rec.get("item_id"), str)
                and isinstance(rec.get("shuffle"), int) and not isinstance(rec.get("shuffle"), bool)):
            raise ValueError(f"{self.jsonl}: line {n} is not a record (no item_id and shuffle); delete the run "
                             "folder or that line to recompute it")
        return rec

    def done_keys(self) -> set[tuple[str, int]]:
        return {(r["item_id"], int(r["shuffle"])) for r in self.read_records()}

    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Append records in one write (a killed process loses nothing appended; resume is exact); force the
        file to disk when SYNC_SECONDS have passed since the last time (a power cut loses at most the records
        appended since, recomputed on resume; an fsync per record cost a lookup-table MMLU run 14k fsyncs).
        A failed write (disk full, file too large) takes the partial bytes back out: RunWriteError."""
        self.dir.mkdir(parents=True, exist_ok=True)
        rows = [json.dumps(r, ensure_ascii=False, default=json_default) + "\n" for r in records]
        data = "".join(rows).encode("utf-8")
        fd = os.open(self.jsonl, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                if time.monotonic() - self._synced >= SYNC_SECONDS:
                    os.fsync(fd)
                    self._synced = time.monotonic()
            except OSError as e:
                try:
                    os.ftruncate(fd, size)
                except OSError:
                    pass  # the partial line left is dropped on resume (read_records)
                raise RunWriteError(self.jsonl, f"{len(rows)} record(s)", e, "the records written before are kept; "
                                    "free some space and run again to resume") from None
        finally:
            os.close(fd)

    def sync(self) -> None:
        """Force records.jsonl to disk (what append leaves to the operating system for up to SYNC_SECONDS)."""
        if self.jsonl.exists():
            fd = os.open(self.jsonl, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._synced = time.monotonic()

    def finalize(self, provenance: dict[str, Any]) -> pd.DataFrame:
        """Compact the JSONL to Parquet (sorted by item and shuffle, one record per key) and write provenance
        with complete=True, the compacted flag (the JSONL is forced to disk first: every record is durable). The run
        is complete once summary.json follows (records.state.OpenRun.complete). Returns the records as read back
        from the Parquet (`load`), so a run's records are one frame whether just written or read again."""
        self.sync()
        df = unique_records(records_frame(self.read_records()), self.jsonl)
        df = df.sort_values(KEY, kind="stable").reset_index(drop=True)
        kept = "records.jsonl is intact; free some space and run again to finish"
        atomic(self.parquet, lambda tmp: df.to_parquet(tmp, index=False), "the records as Parquet", kept)
        write_json(self.provenance_file, {**provenance, "complete": True, "n_records": len(df)}, kept)
        return self.load()

    def load(self) -> pd.DataFrame:
        """The run's records: Parquet once compacted, else what the JSONL holds so far (one per key)."""
        if self.is_compacted():
            return conform(pd.read_parquet(self.parquet))
        return unique_records(records_frame(self.read_records()), self.jsonl)

    # ---- the JSON side files ---------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        return read_json(self.provenance_file)

    def run_info(self) -> dict[str, Any]:
        return read_json(self.run_info_file)

    def described(self) -> dict[str, Any]:
        """What the folder says of its run: provenance.json when the run is finished (run.json and more), else
        run.json ({} for neither)."""
        return self.provenance() or self.run_info()

    def write_run_info(self, info: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json(self.run_info_file, info)

    def summary(self) -> dict[str, Any]:
        """summary.json's headline numbers (without the identity that produced them; also in folders that
        recorded their notebook parameters there)."""
        return {k: v for k, v in read_json(self.summary_file).items() if k not in SUMMARY_IDENTITY}

    def write_summary(self, summary: dict[str, Any], identity: Any) -> Path:
        """summary.json: headline numbers and the identity that produced them (records.identity.RunIdentity)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json(self.summary_file, {"identity": identity.to_dict(), "identity_hash": identity.hash, **summary})
        return self.summary_file

    def batch_state(self) -> dict[str, Any]:
        return read_json(self.batch_file)

    def write_batch_state(self, state: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json(self.batch_file, state)

    def write_items(self, items: Iterable[Any]) -> Path:
        """items.jsonl: the items the run was given (Item.to_dict per line); left as it is when it already holds
        them (a resumed run: nothing rewritten, so a full disk stops at the records, where the resume can go on)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        text = "".join(json.dumps(it.to_dict(), ensure_ascii=False, default=json_default) + "\n" for it in items)
        if self.items_file.exists() and self.items_file.read_text(encoding="utf-8") == text:
            return self.items_file
        atomic(self.items_file, lambda tmp: tmp.write_text(text, encoding="utf-8"), self.items_file.name,
               "the records are intact")
        return self.items_file

    def read_items(self) -> list[dict[str, Any]]:
        """The item dicts of items.jsonl ([] when the run has none); `items.item_from_dict` makes Items."""
        if not self.items_file.exists():
            return []
        lines = self.items_file.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def items(self) -> ItemSet | None:
        """The items the run was given (items.jsonl), named after its dataset; None for a folder without
        items.jsonl (its dataset's loader and arguments are in run.json: records.dataset)."""
        if not self.items_file.exists():
            return None
        return ItemSet([item_from_dict(d) for d in self.read_items()], self.described().get("dataset") or self.name)

    def write_min_k(self, table: pd.DataFrame) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic(self.min_k_file, lambda tmp: table.to_parquet(tmp, index=False), "the Min-K% table",
                "the records are intact; free some space and run again to finish")
        return self.min_k_file
