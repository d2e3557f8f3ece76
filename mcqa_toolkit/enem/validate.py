"""`mcqa validate-enem`: score every candidate of an INEP microdata file and compare with INEP's NU_NOTA.

A researcher who puts LLM thetas next to human ones needs to know the human scores are INEP's. This streams
MICRODADOS_ENEM_<year>.csv with `enem.iter_microdata` (bounded memory whatever the file size; a progress bar
over its bytes), keeps only running agreement counts per booklet (`enem.agreement`), and writes into
`out_dir`: enem_validation_<year>.csv and .parquet (year x area x booklet x item set: shares equal at 0.1,
within 1 and 2 points, max error, and one row per booklet/problem whose rows could not be used),
enem_validation_<year>_areas.csv (per area) and the figure enem_validation_<year>.png/.pdf. Rows that
cannot be scored never stop the run; they are counted and shown.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mcqa_toolkit.enem.scoring import iter_microdata
from mcqa_toolkit.enem.agreement import (add_counts, add_problems, agreement_counts, area_summary,
                                              problem_counts, validation_table)


@dataclass(frozen=True)
class EnemValidation:
    """The validation of one microdata file: the booklet table, the per-area summary, and what was written."""

    table: pd.DataFrame
    summary: pd.DataFrame
    year: int | None
    n_rows: int
    seconds: float
    files: tuple[Path, ...]

    def text(self) -> str:
        """The printed report: per-area summary, the booklet table, the files written."""
        pct = {c: "{:.1%}".format for c in ("share_exact", "share_within_1", "share_within_2")}
        num = {"max_abs_error": "{:.1f}".format, "mean_abs_error": "{:.2f}".format}
        shown = self.table.drop(columns=["detail"])
        lines = [f"ENEM {self.year or ''} score validation: {self.n_rows:,} microdata rows in {self.seconds:.1f} s "
                 f"({self.n_rows / max(self.seconds, 1e-9):,.0f} rows/s)", "",
                 self.summary.to_string(index=False, formatters={**pct, **num}, na_rep="-"), "",
                 shown.to_string(index=False, formatters={**pct, **num}, na_rep="-")]
        problems = self.table[self.table["item_set_rule"] == ""]
        if len(problems):
            lines += ["", "rows that could not be used (first message per booklet and problem):"]
            lines += [f"  {r.area} {r.CO_PROVA}: {r.detail}" for r in problems.itertuples()]
        lines += ["", "written: " + ", ".join(str(f) for f in self.files)]
        return "\n".join(lines)


def validate_enem(item_params_csv: str | Path, microdata_csv: str | Path, out_dir: str | Path = "enem_validation",
                  areas: list[str] | None = None, chunksize: int = 100_000, progress: bool = True) -> EnemValidation:
    """Score every present candidate of `microdata_csv` with `item_params_csv` and tabulate the agreement
    with NU_NOTA per year x area x booklet (see the module docstring); bad files raise ValueError /
    FileNotFoundError naming the file."""
    for f in (item_params_csv, microdata_csv):
        if not Path(f).is_file():
            raise FileNotFoundError(f"{f}: no such file")
    year = _year(microdata_csv) or _year(item_params_csv)
    counts = problems = None
    n_rows, t0 = 0, time.perf_counter()
    for chunk in iter_microdata(microdata_csv, item_params_csv, areas, chunksize, strict=False, progress=progress):
        n_rows += chunk.n_rows
        counts = add_counts(counts, agreement_counts(chunk.scores))
        if len(chunk.problems):
            problems = add_problems(problems, problem_counts(chunk.problems))
    seconds = time.perf_counter() - t0
    table = validation_table(counts, problems, year)
    summary = area_summary(table)
    return EnemValidation(table, summary, year, n_rows, seconds, _write(table, summary, out_dir, year))


def _year(path: str | Path) -> int | None:
    """The year in a file name such as MICRODADOS_ENEM_2023.csv (None when there is none)."""
    m = re.search(r"(?<!\d)((?:19|20)\d\d)(?!\d)", Path(path).name)
    return int(m[1]) if m else None


def _write(table: pd.DataFrame, summary: pd.DataFrame, out_dir: str | Path, year: int | None) -> tuple[Path, ...]:
    from mcqa_toolkit.report import plots           # matplotlib only once there is something to draw

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"enem_validation_{year}" if year else "enem_validation"
    files = [out / f"{stem}.csv", out / f"{stem}.parquet", out / f"{stem}_areas.csv"]
    table.to_csv(files[0], index=False)
    table.to_parquet(files[1], index=False)
    summary.to_csv(files[2], index=False)
    if len(table):
        files += plots.save(plots.score_agreement(table), out, stem)
    return tuple(files)
