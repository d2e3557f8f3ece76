"""2-fold cross-validation of the ENEM errata discovery (`mcqa_toolkit.enem.errata.discover`) on the development set,
kept as raw counts (docs/enem_crossval.json) from which docs/enem.md's table is rendered (scripts/render_docs.py):

    python scripts/enem_errata_crossval.py [--shared ../shared]     # runs it (a few minutes), writes the JSON
    python scripts/render_docs.py                                     # renders docs/enem.md from the JSON

Per exam-area, the candidates of each booklet are dealt alternately into two halves; the errata discovered from
one half (starting from INEP's files as published, nothing shipped) score the other half. The JSON gives, per
exam-area (the 2013 adapted booklets 187-190 apart: two item sets under one code, which no correction reaches),
the candidates, how many are exact to 0.1 as published, held out (each half scored with the other half's errata)
and in-sample (with the shipped errata, found on all of them), the corrections each half found, and the held-out
misses per booklet. Counts only: no candidate's answers or scores are written. Takes a few minutes; not a test.
"""
from __future__ import annotations

import datetime
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
from _enem_dev import development_set

REPO = Path(__file__).resolve().parents[1]
RAW = REPO / "docs" / "enem_crossval.json"
TWO_SETS = (2013, (187, 188, 189, 190))
COUNTS = ("exact_published", "exact_held_out", "exact_in_sample")


def aggregate(cv: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per exam-area: counts outside and inside the 2013 two-set booklets, each half's corrections, and
    the held-out misses per booklet (outside 187-190)."""
    two = (cv["year"] == TWO_SETS[0]) & cv["CO_PROVA"].isin(TWO_SETS[1])
    rows = []
    for (year, area), g in cv.groupby(["year", "area"], sort=True):
        apart, rest = g[two[g.index]], g[~two[g.index]]
        found = g.groupby("fold")["corrections"].first().reindex([1, 0]).fillna("")
        misses = rest[~rest["exact_held_out"]].groupby("CO_PROVA").size()
        rows.append({"year": int(year), "area": area, "cases": len(rest),
                     **{c: int(rest[c].sum()) for c in COUNTS},
                     "two_set_cases": len(apart), **{f"two_set_{c}": int(apart[c].sum()) for c in COUNTS},
                     "corrections": [s.split(", ") if s else [] for s in found],
                     "held_out_misses_by_booklet": {str(int(b)): int(n) for b, n in misses.items()}})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The docs table: per exam-area (candidates outside booklets 187-190; those apart), then the totals."""
    lines = ["| year | area | cases | exact as published | exact held out (2-fold) | share held out | exact in-sample "
             "(shipped errata) | 2013 booklets 187-190: cases (held-out exact) | corrections found (half 1; half 2) |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        found = "; ".join(", ".join(c) or "none" for c in r["corrections"])
        apart = f"{r['two_set_cases']} ({r['two_set_exact_held_out']})" if r["two_set_cases"] else ""
        lines.append(f"| {r['year']} | {r['area']} | {r['cases']} | {r['exact_published']} | {r['exact_held_out']} | "
                     f"{r['exact_held_out'] / r['cases']:.1%} | {r['exact_in_sample']} | {apart} | {found} |")
    for label, t in totals(rows).items():
        n, pub, held, ins = t["cases"], t["exact_published"], t["exact_held_out"], t["exact_in_sample"]
        lines.append(f"| {label} | | {n} | {pub} ({pub / n:.1%}) | {held} | **{held / n:.1%}** | {ins} ({ins / n:.1%}) "
                     "| | |")
    return "\n".join(lines)


def totals(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Counts over the candidates outside booklets 187-190 and over all of them."""
    outside = {k: sum(r[k] for r in rows) for k in ("cases", *COUNTS)}
    everyone = {k: outside[k] + sum(r[f"two_set_{k}"] for r in rows) for k in ("cases", *COUNTS)}
    return {"outside 187-190": outside, "all": everyone}


def summary(rows: list[dict[str, Any]]) -> str:
    """The sentence under the table, from the same counts."""
    t = totals(rows)
    out, every = t["outside 187-190"], t["all"]
    misses = sum(n for r in rows for n in r["held_out_misses_by_booklet"].values())
    def share(t: dict[str, int], k: str) -> str:
        return f"{t[k] / t['cases']:.1%}"

    return (f"The held-out share outside the 2013 adapted booklets 187-190 is **{share(out, 'exact_held_out')}** "
            f"({out['exact_held_out']:,} of {out['cases']:,}; as published {share(out, 'exact_published')}, "
            f"in-sample with the shipped errata {share(out, 'exact_in_sample')}); of all {every['cases']:,} "
            f"candidates, {share(every, 'exact_held_out')} held out against {share(every, 'exact_in_sample')} "
            f"in-sample. {misses} held-out misses outside 187-190, by booklet: " +
            "; ".join(f"{r['year']} {r['area']} " + ", ".join(f"{b} ({n})" for b, n in
                                                              r["held_out_misses_by_booklet"].items())
                      for r in rows if r["held_out_misses_by_booklet"]) + ".")


def main() -> None:
    from mcqa_toolkit.enem.cases import score_cases
    from mcqa_toolkit.enem.errata.discover import cross_validate

    inep, cases = development_set(__doc__.split("\n")[0])
    t0 = time.perf_counter()
    cv = cross_validate(cases, inep)
    shipped = score_cases(cases, inep)
    cv["exact_in_sample"] = (shipped["error"].abs() < 0.05).to_numpy()
    rows = aggregate(cv)
    RAW.write_text(json.dumps({"date": datetime.date.today().isoformat(), "seconds": round(time.perf_counter() - t0),
                               "command": "python scripts/enem_errata_crossval.py", "rows": rows}, indent=1) + "\n")
    print(markdown(rows))
    print(f"\n{summary(rows)}\nwrote {RAW.relative_to(REPO)}: run scripts/render_docs.py to update docs/enem.md")


if __name__ == "__main__":
    main()
