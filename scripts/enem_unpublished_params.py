"""Re-estimate the (a, b, c) of the items INEP scored with parameters it never published (the `unpublished`
entries of mcqa_toolkit/enem/errata.json) from the development set, and check them by 2-fold cross-validation:

    python scripts/enem_unpublished_params.py [--shared ../shared]

For each such item: every development case of its exam-area is scored with the other corrections applied and
the item's parameters free; the fit minimises the mean squared difference between the unrounded score k*theta+d
and NU_NOTA (Nelder-Mead on log a, b, logit c, five starts). Prints the fit on all cases, the exact share with
the shipped values, and the fit on every other case scored on the rest (both halves).
"""
from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS, ENEM_GRID, booklet_sets, layout
from mcqa_toolkit.enem.cases import read_cases
from mcqa_toolkit.enem.errata import errata
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.irt.ability import ability_eap

STARTS = ([0, 0, -2], [np.log(0.8), -0.3, -5], [0.5, 1, -1.5], [1, 2, -2], [np.log(0.3), 12, -2])


def unrounded(abc, cases, k, d):
    """k * theta + d of each (responses, booklet, free item index) with the free item's (a, b, c) = abc."""
    out = []
    for u, bk, j in cases:
        a, b, c, scored = bk.a.copy(), bk.b.copy(), bk.c.copy(), bk.scored.copy()
        a[j], b[j], c[j], scored[j] = *abc, True
        est = ability_eap(u[scored][None, :], a[scored], b[scored], c[scored], 1.0, *ENEM_GRID)
        out.append(k * est.theta[0] + d)
    return np.array(out)


def fit(cases, official, k, d):
    def loss(x):
        if abs(x[2]) > 30:
            return 1e9
        abc = (np.exp(x[0]), x[1], min(0.999, 1 / (1 + np.exp(-x[2]))))
        return np.mean((unrounded(abc, cases, k, d) - official) ** 2)
    best = min((minimize(loss, x0, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 3000})
                for x0 in STARTS), key=lambda r: r.fun)
    return np.exp(best.x[0]), best.x[1], 1 / (1 + np.exp(-best.x[2]))


def exact(abc, cases, official, k, d):
    err = np.abs(np.round(unrounded(abc, cases, k, d), 1) - official)
    return int((err < 0.05).sum()), float(err.max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    inep = ap.parse_args().shared / "reference" / "enem_inep"
    all_cases = read_cases(inep / "inep_cases_dev.json")
    warnings.simplefilter("ignore")
    for e in errata():
        for u in e.unpublished:
            items = read_itens_prova(inep / f"ITENS_PROVA_{e.year}.csv")
            sub = all_cases[(all_cases["year"] == e.year) & (all_cases["area"] == e.area)]
            k, d = ENEM_CONSTANTS[e.area]
            cases = []
            for r in sub.itertuples():
                rows = items[(items["CO_PROVA"] == r.CO_PROVA) & (items["SG_AREA"] == e.area)]
                bk = booklet_sets(rows, e.area)[0]
                order = rows.sort_values("CO_POSICAO")["CO_ITEM"].to_numpy()
                src = layout(bk, len(r.answers), None)
                chars = np.frombuffer(r.answers.encode("ascii"), dtype=np.uint8)
                free = int(np.flatnonzero(order == u["co_item"])[0])
                cases.append(((chars[src] == bk.key).astype(np.uint8), bk, free))
            official = sub["NU_NOTA"].to_numpy()
            shipped = (u["a"], u["b"], u["c"])
            print(f"{e.id} item {u['co_item']} ({len(cases)} cases): shipped {shipped} -> exact, max error "
                  f"{exact(shipped, cases, official, k, d)}; refit on all {np.round(fit(cases, official, k, d), 4)}")
            half = np.arange(len(cases)) % 2
            for fold in (0, 1):
                train, test = np.flatnonzero(half == fold), np.flatnonzero(half != fold)
                abc = fit([cases[i] for i in train], official[train], k, d)
                print(f"  fitted on half {fold}: {np.round(abc, 4)} -> held-out exact, max error "
                      f"{exact(abc, [cases[i] for i in test], official[test], k, d)} of {len(test)}")


if __name__ == "__main__":
    main()
