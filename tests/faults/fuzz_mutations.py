"""Hypothesis strategies that damage a valid file the way files get damaged: cut short, bytes inserted,
deleted or replaced (NUL runs included), lines duplicated or swapped, another encoding, a huge field; and,
for the formats we can parse, one record changed: a field of another type, emptied, removed, or an id
copied from another record. `mutated(data, kind)` draws 1-3 such changes of a file of `kind`
(jsonl | json | csv | csv; | yaml | txt); `within(seconds)` fails a call that hangs."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import signal
from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import strategies as st

HUGE = 200_000  # characters of a huge field

# values a field may get instead of its own: other types, empty, missing-looking text, NUL, huge
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                    st.sampled_from(["", " ", "NA", "None", "null", "nan", "-1", "0", "9" * 30, "a\0b", "Z", "é",
                                     "x" * HUGE]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                            max_size=3), max_leaves=6)


class Hang(Exception):
    """A call that did not return within its time limit."""


@contextlib.contextmanager
def within(seconds: float):
    """Raise Hang in the main thread if the block runs longer than `seconds` (SIGALRM)."""
    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---- byte-level damage ---------------------------------------------------------------------------------
@st.composite
def _byte_change(draw: Any, data: bytes) -> bytes:
    n = len(data)
    pos = draw(st.integers(0, n))
    end = draw(st.integers(pos, min(n, pos + 64)))
    lines = data.split(b"\n")
    op = draw(st.sampled_from(["truncate", "delete", "insert", "replace", "nul", "dup_line", "swap_lines",
                               "encoding", "bom", "huge"]))
    if op == "truncate":
        return data[:pos]
    if op == "delete":
        return data[:pos] + data[end:]
    if op == "insert":
        return data[:pos] + draw(st.binary(min_size=1, max_size=16) | st.sampled_from(
            [b"\n", b'"', b",", b";", b"{", b"}", b"[", b"\r", b"\xff\xfe", b"\xc3"])) + data[pos:]
    if op == "replace":
        return data[:pos] + draw(st.binary(min_size=1, max_size=16)) + data[end:]
    if op == "nul":
        return data[:pos] + b"\0" * draw(st.integers(1, 64)) + data[end:]
    if op == "dup_line":
        i = draw(st.integers(0, len(lines) - 1))
        return b"\n".join(lines[:i + 1] + [lines[i]] + lines[i + 1:])
    if op == "swap_lines":
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    if op == "encoding":
        text = data.decode("utf-8", errors="replace")
        return text.encode(draw(st.sampled_from(["latin-1", "cp1252", "utf-16", "utf-32"])), errors="replace")
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    return data[:pos] + b"x" * HUGE + data[pos:]


# ---- record-level damage -------------------------------------------------------------------------------
def change_record(draw: Any, records: list[dict]) -> list[dict]:
    """One record damaged: a field of another value/type, removed, added, or an id copied; or a record
    duplicated or replaced by a non-object."""
    records = [dict(r) if isinstance(r, dict) else r for r in records]
    i = draw(st.integers(0, len(records) - 1))
    rec = records[i]
    op = draw(st.sampled_from(["value", "remove", "add", "copy_id", "duplicate", "not_object"]))
    if op == "duplicate":
        return records[:i + 1] + [records[i]] + records[i + 1:]
    if op == "not_object" or not isinstance(rec, dict) or not rec:
        records[i] = draw(values)
        return records
    key = draw(st.sampled_from(sorted(rec, key=str)))
    if op == "value":
        rec[key] = draw(values)
    elif op == "remove":
        del rec[key]
    elif op == "add":
        rec[draw(st.text(max_size=8))] = draw(values)
    else:
        other = records[draw(st.integers(0, len(records) - 1))]
        if isinstance(other, dict) and key in other:
            rec[key] = other[key]
    return records


def _json_dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, allow_nan=True).encode("utf-8", errors="surrogatepass")


@st.composite
def _record_change(draw: Any, data: bytes, kind: str) -> bytes | None:
    """A record-level change of `data` (None when it cannot be parsed as `kind`; a plain-text format, "txt", has
    byte- and line-level damage only)."""
    if kind == "txt":
        return None
    try:
        text = data.decode("utf-8")
        if kind == "jsonl":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
            return b"\n".join(_json_dump(r) for r in change_record(draw, records)) + b"\n" if records else None
        if kind == "json":
            obj = json.loads(text)
            if isinstance(obj, list) and obj:
                return _json_dump(change_record(draw, obj))
            if isinstance(obj, dict) and obj:
                key = draw(st.sampled_from(sorted(obj, key=str)))
                if isinstance(obj[key], list) and obj[key] and draw(st.booleans()):
                    return _json_dump({**obj, key: change_record(draw, obj[key])})
                return _json_dump({**obj, key: draw(values)})
            return None
        if kind == "yaml":
            obj = yaml.load(text, Loader=yaml.CSafeLoader)
            if not isinstance(obj, dict) or not obj:
                return None
            return yaml.dump(_change_mapping(draw, obj), Dumper=yaml.CSafeDumper,
                             allow_unicode=True).encode("utf-8", "surrogatepass")
        delimiter = ";" if kind == "csv;" else ","
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    except (UnicodeDecodeError, ValueError, yaml.YAMLError, csv.Error):
        return None
    if len(rows) < 2:
        return None
    i = draw(st.integers(0, len(rows) - 1))
    op = draw(st.sampled_from(["cell", "drop_cell", "add_cell", "dup_row", "copy_cell"]))
    row = list(rows[i])
    j = draw(st.integers(0, max(len(row) - 1, 0)))
    if op == "cell" and row:
        cell = draw(values)
        row[j] = cell if isinstance(cell, str) else json.dumps(cell)
    elif op == "drop_cell" and row:
        del row[j]
    elif op == "add_cell":
        row.insert(j, draw(st.text(max_size=8)))
    elif op == "dup_row":
        rows.insert(i, row)
    elif row:
        other = rows[draw(st.integers(1, len(rows) - 1))]
        row[j] = other[j] if j < len(other) else ""
    rows[i] = row
    out = io.StringIO(newline="")
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8", errors="surrogatepass")


def _change_mapping(draw: Any, obj: dict) -> dict:
    """A params mapping with one key changed, removed, added, or one element of a list changed."""
    obj = dict(obj)
    key = draw(st.sampled_from(sorted(obj, key=str)))
    op = draw(st.sampled_from(["value", "remove", "add", "element"]))
    if op == "value":
        obj[key] = draw(values)
    elif op == "remove":
        del obj[key]
    elif op == "add":
        obj[draw(st.text(max_size=10))] = draw(values)
    elif isinstance(obj[key], list) and obj[key]:
        items = list(obj[key])
        k = draw(st.integers(0, len(items) - 1))
        if isinstance(items[k], dict) and items[k] and draw(st.booleans()):
            items[k] = _change_mapping(draw, items[k])
        else:
            items[k] = draw(values)
        obj[key] = items
    return obj


@st.composite
def mutated(draw: Any, data: bytes, kind: str) -> bytes:
    """`data` (a valid file of `kind`) after 1-3 byte- or record-level changes."""
    for _ in range(draw(st.integers(1, 3))):
        changed = draw(_record_change(data, kind)) if draw(st.booleans()) else None
        data = changed if changed is not None else draw(_byte_change(data))
    return data


Call = Callable[[], Any]
