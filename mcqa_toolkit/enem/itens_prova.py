"""INEP item parameters (ITENS_PROVA_<year>.csv): reading and item sets (attached to exam items by enem.attach).

ITENS_PROVA: ';'-separated, latin-1 or utf-8; no TP_LINGUA in 2009; annulled items (IN_ITEM_ABAN = 1) have
empty NU_PARAM_A/B/C; a CO_PROVA may list two areas (90-100 rows); an item annulled before it got a code has an
empty CO_ITEM (2009: key "X", reason "Pedagógico"), read as annulled (CO_ITEM is a nullable Int64).

Item sets. Some booklet codes list two rows per (area, CO_POSICAO, TP_LINGUA): two item sets share the code
(2013 booklets 187-190, the 2020 LC booklets 691-694: a printed and an adapted/digital version). The rule
(`split_item_sets`): within one booklet and area, the k-th row of a position, in file order, belongs to item
set k (numbered from 1); a position listed once is shared by every set; a position listed a number of times
other than 1 or the most is an error. Which set a booklet's items or candidates took is then decided by the
answer key: exam items by their answers (`enem.attach.ItemParams`), microdata candidates by TX_GABARITO_<area>
(`enem.official`); an explicit `item_set` overrides, and when nothing tells the sets apart the caller must choose.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.errata import Erratum, apply_errata
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.textfiles import csv_columns, iter_csv

ITENS_PROVA_REQUIRED = ("CO_POSICAO", "SG_AREA", "CO_ITEM", "TX_GABARITO", "IN_ITEM_ABAN",
                        "NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C", "CO_PROVA")
AREAS = ("CH", "CN", "LC", "MT")
TP_LINGUA = {"en": 0, "es": 1}


def read_itens_prova(path: str | Path, errata: bool | str | Path | Sequence[Erratum] = True,
                     year: int | None = None) -> pd.DataFrame:
    """Validated ITENS_PROVA rows in file order: one row per (CO_PROVA, item), params as floats (NaN when
    annulled); the index is the 0-based data row. Adds TP_LINGUA (NaN) when the file lacks it (2009).
    Raises DatasetError naming the data row (1-based, header excluded) and column of the first bad value.

    CO_ITEM is Int64: NA where the file leaves it empty, which only an annulled row may do (IN_ITEM_ABAN 1, key
    "X" or no parameters; such a row is marked IN_ITEM_ABAN = 1). NU_ANO: the file's year (Int64, NA when
    unknown): `year`, else the file's NU_ANO column, else the year in its name (ITENS_PROVA_2017.csv).

    errata=True applies INEP's errata shipped with the package (`enem.errata`: items INEP scored with other
    parameters or another key than it published, the blank-sheet rule) to the file they were written for; a
    path (or a sequence of `Erratum`) applies that errata table instead, e.g. one written by `mcqa validate-enem
    ... --discover-errata`. Column ERRATUM names the entries applied to each row ("" for none), PARAMS_ESTIMATED
    is True where a row's (a, b, c) were estimated from candidates (INEP never published them) and
    BLANK_ALL_WRONG says whether an all-blank sheet takes the all-wrong score (NA when the year is unknown);
    `df.attrs["errata"]` says, per entry, "<id>: <status> (<detail>)" (`enem.errata.ERRATUM_STATUSES`).
    errata=False: the file exactly as published (no estimated parameters, blank sheets score 0).
    """
    encodings = ("utf-8", "latin-1")
    header = csv_columns(path, delimiter=";", encodings=encodings)
    if len(header) < 2:
        raise DatasetError(path, "header", None, "expected a ';'-separated INEP ITENS_PROVA file")
    # the csv module, not pandas: a row with too many or too few cells is a DatasetError naming it
    rows = [row for _, row in iter_csv(path, delimiter=";", encodings=encodings, required=ITENS_PROVA_REQUIRED)]
    df = pd.DataFrame(rows, columns=header, dtype=object)
    if "TP_LINGUA" not in df.columns:
        df["TP_LINGUA"] = ""
    out = pd.DataFrame(index=df.index)
    for col in ("CO_POSICAO", "CO_ITEM", "CO_PROVA"):           # an annulled item may have no code (2009)
        out[col] = _int_column(df[col], path, col, empty=col == "CO_ITEM")
    out["IN_ITEM_ABAN"] = _int_column(df["IN_ITEM_ABAN"].replace("", "0"), path, "IN_ITEM_ABAN")
    out["SG_AREA"] = df["SG_AREA"].str.strip()
    bad = ~out["SG_AREA"].isin(AREAS)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(path, i + 1, "SG_AREA", f"unknown area {df['SG_AREA'].iloc[i]!r}; expected {AREAS}")
    out["TX_GABARITO"] = df["TX_GABARITO"].str.strip().str.upper()
    for col in ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"):
        out[col] = _float_column(df[col], path, col)
    out["TP_LINGUA"] = _float_column(df["TP_LINGUA"].str.strip(), path, "TP_LINGUA")
    for col in ("CO_HABILIDADE", "TX_MOTIVO_ABAN", "TX_COR", "IN_ITEM_ADAPTADO"):
        if col in df.columns:
            out[col] = df[col]
    _annul_uncoded(out, path)
    year = _file_year(df, path) if year is None else int(year)
    out["NU_ANO"] = pd.array([year] * len(out), dtype="Int64")
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
    if errata is False:                          # as published: nothing estimated, blank sheets score 0
        return out.assign(ERRATUM="", PARAMS_ESTIMATED=False, BLANK_ALL_WRONG=pd.array([False] * len(out), "boolean"))
    out, results = apply_errata(out, year, Path(path).name if isinstance(path, (str, Path)) else path,
                                None if errata is True else errata)
    out.attrs["errata"] = tuple(f"{r.id}: {r.status} ({r.detail})" for r in results)   # str: cheap to copy
    return out


def _annul_uncoded(out: pd.DataFrame, path) -> None:
    """Rows with an empty CO_ITEM are items annulled before they got a code: flag them IN_ITEM_ABAN = 1. A row
    that looks scored (flag 0, a key other than X and all three parameters) cannot lack its code."""
    uncoded = out["CO_ITEM"].isna()
    params = out[["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]].notna().all(axis=1)
    scored = uncoded & (out["IN_ITEM_ABAN"] == 0) & (out["TX_GABARITO"] != "X") & params
    if scored.any():
        i = int(np.flatnonzero(scored)[0])
        raise DatasetError(path, i + 1, "CO_ITEM", "empty item code on a row that is not annulled (IN_ITEM_ABAN 0, "
                           f"key {out['TX_GABARITO'].iloc[i]!r}, parameters given)")
    out.loc[uncoded, "IN_ITEM_ABAN"] = 1


def _file_year(df: pd.DataFrame, path) -> int | None:
    """The year of an ITENS_PROVA file: its NU_ANO column when it holds one year, else the year in its name."""
    if "NU_ANO" in df.columns:
        years = set(df["NU_ANO"].str.strip()) - {""}
        if len(years) == 1 and years.copy().pop().isdigit():
            return int(years.pop())
    return year_in_name(path)


def year_in_name(path) -> int | None:
    """The year in a file name such as ITENS_PROVA_2017.csv or MICRODADOS_ENEM_2023.csv (None when none)."""
    if not isinstance(path, (str, Path)):
        return None
    m = re.search(r"(?<!\d)((?:19|20)\d\d)(?!\d)", Path(path).name)
    return int(m[1]) if m else None


def _int_column(s: pd.Series, path, col: str, empty: bool = False) -> pd.Series:
    """Integers (int64; with empty=True, Int64 with NA for empty cells)."""
    stripped = s.str.strip()
    num = pd.to_numeric(stripped, errors="coerce")
    blank = (stripped == "") & empty
    bad = (num.isna() & ~blank) | (num.notna() & ((num % 1 != 0) | (num.abs() >= 2 ** 62)))  # (nor an int64)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DatasetError(path, i + 1, col, f"not an integer: {s.iloc[i]!r}")
    return num.astype("Int64") if empty else num.astype("int64")


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


def split_item_sets(rows: pd.DataFrame) -> list[pd.DataFrame]:
    """One booklet's rows of one area -> its item sets, in file order (see the module docstring).

    Most booklets have one set: `[rows]`. Raises ValueError when a position is listed a number of times
    other than 1 or the largest count (the rows cannot be split into complete sets).
    """
    if rows.empty:
        return [rows]
    lingua = rows["TP_LINGUA"].fillna(-1) if "TP_LINGUA" in rows.columns else -1
    keyed = pd.DataFrame({"pos": rows["CO_POSICAO"], "lang": lingua}, index=rows.index)
    grouped = keyed.groupby(["pos", "lang"])       # column names: Series keys make pandas try them as labels
    rank = grouped.cumcount()
    count = grouped["pos"].transform("size")
    n_sets = int(count.max())
    if n_sets == 1:
        return [rows]
    odd = (count != 1) & (count != n_sets)
    if odd.any():
        r = rows[odd].iloc[0]
        booklet = f"booklet {r['CO_PROVA']}: " if "CO_PROVA" in rows.columns else ""
        raise ValueError(f"{booklet}position CO_POSICAO {r['CO_POSICAO']} is listed {count[odd].iloc[0]} times "
                         f"where other positions are listed once or {n_sets} times: the rows do not split into "
                         "item sets")
    return [rows[(count == 1) | (rank == k)] for k in range(n_sets)]
