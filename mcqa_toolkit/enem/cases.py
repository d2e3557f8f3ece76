"""Case lists: real candidates with INEP's official score, one record each (e.g. the project's development set
of 2,140 candidates drawn from INEP's microdata, not shipped), read and scored like microdata.

A case list is a JSON list (or an object whose "cases" is one) or a JSONL file of records with, under any of
these names (first found wins):

    year      ano, year, NU_ANO
    area      area, SG_AREA                      CH, CN, LC or MT
    booklet   co_prova, CO_PROVA                 INEP's booklet code
    language  tp_lingua, TP_LINGUA               0 English, 1 Spanish (LC; optional elsewhere)
    answers   respostas, answers, TX_RESPOSTAS   the answer string in the booklet's order
    official  nota_oficial, NU_NOTA, official_score   INEP's score
    key       gabarito, TX_GABARITO, key         optional: the candidate's answer key (chooses item sets)
    id        case_id, id                        optional

Numbers may be strings ("590.9", "121"). `score_cases` scores them with the microdata scorer
(`enem.official`), year by year, against ITENS_PROVA_<year>.csv files.

Every year as INEP published it, 2009-2025: ENEM had no foreign-language section before 2010, so a 2009 LC case
has 45 answers and no language (an LC case of 2010 or later needs 0 or 1). A record that cannot be read (a field
missing or malformed) is left out, named by its record and field in one `CasesLeftOutWarning`, and the others are
read; `score_cases` gives it a row whose `problem` says so, as it does for a case the scorer cannot use (a booklet
absent from the item file, an answer string of the wrong length: "<kind>: record N: field 'F': ..."). strict=True
refuses the first of either instead (DatasetError naming the file, record and field), as loaders do.
"""
from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit.enem import reproducibility
from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS
from mcqa_toolkit.enem.errata import Erratum
from mcqa_toolkit.enem.itens_prova import read_itens_prova, year_in_name
from mcqa_toolkit.enem.microdata import ChunkScorer
from mcqa_toolkit.items import DatasetError, SkippedRecord

FIELDS: dict[str, tuple[str, ...]] = {
    "year": ("ano", "year", "NU_ANO"), "area": ("area", "SG_AREA"), "booklet": ("co_prova", "CO_PROVA"),
    "language": ("tp_lingua", "TP_LINGUA"), "answers": ("respostas", "answers", "TX_RESPOSTAS"),
    "official": ("nota_oficial", "NU_NOTA", "official_score"), "key": ("gabarito", "TX_GABARITO", "key"),
    "id": ("case_id", "id")}
REQUIRED = ("year", "area", "booklet", "answers", "official")
FIRST_LANGUAGE_YEAR = 2010       # ENEM's foreign-language section (TP_LINGUA) began in 2010
# the scorer names microdata columns; a case list's problems name the case's fields
_CASE_FIELD = {"CO_PROVA": "co_prova", "TX_RESPOSTAS": "respostas", "TX_GABARITO": "gabarito",
               "TP_LINGUA": "tp_lingua", "NU_NOTA": "nota_oficial", "CO_POSICAO": "co_prova"}
CASE_COLUMNS = ["case", "year", "area", "CO_PROVA", "TP_LINGUA", "answers", "NU_NOTA", "key"]
SCORE_COLUMNS = ["case", "year", "area", "CO_PROVA", "TP_LINGUA", "theta", "psd", "score", "NU_NOTA", "error",
                 "n_correct", "n_scored", "item_set", "item_set_rule", "alternatives", "inep_validation",
                 "inep_share_exact", "problem"]


def is_case_list(path: str | Path) -> bool:
    """A .json / .jsonl file (a case list) rather than a microdata CSV."""
    return Path(path).suffix.lower() in (".json", ".jsonl")


class CasesLeftOutWarning(UserWarning):
    """Case-list records left out because they cannot be read (the warning names each record and field)."""


@dataclass(frozen=True)
class CaseList:
    """A case list as read: the usable cases (CASE_COLUMNS, index = record number) and the records left out."""

    cases: pd.DataFrame
    left_out: tuple[SkippedRecord, ...] = ()


def read_case_list(path: str | Path, strict: bool = False) -> CaseList:
    """A case list -> its usable cases and the records left out (a field missing or malformed: SkippedRecord
    naming the record and field). strict=True raises the first bad record's DatasetError instead. A file that is
    not a case list at all (not JSON, not a list, no record) is a DatasetError either way."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".jsonl":
            records: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            records = data.get("cases") if isinstance(data, dict) else data
    except json.JSONDecodeError as e:
        raise DatasetError(path, "-", None, f"not JSON: {e}") from None
    if not isinstance(records, list):
        raise DatasetError(path, "-", None, "expected a JSON list of cases (or {\"cases\": [...]})")
    rows, numbers, left_out = [], [], []
    for n, rec in enumerate(records, start=1):
        try:
            rows.append(_case(rec, n, path))
            numbers.append(n)
        except DatasetError as e:
            if strict:
                raise
            given = rec.get("case_id", rec.get("id")) if isinstance(rec, Mapping) else None
            left_out.append(SkippedRecord(str(path), n, "" if given is None else str(given), e.field, e.message))
    if not records:
        raise DatasetError(path, "-", None, "no cases")
    cases = pd.DataFrame(rows, columns=CASE_COLUMNS, index=pd.Index(numbers, name="record", dtype="int64"))
    return CaseList(cases, tuple(left_out))


def read_cases(path: str | Path, strict: bool = False) -> pd.DataFrame:
    """A case list -> one row per usable case (CASE_COLUMNS; index = record number from 1). A record that cannot be
    read is left out with one CasesLeftOutWarning naming each (record, field, why); strict=True raises DatasetError
    naming the record and field of the first instead."""
    got = read_case_list(path, strict)
    if got.left_out:
        warnings.warn(CasesLeftOutWarning(f"{len(got.left_out)} case(s) left out because they cannot be read "
                                          f"(strict=True refuses them instead): "
                                          + "; ".join(str(r) for r in got.left_out)), stacklevel=2)
    return got.cases


def _field(rec: Mapping[str, Any], name: str, n: int, path: Path) -> Any:
    for key in FIELDS[name]:
        if key in rec and rec[key] is not None and str(rec[key]).strip() != "":
            return rec[key]
    if name in REQUIRED:
        raise DatasetError(path, n, FIELDS[name][0], f"missing {name} (one of {list(FIELDS[name])})")
    return None


def _case(rec: Any, n: int, path: Path) -> dict:
    if not isinstance(rec, Mapping):
        raise DatasetError(path, n, None, f"expected an object, got {type(rec).__name__}")
    out: dict[str, Any] = {}
    for name, col, kind in (("year", "year", int), ("booklet", "CO_PROVA", int), ("official", "NU_NOTA", float),
                            ("language", "TP_LINGUA", int)):
        value = _field(rec, name, n, path)
        try:
            out[col] = None if value is None else kind(float(str(value).strip().replace(",", ".")))
        except ValueError:
            raise DatasetError(path, n, FIELDS[name][0], f"{name} {value!r} is not a number") from None
    area = str(_field(rec, "area", n, path)).strip().upper()
    if area not in ENEM_CONSTANTS:
        raise DatasetError(path, n, FIELDS["area"][0], f"unknown area {area!r}; expected {sorted(ENEM_CONSTANTS)}")
    if area == "LC" and out["year"] >= FIRST_LANGUAGE_YEAR and out["TP_LINGUA"] not in (0, 1):
        raise DatasetError(path, n, FIELDS["language"][0], f"an LC case of {FIRST_LANGUAGE_YEAR} or later needs its "
                           "foreign language (0 English or 1 Spanish); only 2009 had none")
    answers = _field(rec, "answers", n, path)
    if not isinstance(answers, str):
        raise DatasetError(path, n, FIELDS["answers"][0], f"expected a string, got {type(answers).__name__}")
    key = _field(rec, "key", n, path)
    case = _field(rec, "id", n, path)
    return {"case": str(case) if case is not None else str(n), "area": area, "answers": answers.strip().upper(),
            "key": "" if key is None else str(key).strip().upper(), **out}


def item_files(item_params: str | Path | Mapping[int, str | Path], years: list[int]) -> dict[int, Path]:
    """{year: ITENS_PROVA file} for the cases' years: a directory holding ITENS_PROVA_<year>.csv, one file (for
    one year; its name's year must agree when it has one) or a {year: path} mapping."""
    if isinstance(item_params, Mapping):
        files = {int(y): Path(p) for y, p in item_params.items()}
    elif Path(item_params).is_dir():
        d = Path(item_params)
        files = {y: f for y in years for f in [d / f"ITENS_PROVA_{y}.csv"] if f.is_file()}
    else:
        f = Path(item_params)
        named = year_in_name(f)
        if len(years) > 1 or (named is not None and named not in years):
            raise ValueError(f"{f}: one item file for cases of {years}; pass a directory of ITENS_PROVA_<year>.csv")
        files = {years[0]: f}
    missing = [y for y in years if y not in files or not files[y].is_file()]
    if missing:
        raise FileNotFoundError(f"no ITENS_PROVA file for year(s) {missing} in {item_params}")
    return files


def score_cases(cases: pd.DataFrame | str | Path, item_params: str | Path | Mapping[int, str | Path],
                errata: bool | str | Path | Sequence[Erratum] = True, strict: bool = False) -> pd.DataFrame:
    """Score every case (read_cases' rows, or a case-list path) against its year's item file: one row per case
    (SCORE_COLUMNS, same index; for a path, the records left out too). error = score - NU_NOTA. Booklets whose
    item sets nothing tells apart are scored under set 1 (item_set_rule "undetermined"; `alternatives` gives the
    other sets' scores). Cases that cannot be scored keep NaN scores and say why in `problem` ("<kind>: record N:
    field 'F': ..."); strict=True raises the first as a DatasetError naming the record and field. errata=False:
    the item files as published; a path or entries: that errata table instead of the shipped one
    (`read_itens_prova`). One warning for the exams whose INEP scores we do not reproduce (or not validated), one
    for items with estimated parameters."""
    left_out: tuple[SkippedRecord, ...] = ()
    source: Any = "cases"
    if not isinstance(cases, pd.DataFrame):
        source = cases
        got = read_case_list(cases, strict)
        cases, left_out = got.cases, got.left_out
    years = sorted(int(y) for y in cases["year"].unique())
    files = item_files(item_params, years) if years else {}
    parts: list[pd.DataFrame] = []
    found: list[reproducibility.Agreement] = []
    estimated: set[tuple[int | None, str, int]] = set()
    for year in years:
        sub = cases[cases["year"] == year]
        scorer = ChunkScorer(read_itens_prova(files[year], errata=errata, year=year), None, strict=False)
        wide = _as_microdata(sub)
        scores, problems = [], []
        for area in sorted(set(sub["area"])):
            s, p = scorer.area(wide, area)
            scores += s
            problems += p
        parts.append(_one_row_per_case(sub, scores, problems))
        found += scorer.agreements.values()
        estimated |= scorer.estimated
    reproducibility.warn(found, stacklevel=2)
    reproducibility.warn_estimated(estimated, stacklevel=2)
    out = pd.concat(parts).loc[cases.index] if parts else pd.DataFrame(columns=SCORE_COLUMNS)
    if strict and (out["problem"] != "").any():
        first = out[out["problem"] != ""].iloc[0]
        m = re.match(r"(.*?): record (\d+): field '([^']*)': (.*)", first["problem"], re.S)
        if m is None:                   # "not scored": no scorer problem names the record
            raise DatasetError(source, first.name, None, f"case {first['case']!r}: {first['problem']}")
        raise DatasetError(source, int(m[2]), m[3], f"{m[1]}: {m[4]}")
    if left_out:
        out = pd.concat([out, left_out_rows(left_out)]).sort_index(kind="stable")
    return out[SCORE_COLUMNS]


def left_out_rows(left_out: Sequence[SkippedRecord]) -> pd.DataFrame:
    """score_cases' rows (SCORE_COLUMNS) of the records read_case_list left out: no score, and problem "bad case:
    record N: field 'F': why"."""
    rows = pd.DataFrame({"case": [r.item_id or str(r.record) for r in left_out],
                         "problem": [f"bad case: record {r.record}: field {r.field!r}: {r.reason}" for r in left_out]},
                        index=pd.Index([int(r.record) for r in left_out], name="record"))
    return rows.reindex(columns=SCORE_COLUMNS)


def _as_microdata(cases: pd.DataFrame) -> pd.DataFrame:
    """Cases as INEP microdata columns (a candidate present in its case's area only), so the microdata scorer
    groups and scores them."""
    out = pd.DataFrame(index=cases.index)
    # text as in INEP's files, "" where there is none (2009, or another area): a missing key would drop the row
    out["TP_LINGUA"] = ["" if pd.isna(x) else str(int(x)) for x in cases["TP_LINGUA"]]
    for area in ENEM_CONSTANTS:
        mine = cases["area"] == area
        out[f"TP_PRESENCA_{area}"] = np.where(mine, "1", "0")
        out[f"TX_RESPOSTAS_{area}"] = cases["answers"].where(mine, "")
        out[f"TX_GABARITO_{area}"] = cases["key"].where(mine, "")
        out[f"CO_PROVA_{area}"] = cases["CO_PROVA"].astype(str).where(mine, "")
        out[f"NU_NOTA_{area}"] = cases["NU_NOTA"].astype(str).where(mine, "")
    return out


def _one_row_per_case(cases: pd.DataFrame, scores: list[pd.DataFrame], problems: list[dict]) -> pd.DataFrame:
    base = cases[["case", "year", "area", "CO_PROVA", "TP_LINGUA", "NU_NOTA"]].copy()
    base["TP_LINGUA"] = base["TP_LINGUA"].astype("Int64")
    if scores:
        s = pd.concat(scores)
        first = s[~s.index.duplicated()]
        others = s[s.index.duplicated()]
        alt = others.groupby(level=0).apply(lambda g: "; ".join(f"set {k}: {v:.1f}" for k, v in
                                                                 zip(g["item_set"], g["score"], strict=True)))
        cols = ["theta", "psd", "score", "n_correct", "n_scored", "item_set", "item_set_rule", "inep_validation",
                "inep_share_exact"]
        base = base.join(first[cols])
        base["alternatives"] = alt.reindex(base.index).fillna("") if len(others) else ""
    else:
        for col in ("theta", "psd", "score", "n_correct", "n_scored", "item_set", "inep_share_exact"):
            base[col] = np.nan
        base["item_set_rule"] = base["inep_validation"] = base["alternatives"] = ""
    base["error"] = base["score"] - base["NU_NOTA"]
    base["problem"] = ""
    unscored = base["score"].isna()
    for p in problems:             # the scorer reports a problem per group of cases, naming its first row
        mine = [r for r in p["rows"] if unscored.get(r, False)]
        column = re.sub(r"_(CH|CN|LC|MT)$", "", p["field"])
        detail = re.sub(r"^row \d+: ", "", p["detail"])
        base.loc[mine, "problem"] = [f"{p['problem']}: record {r}: field {_CASE_FIELD.get(column, column)!r}: "
                                     f"{detail}" for r in mine]
    base.loc[unscored & (base["problem"] == ""), "problem"] = "not scored"
    return base
