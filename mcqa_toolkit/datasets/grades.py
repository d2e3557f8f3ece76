"""Human grades of short answers: a CSV that overrides the LLM judges or is compared with them
(`measure.apply_human_grades`, `measure.compare_with_human`).

Columns: `item_id` and `points` (required; points in 0..the item's points, checked against the records), and
optionally any of `run_id`, `model`, `strategy`, `shuffle` to say which record a grade is for (without them a
grade applies to the item's only judged record, and several records of the item are an error), and `grader`
(kept, not used). A bad cell is a DatasetError naming the file, the row and the column.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from mcqa_toolkit.datasets.common import parse_float, parse_int, require_text
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.textfiles import iter_csv

KEYS = ("run_id", "model", "strategy", "shuffle")


def read_human_grades(path: str | Path) -> pd.DataFrame:
    """The grades CSV at `path` as a frame: item_id, points (float), the optional key columns it has
    (shuffle as int), grader when present."""
    rows = []
    for n, row in iter_csv(path, required=("item_id", "points")):
        out = {"item_id": require_text(row, "item_id", path, n),
               "points": parse_float(row["points"], path, n, "points")}
        for key in KEYS:
            if key in row:
                out[key] = parse_int(row[key], path, n, key) if key == "shuffle" else require_text(row, key, path, n)
        if "grader" in row:
            out["grader"] = row["grader"]
        rows.append(out)
    if not rows:
        raise DatasetError(path, "-", None, "no grades in the file")
    df = pd.DataFrame(rows)
    dup = df.duplicated([c for c in ("item_id", *KEYS) if c in df.columns])
    if dup.any():
        raise DatasetError(path, int(dup.idxmax()) + 1, "item_id", "a second grade for the same record")
    return df
