"""One equality rule for records: when two runs count as the same run.

Two record frames are the same when they hold the same (item_id, shuffle) keys and the same columns, and
every column is equal except the timing ones (TIMING_COLUMNS: wall time differs on every run), where
per-option scores and every other float (option_scores, option_probs, floats inside `extra`, points) agree
within `atol` (1e-6 by default: fp32 arithmetic on one machine; a backend on other hardware or another
kernel may need a stated larger tolerance). NaN equals NaN (an unanswered option is NaN on both sides).
`n_forwarded_tokens` is compared: it is what the model computed, the same for the same run; only runs
executed differently (a resumed run re-encodes its run prefix; an API answer read from the request cache
costs nothing) pass `ignore=["n_forwarded_tokens"]`, saying so.
Used for before/after checks of refactors, kill-and-resume tests and server-vs-local comparisons.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

__all__ = ["TIMING_COLUMNS", "SCORE_ATOL", "record_differences", "assert_same_records"]

TIMING_COLUMNS = ("seconds",)
SCORE_ATOL = 1e-6
JSON_COLUMNS = ("extra", "judgements", "response")


def _close(a: Any, b: Any, atol: float, path: str, out: list[str]) -> None:
    """Append to `out` where `a` and `b` differ (recursively; floats within atol, NaN == NaN)."""
    if isinstance(a, str) and isinstance(b, str):
        if a != b:
            out.append(f"{path}: {a[:60]!r} != {b[:60]!r}")
        return
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            out.append(f"{path}: keys {sorted(set(a) ^ set(b))} on one side only")
        for k in sorted(set(a) & set(b)):
            _close(a[k], b[k], atol, f"{path}.{k}", out)
        return
    if _sequence(a) or _sequence(b):
        if not (_sequence(a) and _sequence(b)):
            out.append(f"{path}: {a!r} != {b!r}")
            return
        a, b = (list(x.tolist() if hasattr(x, "tolist") else x) for x in (a, b))
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} != {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, atol, f"{path}[{i}]", out)
        return
    if a is None or b is None:
        if not (a is None and b is None or _nan(a) and _nan(b)):
            out.append(f"{path}: {a!r} != {b!r}")
        return
    if isinstance(a, bool) or isinstance(b, bool) or not _number(a) or not _number(b):
        if a != b:
            out.append(f"{path}: {a!r} != {b!r}")
        return
    if _nan(a) and _nan(b):
        return
    if _nan(a) or _nan(b) or abs(float(a) - float(b)) > atol:
        out.append(f"{path}: {a!r} != {b!r}")


def _sequence(x: Any) -> bool:
    return isinstance(x, (list, tuple)) or getattr(x, "ndim", 0) > 0  # numpy arrays from Parquet


def _number(x: Any) -> bool:
    try:
        float(x)
        return not isinstance(x, str)
    except (TypeError, ValueError):
        return False


def _nan(x: Any) -> bool:
    return x is None or _number(x) and math.isnan(float(x))


def decoded_json(value: Any) -> Any:
    """A JSON column's text as its value (records write dicts and lists as JSON text); other values as they are."""
    if isinstance(value, str) and value:
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def record_differences(a: pd.DataFrame, b: pd.DataFrame, *, atol: float = SCORE_ATOL,
                       ignore: Iterable[str] = (), limit: int = 20) -> list[str]:
    """Where two record frames differ under the rule (at most `limit` lines); [] when they are the same run.
    `ignore`: more columns to leave out besides TIMING_COLUMNS (e.g. run_id when comparing two folders)."""
    skip = set(TIMING_COLUMNS) | set(ignore)
    out: list[str] = []
    if set(a.columns) != set(b.columns):
        out.append(f"columns on one side only: {sorted(set(a.columns) ^ set(b.columns))}")
    keys = ["item_id", "shuffle"]
    left, right = (f.sort_values(keys, kind="stable").reset_index(drop=True) for f in (a, b))
    ka, kb = set(map(tuple, left[keys].values.tolist())), set(map(tuple, right[keys].values.tolist()))
    if ka != kb or len(left) != len(right):
        out.append(f"records: {len(left)} vs {len(right)}; keys on one side only: {sorted(ka ^ kb)[:5]}; "
                   f"duplicated keys: {len(left) - len(ka)} vs {len(right) - len(kb)}")
        return out
    for col in sorted((set(a.columns) & set(b.columns)) - skip):
        for i, (x, y) in enumerate(zip(left[col].tolist(), right[col].tolist(), strict=True)):
            if col in JSON_COLUMNS:
                x, y = decoded_json(x), decoded_json(y)
            _close(x, y, atol, f"{left.at[i, 'item_id']}#{left.at[i, 'shuffle']}.{col}", out)
            if len(out) >= limit:
                return out
    return out


def assert_same_records(a: pd.DataFrame, b: pd.DataFrame, *, atol: float = SCORE_ATOL,
                        ignore: Iterable[str] = ()) -> None:
    """AssertionError listing the differences when `a` and `b` are not the same run (record_differences)."""
    diffs = record_differences(a, b, atol=atol, ignore=ignore)
    if diffs:
        raise AssertionError("records differ:\n  " + "\n  ".join(diffs))
