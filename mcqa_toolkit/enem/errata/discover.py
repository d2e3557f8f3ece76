"""Errata from data: the corrections of INEP's item files that its official scores imply, for any ENEM year.

    discovery = discover_errata("ITENS_PROVA_2023.csv", "MICRODADOS_ENEM_2023.csv")   # or a case list + item dir
    discovery.write("errata_2023.json")        # then read_itens_prova(path, errata="errata_2023.json")

Per exam-area, `enem.errata.greedy.discover_area` searches items INEP did not score (the "zip" pattern), wrong keys,
annulled items, the blank-sheet rule and, only for items with no published parameters of their own, parameters
estimated from the candidates; each accepted correction becomes an entry of the package's errata format
(`enem.errata.format`) with its evidence: the candidates it makes exact (`fixed`) and inexact (`broken`), the
exact counts before and after, and for estimates the number of candidates and their held-out agreement. A
microdata file is sampled in bounded memory first (`enem.errata.sample`). The search starts from the files as INEP
published them, whatever errata are shipped. `cross_validate` measures how the discovered corrections carry
to candidates they were not found on (2-fold per exam-area).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.cases import is_case_list, item_files, read_cases, score_cases
from mcqa_toolkit.enem.errata.apply import ErrataWarning, apply_errata
from mcqa_toolkit.enem.errata.estimate import METHOD
from mcqa_toolkit.enem.errata.format import Erratum, booklet_signature, errata_json
from mcqa_toolkit.enem.errata.greedy import AreaResult, K, discover_area
from mcqa_toolkit.enem.errata.sample import PER_GROUP, sample_microdata
from mcqa_toolkit.enem.itens_prova import read_itens_prova, year_in_name
from mcqa_toolkit.enem.reproducibility import EnemEstimatedParamsWarning, EnemReproducibilityWarning

AREA_COLUMNS = ["year", "area", "n_candidates", "left_out", "exact_published", "exact_after", "corrections"]


@dataclass(frozen=True)
class Discovery:
    """The entries found, one summary row per exam-area (AREA_COLUMNS), and what they were found from."""

    entries: tuple[Erratum, ...]
    areas: pd.DataFrame
    source: str

    def write(self, path: str | Path) -> Path:
        """Write the errata file (the package's format) and return its path."""
        about = (f"Errata discovered by mcqa_toolkit.enem.errata.discover from {self.source}: the corrections of "
                 "INEP's ITENS_PROVA that the candidates' official scores (NU_NOTA) imply. Apply with "
                 "read_itens_prova(path, errata=<this file>) or mcqa validate-enem ... --errata <this file>.")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(errata_json(self.entries, about), encoding="utf-8")
        return path

    def text(self) -> str:
        """A printed summary: per exam-area, candidates and exact scores before and after, then the entries."""
        a = self.areas
        n, before, after = int(a["n_candidates"].sum()), int(a["exact_published"].sum()), int(a["exact_after"].sum())
        lines = [f"errata discovery from {self.source}: {len(self.entries)} correction(s); exact to 0.1 on the "
                 f"candidates searched (in-sample) {before:,} -> {after:,} of {n:,}", "",
                 a.to_string(index=False)]
        lines += [""] + [f"  {e.id}: {e.what} ({e.evidence})" for e in self.entries]
        return "\n".join(lines)


def discover_errata(item_params: str | Path, data: str | Path, areas: list[str] | None = None, k: int = K,
                    per_group: int = PER_GROUP, chunksize: int = 100_000, progress: bool = False) -> Discovery:
    """Search the errata that `data` implies for `item_params` (see the module docstring). data: INEP's microdata
    CSV (with one ITENS_PROVA file; sampled, `per_group` candidates per booklet and language) or a .json/.jsonl
    case list (with a directory of ITENS_PROVA_<year>.csv, or one file for one year)."""
    files: str | Path | dict[int, str | Path] = item_params
    if is_case_list(data):
        cases = read_cases(data)
        source = f"the case list {Path(data).name}"
    else:
        if Path(item_params).is_dir():
            raise ValueError(f"{item_params}: a microdata file needs one ITENS_PROVA file, not a directory")
        year = year_in_name(item_params) or year_in_name(data)
        if year is None:
            raise ValueError(f"{data}: the year is needed for errata; name the files ITENS_PROVA_<year>.csv / "
                             "MICRODADOS_ENEM_<year>.csv")
        cases = sample_microdata(data, year, areas, per_group, chunksize=chunksize, progress=progress)
        files = {year: item_params}
        source = f"a sample of {len(cases):,} candidates of {Path(data).name}"
    if areas:
        cases = cases[cases["area"].isin(areas)]
    return discover_cases(cases, files, k, source)


def discover_cases(cases: pd.DataFrame, item_params, k: int = K, source: str = "cases") -> Discovery:
    """Search every exam-area of a case list (read_cases' rows) against its year's item file."""
    years = sorted(int(y) for y in cases["year"].unique())
    files = item_files(item_params, years)
    entries, rows = [], []
    for year in years:
        items = read_itens_prova(files[year], errata=False, year=year)
        sub = cases[cases["year"] == year]
        for area in sorted(set(sub["area"])):
            result = discover_area(items[items["SG_AREA"] == area], sub[sub["area"] == area], year, area, k)
            mine = area_entries(result)
            _check(mine, items[items["SG_AREA"] == area], year, area)
            entries += mine
            rows.append({"year": year, "area": area, "n_candidates": result.n_candidates,
                         "left_out": result.left_out, "exact_published": result.exact_published,
                         "exact_after": result.exact_after, "corrections": ", ".join(e.id for e in mine)})
    return Discovery(tuple(entries), pd.DataFrame(rows, columns=AREA_COLUMNS), source)


def _check(entries: list[Erratum], rows: pd.DataFrame, year: int, area: str) -> None:
    """Warn (ErrataWarning) when an entry would not apply to the file it was found on, in the file's order (the
    search lets later corrections override earlier ones; the file applies them one after another)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ErrataWarning)
        _, results = apply_errata(rows, year, "discovery", entries)
    bad = [f"{r.id} ({r.detail})" for r in results if r.status != "applied"]
    if bad:
        warnings.warn(f"{year} {area}: discovered entries that would not apply as written: {'; '.join(bad)}",
                      ErrataWarning, stacklevel=3)


def area_entries(result: AreaResult) -> list[Erratum]:
    """One exam-area's accepted corrections as errata entries: an estimate joins the zip whose reference booklet
    lists its item (as one of its `unpublished`), or is an entry of its own (a zip without shift, on the first
    booklet flagging the item)."""
    s = result.search
    drafts: list[dict] = []
    for f in result.found:
        for corr in f.corrections:
            if corr.kind != "estimate":
                drafts.append({"kind": corr.kind, "corr": corr, "ref": corr.reference_booklet,
                               "not_scored": list(corr.not_scored), "unpublished": [], "found": [f]})
                continue
            home = next((d for d in drafts if d["kind"] == "zip"
                         and corr.co_item in set(s.co[s.booklet == d["ref"]])), None)
            if home is None:                      # a booklet flagging it, as published when the estimate applies
                flagging = (s.co == corr.co_item) & ~s.published.scored
                touched = set(s.booklet[s.changed_rows(f.before)])
                ref = int(min(s.booklet[flagging], key=lambda b: (b in touched, b)))
                home = {"kind": "zip", "corr": None, "ref": ref, "not_scored": [], "unpublished": [], "found": []}
                drafts.append(home)
            est, held_out = f.estimates[corr.co_item]
            home["not_scored"] = [i for i in home["not_scored"] if i != corr.co_item]
            home["unpublished"].append({"co_item": corr.co_item, "a": est.a, "b": est.b, "c": est.c,
                                        "estimated": METHOD, "n_candidates": est.n_candidates,
                                        "cross_validation": held_out})
            if f not in home["found"]:
                home["found"].append(f)
    n_zips = sum(d["kind"] == "zip" for d in drafts)
    entries, ids = [], set()
    for d in drafts:
        e = _entry(d, s, result.year, result.area, result.n_candidates, n_zips)
        n = 2
        while e.id in ids:                        # ids are unique in an errata file
            e, n = replace(e, id=f"{e.id.rsplit('~', 1)[0]}~{n}"), n + 1
        ids.add(e.id)
        entries.append(e)
    return entries


def _entry(d: dict, s, year: int, area: str, n: int, n_zips: int) -> Erratum:
    corr, found = d["corr"], d["found"]
    fixed = tuple(dict.fromkeys(i for f in found for i in f.fixed))
    broken = tuple(dict.fromkeys(i for f in found for i in f.broken))
    before, after = found[0].exact_before, found[-1].exact_after
    common: dict[str, Any] = dict(
        year=int(year), area=area, source="discovered", n_candidates=n, fixed=fixed, broken=broken,
        evidence=f"{len(fixed)} of the {n} candidates searched become exact with it and {len(broken)} stop being exact",
        gain=f"{before} -> {after} of {n}")
    if d["kind"] == "blank":
        return Erratum(f"{year}-{area}-blank", "blank", what="INEP gave all-blank answer sheets the all-wrong "
                       "pattern's score, not 0", **common)
    if d["kind"] == "zip":
        ref = s.rows[s.booklet == d["ref"]]
        where = dict(zip(ref["CO_ITEM"].fillna(-1).astype(int), ref["CO_POSICAO"], strict=True))
        parts = []
        if d["not_scored"]:
            parts.append(f"item(s) {', '.join(f'{i} (position {where[i]})' for i in d['not_scored'])} of booklet "
                         f"{d['ref']} are not flagged although INEP did not score them; from each on the rows carry "
                         "the parameters of the next item(s)")
        for u in d["unpublished"]:
            flagged = not s.published.scored[(s.co == u["co_item"]) & (s.booklet == d["ref"])].any()
            parts.append(f"item {u['co_item']} (position {where[u['co_item']]} of booklet {d['ref']}) "
                         + ("is flagged abandoned although INEP scored it" if flagged else "was scored")
                         + " with parameters INEP never published (ESTIMATED here)")
        eid = f"{year}-{area}-zip" + (f"-{d['ref']}" if n_zips > 1 else "")
        return Erratum(eid, "zip", what="; ".join(parts), reference_booklet=int(d["ref"]),
                       not_scored=tuple(int(i) for i in d["not_scored"]), unpublished=tuple(d["unpublished"]),
                       signature=booklet_signature(ref), **common)
    # the values the rows have when the entry applies (after the area's earlier entries, e.g. a zip)
    i = int(np.flatnonzero((s.co == corr.co_item) & (np.isin(s.booklet, corr.booklets) if corr.booklets else True))[0])
    st = found[0].before
    key, params = chr(st.key[i]), (float(st.a[i]), float(st.b[i]), float(st.c[i]))
    scope = f" in booklets {list(corr.booklets)}" if corr.booklets else ""
    if corr.kind == "key":
        return Erratum(f"{year}-{area}-key-{corr.co_item}", "key", what=f"TX_GABARITO of item {corr.co_item}{scope} "
                       f"is {key}; INEP scored {corr.key}", co_item=int(corr.co_item), booklets=corr.booklets,
                       published_key=key, correct_key=corr.key, published_params=params, **common)
    return Erratum(f"{year}-{area}-annul-{corr.co_item}", "annul", what=f"item {corr.co_item}{scope} is scored in the "
                   "file; INEP did not score it", co_item=int(corr.co_item), booklets=corr.booklets,
                   published_key=key, published_params=params, **common)


def cross_validate(cases: pd.DataFrame, item_params, k: int = K) -> pd.DataFrame:
    """2-fold cross-validation per exam-area: the candidates of each (year, area, booklet) are dealt alternately
    into two halves; errata discovered on one half score the other. One row per candidate: the case columns,
    fold, exact as published and exact with the other half's errata (`exact_held_out`)."""
    cases = cases.copy()
    cases["fold"] = cases.groupby(["year", "area", "CO_PROVA"], sort=False).cumcount() % 2
    parts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EnemReproducibilityWarning)
        warnings.simplefilter("ignore", EnemEstimatedParamsWarning)
        for fold in (0, 1):
            train, test = cases[cases["fold"] != fold], cases[cases["fold"] == fold]
            found = discover_cases(train.drop(columns="fold"), item_params, k)
            held = score_cases(test.drop(columns="fold"), item_params, errata=found.entries)
            raw = score_cases(test.drop(columns="fold"), item_params, errata=False)
            ids: dict[tuple[int, str], list[str]] = {}
            for e in found.entries:
                ids.setdefault((e.year, e.area), []).append(e.id)
            parts.append(test.assign(exact_published=(raw["error"].abs() < 0.05).to_numpy(),
                                     exact_held_out=(held["error"].abs() < 0.05).to_numpy(),
                                     corrections=[", ".join(ids.get((y, a), [])) for y, a in
                                                  zip(test["year"], test["area"], strict=True)]))
    return pd.concat(parts).loc[cases.index]
