"""Regenerate the ENEM errata shipped with the package (mcqa_toolkit/enem/errata/errata.json) with the discovery \
procedure
(`mcqa_toolkit.enem.errata.discover`) run on the development set of real INEP candidates:

    python studies/enem_errata.py [--shared ../shared]

Every exam-area of ../shared/reference/enem_inep/inep_cases_dev.json is searched from INEP's item files as
published. A discovered correction that the shipped file already holds (same kind, exam-area and rows) keeps its
id and its curated `what` / `evidence` text and takes the procedure's values (estimated parameters included) and
evidence. A discovered correction the file lacks is added. A shipped entry the procedure does not find is kept as
`source: "hand"` with its measured effect on the development candidates and the reason the search does not
accept it. The differences are printed (docs/enem.md explains them). For each estimated item the independent
check scores the exam-area with a public scorer's estimates instead (INDEPENDENT; never a start of the fit).
Scores here are IN-SAMPLE: the corrections were found on the same candidates (see
studies/enem_errata_crossval.py for held-out figures).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
from _enem_dev import development_set

from mcqa_toolkit.enem.cases import score_cases
from mcqa_toolkit.enem.errata.discover import discover_cases
from mcqa_toolkit.enem.errata.format import errata_json, parse_errata
from mcqa_toolkit.enem.errata.greedy import K_BLANK, K

REPO = Path(__file__).resolve().parents[1]
ERRATA = REPO / "mcqa_toolkit" / "enem" / "errata" / "errata.json"
# (a, b, c) that HenriqueLindemann/analise-enem (a public ENEM scorer) estimated for the two items INEP scored
# without publishing their parameters, from other candidates; used only to compare, never as a start
INDEPENDENT = {73305: (0.8323, -0.2720, 0.0062), 117798: (0.3076, 13.650, 0.1376)}
ABOUT = ("INEP's errata: where a published ITENS_PROVA file disagrees with the scores INEP gave (NU_NOTA). Regenerated "
         "by studies/enem_errata.py with the discovery procedure (mcqa_toolkit.enem.errata.discover) on the "
         "development set of 2,140 real candidates from INEP's published microdata (years 2011, 2013, 2017, 2019, "
         "2021, 2025; kept by the project, not shipped); source 'discovered' = found by the procedure, 'hand' = found "
         "by looking and kept (its 'reason' says why the procedure does not accept it). 'gain', 'fixed' and 'broken' "
         "are IN-SAMPLE (the corrections were found on those candidates; held-out figures: docs/enem.md). Estimated "
         "parameters ('unpublished') are ESTIMATES: 'estimated' says the objective minimised, 'cross_validation' the "
         "held-out agreement. Applied by read_itens_prova(path, errata=True); 'signature' is "
         "errata.format.booklet_signature of the reference booklet's rows as INEP published them.")


def content(e) -> tuple:
    """What an entry changes, whatever its id and text."""
    if e.kind == "zip":
        return ("zip", e.year, e.area, e.reference_booklet, frozenset(e.not_scored),
                frozenset(int(u["co_item"]) for u in e.unpublished))
    if e.kind == "blank":
        return ("blank", e.year, e.area)
    return (e.kind, e.year, e.area, e.co_item, e.correct_key, frozenset(e.booklets))


def exact_ids(cases, inep: Path, entries) -> set[str]:
    scored = score_cases(cases, inep, errata=tuple(entries))
    return set(scored.loc[scored["error"].abs() < 0.05, "case"])


def main() -> None:
    inep, cases = development_set(__doc__.split("\n")[0])
    found = discover_cases(cases, inep, source="the development set")
    shipped = parse_errata(json.loads(ERRATA.read_text(encoding="utf-8")), ERRATA)
    by_content = {content(e): e for e in found.entries}
    kept, differences = [], []
    for old in shipped:
        new = by_content.pop(content(old), None)
        if new is not None:
            kept.append(dataclasses.replace(new, id=old.id, what=old.what or new.what,
                                            evidence=old.evidence or new.evidence))
            abc = [[(u["a"], u["b"], u["c"]) for u in x.unpublished] for x in (new, old)]
            if abc[0] != abc[1]:
                differences.append(f"{old.id}: estimated parameters now {abc[0]} (were {abc[1]})")
            continue
        kept.append(hand_entry(old, cases, inep, found.entries))
        differences.append(f"{old.id}: not found by the procedure, kept as hand-found ({kept[-1].reason})")
    for new in by_content.values():
        kept.append(new)
        differences.append(f"{new.id}: found by the procedure, not in the shipped file ({new.what})")
    kept = [independent_check(e, cases, inep, kept) for e in kept]
    ERRATA.write_text(errata_json(kept, ABOUT), encoding="utf-8")
    print(found.text())
    print(f"\n{ERRATA.relative_to(REPO)}: {len(kept)} entries; differences from the file it replaces:")
    print("\n".join(f"  {d}" for d in differences) or "  none")


def hand_entry(old, cases, inep: Path, discovered):
    """A shipped entry the procedure does not find: its effect on top of the discovered ones, and why."""
    sub = cases[(cases["year"] == old.year) & (cases["area"] == old.area)]
    others = [e for e in discovered if (e.year, e.area) == (old.year, old.area)]
    before, after = exact_ids(sub, inep, others), exact_ids(sub, inep, [*others, old])
    fixed, broken = sorted(after - before), sorted(before - after)
    need = K_BLANK if old.kind == "blank" else K
    if old.kind == "blank" and not sub["answers"].str.fullmatch(r"[.9]+").any():
        reason = (f"no all-blank sheet among the {len(sub)} development candidates of {old.year} {old.area}: no "
                  "evidence either way; kept from the same year's rule where a blank sheet shows it")
    else:
        reason = (f"makes {len(fixed)} development candidate(s) exact and {len(broken)} inexact: a gain below the "
                  f"search's K = {need}")
    return dataclasses.replace(old, source="hand", reason=reason, n_candidates=len(sub), fixed=tuple(fixed),
                               broken=tuple(broken), gain=f"{len(before)} -> {len(after)} of {len(sub)}")


def independent_check(e, cases, inep: Path, entries):
    """The estimated items' independent check: the exam-area scored with INDEPENDENT's values instead."""
    if not e.unpublished:
        return e
    sub = cases[(cases["year"] == e.year) & (cases["area"] == e.area)]
    units = []
    for u in e.unpublished:
        other = INDEPENDENT.get(int(u["co_item"]))
        if other is None:
            units.append(u)
            continue
        swapped = dataclasses.replace(e, unpublished=tuple({**v, "a": other[0], "b": other[1], "c": other[2]}
                                                           if v is u else v for v in e.unpublished))
        scored = score_cases(sub, inep, errata=tuple(swapped if x is e else x for x in entries))
        err = scored["error"].abs()
        units.append({**u, "independent_check": (
            f"HenriqueLindemann/analise-enem (a public ENEM scorer) estimated {other} from other candidates; with "
            f"those values {int((err < 0.05).sum())} of the {len(sub)} cases are exact and none is off by more than "
            f"{np.round(err.max(), 1)} (the fit here does not start from them)")})
    return dataclasses.replace(e, unpublished=tuple(units))


if __name__ == "__main__":
    main()
