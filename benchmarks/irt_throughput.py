"""IRT throughput: EAP + l_z on 1M patterns, the ratio against girth, and ENEM microdata scoring.

1. `ability_eap` (theta + psd) and `person_fit_lz` for 1,000,000 simulated 3PL patterns x 45 items
   (float64, ENEM-like parameters), timed end to end (target <= 3 s on 2 cores).
2. The same EAP against girth's `ability_3pl_eap` on the first 100,000 patterns, both on girth's
   default quadrature (41 Gauss-Legendre points on [-4.5, 4.5] x N(0, 1)); girth holds items x persons x
   nodes in memory, so 1M would need ~45 GB (target speed-up >= 15x). Thetas are compared too.
3. `score_microdata` on a synthetic 1M-row INEP-format MICRODADOS CSV (';', latin-1, all four areas'
   answer and key columns, ~10% absent) for booklet MT 1211 of the golden item file, in rows/s.

    python benchmarks/irt_throughput.py [--n 1000000] [--girth-n 100000] [--microdata-n 1000000]

BLAS runs one thread unless OPENBLAS_NUM_THREADS says otherwise: the grid products are skinny (45 items x
40 nodes), so a second BLAS thread gains nothing on an idle machine, while OpenBLAS's thread hand-offs
made them ~10x slower whenever another process was using a core (EAP on 1M: 0.27 s vs 3.1 s here).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS; see the docstring

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from mcqa_toolkit import enem, irt  # noqa: E402
from mcqa_toolkit.enem.itens_prova import read_itens_prova  # noqa: E402

ITEMS_CSV = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "enem" / "ITENS_PROVA_golden.csv"


def enem_like_items(rng: np.random.Generator, n_items: int = 45):
    return rng.lognormal(0.6, 0.35, n_items), rng.normal(1.2, 0.9, n_items), rng.uniform(0.08, 0.3, n_items)


def bench_eap(u: np.ndarray, a, b, c) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    est = irt.ability_eap(u, a, b, c)
    t1 = time.perf_counter()
    lz = irt.person_fit_lz(u, est.theta, a, b, c)
    t2 = time.perf_counter()
    assert np.isfinite(est.theta).all() and np.isfinite(est.psd).all() and np.isfinite(lz).all()
    return t1 - t0, t2 - t1, t2 - t0


def bench_girth(u: np.ndarray, a, b, c) -> tuple[float, float, float]:
    import girth
    from girth.utilities.utils import _get_quadrature_points
    from scipy.stats import norm

    points, weights = _get_quadrature_points(41, -4.5, 4.5)
    t0 = time.perf_counter()
    ours = irt.ability_eap(u, a, b, c, grid=points, prior=weights * norm.pdf(points))
    t_ours = time.perf_counter() - t0
    data = u.T.astype(int)                     # girth's layout: items x persons (conversion not timed)
    t0 = time.perf_counter()
    theirs = girth.ability_3pl_eap(data, b, a, c)
    t_girth = time.perf_counter() - t0
    return t_ours, t_girth, float(np.abs(ours.theta - theirs).max())


def write_microdata(path: Path, n: int, rng: np.random.Generator) -> None:
    """A MICRODADOS_ENEM-like CSV: MT answers simulated from booklet 1211's own parameters (annulled
    items, whose key may be 'X', get a random letter)."""
    items = read_itens_prova(ITEMS_CSV)
    mt = items[items["CO_PROVA"] == 1211].sort_values("CO_POSICAO")
    key = np.frombuffer("".join(mt["TX_GABARITO"]).encode(), dtype=np.uint8)
    a, b, c = (mt[col].fillna({"NU_PARAM_A": 1.0, "NU_PARAM_B": 0.0, "NU_PARAM_C": 0.2}[col]).to_numpy()
               for col in ("NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"))
    right = irt.simulate_3pl(rng.normal(size=n), a, b, c, rng).astype(bool)
    wrong = np.frombuffer(b"ABCDE", dtype=np.uint8)[rng.integers(0, 5, right.shape)]
    wrong = np.where(wrong == key, np.where(key == ord("A"), ord("B"), ord("A")), wrong)
    chars = np.where(right & np.isin(key, np.frombuffer(b"ABCDE", np.uint8)), key, wrong).astype(np.uint8)
    chars[rng.random(right.shape) < 0.02] = ord(".")
    answers = pd.Series(chars.view("S45").ravel()).str.decode("ascii")
    present = rng.random(n) > 0.1
    key_str = key.tobytes().decode()
    df = pd.DataFrame({
        "NU_INSCRICAO": np.arange(210000000000, 210000000000 + n), "NU_ANO": 2023,
        "TP_FAIXA_ETARIA": rng.integers(1, 20, n), "NO_MUNICIPIO_PROVA": "São Paulo", "SG_UF_PROVA": "SP",
        **{f"TP_PRESENCA_{ar}": present.astype(int) for ar in ("CN", "CH", "LC", "MT")},
        "CO_PROVA_MT": 1211, "NU_NOTA_MT": np.where(present, 500.0, np.nan),
        **{f"TX_RESPOSTAS_{ar}": answers.where(present, "") for ar in ("CN", "CH", "LC", "MT")},
        "TP_LINGUA": rng.integers(0, 2, n),
        **{f"TX_GABARITO_{ar}": np.where(present, key_str, "") for ar in ("CN", "CH", "LC", "MT")},
    })
    df.to_csv(path, sep=";", index=False, encoding="latin-1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--girth-n", type=int, default=100_000)
    ap.add_argument("--microdata-n", type=int, default=1_000_000)
    args = ap.parse_args()
    rng = np.random.default_rng(2024)
    a, b, c = enem_like_items(rng)
    print(f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
    u = irt.simulate_3pl(rng.normal(size=args.n), a, b, c, rng).astype(np.float64)
    t_eap, t_lz, t_total = bench_eap(u, a, b, c)
    print(f"EAP theta+psd {args.n:,} x {u.shape[1]} float64: {t_eap:.3f} s; l_z {t_lz:.3f} s; "
          f"total {t_total:.3f} s")

    t_ours, t_girth, diff = bench_girth(u[: args.girth_n], a, b, c)
    speedup = t_girth / t_ours
    print(f"girth ability_3pl_eap {args.girth_n:,}: {t_girth:.3f} s; ours {t_ours:.3f} s; "
          f"speed-up {speedup:.1f}x; max |theta diff| {diff:.2e}")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "MICRODADOS_ENEM_2023.csv"
        t0 = time.perf_counter()
        write_microdata(path, args.microdata_n, rng)
        size = path.stat().st_size / 1e6
        print(f"wrote {args.microdata_n:,}-row microdata ({size:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        out = enem.score_microdata(path, ITEMS_CSV, "MT")
        t_md = time.perf_counter() - t0
    rate = args.microdata_n / t_md
    print(f"score_microdata: {args.microdata_n:,} rows ({len(out):,} present) in {t_md:.2f} s "
          f"= {rate:,.0f} rows/s")
    print(f"RESULT eap_1m_s={t_total:.3f} speedup_vs_girth={speedup:.1f} microdata_rows_per_s={rate:.0f}")


if __name__ == "__main__":
    main()
