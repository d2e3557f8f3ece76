"""Source files read record by record: text in one of several encodings, JSONL, JSON records, CSV. Every
failure is one DatasetError naming the file and the record (numbered from 1: a JSONL line, a JSON list position,
a CSV data row, header excluded).

Two forms of each reader. The `*_entries` readers give (record number, record or DatasetError): a record that cannot
be read (a line that is not JSON, a CSV row with the wrong number of cells) comes as its error, so the loaders' one
loop (`datasets.common.parse_records`) leaves it out like any other unusable record; a file that cannot be read at
all (not found, undecodable, not a JSON list, no such column) raises. `iter_jsonl`, `iter_json_records` and
`iter_csv` raise at the first error of either kind, for readers that take a file whole (item parameters, grades).

Below datasets/ and enem/ (both read their files with it), above items.py only.
"""
from __future__ import annotations

import csv
import io
import json
import re
import tarfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mcqa_toolkit.items import DatasetError

__all__ = ["read_text", "iter_jsonl", "jsonl_file_entries", "jsonl_entries", "read_json", "iter_json_records",
           "json_entries", "iter_csv", "csv_entries", "csv_columns", "tar_members", "raising"]

Entry = tuple[Any, Any]   # (record number, the record as read, or the DatasetError saying why it cannot be read)


def read_text(path: str | Path, encodings: Sequence[str] = ("utf-8",)) -> str:
    """File contents decoded with the first encoding that works; undecodable bytes -> DatasetError."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(p, "-", None, "file not found")
    if p.is_dir():
        raise DatasetError(p, "-", None, "a folder, where this reads one file")
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise DatasetError(p, "-", None, f"cannot be read: {e.strerror or e}") from None
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


def raising(entries: Iterable[Entry]) -> Iterator[Entry]:
    """The entries of a reader, raising the first that could not be read."""
    for n, rec in entries:
        if isinstance(rec, DatasetError):
            raise rec
        yield n, rec


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; bad JSON or a non-object line -> DatasetError."""
    yield from raising(jsonl_file_entries(path))


def jsonl_file_entries(path: str | Path) -> Iterator[Entry]:
    """`jsonl_entries` of a file (read, and its encoding checked, when this is called)."""
    return jsonl_entries(read_text(path), path)


def jsonl_entries(text: str, path: Any) -> Iterator[Entry]:
    """(line number, object or DatasetError) for each non-blank line of JSONL text (a file, or a member of an
    archive, named by `path` in errors). Lines end at \n, \r\n or \r only: JSON strings may hold U+2028, U+2029
    and U+0085 raw, where str.splitlines would cut."""
    for n, line in enumerate(_LINE_END.split(text), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            yield n, DatasetError(path, n, None, f"invalid JSON: {e.msg} at column {e.colno}")
            continue
        yield n, obj if isinstance(obj, dict) else DatasetError(path, n, None,
                                                                f"expected a JSON object, got {type(obj).__name__}")


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
    """(position, object) from a JSON list of objects (see `json_entries`); anything else -> DatasetError."""
    yield from raising(json_entries(path))


def json_entries(path: str | Path) -> Iterator[Entry]:
    """(position, object or DatasetError) from a JSON list of objects, or from a column-oriented dict of
    equal-length lists (or pandas' default {column: {row: value}}); any other shape -> DatasetError (raised)."""
    data = read_json(path)
    if isinstance(data, dict):
        cols = {k: list(v.values()) if isinstance(v, dict) else v for k, v in data.items()}
        bad = [k for k, v in cols.items() if not isinstance(v, list)]
        if bad:
            raise DatasetError(path, "-", bad[0], "column-oriented JSON needs a list (or dict) of values per column")
        lengths = {len(v) for v in cols.values()}
        if len(lengths) > 1:
            raise DatasetError(path, "-", None, f"columns have different lengths {sorted(lengths)}")
        data = [dict(zip(cols, row, strict=True)) for row in zip(*cols.values(), strict=True)]
    if not isinstance(data, list):
        raise DatasetError(path, "-", None, f"expected a JSON list of objects, got {type(data).__name__}")
    return ((n, rec if isinstance(rec, dict) else DatasetError(path, n, None, "expected a JSON object, got "
                                                                f"{type(rec).__name__}"))
            for n, rec in enumerate(data, start=1))


def iter_csv(path: str | Path, **kwargs: Any) -> Iterator[tuple[int, dict[str, str]]]:
    """(data row number, row dict) (see `csv_entries`); a row with the wrong number of cells -> DatasetError."""
    yield from raising(csv_entries(path, **kwargs))


def csv_entries(path: str | Path, *, delimiter: str = ",", header: bool = True,
                fieldnames: Sequence[str] | None = None, encodings: Sequence[str] = ("utf-8",),
                required: Sequence[str] = ()) -> Iterator[Entry]:
    """(data row number, row dict or DatasetError: more or fewer cells than columns); quoted newlines allowed;
    missing required columns or text the CSV reader cannot split -> DatasetError (raised: the file cannot be read
    from there on). The text is read and the header checked when this is called, not when iterated."""
    text = read_text(path, encodings)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter,
                            fieldnames=None if header else list(fieldnames or []))
    try:
        cols = reader.fieldnames or []
    except csv.Error as e:
        raise DatasetError(path, "header", None, f"malformed CSV: {e}") from None
    missing = [c for c in required if c not in cols]
    if missing:
        raise DatasetError(path, "header", missing[0], f"missing column(s) {missing}; found {list(cols)}")
    return _csv_rows(reader, cols, path)


def _csv_rows(reader: csv.DictReader, cols: Sequence[str], path: Any) -> Iterator[Entry]:
    try:
        for n, row in enumerate(reader, start=1):
            if None in row:  # more cells than columns
                yield n, DatasetError(path, n, None, f"{len(cols) + len(row[None])} cells for {len(cols)} columns")
            elif None in row.values():  # fewer cells than columns
                n_cells = sum(v is not None for v in row.values())
                yield n, DatasetError(path, n, None, f"{n_cells} cells for {len(cols)} columns")
            else:
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
