"""AGIEval (Zhong et al. 2023): SAT, LSAT, LogiQA, AQuA-RAT, the Chinese Gaokao, JEC-QA and MATH questions, as
ruixiangcui/AGIEval publishes them: one JSONL file per task, `data/v1/<task>.jsonl`, one object a line:

    {"passage": "" | null | "<text the question is about>", "question": ..., "options": ["(A)...", "(B)...", ...],
     "label": "C" | ["A", "D"], "answer": null | "<text>", "other": {"source": ..., "solution": ...}}

- The stem is the passage, then the question (separated by a blank line), as the ENEM loader keeps a question's
  text: the passage is part of what the candidate reads.
- Options lose their "(A)" (or "A)") prefixes when every option carries its own letter in order (otherwise they
  stay as written). An options list of one string holding every option ("(A)x (B)y ...") is split at its markers when
  each letter appears once, in order (meta["options_split"]); otherwise it is a DatasetError.
- A one-letter label is a single-answer item; several letters, in a list or in one string ("AD", "A,D", "A D":
  gaokao-mathqa writes its two-answer questions "AD"), are a multiple-answer item (answer_type "multi", the sorted
  option indices), and so is a list of one letter: the release writes select-all questions that way (JEC-QA, some
  Gaokao physics). AGIEval scores those by exact set match, so they carry meta["partial_credit"] = False (no
  points for a strict subset; records.grading). A label that is not letters of the options ('。' in jec-qa-ca, an
  empty list in jec-qa-kd) makes the record unusable (`datasets.labels`).
- The cloze tasks (MATH, gaokao-mathcloze: options and label null) become short-answer items whose reference is
  `answer`, graded by a judge like the course exams' short answers; `other.solution` becomes meta["explanation"].
- The task is the file name (`<task>.jsonl`; a longer name holding a known task, such as a `_sample` excerpt,
  counts as that task); its language follows AGIEval's own lists (ZH_TASKS: "zh", the others "en"), or the
  `language` argument for a task it does not know. Items are `agieval-<task>-<line>`; a year in
  `other.source` ("2021年湖北高考物理") becomes the item's year.
A record that cannot be used (no text in passage nor question, no option text, a label as above, a field missing or
malformed) is left out and named (strict=True refuses it; datasets.common). `path` is a task file or a folder of
them (`tasks` picks some).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import (
    UniqueIds,
    check_options,
    concat,
    is_missing,
    items_from_records,
    reports_skipped,
    require,
)
from mcqa_toolkit.datasets.labels import answer_letters
from mcqa_toolkit.items import LETTERS, DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import jsonl_file_entries

EN_TASKS = ("aqua-rat", "gaokao-english", "logiqa-en", "lsat-ar", "lsat-lr", "lsat-rc", "math", "sat-en",
            "sat-en-without-passage", "sat-math")
ZH_TASKS = ("gaokao-biology", "gaokao-chemistry", "gaokao-chinese", "gaokao-geography", "gaokao-history",
            "gaokao-mathcloze", "gaokao-mathqa", "gaokao-physics", "jec-qa-ca", "jec-qa-kd", "logiqa-zh")
_PREFIX = re.compile(r"^\s*\(?([A-J])\)\s*")   # "(A)text", "(A) text", "A) text"
_MARKER = re.compile(r"\(([A-J])\)")
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")


def task_of(path: Path) -> str:
    """The AGIEval task a file holds: its stem, or the longest known task name inside it."""
    known = [t for t in EN_TASKS + ZH_TASKS if re.search(rf"(?<![a-z-]){re.escape(t)}(?![a-z-])", path.stem)]
    return max(known, key=len) if known else path.stem


def _stem(rec: Mapping[str, Any], path: Any, n: int, item_id: str) -> str:
    passage = rec.get("passage")
    if passage is not None and not isinstance(passage, str):
        raise DatasetError(path, n, "passage", f"expected text or null, got {type(passage).__name__}")
    question = require(rec, "question", path, n, types=str, allow_empty=True).strip()
    passage = (passage or "").strip()
    if not question and not passage:
        raise DatasetError(path, n, "question", "no question text (`passage` and `question` empty)", item_id)
    return "\n\n".join(t for t in (passage, question) if t)


def split_options(options: list[str], path: Any, n: int) -> tuple[list[str], bool]:
    """(the options, whether they came as one string split at its "(A)", "(B)", ... markers, each kept once)."""
    if len(options) == 1 and isinstance(options[0], str):
        found = [m[1] for m in _MARKER.finditer(options[0])]
        if len(found) < 2 or found != list(LETTERS[:len(found)]):
            raise DatasetError(path, n, "options", f"one option {options[0]!r:.60} that does not split into "
                               "(A), (B), ... each once, in order")
        starts = [m.start() for m in _MARKER.finditer(options[0])] + [len(options[0])]
        return [options[0][a:b] for a, b in pairwise(starts)], True
    return options, False


def _strip_prefixes(options: tuple[str, ...]) -> tuple[str, ...]:
    ends = [m.end() for i, m in enumerate(map(_PREFIX.match, options)) if m and m[1] == LETTERS[i]]
    if len(ends) == len(options):  # every option starts with its own letter
        return tuple(o[end:].strip() or o for o, end in zip(options, ends, strict=True))
    return options


def _answer(label: Any, n_options: int, path: Any, n: int) -> tuple[Any, str]:
    """(option index, "single") for one letter in a string; (sorted indices, "multi") for several, or a list."""
    found = answer_letters(label, n_options, path, n, "label")
    return (found[0], "single") if isinstance(label, str) and len(found) == 1 else (found, "multi")


def parse_record(rec: Mapping[str, Any], n: int, path: Any, task: str, language: str) -> Item:
    """One AGIEval record -> Item (single, multi or short; see the module docstring)."""
    item_id = f"agieval-{task}-{n}"
    stem = _stem(rec, path, n, item_id)
    other = rec.get("other")
    if not isinstance(other, Mapping):
        other = {}
    meta: dict[str, Any] = {"task": task, "line": n}
    for key, name in (("source", "source"), ("solution", "explanation")):
        if isinstance(other.get(key), str) and other[key].strip():
            meta[name] = other[key].strip()
    year = _YEAR.search(meta.get("source", ""))
    common: dict[str, Any] = dict(item_id=item_id, source="agieval", exam="AGIEval", stem=stem, subject=task,
                                  language=language, year=int(year[1]) if year else None)
    if rec.get("options") is None and is_missing(rec.get("label")):   # a cloze task: the answer is written
        answer = require(rec, "answer", path, n, types=(str, int, float))
        return Item(**common, options=(), answer=str(answer).strip(), answer_type="short", meta=meta)
    raw = require(rec, "options", path, n, types=list, allow_empty=True)
    raw, meta["options_split"] = split_options(raw, path, n) if raw else (raw, False)
    options = _strip_prefixes(check_options(raw, path, n, "options", item_id=item_id))
    answer, kind = _answer(require(rec, "label", path, n, types=(str, list)), len(options), path, n)
    if kind == "multi":
        meta["partial_credit"] = False
    return Item(**common, options=options, answer=answer, answer_type=kind, meta=meta)


@reports_skipped
def load_agieval(path: str | Path, tasks: Iterable[str] | None = None, language: str | None = None,
                 strict: bool = False) -> ItemSet:
    """Load one AGIEval task file or a folder of them (`tasks` keeps some); `language` is needed only for a task
    AGIEval's lists do not name. A record that cannot be used is left out and named with one warning (strict=True:
    refused)."""
    path = Path(path)
    if not path.exists():
        raise DatasetError(path, "-", None, "file or directory not found")
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    wanted = None if tasks is None else {str(t) for t in tasks}
    chosen = [(f, task_of(f)) for f in files if wanted is None or task_of(f) in wanted]
    absent = sorted((wanted or set()) - {t for _, t in chosen})
    if absent or not chosen:
        raise DatasetError(path, "-", None, f"no <task>.jsonl file for {absent}" if absent else "no <task>.jsonl file")
    ids, sets = UniqueIds(path), []
    for f, task in chosen:
        lang = language or ("zh" if task in ZH_TASKS else "en" if task in EN_TASKS else None)
        if lang is None:
            raise DatasetError(f, "-", None, f"task {task!r} is not one of AGIEval's: pass language='en' or 'zh'")

        def parse(rec, n, f=f, t=task, lg=lang):
            return parse_record(rec, n, f, t, lg)

        sets.append(items_from_records(jsonl_file_entries(f), parse, f, name="", ids=ids, strict=strict))
    return concat(sets, f"agieval:{path.name}")
