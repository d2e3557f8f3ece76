"""MMLU (Hendrycks et al.): headerless CSVs `<subject>_<split>.csv` with question, A, B, C, D, answer letter.

`path` is one such file or a directory searched recursively (the release keeps `data/{dev,val,test}/` and
`data/auxiliary_train/`, whose files are named after their source, e.g. `race.csv`: split "auxiliary_train",
subject = file stem). The subject and split come from the file name; fields may hold quoted newlines (handled
by the CSV reader). Options are text whatever they say: the test split has options reading "None", "NA",
"N/A" and the like, and only an empty cell is missing. `parse_record` also accepts the hub layout
(`choices` list, integer `answer`, `subject` column), so `hub.load_hub(..., mapper="mmlu")` validates rows
exactly like the file loader.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import (
    UniqueIds,
    check_options,
    concat,
    items_from_records,
    option_columns,
    question_text,
    reports_skipped,
    require,
)
from mcqa_toolkit.datasets.labels import letter_to_index
from mcqa_toolkit.items import DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import csv_entries

COLUMNS = ("question", "A", "B", "C", "D", "answer")
SPLITS = ("dev", "val", "test", "train", "auxiliary_train")
# greedy subject, then the split; one extra "_suffix" is tolerated (e.g. a "_sample" excerpt of a release file)
FILE_NAME = re.compile(r"^(?P<subject>.+)_(?P<split>dev|val|test|train)(?:_[A-Za-z0-9]+)?\.csv$")


def parse_record(rec: Mapping[str, Any], n: int, path: Any, subject: str | None = None,
                 split: str | None = None) -> Item:
    """One MMLU row -> Item. CSV rows have A..D and a letter; hub rows have `choices` and an index."""
    subject = str(rec.get("subject") or subject or "").strip()
    if not subject:
        raise DatasetError(path, n, "subject",
                           "no subject (neither a `subject` field nor a <subject>_<split> file name)")
    tag = f"{subject}-{split}" if split else subject
    stem = question_text(rec, "question", path, n, f"mmlu-{tag}-{n}")
    if "choices" in rec:
        options = check_options(require(rec, "choices", path, n, types=(list, tuple)), path, n, "choices",
                                n_allowed=(4,), item_id=f"mmlu-{tag}-{n}")
    else:
        options = option_columns(rec, "ABCD", path, n, f"mmlu-{tag}-{n}")
    raw = require(rec, "answer", path, n, types=(str, int))
    if isinstance(raw, int):
        if not 0 <= raw < len(options):
            raise DatasetError(path, n, "answer", f"answer {raw} out of range 0..{len(options) - 1}")
        answer = raw
    else:
        answer = letter_to_index(raw, len(options), path, n, "answer")
    return Item(item_id=f"mmlu-{tag}-{n}", source="mmlu", exam="mmlu", stem=stem, options=options, answer=answer,
                subject=subject, language="en", meta={"split": split, "row": n})


def _files(path: Path, split: str | None, subjects: Iterable[str] | None) -> list[tuple[Path, str, str]]:
    if not path.exists():
        raise DatasetError(path, "-", None, "file or directory not found")
    files = sorted(path.rglob("*.csv")) if path.is_dir() else [path]
    if not files:
        raise DatasetError(path, "-", None, "no <subject>_<split>.csv files in this directory")
    wanted = set(subjects) if subjects is not None else None
    out = []
    for f in files:
        m = FILE_NAME.match(f.name)
        if f.parent.name == "auxiliary_train":
            subject, file_split = f.stem, "auxiliary_train"
        elif m:
            subject, file_split = m["subject"], m["split"]
        else:
            raise DatasetError(f, "-", None, "file name is not <subject>_<split>.csv (split: dev, val, test)")
        if (split is None or file_split == split) and (wanted is None or subject in wanted):
            out.append((f, subject, file_split))
    if not out:
        raise DatasetError(path, "-", None, f"no file matches split={split!r} subjects={sorted(wanted or [])}")
    return out


@reports_skipped
def load_mmlu(path: str | Path, split: str | None = None, subjects: Iterable[str] | None = None,
              strict: bool = False) -> ItemSet:
    """Load MMLU CSVs; `split` ('dev'/'val'/'test') and `subjects` select files in a directory. A row that cannot
    be used is left out and named with one warning (strict=True: refused; datasets.common)."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown MMLU split {split!r}; expected one of {SPLITS}")
    path = Path(path)
    name, ids = f"mmlu:{path.name}", UniqueIds(path)
    return concat((items_from_records(csv_entries(f, header=False, fieldnames=COLUMNS),
                                      functools.partial(parse_record, path=f, subject=s, split=sp), f, name, ids=ids,
                                      strict=strict)
                   for f, s, sp in _files(path, split, subjects)), name)
