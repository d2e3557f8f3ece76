"""ENEM: exam CSVs, BLUEX-style JSON lists, 2024-style JSONL, and INEP item parameters (ITENS_PROVA).

Sources and their quirks:
- Exam CSV, one per area and booklet, named `[pt_|en_|es_]ENEM_<year>_<area>_CO_PROVA_<code>.csv` (the code is
  INEP's CO_PROVA -> meta["co_prova"]); columns question, body, A..E, year, question_number, test (area),
  answer (letter or "anulada"), language (portuguese/english/spanish). UTF-8 or latin-1.
- BLUEX-style JSON list (gpt-4-enem's ENEM 2022): id, number, question and context, clean `options` or
  letter-prefixed `alternatives` (we prefer `options`), label as a letter of either case,
  has_associated_images, tags IU/ML/BK/CE/DS/MR/TU. The stem is `context` then `question`: real files keep
  some questions wholly in `context` with `question` empty (or the reverse), so an empty field is missing only
  when the question has no text in either (then DatasetError names the record and field `question`); a
  `question` already inside `context` is not repeated.
- 2024-style JSONL (maritaca-ai/enem, one file per edition): id ("questao_01"), exam (year), IU, ledor,
  question with "[[placeholder]]" where a figure was, alternatives, label ("Anulado" possible), figures,
  description. Each placeholder is replaced, in order, by the matching image description so text-only models
  see what blind candidates hear.
- eduagarcia/enem_challenge rows (Parquet): id, exam_id, exam_year, question_number, question, choices
  {label, text}, answerKey ("ANULADO"); portuguese-benchmark-datasets/BLUEX rows (Parquet): UNICAMP and USP
  entrance-exam questions in the BLUEX-style fields with the key in `answer` (source "bluex", no ENEM area).
  `HUB_LAYOUTS` lists the published layouts of local copies that `load_enem` recognises.
- ITENS_PROVA_<year>.csv (INEP's item parameters): read, split into item sets and attached by `enem.itens_prova`.

Rules: subject = area name (AREA_NAMES), area code in meta["area"]. Areas are read from the CSV `test` column;
for JSON they follow from year and question number (2017+: LC 1-45, CH 46-90, CN 91-135, MT 136-180;
2009-2016: CH, CN, LC, MT in that order). Annulled ("anulada"/"Anulado", any case) -> answer None and
meta["annulled"] True. has_image is True when the source says so (has_associated_images, IU, figures,
descriptions) or when the text carries an audio-description marker (IMAGE_MARKERS: "Descrição da imagem:",
"Descrição do Gráfico A:", "Image description:", ...). Boolean tags go to meta under their own names.
Foreign-language items (the first five LC positions, English or Spanish by the candidate's choice) get
meta["foreign_language"] 'en'/'es' from, in order: a per-record `foreign_language` field; the file order
when the position appears twice in one CSV (booklets print the English items first, then the Spanish
ones); the `foreign_language` argument. Item parameters are matched on (CO_PROVA, area, position) and,
when the booklet lists an English and a Spanish item at a position, on TP_LINGUA (0 English, 1 Spanish).
When a booklet code lists two item sets, the set whose keys agree with the file's answers is used (or the
`item_set` argument's); meta["item_set"] records it (see `enem.itens_prova`). Exam CSVs name their booklet; a
JSON/Parquet source numbers its questions 1-180 without saying which colour's booklet it follows, so its items
get INEP parameters only with `co_prova=` (and every answer must then agree with that booklet's key).
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from mcqa_toolkit.datasets.common import (UniqueIds, check_options, concat, is_annulled, is_missing,
                                           items_from_records, iter_csv, iter_json_records, iter_jsonl,
                                           letter_to_index, parse_bool, parse_int, require, require_text)
from mcqa_toolkit.enem.itens_prova import AREAS, TP_LINGUA, ItemParams
from mcqa_toolkit.items import LETTERS, DatasetError, Item, ItemSet

AREA_NAMES = {"CH": "humanities", "CN": "natural sciences", "LC": "languages", "MT": "mathematics"}
LANGUAGES = {"portuguese": "pt", "english": "en", "spanish": "es", "pt": "pt", "pt-br": "pt", "en": "en", "es": "es"}
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


# ---- exam records --------------------------------------------------------------------------------------------

class ExamFile(NamedTuple):
    """What an exam CSV's name says: `[pt_]ENEM_2022_CN_CO_PROVA_1092.csv`."""
    year: int
    area: str
    co_prova: int
    language: str | None


def exam_file_info(path: str | Path) -> ExamFile | None:
    m = EXAM_CSV_NAME.match(Path(path).name)
    return m and ExamFile(int(m["year"]), m["area"], int(m["co_prova"]), m["language"])


def area_of(year: int, number: int) -> str | None:
    """The area of question `number` in the ENEM of `year` (None before 2009 or outside 1..180)."""
    if year < 2009 or not 1 <= number <= 180:
        return None
    order = ("LC", "CH", "CN", "MT") if year >= 2017 else ("CH", "CN", "LC", "MT")
    return order[(number - 1) // 45]


def is_foreign_position(year: int, area: str | None, number: int) -> bool:
    """The first five LC positions are the English/Spanish items (1-5 since 2017, 91-95 before)."""
    first = 1 if year >= 2017 else 91
    return area == "LC" and first <= number < first + 5


def _language(value: Any, path: Any, n: int, key: str) -> str | None:
    if is_missing(value):
        return None
    code = LANGUAGES.get(str(value).strip().lower())
    if code is None:
        raise DatasetError(path, n, key, f"unknown language {value!r}; expected one of {sorted(set(LANGUAGES))}")
    return code


def _answer(rec: Mapping[str, Any], key: str, path: Any, n: int) -> tuple[int | None, bool]:
    raw = require(rec, key, path, n, types=str)
    return (None, True) if is_annulled(raw) else (letter_to_index(raw, 5, path, n, key), False)


def _has_marker(*texts: str) -> bool:
    return any(IMAGE_MARKERS.search(t) for t in texts)


def _parse_csv_row(rec: Mapping[str, Any], n: int, path: Any, language: str | None, foreign_language: str | None,
                   info: ExamFile | None) -> Item:
    stem = require_text(rec, "body", path, n)
    options = tuple(require_text(rec, k, path, n) for k in "ABCDE")
    number = parse_int(require(rec, "question_number", path, n, types=(str, int)), path, n, "question_number")
    year = parse_int(require(rec, "year", path, n, types=(str, int)), path, n, "year")
    area = require_text(rec, "test", path, n).upper()
    if area not in AREAS:
        raise DatasetError(path, n, "test", f"unknown area {rec['test']!r}; expected one of {AREAS}")
    if info and (year, area) != (info.year, info.area):
        field = "year" if year != info.year else "test"
        raise DatasetError(path, n, field, f"{year} {area} contradicts the file name ({info.year} {info.area})")
    lang = _language(rec.get("language"), path, n, "language")
    if info and info.language and lang and lang != info.language:
        raise DatasetError(path, n, "language", f"{rec['language']!r} contradicts the file-name prefix {info.language}_")
    lang = lang or (info and info.language) or language or "pt"
    answer, annulled = _answer(rec, "answer", path, n)
    co_prova = info.co_prova if info else None
    exam = f"ENEM_{year}_{area}" + (f"_{co_prova}" if co_prova else "")
    meta: dict[str, Any] = {"area": area, "number": number, "co_prova": co_prova, "annulled": annulled}
    if is_foreign_position(year, area, number):
        meta["foreign_language"] = _language(rec.get("foreign_language"), path, n, "foreign_language") or foreign_language
    parallel_id = f"{exam}_q{number}" + (f"_{meta['foreign_language']}" if meta.get("foreign_language") else "")
    return Item(item_id=f"{parallel_id}-{lang}", source="enem", exam=exam, stem=stem, options=options, answer=answer,
                year=year, subject=AREA_NAMES[area], language=lang, parallel_id=parallel_id,
                has_image=_has_marker(stem, *options), meta=meta)


def _stem(rec: Mapping[str, Any], path: Any, n: int) -> str:
    """The question's text: `context` (the text it refers to) then `question` (BLUEX-style); either may be empty
    when the other carries the whole question (real BLUEX-style files keep some questions entirely in
    `context`), and a question already inside `context` is not repeated. Both empty -> DatasetError."""
    question = require(rec, "question", path, n, types=str, allow_empty=True).strip()
    context = rec.get("context")
    context = context.strip() if isinstance(context, str) else ""
    if not question and not context:
        raise DatasetError(path, n, "question", "empty value, and no `context` either: the question has no text")
    if not context or context == question:
        return question
    if not question or question in context:
        return context
    return f"{context}\n\n{question}"


def _alternatives(alternatives: list) -> tuple:
    """BLUEX's letter-prefixed alternatives ("A  text", "B) text") without their letters (kept as they are when
    not every one carries its letter)."""
    texts = [str(a) if a is not None else "" for a in alternatives]
    prefixes = [_LETTER_PREFIX.match(t) for t in texts]
    if all(m and m[1] == LETTERS[i] for i, m in enumerate(prefixes)):
        return tuple(t[m.end():].strip() or t.strip() for t, m in zip(texts, prefixes))
    return tuple(t.strip() for t in texts)


def _parse_json_record(rec: Mapping[str, Any], n: int, path: Any, language: str | None,
                       foreign_language: str | None) -> Item:
    raw_id = str(require(rec, "id", path, n, types=(str, int))).strip()
    stem = _stem(rec, path, n)
    descriptions = [d for d in rec.get("description") or [] if isinstance(d, str)]
    for d in descriptions:  # 2024-style: the i-th description stands where the i-th figure was
        stem = stem.replace("[[placeholder]]", d.strip(), 1)
    if not is_missing(rec.get("options")):
        given = list(rec["options"])
        if len(given) == 5 and any(is_missing(o) for o in given) and isinstance(rec.get("alternatives"), list):
            spare = _alternatives(list(rec["alternatives"]))   # an option empty in `options`, written in `alternatives`
            given = [spare[i] if is_missing(o) and i < len(spare) else o for i, o in enumerate(given)]
        options = check_options(given, path, n, "options", n_allowed=(5,))
    else:
        options = _alternatives(check_options(list(require(rec, "alternatives", path, n, types=(list, tuple))), path,
                                              n, "alternatives", n_allowed=(5,)))
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
                stem=stem, options=options, answer=answer, year=year, subject=AREA_NAMES.get(area, ""), language=lang,
                parallel_id=parallel_id, has_image=has_image, meta=meta)


def _parse_challenge_record(rec: Mapping[str, Any], n: int, path: Any, language: str | None,
                            foreign_language: str | None) -> Item:
    """eduagarcia/enem_challenge (the Open Portuguese LLM Leaderboard's ENEM task): id ("2016_12"), exam_id,
    exam_year, question_number, question, choices {label: [A..E], text: [...]}, answerKey ("ANULADO" for an
    annulled item), optionally nullified."""
    raw_id = str(require(rec, "id", path, n, types=(str, int))).strip()
    stem = require_text(rec, "question", path, n)
    choices = rec["choices"]
    labels, texts = list(choices.get("label") or []), list(choices.get("text") or [])
    if len(labels) != len(texts) or [str(x).strip().upper() for x in labels] != list(LETTERS[:len(labels)]):
        raise DatasetError(path, n, "choices", f"labels {labels} with {len(texts)} texts; expected A-E in order")
    options = check_options(texts, path, n, "choices.text", n_allowed=(5,))
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
                stem=stem, options=options, answer=answer, year=year, subject=AREA_NAMES.get(area, ""), language=lang,
                parallel_id=parallel_id, has_image=_has_marker(stem, *options), meta=meta)


def parse_record(rec: Mapping[str, Any], n: int, path: Any, language: str | None = None,
                 foreign_language: str | None = None, info: ExamFile | None = None) -> Item:
    """One ENEM record -> Item: an exam-CSV row (has `body`), an eduagarcia/enem_challenge row (`choices` with
    labels and texts, `answerKey`), or a BLUEX-style / maritaca-ai/enem / BLUEX JSON object."""
    if "body" in rec:
        return _parse_csv_row(rec, n, path, language, foreign_language, info)
    if isinstance(rec.get("choices"), Mapping) and "answerKey" in rec:
        return _parse_challenge_record(rec, n, path, language, foreign_language)
    return _parse_json_record(rec, n, path, language, foreign_language)


# ---- files ---------------------------------------------------------------------------------------------------

def _csv_rows(path: Path, foreign_language: str | None) -> tuple[list, dict[int, str | None]]:
    """Rows of one exam CSV, and per row the foreign language implied by file order (a position listed
    twice: 1st English, 2nd Spanish) or else the `foreign_language` argument."""
    rows = list(iter_csv(path, encodings=("utf-8", "latin-1"), required=CSV_REQUIRED))
    counts = Counter(str(rec["question_number"]).strip() for _, rec in rows)
    seen: Counter = Counter()
    implied = {}
    for n, rec in rows:
        key = str(rec["question_number"]).strip()
        if counts[key] > 2:
            raise DatasetError(path, n, "question_number", f"question {key} appears {counts[key]} times")
        implied[n] = ("en", "es")[seen[key]] if counts[key] == 2 else foreign_language
        seen[key] += 1
    return rows, implied


def load_enem(path: str | Path, item_params: str | Path | None = None, language: str | None = None,
              area: str | None = None, foreign_language: str | None = None,
              item_set: int | Mapping[int, int] | None = None,
              co_prova: int | Mapping[str, int] | None = None) -> ItemSet:
    """Load ENEM items from an exam CSV, a directory of exam CSVs, a BLUEX-style JSON list, a JSONL file, a
    Parquet file, or a local copy of a Hugging Face release (see HUB_LAYOUTS): a directory is searched for
    exam CSVs at its top and for .jsonl / .parquet files (and top-level .json lists) at any depth.

    item_params: an ITENS_PROVA csv whose 3PL parameters are attached by (booklet, area, position) (see
    `ItemParams`) to the items of its year; exam CSVs name their booklet, other sources need `co_prova` (an
    int, or {area: CO_PROVA}): the booklet whose numbering the file follows (every answer is then checked
    against its key).
    item_set: for booklet codes that list two item sets, which one (1, 2, or {CO_PROVA: set}); by default the
    set whose keys agree with the file's answers (an error when both or neither do).
    language: keep only items in this language ('pt'/'en'/'es'); also the language of JSON sources (default 'pt').
    area: keep only this area (CH/CN/LC/MT). foreign_language: 'en'/'es' for foreign-language items whose
    language the file does not tell (see the module docstring). Filters that leave nothing raise DatasetError.
    """
    path = Path(path)
    for name, value, allowed in (("area", area, AREAS), ("foreign_language", foreign_language, tuple(TP_LINGUA)),
                                 ("language", language, ("pt", "en", "es"))):
        if value is not None and value not in allowed:
            raise ValueError(f"{name}={value!r}; expected one of {allowed}")
    params = ItemParams(item_params) if item_params is not None else None
    name, ids = f"enem:{path.name}", UniqueIds(path)
    if not path.exists():
        raise DatasetError(path, "-", None, "file or directory not found")
    files = _files(path) if path.is_dir() else [path]
    sets = []
    for f in files:
        suffix = f.suffix.lower()
        if suffix == ".csv":
            records, implied = _csv_rows(f, foreign_language)
            parse = (lambda rec, n, f=f, fl=implied, info=exam_file_info(f):
                     parse_record(rec, n, f, language, fl[n], info))
        elif suffix in (".json", ".jsonl", ".parquet"):
            records = {".json": iter_json_records, ".jsonl": iter_jsonl, ".parquet": _iter_parquet}[suffix](f)
            parse = (lambda rec, n, f=f: _with_booklet(parse_record(rec, n, f, language, foreign_language), co_prova))
        else:
            raise DatasetError(f, "-", None, "expected an exam .csv, a .json list, a .jsonl or .parquet file or a "
                                             "directory")
        if params is not None:  # the whole file first: its answers choose the booklet's item set
            parsed = [(n, parse(rec, n)) for n, rec in records]
            # BLUEX's UNICAMP/USP items have no INEP row; a multi-edition source meets this year's file only
            enem = [(n, it) for n, it in parsed if it.source == "enem" and params.year in (None, it.year)]
            attached = dict(params.attach_all(enem, f, item_set)) if enem else {}
            records = [(n, attached.get(n, it)) for n, it in parsed]
            parse = (lambda item, n: item)
        sets.append(items_from_records(records, parse, f, name, ids=ids))
    items = concat(sets, name)
    if language is not None:
        items = _keep(items, path, "language", language, lambda it: it.language == language)
    if area is not None:
        items = _keep(items, path, "area", area, lambda it: it.meta["area"] == area)
    return items


# Hugging Face releases whose local copies `load_enem` reads (files as published; see docs/enem.md):
HUB_LAYOUTS = {
    "maritaca-ai/enem": "<year>.jsonl per edition (2022-2024; its Parquet conversion <year>/train/*.parquet): id "
                        "questao_NN, exam, question with [[placeholder]] figures, alternatives, label, figures, "
                        "description, IU, ledor",
    "eduagarcia/enem_challenge": "data/train-*.parquet: id, exam_id, exam_year, question_number, question, choices "
                                 "{label, text}, answerKey (ANULADO when annulled)",
    "portuguese-benchmark-datasets/BLUEX": "data/questions-*.parquet: id (UNICAMP_/USP_<year>_<n>), number, "
                                          "question, alternatives, answer, associated_images, subject, tags; "
                                          "UNICAMP and USP entrance exams, not ENEM (source 'bluex', no INEP row)",
}


def _files(path: Path) -> list[Path]:
    """A directory's exam CSVs (top level), .jsonl and .parquet files (any depth) and .json lists (top level),
    skipping hidden folders (.git, .cache of a hub download)."""
    found = sorted(f for f in path.iterdir() if exam_file_info(f) or f.suffix.lower() == ".json")
    found += sorted(f for f in path.rglob("*") if f.suffix.lower() in (".jsonl", ".parquet") and f.is_file()
                    and not any(part.startswith(".") for part in f.relative_to(path).parts))
    if not found:
        raise DatasetError(path, "-", None, "no exam CSV named like [pt_]ENEM_2022_CN_CO_PROVA_1092.csv, nor "
                                            ".json/.jsonl/.parquet files here")
    return found


def _iter_parquet(path: Path):
    """(row number from 1, row as a dict of Python values) of a Parquet file."""
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as err:    # pyarrow's errors: not a Parquet file, truncated, ...
        raise DatasetError(path, "-", None, f"not a readable Parquet file ({type(err).__name__}: {err})") from None
    return enumerate(rows, start=1)


def _with_booklet(item: Item, co_prova: int | Mapping[str, int] | None) -> Item:
    """A JSON/Parquet ENEM item with the booklet code its numbering follows (the caller's `co_prova`)."""
    if co_prova is None or item.source != "enem" or item.meta.get("co_prova") is not None:
        return item
    code = co_prova.get(item.meta.get("area")) if isinstance(co_prova, Mapping) else co_prova
    return item if code is None else item.with_(meta={**item.meta, "co_prova": int(code)})


def _keep(items: ItemSet, path: Path, key: str, wanted: str, predicate) -> ItemSet:
    kept = items.filter(predicate)
    if not len(kept):
        raise DatasetError(path, "-", key, f"no items with {key} {wanted!r}")
    return kept
