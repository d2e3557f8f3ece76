"""Datasets from the Hugging Face hub (or any `datasets.Dataset`) mapped to Items by a loader's record parser.

`load_hub("cais/mmlu", split="test", mapper="mmlu", name="all")` calls `datasets.load_dataset` and sends
every row through `mmlu.parse_record`, the same function the CSV loader uses, so hub rows are validated
exactly like file records (errors name `hub:<name>[<split>]`, the 1-based row and the field). Local
files work the same way: `load_hub("json", split="train", mapper="medicina", data_files="test.jsonl")`.
A ready `Dataset` (or `DatasetDict`, indexed by `split`) can be passed as `dataset=` instead.
The "csv" builder reads with pandas, which by default turns cells such as "None", "NA", "null" or "nan" into
missing values; we pass `keep_default_na=False` (unless you set it) so those option texts stay text and only
an empty cell is missing, as in the file loaders.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from mcqa_toolkit.datasets.common import items_from_records, reports_skipped
from mcqa_toolkit.items import DatasetError, Item, ItemSet

Mapper = Callable[[Mapping[str, Any], int, Any], Item]


def _mmlu() -> Mapper:
    from mcqa_toolkit.datasets.mmlu import parse_record
    return parse_record


def _medicina() -> Mapper:
    from mcqa_toolkit.datasets.medicina import parse_record
    return parse_record


def _uned() -> Callable[..., Item]:  # needs mapper_kwargs {"language": ...}
    from mcqa_toolkit.datasets.uned import parse_record
    return parse_record


def _enem() -> Mapper:
    from mcqa_toolkit.datasets.enem.formats import parse_record
    return parse_record


def _enade() -> Mapper:
    from mcqa_toolkit.datasets.enade import parse_record
    return parse_record


# mapper name -> a function importing that loader's `parse_record(rec, n, path, **mapper_kwargs)`, which turns one
# row into an Item
MAPPERS: dict[str, Callable[[], Callable[..., Item]]] = {
    "mmlu": _mmlu,
    "medicina": _medicina,
    "uned": _uned,
    "enem": _enem,
    "enade": _enade,
}


def record_parser(mapper: str | Mapper, **mapper_kwargs: Any) -> Mapper:
    """The `(rec, n, path) -> Item` function for a mapper name (with its keyword arguments) or a callable."""
    if callable(mapper):
        return partial(mapper, **mapper_kwargs) if mapper_kwargs else mapper
    if mapper not in MAPPERS:
        raise ValueError(f"unknown mapper {mapper!r}; expected one of {sorted(MAPPERS)} or a callable")
    return partial(MAPPERS[mapper](), **mapper_kwargs)


@reports_skipped
def load_hub(name_or_path: str, split: str = "test", mapper: str | Mapper = "mmlu", dataset: Any = None,
             mapper_kwargs: Mapping[str, Any] | None = None, strict: bool = False, **load_kwargs: Any) -> ItemSet:
    """Load `name_or_path` with `datasets.load_dataset(name_or_path, split=split, **load_kwargs)` (or use
    `dataset`) and map every row to an Item.

    mapper: "mmlu" | "medicina" | "uned" | "enem" | "enade", or a callable `(rec, n, path) -> Item`.
    mapper_kwargs: passed to the mapper, e.g. `{"language": "es"}` for "uned" (required there).
    strict: refuse the first row that cannot be used instead of leaving it out and naming it (datasets.common).
    """
    if dataset is None:
        import datasets  # the HF library is slow to import; only this loader needs it

        if name_or_path == "csv":
            load_kwargs.setdefault("keep_default_na", False)
        dataset = datasets.load_dataset(name_or_path, split=split, **load_kwargs)
    elif isinstance(dataset, Mapping):  # a DatasetDict
        if split not in dataset:
            raise ValueError(f"split {split!r} not in the given dataset (splits: {sorted(dataset)})")
        dataset = dataset[split]
    label = f"hub:{name_or_path}[{split}]"
    parse = record_parser(mapper, **(mapper_kwargs or {}))
    rows = ((n, _row(rec, label, n)) for n, rec in enumerate(dataset, start=1))
    return items_from_records(rows, lambda rec, n: parse(rec, n, label), label, name=label, strict=strict)


def _row(rec: Any, label: str, n: int) -> dict[str, Any] | DatasetError:
    if not isinstance(rec, Mapping):
        return DatasetError(label, n, None, f"expected a row of named fields, got {type(rec).__name__}")
    return dict(rec)
