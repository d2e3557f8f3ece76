"""2-fold cross-validation of the ENEM errata discovery (`mcqa_toolkit.enem.errata.discover`) on the development set,
kept as raw counts (results/studies/enem_crossval.json) from which docs/enem.md's table is rendered
(scripts/render_docs.py):

    python studies/enem_errata_crossval.py [--shared ../shared]     # runs it (a few minutes), writes the JSON
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
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
from _enem_dev import development_set

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from pages.enem import COUNTS, markdown, summary  # noqa: E402  (the docs' table and sentence, as rendered)

RAW = REPO / "results" / "studies" / "enem_crossval.json"
TWO_SETS = (2013, (187, 188, 189, 190))


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
                               "command": "python studies/enem_errata_crossval.py", "rows": rows}, indent=1) + "\n")
    print(markdown(rows))
    print(f"\n{summary(rows)}\nwrote {RAW.relative_to(REPO)}: run scripts/render_docs.py to update docs/enem.md")


if __name__ == "__main__":
    main()
