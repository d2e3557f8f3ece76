"""ENEM: exam CSVs, BLUEX-style JSON lists, 2024-style JSONL, and INEP item parameters (ITENS_PROVA).

Sources and their quirks:
- Exam CSV, one per area and booklet, named `[pt_|en_|es_]ENEM_<year>_<area>_CO_PROVA_<code>.csv` (the code is
  INEP's CO_PROVA -> meta["co_prova"]); columns question, body, A..E, year, question_number, test (area),
  answer (letter or "anulada"), language (portuguese/english/spanish). UTF-8 or latin-1.
- BLUEX-style JSON list: id, number, question (+ context), clean `options` or letter-prefixed `alternatives`
  (we prefer `options`), label as a letter of either case, has_associated_images, tags IU/ML/BK/CE/DS/MR/TU.
- 2024-style JSONL: id ("questao_01"), exam (year), IU, ledor, question with "[[placeholder]]" where a figure
  was, alternatives, label ("Anulado" possible), figures, description. Each placeholder is replaced, in
  order, by the matching image description so text-only models see what blind candidates hear.
- ITENS_PROVA_<year>.csv: ';'-separated, latin-1 or utf-8; no TP_LINGUA in 2009; annulled items
  (IN_ITEM_ABAN = 1) have empty NU_PARAM_A/B/C; a CO_PROVA may list two areas (90-100 rows).

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
"""
from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import numpy as np
import pandas as pd

from mcqa_toolkit.datasets._common import (UniqueIds, check_options, concat, is_annulled, is_missing,
                                           items_from_records, iter_csv, iter_json_records, iter_jsonl,
                                           letter_to_index, parse_bool, parse_int, read_text, require, require_text)
from mcqa_toolkit.items import LETTERS, DatasetError, Item, ItemSet

ITENS_PROVA_REQUIRED = ("CO_POSICAO", "SG_AREA", "CO_ITEM", "TX_GABARITO", "IN_ITEM_ABAN",
                        "NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C", "CO_PROVA")
AREAS = ("CH", "CN", "LC", "MT")
AREA_NAMES = {"CH": "humanities", "CN": "natural sciences", "LC": "languages", "MT": "mathematics"}
LANGUAGES = {"portuguese": "pt", "english": "en", "spanish": "es", "pt": "pt", "pt-br": "pt", "en": "en", "es": "es"}
TP_LINGUA = {"en": 0, "es": 1}
TAGS = ("IU", "ML", "BK", "CE", "DS", "MR", "TU", "ledor")
CSV_REQUIRED = ("body", "A", "B", "C", "D", "E", "year", "question_number", "test", "answer")
EXAM_CSV_NAME = re.compile(r"^(?:(?P<language>pt|en|es)_)?ENEM_(?P<year>\d{4})_(?P<area>CH|CN|LC|MT)_CO_PROVA_"
                           r"(?P<co_prova>\d+)(?:_[A-Za-z0-9]+)?\.csv$")
IMAGE_MARKERS = re.compile(
    r"descri[çc][ãa]o d[aoe]s? [^:.\n]{1,40}:|descripci[óo]n de (?:la|el|los|las) [^:.\n]{1,40}:"
    r"|\b(?:image|figure|chart|graph|illustration|picture|table) description\s*:|\bdescription of the [^:.\n]{1,40}:",
    re.IGNORECASE)
_LETTER_PREFIX = re.compile(r"^\s*([A-E])(?:[).:]|\s)\s*")


def read_itens_prova(path: str | Path) -> pd.DataFrame:
    """Validated ITENS_PROVA rows: one row per (CO_PROVA, item), params as floats (NaN when annulled).

    Adds TP_LINGUA (NaN) when the file lacks it (2009). Raises DatasetError naming the data row
    (1-based, header excluded) and column of the first bad value.
    """
    text = read_text(path, encodings=("utf-8", "latin-1"))
    first = text.split("\n", 1)[0]
    if ";" not in first:
        raise DatasetError(path, "header", None, "expected a ';'-separated INEP ITENS_PROVA file")
    df = pd.read_csv(io.StringIO(text), sep=";", dtype=str, keep_default_na=False)
    missing = [c for c in ITENS_PROVA_REQUIRED if c not in df.columns]
    if missing:
        raise DatasetError(path, "header", missing[0], f"missing column(s) {missing}")
    if "TP_LINGUA" not in df.columns:
        df["TP_LINGUA"] = ""
    out = pd.DataFrame(index=df.index)
    for col in ("CO_POSICAO", "CO_ITEM", "CO_PROVA"):
        out[col] = _int_column(df[col], path, col)
    out["IN_ITEM_ABAN"] = _int_column(df["IN_ITEM_ABAN"].replace("", "0"), path, "IN_ITEM_ABAN")
    out["SG_AREA"] = df["SG_AREA"].str.strip()
    bad = ~out["SG_AREA"].isin(AREAS)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(path, i + 1, "SG_AREA", f"unknown area {df['SG_AREA'].iloc[i]!r}; expected {AREAS}")
    out["TX_GABARITO"] = df["TX_GABARITO"].str.strip().str.upper()
    for col in ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"):
        out[col] = _float_column(df[col], path, col)
    lingua = df["TP_LINGUA"].str.strip()
    out["TP_LINGUA"] = _float_column(lingua, path, "TP_LINGUA")
    for col in ("CO_HABILIDADE", "TX_MOTIVO_ABAN", "TX_COR", "IN_ITEM_ADAPTADO", "NU_ANO"):
        if col in df.columns:
            out[col] = df[col]
    kept = out["IN_ITEM_ABAN"] == 0
    for col in ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"):
        nan = kept & out[col].isna()
        if nan.any():
            i = int(np.flatnonzero(nan)[0])
            raise DatasetError(path, i + 1, col, "empty parameter for an item that is not annulled")
    a_bad = kept & (out["NU_PARAM_A"] <= 0)
    c_bad = kept & ((out["NU_PARAM_C"] < 0) | (out["NU_PARAM_C"] >= 1))
    for mask, col, msg in ((a_bad, "NU_PARAM_A", "a must be > 0"), (c_bad, "NU_PARAM_C", "c must be in [0, 1)")):
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            raise DatasetError(path, i + 1, col, f"{msg}, got {out[col].iloc[i]}")
    return out


def _int_column(s: pd.Series, path, col: str) -> pd.Series:
    num = pd.to_numeric(s.str.strip(), errors="coerce")
    bad = num.isna() | (num % 1 != 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(path, i + 1, col, f"not an integer: {s.iloc[i]!r}")
    return num.astype("int64")


def _float_column(s: pd.Series, path, col: str) -> pd.Series:
    stripped = s.str.strip().str.replace(",", ".", regex=False)
    num = pd.to_numeric(stripped, errors="coerce")
    bad = num.isna() & (stripped != "")
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(path, i + 1, col, f"not a number: {s.iloc[i]!r}")
    return num.astype("float64")


def load_item_params(path: str | Path, co_prova: int | None = None) -> pd.DataFrame:
    """Validated ITENS_PROVA rows (see `read_itens_prova`), optionally only one booklet's."""
    df = read_itens_prova(path)
    if co_prova is not None:
        df = df[df["CO_PROVA"] == int(co_prova)]
        if df.empty:
            raise DatasetError(path, "-", "CO_PROVA", f"no rows for booklet {co_prova}")
    return df


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


def _parse_json_record(rec: Mapping[str, Any], n: int, path: Any, language: str | None,
                       foreign_language: str | None) -> Item:
    raw_id = str(require(rec, "id", path, n, types=(str, int))).strip()
    question = require_text(rec, "question", path, n)
    context = rec.get("context")
    has_context = isinstance(context, str) and context.strip() and question not in context
    stem = f"{context.strip()}\n\n{question}" if has_context else question  # BLUEX: the text, then the question
    descriptions = [d for d in rec.get("description") or [] if isinstance(d, str)]
    for d in descriptions:  # 2024-style: the i-th description stands where the i-th figure was
        stem = stem.replace("[[placeholder]]", d.strip(), 1)
    if not is_missing(rec.get("options")):
        options = check_options(rec["options"], path, n, "options", n_allowed=(5,))
    else:
        options = check_options(require(rec, "alternatives", path, n, types=list), path, n, "alternatives", n_allowed=(5,))
        prefixes = [_LETTER_PREFIX.match(o) for o in options]
        if all(m and m[1] == LETTERS[i] for i, m in enumerate(prefixes)):  # BLUEX "A  text": drop the letters
            options = tuple(o[m.end():].strip() or o for o, m in zip(options, prefixes))
    answer, annulled = _answer(rec, "label", path, n)
    year_m = re.search(r"(?<!\d)(\d{4})(?!\d)", f"{rec.get('exam', '')} {raw_id}")
    if not year_m:
        raise DatasetError(path, n, "exam", "no exam year (a 4-digit `exam` field or a year inside `id`)")
    year = int(year_m[1])
    number_m = re.search(r"(\d+)$", raw_id)
    number = rec.get("number")
    number = parse_int(number, path, n, "number") if number is not None else int(number_m[1]) if number_m else None
    if number is None:
        raise DatasetError(path, n, "number", "no question number (a `number` field or trailing digits in `id`)")
    area = area_of(year, number)
    meta: dict[str, Any] = {"area": area, "number": number, "id": raw_id, "annulled": annulled}
    meta.update({t: parse_bool(rec[t], path, n, t) for t in TAGS if t in rec})
    for key in ("associated_images", "figures", "description", "subject"):
        if rec.get(key):
            meta[key] = rec[key]
    if is_foreign_position(year, area, number):
        meta["foreign_language"] = _language(rec.get("foreign_language"), path, n, "foreign_language") or foreign_language
    has_image = bool(rec.get("has_associated_images") or meta.get("IU") or rec.get("figures") or descriptions
                     or _has_marker(stem, *options))
    parallel_id = raw_id if raw_id.upper().startswith("ENEM") else f"ENEM_{year}_{raw_id}"
    lang = language or "pt"
    return Item(item_id=f"{parallel_id}-{lang}", source="enem", exam=f"ENEM_{year}" + (f"_{area}" if area else ""),
                stem=stem, options=options, answer=answer, year=year, subject=AREA_NAMES.get(area, ""), language=lang,
                parallel_id=parallel_id, has_image=has_image, meta=meta)


def parse_record(rec: Mapping[str, Any], n: int, path: Any, language: str | None = None,
                 foreign_language: str | None = None, info: ExamFile | None = None) -> Item:
    """One ENEM record -> Item: an exam-CSV row (has `body`) or a BLUEX/2024-style JSON object."""
    if "body" in rec:
        return _parse_csv_row(rec, n, path, language, foreign_language, info)
    return _parse_json_record(rec, n, path, language, foreign_language)


# ---- item parameters -----------------------------------------------------------------------------------------

class ItemParams:
    """ITENS_PROVA rows indexed by (CO_PROVA, area, position), for attaching 3PL parameters to exam items."""

    def __init__(self, path: str | Path):
        self.path, self.df = Path(path), read_itens_prova(path)
        self.rows: dict[tuple[int, str, int], list[int]] = {}
        for i, key in enumerate(zip(self.df["CO_PROVA"], self.df["SG_AREA"], self.df["CO_POSICAO"])):
            self.rows.setdefault(key, []).append(i)
        self.booklets = set(self.df["CO_PROVA"])

    def attach(self, item: Item, path: Any, n: int) -> Item:
        """`item` with irt and INEP fields in meta; IN_ITEM_ABAN = 1 -> annulled, no irt, answer None."""
        co_prova, area, number, fl = (item.meta.get(k) for k in ("co_prova", "area", "number", "foreign_language"))
        if co_prova is None:
            raise DatasetError(path, n, "co_prova", "item_params need the booklet code from a file name like "
                                                    "ENEM_2022_CN_CO_PROVA_1092.csv")
        if co_prova not in self.booklets:
            raise DatasetError(path, n, "co_prova", f"booklet {co_prova} not in {self.path.name}")
        rows = self.rows.get((co_prova, area, number), [])
        lingua = self.df["TP_LINGUA"].to_numpy()
        if len(rows) > 1 and not np.isnan(lingua[rows]).any():  # English and Spanish items at one position
            if fl not in TP_LINGUA:
                raise DatasetError(path, n, "foreign_language", f"position {number} of booklet {co_prova} has an "
                                   "English and a Spanish item: say which (foreign_language='en'/'es')")
            rows = [r for r in rows if lingua[r] == TP_LINGUA[fl]]
        if len(rows) != 1:
            raise DatasetError(path, n, "question_number", f"{len(rows) or 'no'} rows in {self.path.name} for booklet "
                               f"{co_prova}, area {area}, position {number}; expected 1")
        r = self.df.iloc[rows[0]]
        if fl in TP_LINGUA and not np.isnan(r["TP_LINGUA"]) and r["TP_LINGUA"] != TP_LINGUA[fl]:
            raise DatasetError(path, n, "foreign_language", f"{self.path.name} row {rows[0] + 1} is TP_LINGUA "
                               f"{int(r['TP_LINGUA'])}, not the {fl} item")
        meta = {**item.meta, "co_item": int(r["CO_ITEM"]), "tx_gabarito": r["TX_GABARITO"], "params_row": rows[0] + 1,
                "co_habilidade": r.get("CO_HABILIDADE", ""), "tp_lingua": None if np.isnan(r["TP_LINGUA"]) else int(r["TP_LINGUA"])}
        if r["IN_ITEM_ABAN"] == 1:
            meta.update(annulled=True, tx_motivo_aban=str(r.get("TX_MOTIVO_ABAN", "")).strip(),
                        answer_before_annulment=item.answer_letter)
            return item.with_(irt=None, answer=None, meta=meta)
        if item.answer is not None and item.answer_letter != r["TX_GABARITO"]:
            raise DatasetError(path, n, "answer", f"answer {item.answer_letter} differs from TX_GABARITO "
                               f"{r['TX_GABARITO']!r} ({self.path.name} row {rows[0] + 1})")
        return item.with_(irt=(r["NU_PARAM_A"], r["NU_PARAM_B"], r["NU_PARAM_C"]), meta=meta)


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
              area: str | None = None, foreign_language: str | None = None) -> ItemSet:
    """Load ENEM items from an exam CSV, a directory of exam CSVs, a BLUEX-style JSON list or a JSONL file.

    item_params: an ITENS_PROVA csv whose 3PL parameters are attached to exam-CSV items (see `ItemParams`).
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
    files = sorted(f for f in path.iterdir() if exam_file_info(f)) if path.is_dir() else [path]
    if not files:
        raise DatasetError(path, "-", None, "no exam CSV named like [pt_]ENEM_2022_CN_CO_PROVA_1092.csv here")
    sets = []
    for f in files:
        suffix = f.suffix.lower()
        if suffix == ".csv":
            records, implied = _csv_rows(f, foreign_language)
            parse = (lambda rec, n, f=f, fl=implied, info=exam_file_info(f):
                     parse_record(rec, n, f, language, fl[n], info))
        elif suffix in (".json", ".jsonl"):
            records = iter_json_records(f) if suffix == ".json" else iter_jsonl(f)
            parse = (lambda rec, n, f=f: parse_record(rec, n, f, language, foreign_language))
        else:
            raise DatasetError(f, "-", None, "expected an exam .csv, a .json list, a .jsonl file or a directory")
        if params is not None:
            parse = (lambda rec, n, f=f, p=parse: params.attach(p(rec, n), f, n))
        sets.append(items_from_records(records, parse, f, name, ids=ids))
    items = concat(sets, name)
    if language is not None:
        items = _keep(items, path, "language", language, lambda it: it.language == language)
    if area is not None:
        items = _keep(items, path, "area", area, lambda it: it.meta["area"] == area)
    return items


def _keep(items: ItemSet, path: Path, key: str, wanted: str, predicate) -> ItemSet:
    kept = items.filter(predicate)
    if not len(kept):
        raise DatasetError(path, "-", key, f"no items with {key} {wanted!r}")
    return kept
