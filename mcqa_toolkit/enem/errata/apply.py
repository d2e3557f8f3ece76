"""INEP's errata: where a published ITENS_PROVA file disagrees with the scores INEP itself gave, as data.

The shipped table is `errata.json` beside this module (format: `enem.errata.format`); a user's table (e.g. one
`mcqa validate-enem ... --discover-errata` wrote from their microdata) is applied instead with
`read_itens_prova(path, errata=PATH)`. Each entry names its year and area, what INEP got wrong, the evidence, what
it changes, and the rows it applies to. Kinds:

- "zip": in one reference booklet, the published (a, b, c) list (the rows not flagged IN_ITEM_ABAN, in position
  order) was laid onto the items INEP scored, but an item INEP did not score is not flagged (or an item INEP
  scored is flagged): from that item on, every row carries the parameters of the next scored item and the last
  rows get filler (often a copy of an adapted booklet's item). The correction lays the published list onto the
  reference booklet's positions without the flagged items, without `not_scored` (items INEP did not score
  although the file does not flag them) and without `unpublished` (items INEP scored with parameters it never
  published: the entry gives their ESTIMATED (a, b, c), how and on how many candidates they were estimated, and
  their held-out agreement; their rows get PARAMS_ESTIMATED = True); `not_scored` items become annulled.
  Corrections are per CO_ITEM and reach every booklet of the area listing those items.
- "key": a wrong TX_GABARITO for one CO_ITEM; "annul": an item the file scores but INEP did not. Both apply to
  every booklet of the area listing the item, or only to `booklets` when given.
- "blank" (a rule, in the table's "rules" list): in that year and area INEP gave an all-blank answer sheet the
  all-wrong pattern's score instead of 0 (column BLANK_ALL_WRONG; NA when the file's year is unknown, and the
  scorers then look the rule up for the year they are given).

An erratum is applied only to the file it was written for. "zip": the reference booklet's rows must hash to
`signature` (`booklet_signature`: 45 item codes, keys, flags and parameters, unique to that file whatever its
name) and every other row of a corrected item must carry the reference booklet's published values. "key" /
"annul": the file's year must be the entry's (from `year=`, an NU_ANO column or the file name; an unknown year
is said and nothing changes) and the rows must carry the published key and (a, b, c). A file that lists an
erratum's rows but differs (INEP republished it, or someone corrected it already) is left alone and an
`ErrataWarning` says so; a file without those rows is not concerned. `apply_errata` returns the corrected rows
(column ERRATUM: the ids applied to each row, "" for none) and one `ErratumResult` per entry.
"""
from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.errata.format import (
    KINDS,
    PARAMS,
    Erratum,
    ErratumResult,
    booklet_signature,
    load_errata,
    markdown,
    parse_errata,
    table_frame,
)

__all__ = ["ERRATUM_STATUSES", "ErrataWarning", "Erratum", "ErratumResult", "apply_errata", "booklet_signature",
           "errata", "rules", "errata_table", "errata_markdown", "load_errata", "zip_correction", "blank_all_wrong"]
ERRATUM_STATUSES = ("applied", "already corrected", "left alone", "not in this file", "year unknown")


class ErrataWarning(UserWarning):
    """An ITENS_PROVA file lists an erratum's rows but not as the erratum expects: it was left alone."""


@lru_cache(maxsize=1)
def _shipped() -> tuple[Erratum, ...]:
    raw = json.loads(resources.files("mcqa_toolkit.enem.errata").joinpath("errata.json").read_text(encoding="utf-8"))
    return parse_errata(raw, "mcqa_toolkit/enem/errata/errata.json")


def errata() -> tuple[Erratum, ...]:
    """The shipped corrections of item rows (errata.json's "errata"), in file order."""
    return tuple(e for e in _shipped() if e.kind in KINDS)


def rules() -> tuple[Erratum, ...]:
    """The shipped scoring rules (errata.json's "rules": the blank-sheet rule per year and area)."""
    return tuple(e for e in _shipped() if e.kind not in KINDS)


def blank_all_wrong(year: int | None, area: str) -> bool:
    """Whether the shipped rules give an all-blank sheet of `year` and `area` the all-wrong score (else 0)."""
    return any(e.kind == "blank" and e.year == year and e.area == area for e in rules())


def errata_table() -> pd.DataFrame:
    """The shipped corrections of item rows as a table, one row per entry (for docs and notebooks)."""
    return table_frame(errata())


def errata_markdown() -> str:
    """docs/enem.md's errata section (from errata.json)."""
    return markdown(errata() + rules())


def apply_errata(df: pd.DataFrame, year: int | None, source: object = "",
                 table: str | Path | Sequence[Erratum] | None = None) -> tuple[pd.DataFrame, list[ErratumResult]]:
    """Validated ITENS_PROVA rows (read_itens_prova's) -> (corrected copy with columns ERRATUM, PARAMS_ESTIMATED
    and BLANK_ALL_WRONG, one result per correction entry and per rule for this file's year). table: the shipped
    errata and rules (None), an errata file, or entries. Warns (ErrataWarning) once per erratum whose rows are in
    the file but not as published."""
    entries = errata() + rules() if table is None else \
        load_errata(table) if isinstance(table, (str, Path)) else tuple(table)
    out = df.copy()
    out["ERRATUM"], out["PARAMS_ESTIMATED"] = "", False
    out["BLANK_ALL_WRONG"] = pd.array([pd.NA if year is None else False] * len(out), dtype="boolean")
    results = []
    for e in entries:
        r = _zip(out, e, year) if e.kind == "zip" else _blank(out, e, year) if e.kind == "blank" else _key(out, e, year)
        if e.kind in KINDS or r.status != "not in this file":     # a rule of another year is no news
            results.append(r)
        if r.status in ("left alone", "year unknown"):
            warnings.warn(f"{source}: erratum {e.id} not applied: {r.detail}", ErrataWarning, stacklevel=3)
    return out, results


def _concerned(df: pd.DataFrame, e: Erratum, items: set[int]) -> pd.Series:
    return (df["SG_AREA"] == e.area) & df["CO_ITEM"].isin(items).fillna(False).astype(bool)


def _zip(df: pd.DataFrame, e: Erratum, year: int | None) -> ErratumResult:
    ref = df[(df["SG_AREA"] == e.area) & (df["CO_PROVA"] == e.reference_booklet)]
    named = set(e.not_scored) | {int(u["co_item"]) for u in e.unpublished}
    if ref.empty or not named <= set(ref["CO_ITEM"].dropna()) or (year is not None and year != e.year):
        return ErratumResult(e.id, "not in this file", f"no {e.area} booklet {e.reference_booklet} of {e.year} "
                             "listing its items")
    got = booklet_signature(ref)            # 45 items and their values: unique to the file, whatever its name
    if got != e.signature:
        return ErratumResult(e.id, "left alone", f"{e.year} {e.area} booklet {e.reference_booklet} is not as "
                             f"published (signature {got}, erratum written for {e.signature}); its rows are "
                             "used as they are")
    fixed = pd.DataFrame.from_dict(zip_correction(ref, e), orient="index", columns=["IN_ITEM_ABAN", *PARAMS])
    published = (ref.dropna(subset=["CO_ITEM"]).drop_duplicates("CO_ITEM").set_index("CO_ITEM")
                 [["IN_ITEM_ABAN", *PARAMS]])
    rows = df.index[_concerned(df, e, set(fixed.index))]
    codes = df.loc[rows, "CO_ITEM"].to_numpy(dtype="int64")
    mine = df.loc[rows, ["IN_ITEM_ABAN", *PARAMS]].to_numpy(float)
    theirs = published.loc[codes].to_numpy(float)
    differ = ~(np.isclose(mine, theirs, rtol=0, atol=5e-7) | (np.isnan(mine) & np.isnan(theirs))).all(axis=1)
    if differ.any():
        i = rows[np.argmax(differ)]
        return ErratumResult(e.id, "left alone", f"row {i + 1} (booklet {df.at[i, 'CO_PROVA']}, item "
                             f"{df.at[i, 'CO_ITEM']}) differs from the reference booklet's published values")
    new = fixed.loc[codes]
    df.loc[rows, "IN_ITEM_ABAN"] = new["IN_ITEM_ABAN"].to_numpy().astype("int64")
    for p in PARAMS:
        df.loc[rows, p] = new[p].to_numpy(float)
    estimated = np.isin(codes, [int(u["co_item"]) for u in e.unpublished])
    df.loc[rows[estimated], "PARAMS_ESTIMATED"] = True
    _mark(df, rows, e.id)
    return ErratumResult(e.id, "applied", f"{len(rows)} rows of {len(set(df.loc[rows, 'CO_PROVA']))} booklets "
                         "corrected" + (f" ({int(estimated.sum())} with estimated parameters)" if estimated.any()
                                        else ""), tuple(int(i) for i in rows))


def zip_correction(ref: pd.DataFrame, e: Erratum) -> dict[int, tuple[int, float, float, float]]:
    """{CO_ITEM: (IN_ITEM_ABAN, a, b, c)} for the reference booklet's items once the zip is undone (rows without
    an item code are annulled ones and stay as they are)."""
    ref = ref.sort_values("CO_POSICAO", kind="stable")
    flag = ref["IN_ITEM_ABAN"].to_numpy() == 1
    published = ref[list(PARAMS)].to_numpy(float)[~flag]                # the list INEP laid onto the scored items
    unpublished = {int(u["co_item"]): (float(u["a"]), float(u["b"]), float(u["c"])) for u in e.unpublished}
    codes = ref["CO_ITEM"].fillna(-1).to_numpy(dtype=np.int64)     # -1: an uncoded row, flagged (read_itens_prova)
    skip = flag | np.isin(codes, [*e.not_scored, *unpublished])
    out = {int(i): (1, np.nan, np.nan, np.nan) for i in codes if i >= 0}
    for i, (a, b, c) in zip(codes[~skip], published, strict=False):  # INEP laid the list onto fewer items
        out[int(i)] = (0, float(a), float(b), float(c))
    for i, p in unpublished.items():
        out[i] = (0, *p)
    return out


def _key(df: pd.DataFrame, e: Erratum, year: int | None) -> ErratumResult:
    """kind "key" (TX_GABARITO published_key -> correct_key) and "annul" (IN_ITEM_ABAN 0 -> 1, no parameters)
    for one CO_ITEM, in `booklets` (every booklet of the area when empty)."""
    if year is not None and year != e.year:
        return ErratumResult(e.id, "not in this file", f"not a {e.year} file")
    mask = _concerned(df, e, set() if e.co_item is None else {e.co_item})  # no item code: no row
    if e.booklets:
        mask &= df["CO_PROVA"].isin(e.booklets)
    rows = df.index[mask]
    where = f"item {e.co_item}" + (f" in booklet(s) {list(e.booklets)}" if e.booklets else "")
    if rows.empty:
        return ErratumResult(e.id, "not in this file", f"no {e.area} {where}")
    if year is None:
        return ErratumResult(e.id, "year unknown", f"the file lists item {e.co_item} but its year is unknown "
                             f"(erratum for {e.year}); pass year= or name the file ITENS_PROVA_<year>.csv")
    keys, aban = set(df.loc[rows, "TX_GABARITO"]), set(df.loc[rows, "IN_ITEM_ABAN"])
    if e.kind == "annul" and aban == {1}:
        return ErratumResult(e.id, "already corrected", f"{where} is already annulled")
    if e.kind == "key" and keys == {e.correct_key}:
        return ErratumResult(e.id, "already corrected", f"{where} already has key {e.correct_key}")
    params = df.loc[rows, list(PARAMS)].to_numpy(float)
    if aban != {0} or keys != {e.published_key} or not np.allclose(params, np.asarray(e.published_params, float),
                                                                    rtol=0, atol=5e-7):
        return ErratumResult(e.id, "left alone", f"{where} is not as published (key {e.published_key}, (a, b, c) "
                             f"{tuple(e.published_params)}, not annulled)")
    if e.kind == "key":
        df.loc[rows, "TX_GABARITO"] = e.correct_key
        done = f"key {e.published_key} -> {e.correct_key}"
    else:
        df.loc[rows, ["IN_ITEM_ABAN", *PARAMS]] = [1, np.nan, np.nan, np.nan]
        done = "annulled"
    _mark(df, rows, e.id)
    return ErratumResult(e.id, "applied", f"{where}: {done} ({len(rows)} rows)", tuple(int(i) for i in rows))


def _blank(df: pd.DataFrame, e: Erratum, year: int | None) -> ErratumResult:
    """kind "blank": every row of the area in a file of that year gets BLANK_ALL_WRONG = True."""
    rows = df.index[df["SG_AREA"] == e.area]
    if year != e.year or rows.empty:
        return ErratumResult(e.id, "not in this file", f"no {e.area} rows of {e.year}" if year is not None else
                             "the file's year is unknown (the scorers apply the rule for the year they are given)")
    df.loc[rows, "BLANK_ALL_WRONG"] = True            # not in ERRATUM: no item row changes
    return ErratumResult(e.id, "applied", f"all-blank {e.area} sheets take the all-wrong score ({len(rows)} rows)",
                         tuple(int(i) for i in rows))


def _mark(df: pd.DataFrame, rows: pd.Index, eid: str) -> None:
    """Add `eid` to the ERRATUM column of `rows`."""
    before = df.loc[rows, "ERRATUM"]
    df.loc[rows, "ERRATUM"] = np.where(before == "", eid, before + "," + eid)
