"""EXAMS (Hardalov et al. 2020): high-school exam questions in 16 languages (mhardalov/exams-qa, CC BY-SA 4.0), in
the ARC layout, one JSON object a line:

    {"id": "<uuid>", "question": {"stem": ..., "choices": [{"text": ..., "label": "A"}, ...]},
     "answerKey": "A", "info": {"grade": 12, "subject": "Biology", "language": "Portuguese"}}

`path` is a `.jsonl` file, a `.jsonl.tar.gz` archive as the release ships them (`data/exams/multilingual/
{train,dev,test}.jsonl.tar.gz`: every `.jsonl` member is read; macOS `._` metadata members are not data), or a
folder of either (not its subfolders: the release keeps the same questions again under `with_paragraphs/`; nor
its `parallel_questions.jsonl`).
Languages are written as English names ("Portuguese", "North Macedonian") or codes; `datasets.languages` places
them with langcodes ("pt", "mk"). Questions have 3 to 5 choices; `answerKey` names the right choice by its label
(letters, or digits as some ARC files use).
The Wikipedia paragraphs of the `with_paragraphs` files (`para`) are not part of the exam and are not kept.
`languages` keeps some languages only; `parallel` points at the release's `parallel_questions.jsonl` ({id:
[ids of the same question in other languages]}) and gives each group one parallel_id, so the language gap works
on EXAMS's translated questions. A record that cannot be used is left out and named (strict=True refuses it;
datasets.common): one whose `answerKey` is not one of its choice labels (the release has '@' keys), whose language
langcodes cannot place, with no text or no choice text, a field missing or malformed, or an id seen before.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import (
    UniqueIds,
    check_options,
    concat,
    items_from_records,
    question_text,
    reports_skipped,
    require,
    require_text,
)
from mcqa_toolkit.datasets.languages import language_code
from mcqa_toolkit.items import DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import iter_jsonl, jsonl_entries, jsonl_file_entries, tar_members

PARALLEL_FILE = "parallel_questions.jsonl"   # the release's map of translated questions, not questions
_SPLIT = re.compile(r"(?:^|[_.-])(train|dev|test)(?:[_.-]|$)")


def _language(value: Any, path: Any, n: Any) -> str:
    """'Portuguese' / 'North Macedonian' / 'pt' -> 'pt' / 'mk' / 'pt'; a value langcodes cannot place ->
    DatasetError naming info.language."""
    code = language_code(value) if isinstance(value, str) else None
    if code is None:
        raise DatasetError(path, n, "info.language", f"unknown language {value!r:.60} (not a language name or code "
                           "that langcodes knows)")
    return code


def parse_record(rec: Mapping[str, Any], n: int, path: Any, split: str | None = None,
                 parallel: Mapping[str, str] | None = None) -> Item:
    """One EXAMS record -> Item; the first bad field raises DatasetError."""
    raw_id = require_text(rec, "id", path, n)
    item_id = f"exams-{raw_id}"
    question = require(rec, "question", path, n, types=dict)
    stem = question_text(question, "stem", path, n, item_id)
    choices = require(question, "choices", path, n, types=list, allow_empty=True)
    if any(not isinstance(c, Mapping) for c in choices):
        raise DatasetError(path, n, "question.choices", "expected a list of {text, label} objects")
    options = check_options([c.get("text") for c in choices], path, n, "question.choices", item_id=item_id)
    labels = [str(require(c, "label", path, n, types=(str, int))).strip() for c in choices]
    if len(set(labels)) != len(labels):
        raise DatasetError(path, n, "question.choices", f"repeated choice label in {labels}")
    key = str(require(rec, "answerKey", path, n, types=(str, int))).strip()
    if key not in labels:
        raise DatasetError(path, n, "answerKey", f"{key!r} is not a choice label ({labels})")
    info = require(rec, "info", path, n, types=dict)
    language = _language(info.get("language"), path, n)
    subject = require_text(info, "subject", path, n)
    grade = info.get("grade")
    meta = {"id": raw_id, "split": split, "grade": grade, "labels": labels}
    return Item(item_id=item_id, source="exams", exam="EXAMS", stem=stem, options=options, answer=labels.index(key),
                subject=subject, language=language, parallel_id=f"exams-{(parallel or {}).get(raw_id, raw_id)}",
                meta=meta)


def parallel_groups(path: str | Path) -> dict[str, str]:
    """id -> one id per group of parallel questions (the smallest), from `parallel_questions.jsonl`."""
    root: dict[str, str] = {}

    def find(q: str) -> str:
        while root.get(q, q) != q:
            root[q] = root.get(root[q], root[q])   # path halving
            q = root[q]
        return q

    for n, rec in iter_jsonl(path):
        for qid, others in rec.items():
            if not isinstance(others, list) or not all(isinstance(o, str) for o in others):
                raise DatasetError(path, n, qid, "expected a list of question ids")
            for other in others:
                a, b = sorted((find(qid), find(other)))
                root[b] = a
    return {q: find(q) for q in list(root)}


def _sources(path: Path) -> list[tuple[str, Iterable[tuple[int, dict]]]]:
    """(name for errors, records) of each JSONL file or archive member under `path`."""
    if not path.exists():
        raise DatasetError(path, "-", None, "file or directory not found")
    files = sorted(f for f in path.iterdir() if f.is_file() and f.name != PARALLEL_FILE
                   and f.name.endswith((".jsonl", ".tar.gz", ".tgz", ".tar"))) if path.is_dir() else [path]
    if not files:
        raise DatasetError(path, "-", None, "no .jsonl or .jsonl.tar.gz files in this directory")
    out: list[tuple[str, Iterable[tuple[int, dict]]]] = []
    for f in files:
        if f.name.endswith(".jsonl"):
            out.append((str(f), jsonl_file_entries(f)))
        elif f.name.endswith((".tar.gz", ".tgz", ".tar")):
            out += [(label, jsonl_entries(text, label)) for label, text in tar_members(f, ".jsonl")]
        else:
            raise DatasetError(f, "-", None, "expected a .jsonl file or a .jsonl.tar.gz archive")
    return out


@reports_skipped
def load_exams(path: str | Path, languages: Iterable[str] | None = None, parallel: str | Path | None = None,
               strict: bool = False) -> ItemSet:
    """Load EXAMS questions from a .jsonl file, a .jsonl.tar.gz archive or a folder of them; `languages` (codes)
    keeps those only (names are placed as the records' are: "Portuguese" is "pt"); `parallel`
    (parallel_questions.jsonl) links translations by parallel_id. A record that cannot be used is left out and named
    with one warning (strict=True: refused)."""
    wanted = None if languages is None else {str(x): language_code(str(x)) for x in languages}
    if wanted is not None and None in wanted.values():
        raise ValueError(f"exams: unknown language(s) {sorted(k for k, v in wanted.items() if v is None)}")
    codes = None if wanted is None else set(wanted.values())
    path = Path(path)
    groups = parallel_groups(parallel) if parallel is not None else None
    ids, sets = UniqueIds(path), []
    for name, records in _sources(path):
        m = _SPLIT.search(Path(name).name)
        parse = functools.partial(parse_record, path=name, split=m[1] if m else None, parallel=groups)
        items = items_from_records(records, parse, name, name="", ids=ids, strict=strict)
        sets.append(items if codes is None else items.filter(language=codes))
    return concat(sets, f"exams:{path.name}")
