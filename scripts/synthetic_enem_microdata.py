"""Write a synthetic INEP-format ENEM microdata file and its ITENS_PROVA, to measure `mcqa validate-enem`
at scale without INEP's multi-GB files (SYNTHETIC candidates on the golden booklets' real parameters; see
`mcqa_toolkit.enem.simulate`). Writes in chunks, so memory stays small whatever --rows is.

    python scripts/synthetic_enem_microdata.py /tmp/enem_synth --rows 1000000
    /usr/bin/time -v mcqa validate-enem /tmp/enem_synth/ITENS_PROVA_2023.csv /tmp/enem_synth/MICRODADOS_ENEM_2023.csv

Booklets: CN 1221, CH 1055, LC 1201 / 1065 and MT 1211 from tests/fixtures/enem/ITENS_PROVA_golden.csv, plus two
constructed codes with two item sets (MT 9187 from 1211, LC 9691 from 1201); 2% of NU_NOTA perturbed and 0.1% of
present rows made unusable per problem kind. Do not commit the output.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.simulate import itens_prova_layout, simulate_microdata, two_set_booklet

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "enem" / "ITENS_PROVA_golden.csv"
BOOKLETS = {"CN": [1221], "CH": [1055], "LC": [1201, 1065, 9691], "MT": [1211, 9187]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=2023)
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    golden = read_itens_prova(GOLDEN)
    items = pd.concat([golden, two_set_booklet(golden[golden["CO_PROVA"] == 1211], 9187),
                       two_set_booklet(golden[golden["CO_PROVA"] == 1201], 9691)], ignore_index=True)
    itens_prova_layout(items).to_csv(args.out_dir / "ITENS_PROVA_2023.csv", sep=";", index=False, encoding="latin-1")
    rng = np.random.default_rng(args.seed)
    path = args.out_dir / "MICRODADOS_ENEM_2023.csv"
    truths = []
    for start in range(0, args.rows, args.chunk):
        md, truth = simulate_microdata(items, BOOKLETS, min(args.chunk, args.rows - start), rng, first_row=start)
        md.to_csv(path, sep=";", index=False, encoding="latin-1", mode="w" if start == 0 else "a", header=start == 0)
        truths.append(truth)
    pd.concat(truths).to_parquet(args.out_dir / "truth.parquet", index=False)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB, {args.rows:,} rows) and the truth per row/area")


if __name__ == "__main__":
    main()
