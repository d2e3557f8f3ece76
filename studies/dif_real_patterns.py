"""DIF between English and Portuguese on the ENEM paper's released 2021 response patterns (BU-UFMG-Research/irt-llms),
kept as raw counts (results/studies/dif_2021.json) from which docs/dif.md's table is rendered (scripts/render_docs.py):

    python studies/dif_real_patterns.py [--shared ../shared]      # about a minute; writes the JSON

Per model x area: persons are the model's 30 seeds per language (focal en, reference pt), matched on the total
score; Mantel-Haenszel (alpha 0.05) gives the items with no information, the ETS A/B/C classes and the items
flagged after Benjamini-Hochberg; the IRT test (INEP's 2021 parameters of the booklet, errata applied) its
flagged items; the total scores' range per language says whether the groups overlap. Per area, the five models
pooled (strata crossed with the model, `within`) give the C items and flagged items, and the permutation test
within model (999 relabellings, seed 0) its flagged items. The JSON names the input by file name and sha256.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
RAW = REPO / "results" / "studies" / "dif_2021.json"
RELEASE = "irt_llms_response_patterns_2021.csv"
NO_INFORMATION = "no DIF information"


def params_2021(itens_prova: Path, records: pd.DataFrame) -> pd.DataFrame:
    """a, b, c by parallel_id for the records' items, from INEP's 2021 item file (booklet and position; at LC 1-5
    the Spanish items, which the release answers)."""
    from mcqa_toolkit.enem.itens_prova import read_itens_prova

    items = read_itens_prova(itens_prova)
    items = items[items["TP_LINGUA"].isna() | (items["TP_LINGUA"] == 1)].drop_duplicates(["CO_PROVA", "CO_POSICAO"])
    by = items.set_index(["CO_PROVA", "CO_POSICAO"])[["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]]
    keys = records.drop_duplicates("parallel_id")
    where = pd.MultiIndex.from_arrays([keys["exam"].str.rsplit("_", n=1).str[1].astype(int),
                                       keys["parallel_id"].str.extract(r"_q(\d+)")[0].astype(int)])
    found = by.reindex(where).set_axis(["a", "b", "c"], axis=1)
    return found.set_index(keys["parallel_id"].to_numpy()).rename_axis("parallel_id").dropna()


def one_model(records: pd.DataFrame, params: pd.DataFrame) -> dict[str, Any]:
    from mcqa_toolkit import measure

    p = measure.dif_persons(records, focal="en", reference="pt")
    mh = measure.mantel_haenszel(p.responses, p.group, "en", "pt").table
    usable = [c for c in p.responses.columns if c in params.index]
    irt = measure.irt_dif(p.responses[usable], p.group, "en", "pt", params.loc[usable]).table
    totals = p.responses.sum(axis=1)
    score = {lang: [int(totals[p.group == lang].min()), int(totals[p.group == lang].max())] for lang in ("pt", "en")}
    classes = mh["ets_class"].value_counts()
    return {"items": len(mh), "no_information": int(mh["note"].str.contains(NO_INFORMATION).sum()),
            **{k: int(classes.get(k, 0)) for k in "ABC"}, "flagged_bh": int(mh["flag_bh"].sum()),
            "irt_items": len(irt), "irt_flagged_bh": int(irt["flag_bh"].sum()), "total_score_range": score}


def pooled(records: pd.DataFrame) -> dict[str, Any]:
    from mcqa_toolkit import measure

    p = measure.dif_persons(records, focal="en", reference="pt")
    mh = measure.mantel_haenszel(p.responses, p.group, "en", "pt", within=p.block).table
    perm = measure.mh_permutation(p.responses, p.group, "en", "pt", within=p.block, n_permutations=999, seed=0).table
    return {"persons": len(p.responses), "items": len(mh), "C": int((mh["ets_class"] == "C").sum()),
            "flagged_bh": int(mh["flag_bh"].sum()), "permutation_flagged_bh": int(perm["flag_bh"].sum())}


def main() -> None:
    from mcqa_toolkit.interop.irt_llms import read_response_patterns

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    shared = ap.parse_args().shared
    release = shared / "formats" / RELEASE
    warnings.simplefilter("ignore")
    records = read_response_patterns(release).records
    params = params_2021(shared / "reference" / "enem_inep" / "ITENS_PROVA_2021.csv", records)
    records = records.assign(area=records["exam"].str.split("_").str[2])
    rows, pools = [], []
    for (model, area), g in records.groupby(["model", "area"], sort=True):
        rows.append({"model": model, "area": area, **one_model(g, params)})
        print(rows[-1], flush=True)
    for area, g in records.groupby("area", sort=True):
        pools.append({"area": area, "models": int(g["model"].nunique()), **pooled(g)})
        print(pools[-1], flush=True)
    RAW.write_text(json.dumps({"date": datetime.date.today().isoformat(), "command":
                               "python studies/dif_real_patterns.py", "input": RELEASE,
                               "input_sha256": hashlib.sha256(release.read_bytes()).hexdigest(),
                               "focal": "en", "reference": "pt", "alpha": 0.05, "per_model": rows,
                               "pooled": pools}, indent=1) + "\n")
    print(f"wrote {RAW.relative_to(REPO)}: run scripts/render_docs.py to update docs/dif.md")


if __name__ == "__main__":
    main()
