"""One item schema for every exam source: `Item`, the ordered `ItemSet`, and `DatasetError`.

Every loader in `mcqa_toolkit.datasets` returns an `ItemSet` of `Item`s, so prompts, scoring and
psychometrics never see a source's quirks. One name per concept (item_id, option_index, choice, correct, theta, psd).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pandas as pd

ANSWER_TYPES = ("single", "multi", "truefalse", "short")
LETTERS = "ABCDEFGHIJ"

Answer = int | tuple | str | None


class DatasetError(ValueError):
    """Bad input: names the file, the record (1-based line or list index; "-" for the whole file, "header" for a CSV
    header), the field and what is wrong. Raised for a record, it makes that record unusable: loaders leave it out
    and list it (ItemSet.skipped, SkippedRecord), or refuse the file with strict=True; raised for the whole file, the
    file cannot be read. `item_id`: the id the item would have had, when the loader knows it (for the report)."""

    def __init__(self, path: Any, record: Any, field: str | None, message: str, item_id: str = ""):
        self.path = str(path)
        self.record = record
        self.field = field
        self.message = message
        self.item_id = item_id
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.path]
        if self.record not in ("-", None):  # "-": the whole file (not found, empty, not a list)
            parts.append(f"record {self.record}")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        return ": ".join(parts + [self.message])

    @property
    def whole_file(self) -> bool:
        """True when the error is about the file (not found, not the format, a bad header), not one record."""
        return self.record in ("-", None, "header")

    def __reduce__(self):  # keep the fields when pickled (e.g. across papermill/multiprocessing)
        return (type(self), (self.path, self.record, self.field, self.message, self.item_id))


@dataclass(frozen=True)
class SkippedRecord:
    """A record a loader left out because it cannot be used (a DatasetError about it): where it is and why."""

    path: str
    record: Any
    item_id: str
    field: str | None
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: record {self.record} ({self.item_id or 'no id'}): field {self.field!r}: {self.reason}"


@dataclass(frozen=True)
class Item:
    """One exam question in the common schema.

    `answer` is an index into `options` (single), a tuple of indices (multi), a tuple of bools
    (truefalse), a str (short answer) or None when the item was annulled by the exam authority.
    `irt` holds human-calibrated 3PL parameters (a, b, c) on the D = 1 logistic metric, when known.
    """

    item_id: str
    source: str
    exam: str
    stem: str
    options: tuple[str, ...]
    answer: Answer
    answer_type: str = "single"
    year: int | None = None
    subject: str = ""
    language: str = ""
    parallel_id: str = ""
    points: float = 1.0
    has_image: bool = False
    irt: tuple[float, float, float] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.item_id:
            raise ValueError("Item.item_id must be a non-empty string")
        if self.answer_type not in ANSWER_TYPES:
            raise ValueError(f"Item {self.item_id}: answer_type {self.answer_type!r} not in {ANSWER_TYPES}")
        if not isinstance(self.options, tuple):
            object.__setattr__(self, "options", tuple(self.options))
        if self.answer_type != "short" and not 2 <= len(self.options) <= len(LETTERS):
            raise ValueError(f"Item {self.item_id}: needs 2..{len(LETTERS)} options, got {len(self.options)}")
        if self.answer_type == "single" and self.answer is not None:
            if not isinstance(self.answer, int) or not 0 <= self.answer < len(self.options):
                raise ValueError(f"Item {self.item_id}: answer {self.answer!r} is not an option index")
        if self.irt is not None:
            object.__setattr__(self, "irt", tuple(float(x) for x in self.irt))
        if not self.parallel_id:
            object.__setattr__(self, "parallel_id", self.item_id)

    @property
    def n_options(self) -> int:
        return len(self.options)

    @property
    def exam_language(self) -> str:
        """The language of the exam version the item belongs to, i.e. of its prompt: `language` (the language of
        the item's own text) except for the foreign-language questions of an exam, such as the English and Spanish
        questions of ENEM's Portuguese exam (meta["exam_language"] 'pt'). Shots, templates and a job's language
        follow it."""
        return str(self.meta.get("exam_language") or self.language)

    @property
    def letters(self) -> str:
        """The option letters of this item, e.g. 'ABCDE'."""
        return LETTERS[: len(self.options)]

    @property
    def answer_letter(self) -> str | None:
        """The key as a letter for single-answer items (None when annulled or not single)."""
        if self.answer_type == "single" and isinstance(self.answer, int):
            return LETTERS[self.answer]
        return None

    def with_(self, **changes: Any) -> Item:
        """A copy with some fields changed (Items are frozen)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["options"] = list(self.options)
        d["meta"] = dict(self.meta)
        return d


def item_from_dict(d: Mapping[str, Any]) -> Item:
    """The inverse of `Item.to_dict` (JSON lists back to tuples: options, irt, multi / true-false answers)."""
    d = dict(d)
    answer = d.get("answer")
    if isinstance(answer, list):
        d["answer"] = tuple(answer)
    if d.get("irt") is not None:
        d["irt"] = tuple(d["irt"])
    d["options"] = tuple(d.get("options") or ())
    d["meta"] = dict(d.get("meta") or {})
    return Item(**d)


def _matches(value: Any, wanted: Any) -> bool:
    if callable(wanted):
        return bool(wanted(value))
    if isinstance(wanted, (list, tuple, set, frozenset)):
        return value in wanted
    return value == wanted


_PROPERTIES = ("n_options", "exam_language")  # Item properties ItemSet.filter accepts besides its fields


class ItemSet(Sequence[Item]):
    """An ordered collection of Items with unique ids; the unit every loader returns."""

    def __init__(self, items: Iterable[Item], name: str = "", skipped: Iterable[SkippedRecord] = ()):
        self._items: tuple[Item, ...] = tuple(items)
        self.name = name
        self.skipped: tuple[SkippedRecord, ...] = tuple(skipped)  # records the loader left out (unusable)
        self._index: dict[str, int] = {}
        for i, it in enumerate(self._items):
            if it.item_id in self._index:
                raise ValueError(f"duplicate item_id {it.item_id!r} at positions {self._index[it.item_id]} and {i}")
            self._index[it.item_id] = i

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self._items)

    def __getitem__(self, key):  # int, slice or item_id
        if isinstance(key, str):
            return self._items[self._index[key]]
        if isinstance(key, slice):
            return ItemSet(self._items[key], self.name, self.skipped)
        return self._items[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, Item):
            return key.item_id in self._index and self._items[self._index[key.item_id]] == key
        return key in self._index

    def __add__(self, other: ItemSet) -> ItemSet:
        return ItemSet(list(self) + list(other), self.name or other.name, self.skipped + other.skipped)

    def __repr__(self) -> str:
        return f"ItemSet(name={self.name!r}, n={len(self)})"

    @property
    def ids(self) -> list[str]:
        return [it.item_id for it in self._items]

    def filter(self, predicate: Callable[[Item], bool] | None = None, **criteria: Any) -> ItemSet:
        """Items whose fields match every criterion: a value, a collection of allowed values, or a callable.

        Example: `items.filter(language="pt", subject=["biology", "chemistry"], has_image=False)`.
        """
        unknown = [k for k in criteria if k not in Item.__dataclass_fields__ and k not in _PROPERTIES]
        if unknown:
            raise ValueError(f"unknown Item field(s) in filter: {unknown}")
        kept = [
            it for it in self._items
            if (predicate is None or predicate(it))
            and all(_matches(getattr(it, k), v) for k, v in criteria.items())
        ]
        return ItemSet(kept, self.name, self.skipped)

    def exclude(self, item_ids: Iterable[str]) -> ItemSet:
        drop = set(item_ids)
        return ItemSet([it for it in self._items if it.item_id not in drop], self.name, self.skipped)

    def by_parallel_id(self) -> dict[str, dict[str, Item]]:
        """parallel_id -> {exam language: Item}: the translations (exam versions) of each question side by side."""
        out: dict[str, dict[str, Item]] = {}
        for it in self._items:
            out.setdefault(it.parallel_id, {})[it.exam_language] = it
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per item; irt split into irt_a/irt_b/irt_c; options kept as a list column."""
        rows = []
        for it in self._items:
            d = it.to_dict()
            irt = d.pop("irt")
            d["irt_a"], d["irt_b"], d["irt_c"] = irt if irt is not None else (float("nan"),) * 3
            d["n_options"] = it.n_options
            d["answer_letter"] = it.answer_letter
            rows.append(d)
        cols = [
            "item_id", "source", "exam", "year", "subject", "language", "parallel_id", "stem", "options",
            "n_options", "answer", "answer_letter", "answer_type", "points", "has_image",
            "irt_a", "irt_b", "irt_c", "meta",
        ]
        return pd.DataFrame(rows, columns=cols)

    def fingerprint(self) -> str:
        """sha256 of the items' content: identifies the dataset in run provenance."""
        h = hashlib.sha256()
        for it in self._items:
            h.update(json.dumps(it.to_dict(), sort_keys=True, default=str, ensure_ascii=False).encode())
        return h.hexdigest()

    def summary(self) -> pd.DataFrame:
        """Counts of items per language and subject (the `make demo` summary)."""
        df = self.to_frame()
        if df.empty:
            return pd.DataFrame()
        return df.pivot_table(index="subject", columns="language", values="item_id", aggfunc="count",
                              fill_value=0, margins=True, margins_name="total")
