"""Two runs side by side: are they the same run by the equality rule, and how far apart are their scores?

`compare_runs(a, b)` gives one RunVerdict: the equality rule's verdict on the records (records.equality: same
keys, same columns, every value equal with floats within 1e-6, timing aside), the run's identity as its
provenance states it (IDENTITY_FIELDS: a changed strategy hash or dataset fingerprint is another run even when the
records happen to agree), and how far apart the scores are whatever the verdict (`score_delta`: the largest
|difference| of any option score, and the share of records with the same choice), and by how much each column
moved (`record_changes`: the largest |difference| of every float a column holds, and how many records changed
choice, response or forwarded tokens). `pair_runs` matches the run folders of two folders by name.
scripts/compare_records.py prints these for two commits or two folders, and the invariance table
(benchmarks/invariance.py) reads `score_delta` for each execution choice.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit.records.columns import KEY
from mcqa_toolkit.records.equality import JSON_COLUMNS, SCORE_ATOL, TIMING_COLUMNS, decoded_json, record_differences
from mcqa_toolkit.records.results import run_dirs
from mcqa_toolkit.records.store import RunDir

__all__ = ["IDENTITY_FIELDS", "COUNTED", "ScoreDelta", "RecordChanges", "RunVerdict", "score_delta",
           "record_changes", "compare_runs", "pair_runs", "verdicts"]

IDENTITY_FIELDS = ("strategy_hash", "dataset_fingerprint", "n_items")  # provenance fields that name the run
COUNTED = ("choice", "response", "n_forwarded_tokens")  # columns whose changed records record_changes counts


@dataclass(frozen=True)
class ScoreDelta:
    """How far two runs' scores are apart on the records they share: `max_abs_delta` over every option score
    both sides have (None when no score was compared, e.g. generation-only records), `same_choice` the share of
    shared records whose choice is the same (None when none are shared)."""

    records: int
    max_abs_delta: float | None
    same_choice: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"records": self.records, "max_abs_delta": self.max_abs_delta, "same_choice": self.same_choice}


def _scores(value: Any) -> np.ndarray:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return np.empty(0)
    return np.asarray(list(value), dtype=float)


def score_delta(a: pd.DataFrame, b: pd.DataFrame) -> ScoreDelta:
    """ScoreDelta of two record frames on their shared (item_id, shuffle) keys. Options unscored on either side
    (NaN) are left out; records whose score lists differ in length count in `same_choice` only."""
    left = a.drop_duplicates(KEY).set_index(KEY)
    right = b.drop_duplicates(KEY).set_index(KEY)
    shared = left.index.intersection(right.index)
    if not len(shared):
        return ScoreDelta(0, None, None)
    worst, compared = 0.0, False
    for x, y in zip(left.loc[shared, "option_scores"].tolist(), right.loc[shared, "option_scores"].tolist(),
                    strict=True):
        sx, sy = _scores(x), _scores(y)
        if len(sx) != len(sy) or not len(sx):
            continue
        both = np.isfinite(sx) & np.isfinite(sy)
        if both.any():
            compared = True
            worst = max(worst, float(np.max(np.abs(sx[both] - sy[both]))))
    same = float(np.mean(left.loc[shared, "choice"].to_numpy() == right.loc[shared, "choice"].to_numpy()))
    return ScoreDelta(len(shared), worst if compared else None, same)


@dataclass(frozen=True)
class RecordChanges:
    """By how much two runs' shared records differ, column by column: `max_abs_delta` maps each column holding
    floats (in lists and JSON too, compared place by place) to the largest |difference| of its floats (columns
    with no float compared are absent); `changed` maps each COUNTED column to the number of records whose value
    differs at all."""

    max_abs_delta: dict[str, float]
    changed: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {"max_abs_delta_by_column": dict(self.max_abs_delta), "records_changed": dict(self.changed)}


def _is_float(x: Any) -> bool:
    return isinstance(x, (float, np.floating))


def _float_deltas(x: Any, y: Any) -> Iterable[float]:
    """|x - y| for each pair of numbers at the same place in `x` and `y` (dict keys on both sides, lists of one
    length) where one of them is a float; NaN on either side, bools and pairs of ints are left out."""
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) & set(y)):
            yield from _float_deltas(x[k], y[k])
    elif isinstance(x, (list, tuple, np.ndarray)) and isinstance(y, (list, tuple, np.ndarray)):
        if len(x) == len(y):
            for p, q in zip(x, y, strict=True):
                yield from _float_deltas(p, q)
    elif (_is_float(x) or _is_float(y)) and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                                                for v in (x, y)):
        d = abs(float(x) - float(y))
        if not math.isnan(d):
            yield d


def _value(col: str, x: Any) -> Any:
    x = decoded_json(x) if col in JSON_COLUMNS else x
    return None if _is_float(x) and math.isnan(x) else x


def record_changes(a: pd.DataFrame, b: pd.DataFrame) -> RecordChanges:
    """RecordChanges of two record frames on their shared (item_id, shuffle) keys and shared columns (timing
    columns aside)."""
    left = a.drop_duplicates(KEY).set_index(KEY)
    right = b.drop_duplicates(KEY).set_index(KEY)
    shared = left.index.intersection(right.index)
    worst: dict[str, float] = {}
    changed: dict[str, int] = {}
    for col in sorted((set(left.columns) & set(right.columns)) - set(TIMING_COLUMNS)):
        pairs = [(_value(col, x), _value(col, y)) for x, y in zip(left.loc[shared, col].tolist(),
                                                                   right.loc[shared, col].tolist(), strict=True)]
        deltas = [d for x, y in pairs for d in _float_deltas(x, y)]
        if deltas:
            worst[col] = max(deltas)
        if col in COUNTED:
            changed[col] = sum(not _equal(x, y) for x, y in pairs)
    return RecordChanges(worst, changed)


def _equal(x: Any, y: Any) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return bool(np.array_equal(np.asarray(x), np.asarray(y)))
    return bool(x == y)


@dataclass(frozen=True)
class RunVerdict:
    """One run compared: `same` is the equality rule's verdict on the records and an unchanged identity;
    `reasons` says what differs (empty when same); `delta` and `changes` say by how much (None, like the
    records, when a side is missing)."""

    name: str
    same: bool
    records: tuple[int | None, int | None]
    delta: ScoreDelta | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    changes: RecordChanges | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"run": self.name, "same": self.same, "records_a": self.records[0], "records_b": self.records[1],
                **(self.delta.as_dict() if self.delta else {"max_abs_delta": None, "same_choice": None}),
                **(self.changes.as_dict() if self.changes else {"max_abs_delta_by_column": None,
                                                                "records_changed": None}),
                "reasons": list(self.reasons)}


def _identity(run: RunDir) -> dict[str, Any]:
    """The identity fields of a run's provenance (complete run) or run.json (a run still going)."""
    source = run.provenance_file if run.provenance_file.exists() else run.run_info_file
    if not source.exists():
        return {}
    info = run.provenance() if source == run.provenance_file else run.run_info()
    return {k: info.get(k) for k in IDENTITY_FIELDS}


def compare_runs(a: RunDir, b: RunDir, *, atol: float = SCORE_ATOL, ignore: Iterable[str] = ()) -> RunVerdict:
    """The verdict on two run folders holding (supposedly) the same run; `ignore`: more record columns left out
    of the rule, saying why at the call (e.g. n_forwarded_tokens for a resumed run)."""
    ra, rb = a.load(), b.load()
    reasons = list(record_differences(ra, rb, atol=atol, ignore=ignore))
    ia, ib = _identity(a), _identity(b)
    for key in IDENTITY_FIELDS:
        if ia.get(key) != ib.get(key):
            reasons.append(f"{key}: {ia.get(key)!r} != {ib.get(key)!r}")
    if a.is_complete() != b.is_complete():
        reasons.append(f"complete: {a.is_complete()} != {b.is_complete()}")
    return RunVerdict(a.name, not reasons, (len(ra), len(rb)), score_delta(ra, rb), tuple(reasons),
                      record_changes(ra, rb))


def _runs(path: Path) -> dict[str, RunDir]:
    """A run folder as itself, or the run folders under a folder (any depth) by their folder name."""
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: not a folder")
    found = run_dirs(path)
    if not found:
        raise FileNotFoundError(f"{path}: no run folder (records.jsonl or records.parquet) in it")
    by_name: dict[str, RunDir] = {}
    for run in found:
        if run.name in by_name:
            raise ValueError(f"{path}: two run folders named {run.name!r} ({by_name[run.name].dir}, {run.dir})")
        by_name[run.name] = run
    return by_name


def pair_runs(a: str | Path, b: str | Path) -> list[tuple[str, RunDir | None, RunDir | None]]:
    """The run folders of `a` and `b` matched by name (two single run folders are matched whatever their names),
    sorted by name; a run on one side only has None on the other."""
    runs_a, runs_b = _runs(Path(a)), _runs(Path(b))
    if len(runs_a) == len(runs_b) == 1 and RunDir(a).name in runs_a and RunDir(b).name in runs_b:
        (name, ra), (_, rb) = next(iter(runs_a.items())), next(iter(runs_b.items()))
        return [(name, ra, rb)]
    return [(name, runs_a.get(name), runs_b.get(name)) for name in sorted(set(runs_a) | set(runs_b))]


def verdicts(a: str | Path, b: str | Path, **kw: Any) -> list[RunVerdict]:
    """compare_runs over pair_runs(a, b); a run on one side only is a difference."""
    out = []
    for name, ra, rb in pair_runs(a, b):
        if ra is None or rb is None:
            side = "A" if ra is None else "B"
            out.append(RunVerdict(name, False, (None if ra is None else len(ra.load()),
                                                None if rb is None else len(rb.load())),
                                  reasons=(f"no such run in {side}",)))
        else:
            out.append(compare_runs(ra, rb, **kw))
    return out
