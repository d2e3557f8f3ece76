"""`mcqa validate NAME PATH...`: what a loader makes of each file (or folder) of a release, as it ships: the
questions it loads, and the records it leaves out (the rule of datasets.common) counted by reason with the first few
named. A file that cannot be read at all is one line saying why. The exit code is 0 unless a file cannot be read, or
`--strict` is given and a record was left out.
"""
from __future__ import annotations

import inspect
import re
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcqa_toolkit.datasets import load, loader
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.items import DatasetError, ItemSet, SkippedRecord

SHOWN = 5                  # records named per path; the others are counted by reason
# what makes two reasons differ in particulars only: quoted values, lists, numbers
_PARTICULARS = re.compile(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\d+")


def reason_kind(record: SkippedRecord) -> str:
    """A left-out record's field and reason without its particulars, so that records left out for one reason count
    together: "field 'answerKey': … is not a choice label (…)"."""
    return f"field {record.field!r}: " + _PARTICULARS.sub("…", record.reason)


@dataclass(frozen=True)
class PathReport:
    """One PATH as a loader read it: how much loaded and what it left out, or why it cannot be read."""

    path: str
    loaded: int = 0
    left_out: tuple[SkippedRecord, ...] = ()
    error: str = ""            # the DatasetError of a path that cannot be read; "" when it was read
    unit: str = "questions"    # what a loaded row is ("rows" for a loader of tables, such as enem_params)

    def reasons(self) -> list[tuple[str, int]]:
        """(reason kind, count) of the records left out, the most frequent first."""
        return Counter(reason_kind(r) for r in self.left_out).most_common()

    def text(self) -> str:
        if self.error:
            return f"{self.path}: cannot be read: {self.error}"
        lines = [f"{self.path}: {self.loaded:,} {self.unit} loaded, {len(self.left_out):,} record(s) left out"]
        lines += [f"  {n:>6,}  {kind}" for kind, n in self.reasons()]
        lines += [f"  left out: {r}" for r in self.left_out[:SHOWN]]
        if len(self.left_out) > SHOWN:
            lines.append(f"  ... and {len(self.left_out) - SHOWN:,} more")
        return "\n".join(lines)


def validate(name: str, paths: Sequence[Any], args: Mapping[str, Any] | None = None) -> list[PathReport]:
    """Load each of `paths` with loader `name` (and its other keyword arguments `args`), one report per path.
    A bad argument (an unknown loader, a misspelt keyword) is the ValueError `load` raises."""
    params = inspect.signature(loader(name)).parameters
    key = "path" if "path" in params else next(iter(params))     # hub: name_or_path
    reports = []
    for path in paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnusableRecordsWarning)   # the report names them instead
            try:
                got = load(name, **{**(args or {}), key: path})
            except DatasetError as e:
                reports.append(PathReport(str(path), error=str(e)))
                continue
        skipped = tuple(got.skipped) if isinstance(got, ItemSet) else ()
        reports.append(PathReport(str(path), len(got), skipped, unit="questions" if isinstance(got, ItemSet)
                                  else "rows"))
    return reports


def exit_code(reports: Sequence[PathReport], strict: bool = False) -> int:
    """1 when a path cannot be read, or when `strict` and a record was left out; else 0."""
    return int(any(r.error or (strict and r.left_out) for r in reports))


def summary(reports: Sequence[PathReport], strict: bool = False) -> str:
    """Every path's report, then one line of totals."""
    unread = sum(bool(r.error) for r in reports)
    total = (f"{len(reports)} path(s): {sum(r.loaded for r in reports):,} loaded, "
             f"{sum(len(r.left_out) for r in reports):,} record(s) left out, {unread} cannot be read")
    verdict = "FAILED" if exit_code(reports, strict) else "ok"
    rule = " (--strict: no record may be left out)" if strict else ""
    return "\n".join([r.text() for r in reports] + [f"{total}: {verdict}{rule}"])


def validate_cmd(name: str, paths: Sequence[str], args: Mapping[str, Any] | None, strict: bool) -> int:
    """`mcqa validate`: print the reports and the totals; return the exit code."""
    reports = validate(name, paths, args)
    print(summary(reports, strict))
    return exit_code(reports, strict)
