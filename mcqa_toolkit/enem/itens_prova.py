"""INEP item parameters (ITENS_PROVA_<year>.csv): reading, item sets, and attaching 3PL parameters to exam items.

ITENS_PROVA: ';'-separated, latin-1 or utf-8; no TP_LINGUA in 2009; annulled items (IN_ITEM_ABAN = 1) have
empty NU_PARAM_A/B/C; a CO_PROVA may list two areas (90-100 rows); an item annulled before it got a code has an
empty CO_ITEM (2009: key "X", reason "Pedagógico"), read as annulled (CO_ITEM is a nullable Int64).

Item sets. Some booklet codes list two rows per (area, CO_POSICAO, TP_LINGUA): two item sets share the code
(2013 booklets 187-190, the 2020 LC booklets 691-694: a printed and an adapted/digital version). The rule
(`split_item_sets`): within one booklet and area, the k-th row of a position, in file order, belongs to item
set k (numbered from 1); a position listed once is shared by every set; a position listed a number of times
other than 1 or the most is an error. Which set a booklet's items or candidates took is then decided by the
answer key: exam items by their answers (`ItemParams.attach_all`), microdata candidates by TX_GABARITO_<area>
(`enem.official`); an explicit `item_set` overrides, and when nothing tells the sets apart the caller must choose.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from mcqa_toolkit.textfiles import csv_columns, iter_csv
from mcqa_toolkit.enem.errata import Erratum, apply_errata
from mcqa_toolkit.items import DatasetError, Item

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


class ItemParams:
    """ITENS_PROVA rows split into item sets per (CO_PROVA, area), for attaching 3PL parameters to exam items."""

    def __init__(self, path: str | Path):
        self.path, self.df = Path(path), read_itens_prova(path)
        self.booklets = set(self.df["CO_PROVA"])
        years = self.df["NU_ANO"].dropna().unique()
        self.year = int(years[0]) if len(years) == 1 else None     # the file's year when it says
        self._sets: dict[tuple[int, str], list[pd.DataFrame]] = {}

    def item_sets(self, co_prova: int, area: str) -> list[pd.DataFrame]:
        """The item sets of one booklet and area (usually one); ValueError when the rows do not split."""
        key = (co_prova, area)
        if key not in self._sets:
            self._sets[key] = split_item_sets(self.df[(self.df["CO_PROVA"] == co_prova) & (self.df["SG_AREA"] == area)])
        return self._sets[key]

    def attach_all(self, pairs: Sequence[tuple[int, Item]], path: Any,
                   item_set: int | Mapping[int, int] | None = None) -> list[tuple[int, Item]]:
        """(record number, Item) pairs of one file with irt and INEP fields attached (see `_attach`).

        Per booklet, the item set is `item_set` (an int for every booklet, or {CO_PROVA: set}) or else the
        only set whose keys agree with the items' answers; meta["item_set"] records it.
        """
        groups: dict[tuple[int, str], list[tuple[int, Item]]] = {}
        for n, item in pairs:
            co_prova = item.meta.get("co_prova")
            if co_prova is None:
                raise DatasetError(path, n, "co_prova", "item_params need the booklet code from a file name like "
                                                        "ENEM_2022_CN_CO_PROVA_1092.csv")
            if co_prova not in self.booklets:
                raise DatasetError(path, n, "co_prova", f"booklet {co_prova} not in {self.path.name}")
            groups.setdefault((co_prova, item.meta.get("area")), []).append((n, item))
        chosen = {key: self._choose(key, members, path, item_set) for key, members in groups.items()}
        out = []
        for n, item in pairs:
            k, sets = chosen[(item.meta["co_prova"], item.meta.get("area"))]
            out.append((n, self._attach(item, sets[k - 1], k, len(sets), path, n)))
        return out

    def _choose(self, key: tuple[int, str], members: list[tuple[int, Item]], path: Any,
                item_set: int | Mapping[int, int] | None) -> tuple[int, list[pd.DataFrame]]:
        co_prova, area = key
        try:
            sets = self.item_sets(co_prova, area)
        except ValueError as e:
            raise DatasetError(self.path, "-", "CO_POSICAO", str(e)) from None
        wanted = item_set.get(co_prova) if isinstance(item_set, Mapping) else item_set
        if wanted is not None:
            if wanted not in range(1, len(sets) + 1):
                raise DatasetError(path, "-", "item_set", f"item_set={wanted!r} but booklet {co_prova} ({area}) has "
                                   f"{len(sets)} item set(s) in {self.path.name}")
            return wanted, sets
        if len(sets) == 1:
            return 1, sets
        first_clash = [self._first_clash(rows, members, path) for rows in sets]
        agree = [k + 1 for k, clash in enumerate(first_clash) if clash is None]
        if len(agree) == 1:
            return agree[0], sets
        if not agree:
            n, item, letter = min((c for c in first_clash if c is not None), key=lambda c: c[0])
            raise DatasetError(path, n, "answer", f"answer {item.answer_letter} differs from TX_GABARITO {letter!r} "
                               f"and no item set of booklet {co_prova} ({area}) in {self.path.name} agrees with "
                               "every answer of this file")
        raise DatasetError(path, "-", "item_set", f"booklet {co_prova} ({area}) has {len(sets)} item sets in "
                           f"{self.path.name} and this file's answers agree with sets {agree}: pass item_set="
                           + " or ".join(map(str, agree)))

    def _first_clash(self, rows: pd.DataFrame, members: list[tuple[int, Item]], path: Any):
        """(n, item, key letter) of the first scored item whose answer differs from this set's key, or None."""
        for n, item in members:
            label = self._row(item, rows, path, n)
            r = rows.loc[label]
            if item.answer is not None and r["IN_ITEM_ABAN"] != 1 and item.answer_letter != r["TX_GABARITO"]:
                return n, item, r["TX_GABARITO"]
        return None

    def _row(self, item: Item, rows: pd.DataFrame, path: Any, n: int) -> int:
        """The index label of the item's row in one item set: (position, and TP_LINGUA when both languages)."""
        co_prova, area, number, fl = (item.meta.get(k) for k in ("co_prova", "area", "number", "foreign_language"))
        at = rows[rows["CO_POSICAO"] == number]
        lingua = at["TP_LINGUA"].to_numpy()
        if len(at) > 1 and not np.isnan(lingua).any():  # English and Spanish items at one position
            if fl not in TP_LINGUA:
                raise DatasetError(path, n, "foreign_language", f"position {number} of booklet {co_prova} has an "
                                   "English and a Spanish item: say which (foreign_language='en'/'es')")
            at = at[lingua == TP_LINGUA[fl]]
        if len(at) != 1:
            raise DatasetError(path, n, "question_number", f"{len(at) or 'no'} rows in {self.path.name} for booklet "
                               f"{co_prova}, area {area}, position {number}; expected 1")
        r = at.iloc[0]
        if fl in TP_LINGUA and not np.isnan(r["TP_LINGUA"]) and r["TP_LINGUA"] != TP_LINGUA[fl]:
            raise DatasetError(path, n, "foreign_language", f"{self.path.name} row {at.index[0] + 1} is TP_LINGUA "
                               f"{int(r['TP_LINGUA'])}, not the {fl} item")
        return at.index[0]

    def _attach(self, item: Item, rows: pd.DataFrame, set_no: int, n_sets: int, path: Any, n: int) -> Item:
        """`item` with irt and INEP fields in meta; IN_ITEM_ABAN = 1 -> annulled, no irt, answer None."""
        label = self._row(item, rows, path, n)
        r = rows.loc[label]
        co_item = None if pd.isna(r["CO_ITEM"]) else int(r["CO_ITEM"])
        meta = {**item.meta, "co_item": co_item, "tx_gabarito": r["TX_GABARITO"], "params_row": label + 1,
                "co_habilidade": r.get("CO_HABILIDADE", ""), "item_set": set_no, "n_item_sets": n_sets,
                "tp_lingua": None if np.isnan(r["TP_LINGUA"]) else int(r["TP_LINGUA"])}
        if r["IN_ITEM_ABAN"] == 1:
            meta.update(annulled=True, tx_motivo_aban=str(r.get("TX_MOTIVO_ABAN", "")).strip(),
                        answer_before_annulment=item.answer_letter)
            return item.with_(irt=None, answer=None, meta=meta)
        if item.answer is not None and item.answer_letter != r["TX_GABARITO"]:
            raise DatasetError(path, n, "answer", f"answer {item.answer_letter} differs from TX_GABARITO "
                               f"{r['TX_GABARITO']!r} ({self.path.name} row {label + 1})")
        return item.with_(irt=(r["NU_PARAM_A"], r["NU_PARAM_B"], r["NU_PARAM_C"]), meta=meta)
