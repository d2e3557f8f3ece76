"""What the development set says about the ENEM booklet codes whose candidates no item set reproduces (issue 41):
2013's adapted booklets 187-190 (two item sets under one code) and 2021's Libras booklet LC 897:

    python studies/enem_two_set_booklets.py [--shared ../shared]

2013 187-190. Each position lists two rows; the script splits them by what other booklets list: the row whose
item the same area's second-application booklet (183-186) lists at that position is set "second", the other
is set "first" (the first application's items; where the adapted booklet replaces one, the replacement). It
prints how each set compares with the regular booklets (positions, keys, parameters), then the development
candidates' errors (score - NU_NOTA) under each set, with the first set's items laid out in each regular
booklet's order (the candidates' answer strings follow some booklet's order, which the file does not say), under
the same-colour regular booklet's own rows, and what the errata search finds there with every candidate of the
area (so that a correction must not break the regular booklets' candidates).
2021 LC 897: the candidates' errors under 897's rows as published and under every other LC booklet's rows.
Prints only; the numbers are in docs/enem.md.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _enem_dev import development_set

from mcqa_toolkit.enem.errata.greedy import K, discover_area
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.official import score_answers

ADAPTED_2013 = {187: ("CH", 184, (167, 168, 169, 170)), 188: ("CN", 183, (171, 172, 173, 174)),
                189: ("LC", 185, (175, 176, 177, 178)), 190: ("MT", 186, (179, 180, 181, 182))}
SAME_COLOUR = {187: 169, 188: 173, 189: 176, 190: 180}     # the regular booklet of the adapted one's colour
P = ["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]


def _where(rows: pd.DataFrame) -> dict:
    """(position, language) -> CO_ITEM of one booklet's rows."""
    return dict(zip(zip(rows["CO_POSICAO"], rows["TP_LINGUA"].fillna(-1), strict=True), rows["CO_ITEM"], strict=True))


def split_by_second_application(items: pd.DataFrame, co: int, second: int,
                                regular: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(first, second) item sets of adapted booklet `co`: at each position, the row whose item booklet `second`
    lists there is the second set's, the other row the first set's (where neither is, both rows are adapted
    replacements: the one not replacing `regular`'s item there is the second set's)."""
    rows = items[items["CO_PROVA"] == co]
    there, first = _where(items[items["CO_PROVA"] == second]), _where(items[items["CO_PROVA"] == regular])
    is_second = pd.Series(False, index=rows.index)
    for (p, lang), g in rows.groupby([rows["CO_POSICAO"], rows["TP_LINGUA"].fillna(-1)]):
        listed = g["CO_ITEM"] == there.get((p, lang))
        if not listed.any():        # both rows are adapted replacements: the other is the first booklet's item
            listed = g["CO_ITEM"] != first.get((p, lang))
        is_second[g.index] = listed.to_numpy()
    return rows[~is_second], rows[is_second]


def _said(c) -> str:
    """One correction of the search in a few words."""
    where = f" in booklets {list(c.booklets)}" if c.booklets else ""
    if c.kind == "zip":
        return f"zip of booklet {c.reference_booklet} (not scored {list(c.not_scored)})"
    return {"blank": "the blank-sheet rule", "annul": f"annul {c.co_item}{where}",
            "key": f"key of {c.co_item} -> {c.key}{where}"}.get(c.kind, f"{c.kind} {c.co_item}")


def errors(cases: pd.DataFrame, rows: pd.DataFrame, area: str, year: int) -> list[float]:
    out = []
    for c in cases.itertuples():
        lang = None if pd.isna(c.TP_LINGUA) else int(c.TP_LINGUA)
        out.append(round(score_answers(c.answers, rows, area, foreign_language=lang, year=year).score - c.NU_NOTA, 1))
    return out


def show(label: str, errs: list[float]) -> str:
    e = np.abs(errs)
    return f"    {label}: exact {int((e < 0.05).sum())} of {len(e)}, mean |error| {e.mean():.1f}, errors {errs}"


def adapted_2013(inep: Path, cases: pd.DataFrame) -> None:
    items = read_itens_prova(inep / "ITENS_PROVA_2013.csv", year=2013)
    for co, (area, second, regular) in ADAPTED_2013.items():
        first, sec = split_by_second_application(items, co, second, regular[0])
        ref = items[items["CO_PROVA"] == second].set_index("CO_ITEM")
        s = sec.set_index("CO_ITEM")
        listed = s.index.intersection(ref.index)
        same = (s.loc[listed, "CO_POSICAO"] == ref.loc[listed, "CO_POSICAO"]).all() and np.allclose(
            s.loc[listed, P], ref.loc[listed, P], equal_nan=True) and (
            s.loc[listed, "TX_GABARITO"] == ref.loc[listed, "TX_GABARITO"]).all()
        print(f"{co} {area}: {len(items[items['CO_PROVA'] == co])} rows = {len(first)} first-application rows + "
              f"{len(sec)} second-set rows, {len(listed)} of them booklet {second}'s (same positions, keys and "
              f"(a, b, c): {same}; the others adapted replacements)")
        f = first.set_index("CO_ITEM")
        for b in regular:
            r = items[items["CO_PROVA"] == b].set_index("CO_ITEM")
            common = f.index.intersection(r.index)
            print(f"  vs {b} ({r['TX_COR'].iloc[0]}): {len(common)} items in common, same position "
                  f"{(f.loc[common, 'CO_POSICAO'] == r.loc[common, 'CO_POSICAO']).mean():.0%}; keys and (a, b, c) "
                  f"equal {bool(np.allclose(f.loc[common, P], r.loc[common, P], equal_nan=True))}")
        mine = cases[(cases["year"] == 2013) & (cases["CO_PROVA"] == co)]
        print(show(f"second set, in booklet {second}'s order", errors(mine, sec, area, 2013)))
        by_position = _where(items[items["CO_PROVA"] == regular[0]])     # the first set's positions are its
        for b in regular:
            pos = dict(zip(items.loc[items["CO_PROVA"] == b, "CO_ITEM"],
                           items.loc[items["CO_PROVA"] == b, "CO_POSICAO"], strict=True))
            laid = first.assign(CO_POSICAO=[pos[by_position[(p, lang)]] for p, lang in
                                            zip(first["CO_POSICAO"], first["TP_LINGUA"].fillna(-1), strict=True)])
            print(show(f"first set, in booklet {b}'s order", errors(mine, laid, area, 2013)))
        regular_rows = items[items["CO_PROVA"] == SAME_COLOUR[co]]        # no adapted replacement at all
        print(show(f"booklet {SAME_COLOUR[co]}'s own rows", errors(mine, regular_rows, area, 2013)))
        raw = read_itens_prova(inep / "ITENS_PROVA_2013.csv", year=2013, errata=False)
        rows = pd.concat([raw[(raw["SG_AREA"] == area) & (raw["CO_PROVA"] != co)],
                          raw[raw["CO_PROVA"] == SAME_COLOUR[co]].assign(CO_PROVA=co)], ignore_index=True)
        everyone = cases[(cases["year"] == 2013) & (cases["area"] == area)]
        found = discover_area(rows, everyone, 2013, area)          # every candidate: a fix may break none
        mine_fixed = [i for f in found.found for i in f.fixed if i in set(mine["case"])]
        print(f"    errata search on those rows with all {len(everyone)} candidates of 2013 {area} (K = {K}): "
              f"{'; '.join(_said(c) for f in found.found for c in f.corrections) or 'nothing'}; "
              f"{len(mine_fixed)} of booklet {co}'s candidates made exact")


def libras_2021(inep: Path, cases: pd.DataFrame) -> None:
    items = read_itens_prova(inep / "ITENS_PROVA_2021.csv", year=2021)
    lc = items[items["SG_AREA"] == "LC"]
    rows = lc[lc["CO_PROVA"] == 897]
    print(f"2021 LC 897: {len(rows)} rows, {int(rows.duplicated(['CO_POSICAO', 'TP_LINGUA']).sum())} positions "
          "listed twice (one item set)")
    mine = cases[(cases["year"] == 2021) & (cases["CO_PROVA"] == 897)]
    print(show("897 as published (errata applied)", errors(mine, rows, "LC", 2021)))
    best = []
    for b in sorted(set(lc["CO_PROVA"]) - {897}):
        e = np.abs(errors(mine, lc[lc["CO_PROVA"] == b].assign(CO_PROVA=897), "LC", 2021))
        best.append((e.mean(), int((e < 0.05).sum()), b))
    mean, exact, b = min(best)
    print(f"    every other LC booklet's rows instead: best {b}, exact {exact} of {len(mine)}, mean |error| {mean:.1f}")


def main() -> None:
    inep, cases = development_set(__doc__.split("\n")[0])
    adapted_2013(inep, cases)
    libras_2021(inep, cases)


if __name__ == "__main__":
    main()
