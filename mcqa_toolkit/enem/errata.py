"""INEP's errata: where a published ITENS_PROVA file disagrees with the scores INEP itself gave, as data.

The table is `errata.json` beside this module (shipped with the package); each entry names its year and area,
what INEP got wrong, the evidence in one sentence, what it changes on the development set, and the rows it
applies to. Kinds:

- "zip": in one reference booklet, the published (a, b, c) list (the rows not flagged IN_ITEM_ABAN, in position
  order) was laid onto the items INEP scored, but an item INEP did not score is not flagged (or an item INEP
  scored is flagged): from that item on, every row carries the parameters of the next scored item and the last
  rows get filler (often a copy of an adapted booklet's item). The correction lays the published list onto the
  reference booklet's positions without the flagged items, without `not_scored` (items INEP did not score
  although the file does not flag them) and without `unpublished` (items INEP scored with parameters it never
  published: the entry gives their estimated (a, b, c), how and on how many candidates they were estimated,
  and the checks); `not_scored` items become annulled. Corrections are per CO_ITEM and reach every booklet of
  the area listing those items.
- "key": a wrong TX_GABARITO for one CO_ITEM; "annul": an item the file scores but INEP did not. Both apply to
  every booklet of the area listing the item, or only to `booklets` when given.

An erratum is applied only to the file it was written for. "zip": the reference booklet's rows must hash to
`signature` (`booklet_signature`: 45 item codes, keys, flags and parameters, unique to that file whatever its
name) and every other row of a corrected item must carry the reference booklet's published values. "key" /
"annul": the file's year must be the entry's (from `year=`, an NU_ANO column or the file name; an unknown year
is said and nothing changes) and the rows must carry the published key and (a, b, c). A file that lists an
erratum's rows but differs (INEP republished it, or someone corrected it already) is left alone and an
`ErrataWarning` says so; a file without those rows is not concerned. `apply_errata` returns the corrected rows
(column ERRATUM: the ids applied to each row, "" for none) and one `ErratumResult` per entry. A new entry's
signature: `booklet_signature(read_itens_prova(path, errata=False).query("CO_PROVA == ... and SG_AREA == ..."))`.
"""
from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import numpy as np
import pandas as pd

PARAMS = ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C")
ERRATUM_STATUSES = ("applied", "already corrected", "left alone", "not in this file", "year unknown")


class ErrataWarning(UserWarning):
    """An ITENS_PROVA file lists an erratum's rows but not as the erratum expects: it was left alone."""


@dataclass(frozen=True)
class Erratum:
    """One entry of errata.json (see the module docstring)."""

    id: str
    kind: str                      # "zip" or "key"
    year: int
    area: str
    what: str                      # what INEP got wrong
    evidence: str                  # one sentence
    gain: str = ""                 # what the correction changes on the development set
    # zip
    reference_booklet: int | None = None
    not_scored: tuple[int, ...] = ()
    unpublished: tuple[dict, ...] = ()       # {co_item, a, b, c, estimated, n_candidates, independent_check}
    signature: str = ""
    # key / annul: one item, in `booklets` (all booklets of the area when empty), as published
    co_item: int | None = None
    booklets: tuple[int, ...] = ()
    published_key: str = ""
    correct_key: str = ""
    published_params: tuple[float, ...] = ()


@dataclass(frozen=True)
class ErratumResult:
    """What happened to one erratum on one file: status (ERRATUM_STATUSES), a sentence, the rows changed."""

    id: str
    status: str
    detail: str
    rows: tuple[int, ...] = field(default=())


@lru_cache(maxsize=1)
def errata() -> tuple[Erratum, ...]:
    """The shipped table (errata.json), in file order."""
    raw = json.loads(resources.files("mcqa_toolkit.enem").joinpath("errata.json").read_text(encoding="utf-8"))
    out = []
    for e in raw["errata"]:
        e = dict(e)
        for k in ("not_scored", "published_params", "booklets"):
            if k in e:
                e[k] = tuple(e[k])
        if "unpublished" in e:
            e["unpublished"] = tuple(e["unpublished"])
        out.append(Erratum(**e))
    return tuple(out)


def errata_table() -> pd.DataFrame:
    """The errata as a table, one row per entry (for docs and notebooks)."""
    rows = []
    for e in errata():
        target = (f"booklet {e.reference_booklet}; not scored {list(e.not_scored)}"
                  + (f"; unpublished {[u['co_item'] for u in e.unpublished]}" if e.unpublished else "")
                  if e.kind == "zip" else f"item {e.co_item}: " + (f"key {e.published_key} -> {e.correct_key}"
                                                                   if e.kind == "key" else "annulled")
                  + (f" in booklets {list(e.booklets)}" if e.booklets else ""))
        rows.append({"id": e.id, "year": e.year, "area": e.area, "kind": e.kind, "rows": target, "what": e.what,
                     "evidence": e.evidence, "gain": e.gain})
    return pd.DataFrame(rows)


def booklet_signature(rows: pd.DataFrame) -> str:
    """A short hash of one booklet's rows of one area as published: CO_POSICAO, TP_LINGUA, CO_ITEM,
    TX_GABARITO, IN_ITEM_ABAN and a, b, c (6 decimals), in position order (16 hex digits of SHA-256)."""
    lingua = rows["TP_LINGUA"].fillna(-1) if "TP_LINGUA" in rows else pd.Series(-1, index=rows.index)
    df = rows.assign(LINGUA_=lingua).sort_values(["CO_POSICAO", "LINGUA_"], kind="stable")
    lines = [";".join([str(int(r.CO_POSICAO)), str(int(r.LINGUA_)), str(int(r.CO_ITEM)), str(r.TX_GABARITO),
                       str(int(r.IN_ITEM_ABAN)), *(_num(getattr(r, p)) for p in PARAMS)])
             for r in df.itertuples()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _num(x: float) -> str:
    return "" if x is None or np.isnan(x) else f"{x:.6f}"


def apply_errata(df: pd.DataFrame, year: int | None, source: object = "") -> tuple[pd.DataFrame, list[ErratumResult]]:
    """Validated ITENS_PROVA rows (read_itens_prova's) -> (corrected copy with an ERRATUM column, one result per
    erratum). Warns (ErrataWarning) once per erratum whose rows are in the file but not as published."""
    out = df.copy()
    out["ERRATUM"] = ""
    results = []
    for e in errata():
        r = _zip(out, e, year) if e.kind == "zip" else _key(out, e, year)   # "key" and "annul"
        results.append(r)
        if r.status in ("left alone", "year unknown"):
            warnings.warn(f"{source}: erratum {e.id} not applied: {r.detail}", ErrataWarning, stacklevel=3)
    return out, results


def _concerned(df: pd.DataFrame, e: Erratum, items: set[int]) -> pd.Series:
    return (df["SG_AREA"] == e.area) & df["CO_ITEM"].isin(items)


def _year_gate(e: Erratum, year: int | None) -> ErratumResult | None:
    if year is None:
        return ErratumResult(e.id, "year unknown", f"the file lists item {e.co_item} but its year is unknown "
                             f"(erratum for {e.year}); pass year= or name the file ITENS_PROVA_<year>.csv")
    return None


def _zip(df: pd.DataFrame, e: Erratum, year: int | None) -> ErratumResult:
    ref = df[(df["SG_AREA"] == e.area) & (df["CO_PROVA"] == e.reference_booklet)]
    named = set(e.not_scored) | {int(u["co_item"]) for u in e.unpublished}
    if ref.empty or not named <= set(ref["CO_ITEM"]) or (year is not None and year != e.year):
        return ErratumResult(e.id, "not in this file", f"no {e.area} booklet {e.reference_booklet} of {e.year} "
                             "listing its items")
    got = booklet_signature(ref)            # 45 items and their values: unique to the file, whatever its name
    if got != e.signature:
        return ErratumResult(e.id, "left alone", f"{e.year} {e.area} booklet {e.reference_booklet} is not as "
                             f"published (signature {got}, erratum written for {e.signature}); its rows are "
                             "used as they are")
    fixed = pd.DataFrame.from_dict(zip_correction(ref, e), orient="index", columns=["IN_ITEM_ABAN", *PARAMS])
    published = ref.drop_duplicates("CO_ITEM").set_index("CO_ITEM")[["IN_ITEM_ABAN", *PARAMS]]
    rows = df.index[_concerned(df, e, set(fixed.index))]
    codes = df.loc[rows, "CO_ITEM"].to_numpy()
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
    _mark(df, rows, e.id)
    return ErratumResult(e.id, "applied", f"{len(rows)} rows of {len(set(df.loc[rows, 'CO_PROVA']))} booklets "
                         "corrected", tuple(int(i) for i in rows))


def zip_correction(ref: pd.DataFrame, e: Erratum) -> dict[int, tuple[int, float, float, float]]:
    """{CO_ITEM: (IN_ITEM_ABAN, a, b, c)} for the reference booklet's items once the zip is undone."""
    ref = ref.sort_values("CO_POSICAO", kind="stable")
    published = [tuple(getattr(r, p) for p in PARAMS) for r in ref.itertuples() if r.IN_ITEM_ABAN == 0]
    unpublished = {int(u["co_item"]): (float(u["a"]), float(u["b"]), float(u["c"])) for u in e.unpublished}
    flagged = set(ref.loc[ref["IN_ITEM_ABAN"] == 1, "CO_ITEM"])
    scored = [i for i in ref["CO_ITEM"] if i not in flagged | set(e.not_scored) | set(unpublished)]
    out = {int(i): (1, np.nan, np.nan, np.nan) for i in ref["CO_ITEM"]}
    for i, p in zip(scored, published):
        out[int(i)] = (0, *p)
    for i, p in unpublished.items():
        out[i] = (0, *p)
    return out


def _key(df: pd.DataFrame, e: Erratum, year: int | None) -> ErratumResult:
    """kind "key" (TX_GABARITO published_key -> correct_key) and "annul" (IN_ITEM_ABAN 0 -> 1, no parameters)
    for one CO_ITEM, in `booklets` (every booklet of the area when empty)."""
    if year is not None and year != e.year:
        return ErratumResult(e.id, "not in this file", f"not a {e.year} file")
    mask = _concerned(df, e, {e.co_item})
    if e.booklets:
        mask &= df["CO_PROVA"].isin(e.booklets)
    rows = df.index[mask]
    where = f"item {e.co_item}" + (f" in booklet(s) {list(e.booklets)}" if e.booklets else "")
    if rows.empty:
        return ErratumResult(e.id, "not in this file", f"no {e.area} {where}")
    if (gate := _year_gate(e, year)) is not None:
        return gate
    keys, aban = set(df.loc[rows, "TX_GABARITO"]), set(df.loc[rows, "IN_ITEM_ABAN"])
    if e.kind == "annul" and aban == {1}:
        return ErratumResult(e.id, "already corrected", f"{where} is already annulled")
    if e.kind == "key" and keys == {e.correct_key}:
        return ErratumResult(e.id, "already corrected", f"{where} already has key {e.correct_key}")
    if aban != {0} or keys != {e.published_key} or any(
            not _same(tuple(df.loc[i, list(PARAMS)]), e.published_params) for i in rows):
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


def _same(x: tuple, y: tuple) -> bool:
    return len(x) == len(y) and all((np.isnan(a) and np.isnan(b)) if _isnan(a) or _isnan(b) else abs(a - b) < 5e-7
                                    for a, b in zip(map(float, x), map(float, y)))


def _isnan(x: float) -> bool:
    return bool(np.isnan(x))


def _mark(df: pd.DataFrame, rows: pd.Index, eid: str) -> None:
    """Add `eid` to the ERRATUM column of `rows`."""
    before = df.loc[rows, "ERRATUM"]
    df.loc[rows, "ERRATUM"] = np.where(before == "", eid, before + "," + eid)


def errata_markdown() -> str:
    """docs/enem.md's errata section: one line per entry (id, rows, what, evidence, gain), then the items scored
    with unpublished parameters and how they were estimated and checked."""
    lines = ["| erratum | rows | what INEP got wrong | evidence | exact on the development set |",
             "|---|---|---|---|---|"]
    lines += [f"| {r.id} | {r.rows} | {r.what} | {r.evidence} | {r.gain} |" for r in errata_table().itertuples()]
    unpublished = [(e, u) for e in errata() for u in e.unpublished]
    if unpublished:
        lines += ["", "Items INEP scored with parameters it never published (estimated here):", "",
                  "| item | (a, b, c) | estimated | candidates | cross-validation | independent check |",
                  "|---|---|---|---:|---|---|"]
        lines += [f"| {e.year} {e.area} {u['co_item']} | ({u['a']}, {u['b']}, {u['c']}) | {u['estimated']} | "
                  f"{u['n_candidates']} | {u['cross_validation']} | {u['independent_check']} |"
                  for e, u in unpublished]
    return "\n".join(lines)
