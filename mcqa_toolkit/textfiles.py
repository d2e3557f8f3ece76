"""Source files read record by record: text in one of several encodings, JSONL, JSON records, CSV. Every
failure is one DatasetError naming the file and the record (numbered from 1: a JSONL line, a JSON list position,
a CSV data row, header excluded).

Below datasets/ and enem/ (both read their files with it), above items.py only.
"""
from __future__ import annotations

import csv
import io
import json
import re
import tarfile
import zlib
from pathlib import Path
from typing import Any, Iterator, Sequence

from mcqa_toolkit.items import DatasetError

__all__ = ["read_text", "iter_jsonl", "jsonl_records", "read_json", "iter_json_records", "iter_csv", "csv_columns",
           "tar_members"]


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


_LINE_END = re.compile(r"\r\n|\r|\n")


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; bad JSON or a non-object line -> DatasetError."""
    yield from jsonl_records(read_text(path), path)


def jsonl_records(text: str, path: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_jsonl` over text already read (e.g. a member of an archive, named by `path` in errors). Lines end at
    \n, \r\n or \r only: JSON strings may hold U+2028, U+2029 and U+0085 raw, where str.splitlines would cut."""
    for n, line in enumerate(_LINE_END.split(text), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetError(path, n, None, f"invalid JSON: {e.msg} at column {e.colno}") from None
        if not isinstance(obj, dict):
            raise DatasetError(path, n, None, f"expected a JSON object, got {type(obj).__name__}")
        yield n, obj


def tar_members(path: str | Path, suffix: str) -> list[tuple[str, str]]:
    """(`<archive>/<member>`, UTF-8 text) of the files in a .tar / .tar.gz archive whose names end with `suffix`,
    in archive order; macOS metadata members (`._name`, `__MACOSX/`) are not data and are passed over. An archive
    that cannot be read, or holds no such member -> DatasetError."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(p, "-", None, "file not found")
    out = []
    try:
        with tarfile.open(p, "r:*") as tar:
            for m in tar:
                name = m.name
                if not m.isfile() or not name.endswith(suffix) or Path(name).name.startswith("._") \
                        or "__MACOSX" in Path(name).parts:
                    continue
                raw = tar.extractfile(m).read()  # type: ignore[union-attr]  # a regular file always has one
                label = f"{p}/{name}"
                try:
                    out.append((label, raw.decode("utf-8-sig")))
                except UnicodeDecodeError as e:
                    line = raw[: e.start].count(b"\n") + 1
                    raise DatasetError(label, line, None, f"undecodable bytes at byte {e.start} (utf-8): {e.reason}") \
                        from None
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise DatasetError(p, "-", None, f"not a readable .tar.gz archive: {e}") from None
    if not out:
        raise DatasetError(p, "-", None, f"no *{suffix} file in this archive")
    return out


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
