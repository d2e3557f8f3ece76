"""The loaders' shared machinery: field helpers that turn every bad field of a record into one DatasetError naming
it, and the one loop that every loader runs its records through (`parse_records`).

Records are numbered from 1: a JSONL line, a JSON list position, or a CSV data row (header excluded).

The rule, for every loader and every field: a record that cannot be used (it cannot be read, a field is missing or
malformed, its key names no option, its language is unknown, its id repeats an earlier one, it has no question or
option text) is left out and named (file, record, id, field, reason: a SkippedRecord in ItemSet.skipped), and one
UnusableRecordsWarning per load lists them (`reports_skipped`); the rest of the file loads. `strict=True` refuses
the file at the first one instead. A file that cannot be read at all (not found, undecodable, not the format's
top-level shape, or no record of it usable) is one DatasetError naming the file. Text that is present but odd
("None", "NA") is text, not missing.
"""
from __future__ import annotations

import contextvars
import functools
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any, Literal, overload

from mcqa_toolkit.items import DatasetError, Item, ItemSet, SkippedRecord

# Keys that exam authorities use for an annulled question (ENEM exam CSVs say "anulada", JSONL "Anulado").
ANNULLED_WORDS = ("anulada", "anulado", "annulled")


def is_missing(value: Any) -> bool:
    """None (JSON null), a float NaN (pandas' missing value), or an empty/whitespace string.

    Text is never missing because of what it says: "None", "NA", "N/A", "null" and "nan" are real option
    texts in real exams (MMLU's "None" options, "NaN" in a chemistry answer). A format whose documentation
    gives a textual marker of its own (UNED's D option) handles it in its loader, for that field only.
    """
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def require(rec: Mapping[str, Any], key: str, path: Any, n: Any, *, types: type | tuple = object,
            allow_empty: bool = False) -> Any:
    """rec[key], checked for presence, type and (for strings) non-emptiness."""
    if key not in rec:
        raise DatasetError(path, n, key, "missing field")
    value = rec[key]
    if not isinstance(value, types) or isinstance(value, bool) and bool not in _as_tuple(types):
        raise DatasetError(path, n, key, f"expected {_type_names(types)}, got {type(value).__name__} {value!r:.60}")
    if not allow_empty and is_missing(value):
        raise DatasetError(path, n, key, "empty value")
    return value


def require_text(rec: Mapping[str, Any], key: str, path: Any, n: Any) -> str:
    return str(require(rec, key, path, n, types=str)).strip()


def question_text(rec: Mapping[str, Any], key: str, path: Any, n: Any, item_id: str = "") -> str:
    """rec[key] as the question's text: empty (or null) -> "no question text"; missing or not text -> DatasetError."""
    if key not in rec:
        raise DatasetError(path, n, key, "missing field", item_id)
    if is_missing(rec[key]):
        raise DatasetError(path, n, key, "no question text", item_id)
    return str(require(rec, key, path, n, types=str)).strip()


def option_columns(rec: Mapping[str, Any], keys: Sequence[str], path: Any, n: Any, item_id: str = ""
                   ) -> tuple[str, ...]:
    """The option texts of a file with one column per option (A, B, ...): every column empty -> "no option text",
    one empty among others -> DatasetError naming that column."""
    if all(is_missing(rec.get(k)) for k in keys):
        raise DatasetError(path, n, f"{keys[0]}-{keys[-1]}", "no option text", item_id)
    return tuple(require_text(rec, k, path, n) for k in keys)


@overload
def parse_int(value: Any, path: Any, n: Any, key: str, *, optional: Literal[False] = False) -> int: ...
@overload
def parse_int(value: Any, path: Any, n: Any, key: str, *, optional: bool) -> int | None: ...
def parse_int(value: Any, path: Any, n: Any, key: str, *, optional: bool = False) -> int | None:
    if is_missing(value):
        if optional:
            return None
        raise DatasetError(path, n, key, "empty value")
    try:
        f = float(str(value).strip())
    except ValueError:
        raise DatasetError(path, n, key, f"not an integer: {value!r}") from None
    if not f.is_integer():
        raise DatasetError(path, n, key, f"not an integer: {value!r}")
    return int(f)


@overload
def parse_float(value: Any, path: Any, n: Any, key: str, *, optional: Literal[False] = False) -> float: ...
@overload
def parse_float(value: Any, path: Any, n: Any, key: str, *, optional: bool) -> float | None: ...
def parse_float(value: Any, path: Any, n: Any, key: str, *, optional: bool = False) -> float | None:
    if is_missing(value):
        if optional:
            return None
        raise DatasetError(path, n, key, "empty value")
    try:
        number = float(str(value).strip().replace(",", "."))
    except ValueError:
        raise DatasetError(path, n, key, f"not a number: {value!r}") from None
    if not math.isfinite(number):  # the text "nan"/"inf" is not a value, and not a blank either
        raise DatasetError(path, n, key, f"not a finite number: {value!r}")
    return number


def parse_bool(value: Any, path: Any, n: Any, key: str, default: bool | None = None) -> bool:
    if is_missing(value):
        if default is None:
            raise DatasetError(path, n, key, "empty value")
        return default
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in ("1", "true", "t", "yes", "y", "sim", "1.0"):
        return True
    if s in ("0", "false", "f", "no", "n", "nao", "não", "0.0"):
        return False
    raise DatasetError(path, n, key, f"not a boolean: {value!r}")


def check_options(options: Sequence[Any], path: Any, n: Any, key: str, *, n_allowed: Sequence[int] = range(2, 11),
                  item_id: str = "") -> tuple[str, ...]:
    """Options as a tuple of stripped non-empty strings with an allowed count; no option text at all (an empty
    list, or every option empty) -> "no option text"."""
    if not isinstance(options, (list, tuple)):
        raise DatasetError(path, n, key, f"expected a list of options, got {type(options).__name__}")
    if all(is_missing(o) for o in options):
        raise DatasetError(path, n, key, "no option text", item_id)
    if len(options) not in n_allowed:
        raise DatasetError(path, n, key, f"wrong option count {len(options)} (allowed: {_fmt_counts(n_allowed)})")
    out = []
    for i, o in enumerate(options):
        if is_missing(o) or not isinstance(o, (str, int, float)):
            raise DatasetError(path, n, f"{key}[{i}]", f"empty or non-text option {o!r}")
        out.append(str(o).strip())
    return tuple(out)


def is_annulled(value: Any) -> bool:
    """True for the words sources use to mark an annulled question ('anulada', 'Anulado', ...), any case."""
    return isinstance(value, str) and value.strip().lower() in ANNULLED_WORDS


class UniqueIds:
    """Tracks ids seen in one file (or across the files of a directory, passing `path` to `add`);
    a repeat -> DatasetError naming the first occurrence."""

    def __init__(self, path: Any, key: str = "id"):
        self.path, self.key = path, key
        self.seen: dict[str, tuple[Any, Any]] = {}  # id -> (path, record) of its first occurrence

    def add(self, item_id: str, n: Any, path: Any = None) -> str:
        path = self.path if path is None else path
        if item_id in self.seen:
            first_path, first_n = self.seen[item_id]
            where = f"record {first_n}" if first_path == path else f"{first_path} record {first_n}"
            raise DatasetError(path, n, self.key, f"duplicate id {item_id!r} (first at {where})")
        self.seen[item_id] = (path, n)
        return item_id


def parse_records(entries: Iterable[tuple[Any, Any]], parse: Callable[[Any, Any], Any], path: Any,
                  ids: UniqueIds | None = None, id_field: str = "id", strict: bool = False,
                  key: Callable[[Any], str] = attrgetter("item_id")
                  ) -> tuple[list[tuple[Any, Any]], list[SkippedRecord]]:
    """The one loop of the rule (module docstring): (record number, parsed) pairs of the records `parse` turns into
    Items (or, with `key`, other parsed records), and the records left out. An entry may be the DatasetError of a
    record that could not be read (textfiles' `*_entries` readers); a DatasetError that `parse` raises, or a repeated
    id (`ids`, by `key`; pass one tracker to several calls to check the files of a folder together) leaves the record
    out, or is raised when `strict`. A file none of whose records can be used (most often: not of this format) is one
    DatasetError naming the file. Errors about the whole file, and any other exception, are raised as they are."""
    ids = ids if ids is not None else UniqueIds(path, id_field)
    pairs, skipped = [], []
    for n, rec in entries:
        try:
            if isinstance(rec, DatasetError):
                raise rec
            parsed = parse(rec, n)
            ids.add(key(parsed), n, path)
            pairs.append((n, parsed))
        except DatasetError as e:
            if strict or e.whole_file:
                raise
            given = rec.get(id_field) if isinstance(rec, Mapping) else None
            skipped.append(SkippedRecord(e.path, e.record, e.item_id or ("" if is_missing(given) else str(given)),
                                         e.field, e.message))
    if skipped and not pairs:
        raise DatasetError(path, "-", None, f"none of its {len(skipped)} record(s) can be used (the first left out: "
                           f"{skipped[0]})")
    return pairs, skipped


def items_from_records(entries: Iterable[tuple[Any, Any]], parse: Callable[[Any, Any], Item], path: Any, name: str,
                       id_field: str = "id", ids: UniqueIds | None = None, strict: bool = False) -> ItemSet:
    """An ItemSet of the records `parse` turns into Items, the others left out and listed (`parse_records`).
    The loop shared by file loaders and `hub.load_hub`, so both validate records identically."""
    pairs, skipped = parse_records(entries, parse, path, ids, id_field, strict)
    return ItemSet([it for _, it in pairs], name=name, skipped=skipped)


def concat(sets: Iterable[ItemSet], name: str) -> ItemSet:
    """One ItemSet from several (ids already checked unique by a shared UniqueIds), their skipped records kept."""
    sets = list(sets)
    return ItemSet([it for s in sets for it in s], name=name, skipped=[r for s in sets for r in s.skipped])


class UnusableRecordsWarning(UserWarning):
    """Records left out of a load because they cannot be used (ItemSet.skipped names them)."""


_LOADING: contextvars.ContextVar[bool] = contextvars.ContextVar("mcqa_loading", default=False)


def reports_skipped(load: Callable[..., ItemSet]) -> Callable[..., ItemSet]:
    """Decorates a loader: after the outermost load (a loader calling another warns once, not twice), one
    UnusableRecordsWarning naming every record left out (file, record, id, field, reason)."""
    @functools.wraps(load)
    def loader(*args: Any, **kwargs: Any) -> ItemSet:
        if _LOADING.get():
            return load(*args, **kwargs)
        token = _LOADING.set(True)
        try:
            items = load(*args, **kwargs)
        finally:
            _LOADING.reset(token)
        if items.skipped:
            listed = "; ".join(str(r) for r in items.skipped)
            warnings.warn(UnusableRecordsWarning(
                f"{len(items.skipped)} record(s) left out because they cannot be used (strict=True refuses them "
                f"instead; `mcqa validate` counts them by reason): {listed}"), stacklevel=2)
        return items
    return loader


def _as_tuple(t: type | tuple) -> tuple:
    return t if isinstance(t, tuple) else (t,)


def _type_names(t: type | tuple) -> str:
    return " or ".join(x.__name__ for x in _as_tuple(t))


def _fmt_counts(n_allowed: Sequence[int]) -> str:
    vals = list(n_allowed)
    return f"{vals[0]}..{vals[-1]}" if len(vals) > 2 and vals == list(range(vals[0], vals[-1] + 1)) else str(vals)
