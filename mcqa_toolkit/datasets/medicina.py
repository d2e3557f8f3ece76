"""Italian medical-school entrance test (test-medicina): JSONL of id, topic, text, answers (5), label (0-based).

Topics map to the five scored subjects of the official rule (see `metrics.medicina_score`).
"""
from __future__ import annotations

from pathlib import Path

from mcqa_toolkit.datasets._common import UniqueIds, check_options, iter_jsonl, require, require_text
from mcqa_toolkit.items import DatasetError, Item, ItemSet

TOPICS = ("biologia", "chimica", "fisica-matematica", "competenze-conoscenze", "logica")


def load_medicina(path: str | Path, language: str = "it") -> ItemSet:
    """Load a test-medicina JSONL file; every record is validated, the first bad one raises DatasetError."""
    items, ids = [], UniqueIds(path)
    for n, rec in iter_jsonl(path):
        raw_id = require(rec, "id", path, n, types=(int, str))
        item_id = ids.add(f"medicina-{raw_id}", n)
        topic = require_text(rec, "topic", path, n)
        if topic not in TOPICS:
            raise DatasetError(path, n, "topic", f"unknown topic {topic!r}; expected one of {TOPICS}")
        stem = require_text(rec, "text", path, n)
        options = check_options(require(rec, "answers", path, n, types=list), path, n, "answers", n_allowed=(5,))
        label = require(rec, "label", path, n, types=int)
        if not 0 <= label < len(options):
            raise DatasetError(path, n, "label", f"label {label} out of range 0..{len(options) - 1}")
        items.append(Item(
            item_id=item_id, source="medicina", exam="test-medicina", stem=stem, options=options, answer=label,
            subject=topic, language=language, parallel_id=item_id, meta={"id": raw_id},
        ))
    return ItemSet(items, name=f"medicina:{Path(path).name}")
