"""ENEM source records -> Items, one parser per format (the rules are in the package docstring,
mcqa_toolkit.datasets.enem): exam CSV rows, BLUEX-style JSON records, 2024-style JSONL records, enem_challenge
rows; `parse_record` picks the parser from the record's fields.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from mcqa_toolkit.datasets.common import (
    check_options,
    is_annulled,
    is_missing,
    option_columns,
    parse_bool,
    parse_int,
    question_text,
    require,
    require_text,
)
from mcqa_toolkit.datasets.labels import letter_to_index
from mcqa_toolkit.datasets.languages import language_code
from mcqa_toolkit.enem.itens_prova import AREAS
from mcqa_toolkit.enem.positions import area_of, is_foreign_position
from mcqa_toolkit.items import LETTERS, DatasetError, Item

AREA_NAMES = {"CH": "humanities", "CN": "natural sciences", "LC": "languages", "MT": "mathematics"}
LANGUAGES = ("pt", "en", "es")   # ENEM's exam versions; sources write them as names or codes ("portuguese", "pt-br")
TAGS = ("IU", "ML", "BK", "CE", "DS", "MR", "TU", "ledor")
CSV_REQUIRED = ("body", "A", "B", "C", "D", "E", "year", "question_number", "test", "answer")
EXAM_CSV_NAME = re.compile(r"^(?:(?P<language>pt|en|es)_)?ENEM_(?P<year>\d{4})_(?P<area>CH|CN|LC|MT)_CO_PROVA_"
                           r"(?P<co_prova>\d+)(?:_[A-Za-z0-9]+)?\.csv$")
IMAGE_MARKERS = re.compile(
    r"descri[çc][ãa]o d[aoe]s? [^:.\n]{1,40}:|descripci[óo]n de (?:la|el|los|las) [^:.\n]{1,40}:"
    r"|\b(?:image|figure|chart|graph|illustration|picture|table) description\s*:|\bdescription of the [^:.\n]{1,40}:",
    re.IGNORECASE)
_LETTER_PREFIX = re.compile(r"^\s*([A-E])(?:[).:]|\s)\s*")
OTHER_EXAMS = re.compile(r"^(?P<exam>UNICAMP|USP)_", re.IGNORECASE)   # portuguese-benchmark-datasets/BLUEX ids


class ExamFile(NamedTuple):
    """What an exam CSV's name says: `[pt_]ENEM_2022_CN_CO_PROVA_1092.csv`."""
    year: int
    area: str
    co_prova: int
    language: str | None


def exam_file_info(path: str | Path) -> ExamFile | None:
    m = EXAM_CSV_NAME.match(Path(path).name)
    return m and ExamFile(int(m["year"]), m["area"], int(m["co_prova"]), m["language"])


def language_of(value: Any) -> str | None:
    """One of ENEM's LANGUAGES for a language cell ('portuguese', 'pt-br', 'en': datasets.languages), else None."""
    code = None if is_missing(value) else language_code(str(value))
    return code if code in LANGUAGES else None


def _language(value: Any, path: Any, n: int, key: str) -> str | None:
    if is_missing(value):
        return None
    code = language_of(value)
    if code is None:
        raise DatasetError(path, n, key, f"unknown language {value!r:.60}; ENEM's are {LANGUAGES} (by name or code)")
    return code


def _answer(rec: Mapping[str, Any], key: str, path: Any, n: int) -> tuple[int | None, bool]:
    raw = require(rec, key, path, n, types=str)
    return (None, True) if is_annulled(raw) else (letter_to_index(raw, 5, path, n, key), False)


def _has_marker(*texts: str) -> bool:
    return any(IMAGE_MARKERS.search(t) for t in texts)


def _parse_csv_row(rec: Mapping[str, Any], n: int, path: Any, language: str | None, foreign_language: str | None,
                   info: ExamFile | None, exam_language: str | None = None) -> Item:
    number = parse_int(require(rec, "question_number", path, n, types=(str, int)), path, n, "question_number")
    year = parse_int(require(rec, "year", path, n, types=(str, int)), path, n, "year")
    area = require_text(rec, "test", path, n).upper()
    if area not in AREAS:
        raise DatasetError(path, n, "test", f"unknown area {rec['test']!r}; expected one of {AREAS}")
    if info and (year, area) != (info.year, info.area):
        field = "year" if year != info.year else "test"
        raise DatasetError(path, n, field, f"{year} {area} contradicts the file name ({info.year} {info.area})")
    foreign = is_foreign_position(year, area, number)
    lang = _language(rec.get("language"), path, n, "language")
    if info and info.language and lang and lang != info.language and not foreign:
        raise DatasetError(path, n, "language",
                           f"{rec['language']!r} contradicts the file-name prefix {info.language}_")
    version = (info and info.language) or exam_language or language or "pt"   # the exam version's language
    lang = lang or version
    answer, annulled = _answer(rec, "answer", path, n)
    co_prova = info.co_prova if info else None
    exam = f"ENEM_{year}_{area}" + (f"_{co_prova}" if co_prova else "")
    meta: dict[str, Any] = {"area": area, "number": number, "co_prova": co_prova, "annulled": annulled}
    if foreign:
        meta["foreign_language"] = (_language(rec.get("foreign_language"), path, n, "foreign_language")
                                    or foreign_language)
    if lang != version:   # a foreign-language question of this exam version: its prompt is the version's
        meta["exam_language"] = version
    parallel_id = f"{exam}_q{number}" + (f"_{meta['foreign_language']}" if meta.get("foreign_language") else "")
    item_id = f"{parallel_id}-{lang}"
    stem = question_text(rec, "body", path, n, item_id)
    options = option_columns(rec, "ABCDE", path, n, item_id)
    return Item(item_id=item_id, source="enem", exam=exam, stem=stem, options=options, answer=answer,
                year=year, subject=AREA_NAMES[area], language=lang, parallel_id=parallel_id,
                has_image=_has_marker(stem, *options), meta=meta)


def _stem(rec: Mapping[str, Any], path: Any, n: int) -> str:
    """The question's text: `context` (the text it refers to) then `question` (BLUEX-style); either may be empty
    when the other carries the whole question (real BLUEX-style files keep some questions entirely in
    `context`), and a question already inside `context` is not repeated. Both empty -> "no question text"."""
    question = require(rec, "question", path, n, types=str, allow_empty=True).strip()
    context = rec.get("context")
    context = context.strip() if isinstance(context, str) else ""
    if not question and not context:
        raise DatasetError(path, n, "question", "no question text (`question` and `context` empty)",
                           str(rec.get("id") or ""))
    if not context or context == question:
        return question
    if not question or question in context:
        return context
    return f"{context}\n\n{question}"


def _alternatives(alternatives: Sequence[Any]) -> tuple[str, ...]:
    """BLUEX's letter-prefixed alternatives ("A  text", "B) text") without their letters (kept as they are when
    not every one carries its letter)."""
    texts = [str(a) if a is not None else "" for a in alternatives]
    ends = [m.end() for i, m in enumerate(map(_LETTER_PREFIX.match, texts)) if m and m[1] == LETTERS[i]]
    if len(ends) == len(texts):  # every alternative starts with its own letter
        return tuple(t[end:].strip() or t.strip() for t, end in zip(texts, ends, strict=True))
    return tuple(t.strip() for t in texts)


def _json_options(rec: Mapping[str, Any], path: Any, n: int, raw_id: str) -> tuple[str, ...]:
    """The five options of a JSON record: `options`, an empty one filled from `alternatives` (letter-prefixed),
    else `alternatives`; neither holding any text (image alternatives lost in extraction) -> "no option text"."""
    if "options" not in rec and "alternatives" not in rec:
        raise DatasetError(path, n, "options", "missing field (neither `options` nor `alternatives`)")
    given: Any = rec.get("options")  # parsed JSON
    if not is_missing(given) and not isinstance(given, (list, tuple)):
        raise DatasetError(path, n, "options", f"expected a list, got {type(given).__name__}")
    spare = rec.get("alternatives") if isinstance(rec.get("alternatives"), (list, tuple)) else None
    if not is_missing(given) and not all(is_missing(o) for o in given):
        given = list(given)
        if len(given) == 5 and any(is_missing(o) for o in given) and spare is not None:
            filled = _alternatives(list(spare))   # an option empty in `options`, written in `alternatives`
            given = [filled[i] if is_missing(o) and i < len(filled) else o for i, o in enumerate(given)]
        return check_options(given, path, n, "options", n_allowed=(5,), item_id=raw_id)
    if spare is None and "alternatives" in rec and not is_missing(rec["alternatives"]):
        raise DatasetError(path, n, "alternatives", f"expected a list, got {type(rec['alternatives']).__name__}")
    if spare is None or all(is_missing(o) for o in spare):
        raise DatasetError(path, n, "options", "no option text (`options` and `alternatives` empty)", raw_id)
    return _alternatives(check_options(list(spare), path, n, "alternatives", n_allowed=(5,), item_id=raw_id))


def _parse_json_record(rec: Mapping[str, Any], n: int, path: Any, language: str | None,
                       foreign_language: str | None) -> Item:
    raw_id = str(require(rec, "id", path, n, types=(str, int))).strip()
    stem = _stem(rec, path, n)
    for key in ("figures", "description", "subject", "associated_images"):    # lists (or text), when given
        if rec.get(key) is not None and not isinstance(rec[key], (str, list, tuple)):
            raise DatasetError(path, n, key, f"expected a list, got {type(rec[key]).__name__}")
    descriptions = [d for d in rec.get("description") or [] if isinstance(d, str)]
    for d in descriptions:  # 2024-style: the i-th description stands where the i-th figure was
        stem = stem.replace("[[placeholder]]", d.strip(), 1)
    options = _json_options(rec, path, n, raw_id)
    # the key: `label` (BLUEX-style files, maritaca-ai/enem), else `answer` (portuguese-benchmark-datasets/BLUEX)
    key = "label" if not is_missing(rec.get("label")) or "answer" not in rec else "answer"
    answer, annulled = _answer(rec, key, path, n)
    year_m = re.search(r"(?<!\d)(\d{4})(?!\d)", f"{rec.get('exam', '')} {raw_id}")
    if not year_m:
        raise DatasetError(path, n, "exam", "no exam year (a 4-digit `exam` field or a year inside `id`)")
    year = int(year_m[1])
    number_m = re.search(r"(\d+)$", raw_id)
    number = rec.get("number")
    number = parse_int(number, path, n, "number") if number is not None else int(number_m[1]) if number_m else None
    if number is None:
        raise DatasetError(path, n, "number", "no question number (a `number` field or trailing digits in `id`)")
    university = OTHER_EXAMS.match(raw_id)            # BLUEX proper: UNICAMP and USP entrance exams, not ENEM
    area = None if university else area_of(year, number)
    meta: dict[str, Any] = {"area": area, "number": number, "id": raw_id, "annulled": annulled}
    meta.update({t: parse_bool(rec[t], path, n, t) for t in TAGS if t in rec and rec[t] is not None})
    for key in ("figures", "description", "subject"):
        if rec.get(key) is not None and len(rec[key]):
            meta[key] = list(rec[key]) if not isinstance(rec[key], str) else rec[key]
    images = rec.get("associated_images")
    if images is not None and len(images):     # paths are kept; the Parquet release embeds the images themselves
        images = list(images)
        if all(isinstance(i, str) and len(i) < 500 for i in images):
            meta["associated_images"] = images
        meta["n_associated_images"] = len(images)
    if is_foreign_position(year, area, number):
        meta["foreign_language"] = (_language(rec.get("foreign_language"), path, n, "foreign_language")
                                    or foreign_language)
    has_image = bool(rec.get("has_associated_images") or meta.get("IU") or meta.get("figures") or descriptions
                     or _has_marker(stem, *options))
    lang = language or "pt"
    if university:
        exam = f"{university['exam'].upper()}_{year}"
        meta["university"] = university["exam"].upper()
        subject = ", ".join(meta.get("subject", [])) if isinstance(meta.get("subject"), list) else ""
        return Item(item_id=f"{exam}_{number}-{lang}", source="bluex", exam=exam, stem=stem, options=options,
                    answer=answer, year=year, subject=subject, language=lang, parallel_id=f"{exam}_{number}",
                    has_image=has_image, meta=meta)
    parallel_id = raw_id if raw_id.upper().startswith("ENEM") else f"ENEM_{year}_{raw_id}"
    return Item(item_id=f"{parallel_id}-{lang}", source="enem", exam=f"ENEM_{year}" + (f"_{area}" if area else ""),
                stem=stem, options=options, answer=answer, year=year, subject=AREA_NAMES.get(area or "", ""),
                language=lang, parallel_id=parallel_id, has_image=has_image, meta=meta)


def _parse_challenge_record(rec: Mapping[str, Any], n: int, path: Any, language: str | None,
                            foreign_language: str | None) -> Item:
    """eduagarcia/enem_challenge (the Open Portuguese LLM Leaderboard's ENEM task): id ("2016_12"), exam_id,
    exam_year, question_number, question, choices {label: [A..E], text: [...]}, answerKey ("ANULADO" for an
    annulled item), optionally nullified."""
    raw_id = str(require(rec, "id", path, n, types=(str, int))).strip()
    stem = question_text(rec, "question", path, n, raw_id)
    choices = rec["choices"]
    labels, texts = list(choices.get("label") or []), list(choices.get("text") or [])
    if len(labels) != len(texts) or [str(x).strip().upper() for x in labels] != list(LETTERS[:len(labels)]):
        raise DatasetError(path, n, "choices", f"labels {labels} with {len(texts)} texts; expected A-E in order")
    options = check_options(texts, path, n, "choices.text", n_allowed=(5,), item_id=raw_id)
    raw = require(rec, "answerKey", path, n, types=str)
    annulled = is_annulled(raw) or bool(rec.get("nullified"))
    answer = None if annulled else letter_to_index(raw, 5, path, n, "answerKey")
    year_text = f"{rec.get('exam_year', '')} {rec.get('exam_id', '')} {raw_id}"
    year_m = re.search(r"(?<!\d)(\d{4})(?!\d)", year_text)
    if not year_m:
        raise DatasetError(path, n, "exam_year", "no exam year (exam_year, exam_id or a year inside `id`)")
    year = int(year_m[1])
    number = rec.get("question_number")
    number_m = re.search(r"(\d+)$", raw_id)
    number = parse_int(number, path, n, "question_number") if number is not None else \
        int(number_m[1]) if number_m else None
    if number is None:
        raise DatasetError(path, n, "question_number", "no question number")
    area = area_of(year, number)
    meta: dict[str, Any] = {"area": area, "number": number, "id": raw_id, "annulled": annulled,
                            "exam_id": str(rec.get("exam_id") or year)}
    if is_foreign_position(year, area, number):
        meta["foreign_language"] = foreign_language
    parallel_id = f"ENEM_{raw_id}" if raw_id.startswith(str(year)) else f"ENEM_{year}_{raw_id}"
    lang = language or "pt"
    return Item(item_id=f"{parallel_id}-{lang}", source="enem", exam=f"ENEM_{year}" + (f"_{area}" if area else ""),
                stem=stem, options=options, answer=answer, year=year, subject=AREA_NAMES.get(area or "", ""),
                language=lang, parallel_id=parallel_id, has_image=_has_marker(stem, *options), meta=meta)


def parse_record(rec: Mapping[str, Any], n: int, path: Any, language: str | None = None,
                 foreign_language: str | None = None, info: ExamFile | None = None,
                 exam_language: str | None = None) -> Item:
    """One ENEM record -> Item: an exam-CSV row (has `body`), an eduagarcia/enem_challenge row (`choices` with
    labels and texts, `answerKey`), or a BLUEX-style / maritaca-ai/enem / BLUEX JSON object. `exam_language`: the
    language of the exam version a CSV row belongs to, when its file name has no prefix (loader: `exam_language`)."""
    if "body" in rec:
        return _parse_csv_row(rec, n, path, language, foreign_language, info, exam_language)
    if isinstance(rec.get("choices"), Mapping) and "answerKey" in rec:
        return _parse_challenge_record(rec, n, path, language, foreign_language)
    return _parse_json_record(rec, n, path, language, foreign_language)
