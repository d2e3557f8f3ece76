"""Write a synthetic INEP-format ENEM microdata file and its ITENS_PROVA, to measure `mcqa validate-enem`
at scale without INEP's multi-GB files (SYNTHETIC candidates on the golden booklets' real parameters; see
`mcqa_toolkit.enem.simulate`). Writes in chunks, so memory stays small whatever --rows is.

    python scripts/synthetic_enem_microdata.py /tmp/enem_synth --rows 1000000
    /usr/bin/time -v mcqa validate-enem /tmp/enem_synth/ITENS_PROVA_2023.csv /tmp/enem_synth/MICRODADOS_ENEM_2023.csv

Booklets: CN 1221, CH 1055, LC 1201 / 1065 and MT 1211 from tests/fixtures/enem/ITENS_PROVA_golden.csv, plus two
constructed codes with two item sets (MT 9187 from 1211, LC 9691 from 1201); 2% of NU_NOTA perturbed and 0.1% of
present rows made unusable per problem kind. Do not commit the output.

--plant-errata: the candidates answer the true items, and ITENS_PROVA_2023.csv is written with three of INEP's
errors planted (`enem.simulate`): a zip in MT booklet 1211 (its 21st scored item not scored, not flagged), a wrong
key in CN booklet 1221 (11th scored item) and an item of CH booklet 1055 scored but published flagged without
parameters (31st); planted.json says which, for `mcqa validate-enem ... --discover-errata` to find them.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.simulate import (
    itens_prova_layout,
    publish_key,
    publish_unpublished,
    publish_zip,
    simulate_microdata,
    two_set_booklet,
)

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "enem" / "ITENS_PROVA_golden.csv"
BOOKLETS = {"CN": [1221], "CH": [1055], "LC": [1201, 1065, 9691], "MT": [1211, 9187]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=2023)
    ap.add_argument("--plant-errata", action="store_true", help="publish the item file with three planted errors")
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    golden = read_itens_prova(GOLDEN)
    items = pd.concat([golden, two_set_booklet(golden[golden["CO_PROVA"] == 1211], 9187),
                       two_set_booklet(golden[golden["CO_PROVA"] == 1201], 9691)], ignore_index=True)
    published = items
    if args.plant_errata:
        items, published, planted = plant(items)
        (args.out_dir / "planted.json").write_text(json.dumps(planted, indent=1))
    itens_prova_layout(published).to_csv(args.out_dir / "ITENS_PROVA_2023.csv", sep=";", index=False,
                                         encoding="latin-1")
    rng = np.random.default_rng(args.seed)
    path = args.out_dir / "MICRODADOS_ENEM_2023.csv"
    truths = []
    for start in range(0, args.rows, args.chunk):
        md, truth = simulate_microdata(items, BOOKLETS, min(args.chunk, args.rows - start), rng, first_row=start)
        md.to_csv(path, sep=";", index=False, encoding="latin-1", mode="w" if start == 0 else "a", header=start == 0)
        truths.append(truth)
    pd.concat(truths).to_parquet(args.out_dir / "truth.parquet", index=False)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB, {args.rows:,} rows) and the truth per row/area")


def scored(items: pd.DataFrame, co_prova: int, k: int) -> pd.Series:
    """The k-th scored row (0-based, in position order) of a booklet."""
    rows = items[(items["CO_PROVA"] == co_prova) & (items["IN_ITEM_ABAN"] == 0)].sort_values("CO_POSICAO")
    return rows.iloc[k]


def plant(items: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(true rows, rows as published, what was planted)."""
    zip_item, key_row, hidden = int(scored(items, 1211, 20)["CO_ITEM"]), scored(items, 1221, 10), \
        int(scored(items, 1055, 30)["CO_ITEM"])
    true = items.copy()
    true.loc[true["CO_ITEM"] == zip_item, ["IN_ITEM_ABAN", "NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]] = \
        [1, float("nan"), float("nan"), float("nan")]
    wrong = "ABCDE"[("ABCDE".index(key_row["TX_GABARITO"]) + 2) % 5]
    published = publish_unpublished(publish_key(publish_zip(true, 1211, "MT", [zip_item]),
                                                int(key_row["CO_ITEM"]), wrong), hidden)
    planted = {"zip": {"area": "MT", "reference_booklet": 1211, "not_scored": [zip_item]},
               "key": {"area": "CN", "co_item": int(key_row["CO_ITEM"]), "published_key": wrong,
                       "correct_key": key_row["TX_GABARITO"]},
               "unpublished": {"area": "CH", "co_item": hidden,
                               "abc": [float(x) for x in true.loc[true["CO_ITEM"] == hidden,
                                                                  ["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]].iloc[0]]}}
    return true, published, planted


if __name__ == "__main__":
    main()
