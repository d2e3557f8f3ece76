"""UNED-ACCESS 2024 (Spanish university-entrance exams with professional English translations).

Fields (paper, appendix A.1): question, A, B, C, D, solution (letter), year, test_name, code, subject, id.
D is empty (NaN in CSV, null in JSON) for 3-option subjects: in that field only, an empty cell, null, NaN and
the texts "NaN"/"null" (any case, as pandas and JSON exports write them) mean "no fourth option" (`NO_OPTION_D`).
Every other field, and any other D text ("None", "N/A", ...), is text. The Spanish and English files share `id`,
so `parallel_id = id` pairs the two languages and `item_id = f"uned-{language}-{id}"` keeps them apart.
Files: CSV, or JSON as a list of objects, a dict of column lists, or pandas' dict of {row: value} dicts.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import (
    items_from_records,
    option_columns,
    parse_int,
    question_text,
    reports_skipped,
    require,
    require_text,
)
from mcqa_toolkit.datasets.labels import letter_to_index
from mcqa_toolkit.items import DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import csv_entries, json_entries

REQUIRED = ("question", "A", "B", "C", "solution", "year", "test_name", "code", "subject", "id")
LANGUAGES = ("es", "en")
NO_OPTION_D = ("", "nan", "null")  # the release's markers of a 3-option item, lower-cased and stripped
# file-name tokens that name the language, e.g. UNED_ACCESS_2024_EN.csv, uned-es.json, spanish.csv
_NAME_TOKENS = {"es": "es", "esp": "es", "spanish": "es", "espanol": "es", "en": "en", "eng": "en", "english": "en"}


def parse_record(rec: Mapping[str, Any], n: int, path: Any, language: str) -> Item:
    """One UNED-ACCESS record -> Item (3 options when D is empty/NaN/null, else 4)."""
    raw_id = str(require(rec, "id", path, n, types=(str, int))).strip()
    stem = question_text(rec, "question", path, n, f"uned-{language}-{raw_id}")
    options = list(option_columns(rec, "ABC", path, n, f"uned-{language}-{raw_id}"))
    if not no_option_d(rec.get("D")):
        options.append(require_text(rec, "D", path, n))
    answer = letter_to_index(require(rec, "solution", path, n, types=str), len(options), path, n, "solution")
    year = parse_int(require(rec, "year", path, n, types=(str, int, float)), path, n, "year")
    code = str(require(rec, "code", path, n, types=(str, int))).strip()
    return Item(
        item_id=f"uned-{language}-{raw_id}", source="uned", exam=require_text(rec, "test_name", path, n),
        stem=stem, options=tuple(options), answer=answer, year=year, subject=require_text(rec, "subject", path, n),
        language=language, parallel_id=raw_id, meta={"id": raw_id, "code": code},
    )


def no_option_d(value: Any) -> bool:
    """True when UNED's D field says the item has three options: absent, null, NaN, or a NO_OPTION_D text."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip().lower() in NO_OPTION_D


def guess_language(path: str | Path) -> str | None:
    """'es' or 'en' when exactly one language token appears in the file name, else None."""
    tokens = re.split(r"[^a-z]+", Path(path).stem.lower())
    found = {_NAME_TOKENS[t] for t in tokens if t in _NAME_TOKENS}
    return found.pop() if len(found) == 1 else None


@reports_skipped
def load_uned(path: str | Path, language: str | None = None, strict: bool = False) -> ItemSet:
    """Load one UNED-ACCESS file (CSV or JSON); `language` ('es'/'en') defaults to a guess from the file name. A
    record that cannot be used is left out and named with one warning (strict=True: refused; datasets.common)."""
    path = Path(path)
    language = language or guess_language(path)
    if language is None:
        raise DatasetError(path, "-", "language", "no single es/en token in the file name: pass language='es' or 'en'")
    if language not in LANGUAGES:
        raise DatasetError(path, "-", "language", f"unknown language {language!r}; expected one of {LANGUAGES}")
    if path.suffix.lower() == ".json":
        records = json_entries(path)
    elif path.suffix.lower() == ".csv":
        records = csv_entries(path, required=REQUIRED)
    else:
        raise DatasetError(path, "-", None, "expected a .csv or .json file")
    return items_from_records(records, lambda rec, n: parse_record(rec, n, path, language), path,
                              name=f"uned:{language}:{path.name}", strict=strict)
