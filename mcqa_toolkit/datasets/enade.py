"""ENADE-QA (health-sciences ENADE exams, 2013-2023): CSV or JSONL, 4- and 5-option items.

We have no release file to check against, so the column names are an explicit, overridable mapping
from our field to the file's column (`DEFAULT_COLUMNS`). Pass `columns={"stem": "questao"}` to rename
any of them; the rest keep their defaults. Fields:

  id          item identifier (optional; the record number when the column is absent)
  year        `ano`, the exam year (required)
  course      `curso`, the undergraduate programme -> Item.subject (required)
  component   `componente`, e.g. formação geral / componente específico (optional)
  number      `numero`, question number in the booklet (optional)
  stem        `enunciado` (required)
  options     `alternativa_a` .. `alternativa_e`, or `A` .. `E` when those are the file's columns;
              an empty 5th alternative means a 4-option item
  answer      `gabarito`, a letter; "anulada"/"anulado" marks an annulled item (answer None)
  has_image   `tem_imagem` (optional boolean, default False)
  cannot_fix  `cannot_fix` (optional boolean, default False): the curators could not repair the text
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import (
    is_annulled,
    is_missing,
    items_from_records,
    option_columns,
    parse_bool,
    parse_int,
    question_text,
    reports_skipped,
    require,
    require_text,
)
from mcqa_toolkit.datasets.labels import letter_to_index
from mcqa_toolkit.items import DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import csv_columns, csv_entries, jsonl_file_entries

LETTER_COLUMNS = ("A", "B", "C", "D", "E")
DEFAULT_COLUMNS: dict[str, Any] = {
    "id": "id", "year": "ano", "course": "curso", "component": "componente", "number": "numero",
    "stem": "enunciado",
    "options": ("alternativa_a", "alternativa_b", "alternativa_c", "alternativa_d", "alternativa_e"),
    "answer": "gabarito", "has_image": "tem_imagem", "cannot_fix": "cannot_fix",
}
REQUIRED_FIELDS = ("year", "course", "stem", "options", "answer")


def resolve_columns(columns: Mapping[str, Any] | None, available: set[str] | None = None) -> dict[str, Any]:
    """DEFAULT_COLUMNS updated with `columns`; options fall back to A..E when the file has those instead."""
    unknown = set(columns or {}) - set(DEFAULT_COLUMNS)
    if unknown:
        raise ValueError(f"unknown ENADE field(s) {sorted(unknown)}; known: {sorted(DEFAULT_COLUMNS)}")
    cols = {**DEFAULT_COLUMNS, **(columns or {})}
    cols["options"] = tuple(cols["options"])
    if (available is not None and "options" not in (columns or {})
            and cols["options"][0] not in available and LETTER_COLUMNS[0] in available):
        cols["options"] = LETTER_COLUMNS
    return cols


def parse_record(rec: Mapping[str, Any], n: int, path: Any, columns: Mapping[str, Any] | None = None) -> Item:
    """One ENADE-QA record -> Item, reading fields through DEFAULT_COLUMNS updated with `columns`."""
    cols = resolve_columns(columns, set(rec))
    names = cols["options"]
    if len(names) == 5 and is_missing(rec.get(names[4])):  # empty 5th alternative: a 4-option item
        names = names[:4]
    if len(names) not in (4, 5):
        raise DatasetError(path, n, names[0] if names else None, f"wrong option count {len(names)} (allowed: 4, 5)")
    raw_id = rec.get(cols["id"])
    item_id = f"enade-{raw_id if not is_missing(raw_id) else n}".strip()
    stem = question_text(rec, cols["stem"], path, n, item_id)
    options = option_columns(rec, names, path, n, item_id)
    raw_answer = require(rec, cols["answer"], path, n, types=str)
    annulled = is_annulled(raw_answer)
    answer = None if annulled else letter_to_index(raw_answer, len(options), path, n, cols["answer"])
    year = parse_int(require(rec, cols["year"], path, n, types=(str, int, float)), path, n, cols["year"])
    course = require_text(rec, cols["course"], path, n)
    meta = {
        "id": raw_id if not is_missing(raw_id) else None,
        "component": "" if is_missing(rec.get(cols["component"])) else str(rec[cols["component"]]).strip(),
        "number": parse_int(rec.get(cols["number"]), path, n, cols["number"], optional=True),
        "cannot_fix": parse_bool(rec.get(cols["cannot_fix"]), path, n, cols["cannot_fix"], default=False),
        "annulled": annulled,
    }
    return Item(
        item_id=item_id, source="enade", exam=f"ENADE_{year}_{course}", stem=stem,
        options=options, answer=answer, year=year, subject=course, language="pt",
        has_image=parse_bool(rec.get(cols["has_image"]), path, n, cols["has_image"], default=False), meta=meta,
    )


@reports_skipped
def load_enade(path: str | Path, columns: Mapping[str, Any] | None = None, filter_images: bool = False,
               filter_cannot_fix: bool = False, strict: bool = False) -> ItemSet:
    """Load an ENADE-QA CSV or JSONL file; drop image items / unfixable items when asked (the README's filters).
    A record that cannot be used is left out and named with one warning (strict=True: refused; datasets.common)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        cols = resolve_columns(columns, set(csv_columns(path)))
        required = [cols[f] for f in REQUIRED_FIELDS if f != "options"] + list(cols["options"][:4])
        records = csv_entries(path, required=required)
    elif path.suffix.lower() == ".jsonl":
        records = jsonl_file_entries(path)
    else:
        raise DatasetError(path, "-", None, "expected a .csv or .jsonl file")
    items = items_from_records(records, lambda rec, n: parse_record(rec, n, path, columns),
                               path, name=f"enade:{path.name}", strict=strict)
    return items.filter(lambda it: not (filter_images and it.has_image)
                        and not (filter_cannot_fix and it.meta["cannot_fix"]))
