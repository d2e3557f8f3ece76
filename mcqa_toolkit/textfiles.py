"""Source files read record by record: text in one of several encodings, JSONL, JSON records, CSV. Every
failure is one DatasetError naming the file and the record (numbered from 1: a JSONL line, a JSON list position,
a CSV data row, header excluded).

Below datasets/ and enem/ (both read their files with it), above items.py only.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

from mcqa_toolkit.items import DatasetError

__all__ = ["read_text", "iter_jsonl", "read_json", "iter_json_records", "iter_csv", "csv_columns"]


def read_text(path: str | Path, encodings: Sequence[str] = ("utf-8",)) -> str:
    """File contents decoded with the first encoding that works; undecodable bytes -> DatasetError."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(p, "-", None, "file not found")
    raw = p.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    last: UnicodeDecodeError | None = None
    for enc in encodings:
        try:
            return raw.decode(enc)
        except UnicodeDecodeError as e:
            last = e
    assert last is not None
    line = raw[: last.start].count(b"\n") + 1
    raise DatasetError(p, line, None, f"undecodable bytes at byte {last.start} ({'/'.join(encodings)}): {last.reason}")


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; bad JSON or a non-object line -> DatasetError."""
    text = read_text(path)
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetError(path, n, None, f"invalid JSON: {e.msg} at column {e.colno}") from None
        if not isinstance(obj, dict):
            raise DatasetError(path, n, None, f"expected a JSON object, got {type(obj).__name__}")
        yield n, obj


def read_json(path: str | Path) -> Any:
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(path, e.lineno, None, f"invalid JSON: {e.msg} at column {e.colno}") from None


def iter_json_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(position, object) from a JSON list of objects, or from a column-oriented dict of equal-length
    lists (or pandas' default {column: {row: value}}); anything else -> DatasetError."""
    data = read_json(path)
    if isinstance(data, dict):
        cols = {k: list(v.values()) if isinstance(v, dict) else v for k, v in data.items()}
        bad = [k for k, v in cols.items() if not isinstance(v, list)]
        if bad:
            raise DatasetError(path, "-", bad[0], "column-oriented JSON needs a list (or dict) of values per column")
        lengths = {len(v) for v in cols.values()}
        if len(lengths) > 1:
            raise DatasetError(path, "-", None, f"columns have different lengths {sorted(lengths)}")
        data = [dict(zip(cols, row)) for row in zip(*cols.values())]
    if not isinstance(data, list):
        raise DatasetError(path, "-", None, f"expected a JSON list of objects, got {type(data).__name__}")
    for n, rec in enumerate(data, start=1):
        if not isinstance(rec, dict):
            raise DatasetError(path, n, None, f"expected a JSON object, got {type(rec).__name__}")
        yield n, rec


def iter_csv(path: str | Path, *, delimiter: str = ",", header: bool = True,
             fieldnames: Sequence[str] | None = None, encodings: Sequence[str] = ("utf-8",),
             required: Sequence[str] = ()) -> Iterator[tuple[int, dict[str, str]]]:
    """(data row number, row dict); quoted newlines allowed; missing required columns -> DatasetError."""
    text = read_text(path, encodings)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter,
                            fieldnames=None if header else list(fieldnames or []))
    try:
        cols = reader.fieldnames or []
        missing = [c for c in required if c not in cols]
        if missing:
            raise DatasetError(path, "header", missing[0], f"missing column(s) {missing}; found {list(cols)}")
        for n, row in enumerate(reader, start=1):
            if None in row:  # more cells than columns
                raise DatasetError(path, n, None, f"{len(cols) + len(row[None])} cells for {len(cols)} columns")
            if None in row.values():  # fewer cells than columns
                n_cells = sum(v is not None for v in row.values())
                raise DatasetError(path, n, None, f"{n_cells} cells for {len(cols)} columns")
            yield n, row
    except csv.Error as e:
        raise DatasetError(path, reader.line_num, None, f"malformed CSV: {e}") from None


def csv_columns(path: str | Path, *, delimiter: str = ",", encodings: Sequence[str] = ("utf-8",)) -> list[str]:
    """The header row of a CSV file (empty list for an empty file)."""
    text = read_text(path, encodings)
    try:
        return next(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter), [])
    except csv.Error as e:
        raise DatasetError(path, "header", None, f"malformed CSV: {e}") from None
