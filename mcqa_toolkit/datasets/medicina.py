"""Italian medical-school entrance test (test-medicina): JSONL of id, topic, text, answers (5), label (0-based).

Topics map to the five scored subjects of the official rule (see `measure.medicina_score`).
`parse_record` is shared with `hub.load_hub` (mapper "medicina"), so hub rows are validated the same way.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import (
    check_options,
    items_from_records,
    question_text,
    reports_skipped,
    require,
    require_text,
)
from mcqa_toolkit.items import DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import jsonl_file_entries

TOPICS = ("biologia", "chimica", "fisica-matematica", "competenze-conoscenze", "logica")


def parse_record(rec: Mapping[str, Any], n: int, path: Any, language: str = "it") -> Item:
    """One test-medicina record -> Item; the first bad field raises DatasetError."""
    raw_id = require(rec, "id", path, n, types=(int, str))
    item_id = f"medicina-{raw_id}"
    topic = require_text(rec, "topic", path, n)
    if topic not in TOPICS:
        raise DatasetError(path, n, "topic", f"unknown topic {topic!r}; expected one of {TOPICS}")
    stem = question_text(rec, "text", path, n, item_id)
    options = check_options(require(rec, "answers", path, n, types=list), path, n, "answers", n_allowed=(5,),
                            item_id=item_id)
    label = require(rec, "label", path, n, types=int)
    if not 0 <= label < len(options):
        raise DatasetError(path, n, "label", f"label {label} out of range 0..{len(options) - 1}")
    return Item(
        item_id=item_id, source="medicina", exam="test-medicina", stem=stem, options=options, answer=label,
        subject=topic, language=language, parallel_id=item_id, meta={"id": raw_id},
    )


@reports_skipped
def load_medicina(path: str | Path, language: str = "it", strict: bool = False) -> ItemSet:
    """Load a test-medicina JSONL file; a record that cannot be used is left out and named with one warning
    (strict=True: refused; datasets.common)."""
    return items_from_records(jsonl_file_entries(path), lambda rec, n: parse_record(rec, n, path, language),
                              path, name=f"medicina:{Path(path).name}", strict=strict)
