"""HEAD-QA (Vilares & Gómez-Rodríguez 2019): the Spanish healthcare specialisation exams (MIR, EIR, FIR, BIR, QIR,
PIR) and their English translation, one JSON file per language as released (`HEAD.json`, `HEAD_EN.json`, and the
`train_`/`dev_`/`test_` splits of each):

    {"version": "1.0", "language": "es",
     "exams": {"Cuaderno_2015_1_B": {"name": ..., "data": [{"qid": "1", "qtext": ..., "ra": "4",
                                                             "answers": [{"aid": 1, "atext": ...}, ...],
                                                             "image": ""}, ...]}}}

The exam name says the year and the subject (B biology, E nursing, F pharmacology, M medicine, P psychology,
Q chemistry); `ra` is the `aid` of the right answer (options are put in `aid` order); a non-empty `image` names
the figure the question refers to (has_image, meta["image"]). The same exam and qid in the Spanish and English
files are one question: `parallel_id = headqa-<exam>-<qid>` links them, so loading both files (`path=[es, en]`)
gives the pairs the language gap and DIF work on (`ItemSet.by_parallel_id`). Questions the ministry annulled are
not in the release (their qids are missing). A record that cannot be used (no text, no option text, `ra` not an
`aid` of the question, a field missing or malformed, a repeated qid) is left out and named, and so are the questions
of an exam whose name does not say its year and subject or whose `data` is not a list (strict=True refuses them;
datasets.common). Records are named `<exam>/<position>` (1-based within the exam's `data`), or `<exam>` for an exam.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcqa_toolkit.datasets.common import (
    UniqueIds,
    check_options,
    concat,
    items_from_records,
    parse_int,
    question_text,
    reports_skipped,
    require,
)
from mcqa_toolkit.items import DatasetError, Item, ItemSet
from mcqa_toolkit.textfiles import read_json

SUBJECTS = {"B": "biology", "E": "nursing", "F": "pharmacology", "M": "medicine", "P": "psychology",
            "Q": "chemistry"}
LANGUAGES = ("es", "en")
_EXAM = re.compile(r"^Cuaderno_(?P<year>\d{4})_(?P<n>\d+)_(?P<letter>[A-Z])$")


def parse_record(rec: Mapping[str, Any], n: str, path: Any, exam: str, language: str) -> Item:
    """One question of exam `exam` -> Item; the first bad field raises DatasetError."""
    m = _EXAM.match(exam)
    if not m or m["letter"] not in SUBJECTS:
        raise DatasetError(path, n, "exams", f"exam name {exam!r} is not Cuaderno_<year>_<n>_<letter> with a subject "
                           f"letter in {sorted(SUBJECTS)}")
    qid = str(parse_int(require(rec, "qid", path, n, types=(str, int)), path, n, "qid"))
    item_id = f"headqa-{language}-{exam}-{qid}"
    stem = question_text(rec, "qtext", path, n, item_id)
    answers = require(rec, "answers", path, n, types=list, allow_empty=True)
    if any(not isinstance(a, Mapping) for a in answers):
        raise DatasetError(path, n, "answers", "expected a list of {aid, atext} objects")
    aids = [parse_int(require(a, "aid", path, n, types=(int, str)), path, n, "answers.aid") for a in answers]
    if len(set(aids)) != len(aids):
        raise DatasetError(path, n, "answers.aid", f"repeated aid in {aids}")
    order = sorted(range(len(aids)), key=aids.__getitem__)
    options = check_options([answers[i].get("atext") for i in order], path, n, "answers.atext", item_id=item_id)
    ra = parse_int(require(rec, "ra", path, n, types=(str, int)), path, n, "ra")
    if ra not in aids:
        raise DatasetError(path, n, "ra", f"right answer {ra} is not an aid of this question ({sorted(aids)})")
    image = rec.get("image")
    if image is not None and not isinstance(image, str):
        raise DatasetError(path, n, "image", f"expected a file name or \"\", got {type(image).__name__}")
    meta = {"qid": qid, "image": "" if image is None else image.strip()}
    return Item(item_id=item_id, source="head_qa", exam=exam, stem=stem, options=options,
                answer=sorted(aids).index(ra), year=int(m["year"]), subject=SUBJECTS[m["letter"]], language=language,
                parallel_id=f"headqa-{exam}-{qid}", has_image=bool(meta["image"]), meta=meta)


def _language(data: Mapping[str, Any], path: Path, given: str | None) -> str:
    """The file's language: its `language` field, or `given` for a file without one (both: they must agree)."""
    if given is not None and given not in LANGUAGES:
        raise ValueError(f"head_qa: unknown language {given!r}; expected one of {LANGUAGES}")
    found = data.get("language")
    if found is not None and (not isinstance(found, str) or found.strip().lower() not in LANGUAGES):
        raise DatasetError(path, "-", "language", f"unknown language {found!r}; expected one of {LANGUAGES}")
    found = found.strip().lower() if found is not None else None
    if given is not None and found is not None and given != found:
        raise DatasetError(path, "-", "language", f"the file says {found!r}, language={given!r} was passed")
    language = given or found
    if language not in LANGUAGES:
        raise DatasetError(path, "-", "language", "no `language` in the file: pass language='es' or 'en'")
    return language


def _entries(exams: Mapping[str, Any], path: Path) -> Iterator[tuple[str, Any]]:
    """(`<exam>/<position>`, question or DatasetError) of every exam; an exam that cannot be read is one entry."""
    for exam, body in exams.items():
        m = _EXAM.match(str(exam))
        questions = body.get("data") if isinstance(body, Mapping) else None
        if not m or m["letter"] not in SUBJECTS:
            yield str(exam), DatasetError(path, exam, "exams", f"exam name {exam!r} is not "
                                          f"Cuaderno_<year>_<n>_<letter> with a subject letter in {sorted(SUBJECTS)}")
        elif not isinstance(questions, list):
            yield str(exam), DatasetError(path, exam, "data", "expected a list of questions")
        else:
            yield from ((f"{exam}/{k}", q if isinstance(q, Mapping) else DatasetError(
                path, f"{exam}/{k}", None, "expected a JSON object")) for k, q in enumerate(questions, start=1))


def read_file(path: Path, ids: UniqueIds, language: str | None = None, strict: bool = False) -> ItemSet:
    """The questions of one HEAD-QA JSON file."""
    data = read_json(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("exams"), Mapping):
        raise DatasetError(path, "-", "exams", 'expected {"language": ..., "exams": {name: {"data": [...]}}}')
    language = _language(data, path, language)
    return items_from_records(_entries(data["exams"], path),
                              lambda rec, n: parse_record(rec, n, path, n.rsplit("/", 1)[0], language), path,
                              f"head_qa:{language}:{path.name}", id_field="qid", ids=ids, strict=strict)


@reports_skipped
def load_head_qa(path: str | Path | Sequence[str | Path], language: str | None = None,
                 strict: bool = False) -> ItemSet:
    """Load one HEAD-QA JSON file, or several (e.g. `[HEAD.json, HEAD_EN.json]`: the two languages, linked by
    parallel_id). `language` is needed only for a file without its `language` field. A record that cannot be used is
    left out and named with one warning (strict=True: refused)."""
    paths = [Path(p) for p in ([path] if isinstance(path, (str, Path)) else path)]
    if not paths:
        raise ValueError("head_qa: `path` is an empty list")
    ids = UniqueIds(paths[0], "qid")
    sets = [read_file(p, ids, language, strict) for p in paths]
    return concat(sets, "head_qa:" + "+".join(p.name for p in paths))
