"""`mcqa validate-enem`: score real candidates and compare with INEP's official NU_NOTA.

A researcher who puts LLM thetas next to human ones needs to know the human scores are INEP's. Two inputs:

- INEP's MICRODADOS_ENEM_<year>.csv with its ITENS_PROVA_<year>.csv: streamed with `enem.iter_microdata`
  (bounded memory whatever the file size; a progress bar over its bytes), keeping only running agreement counts
  per booklet (`enem.agreement`);
- a case list (.json / .jsonl: area, booklet, language, answers, official score per candidate, any years; see
  `enem.cases`) with a directory of ITENS_PROVA_<year>.csv files (or one file for one year).

Either way it writes into `out_dir`: enem_validation_<stem>.csv and .parquet (year x area x booklet x item set:
shares equal at 0.1, within 1 and 2 points, max error, and one row per booklet/problem whose rows could not be
used), enem_validation_<stem>_areas.csv (per year x area), enem_reproducibility_<stem>.csv (per year x area and
booklet: cases, exact, status; the format of the table shipped with the package, `enem.reproducibility`), the
per-case scores for a case list (enem_validation_<stem>_cases.csv). For microdata, `mcqa validate-enem` also draws
the figure enem_validation_<stem>.png/.pdf (report.plots.score_agreement).
Rows that cannot be scored never stop the run; they are counted and shown. errata=False scores the item files
as INEP published them (`enem.errata`), to measure what the corrections change; a path applies that errata file
instead of the package's. discover=OUT.json first searches the errata the official scores imply
(`enem.errata.discover`, from the case list or a bounded sample of the microdata), writes them there and validates
with them (for a case list the agreement is then in-sample: the corrections were found on those candidates).
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mcqa_toolkit.enem.agreement import (
    add_counts,
    add_problems,
    agreement_counts,
    area_summary,
    problem_counts,
    reproducibility_rows,
    validation_table,
)
from mcqa_toolkit.enem.cases import is_case_list, left_out_rows, read_case_list, score_cases
from mcqa_toolkit.enem.errata.discover import Discovery, discover_errata
from mcqa_toolkit.enem.errata.format import load_errata
from mcqa_toolkit.enem.itens_prova import year_in_name
from mcqa_toolkit.enem.microdata import iter_microdata
from mcqa_toolkit.enem.reproducibility import EnemReproducibilityWarning

SHOWN = 20          # unscored cases printed by name; the per-case file has every one


@dataclass(frozen=True)
class EnemValidation:
    """One validation: the booklet table, the per-area summary, the reproducibility rows, the per-case scores
    (case lists only), and what was written."""

    table: pd.DataFrame
    summary: pd.DataFrame
    reproducibility: pd.DataFrame
    cases: pd.DataFrame | None
    year: int | None
    n_rows: int
    seconds: float
    files: tuple[Path, ...]
    stem: str = "enem_validation"   # the file names' stem (the CLI's figure takes it too)
    discovery: Discovery | None = None

    def text(self) -> str:
        """The printed report: per-area summary, the booklet table, the files written."""
        pct = {c: "{:.1%}".format for c in ("share_exact", "share_within_1", "share_within_2")}
        num = {"max_abs_error": "{:.1f}".format, "mean_abs_error": "{:.2f}".format}
        shown = self.table.drop(columns=["detail"])
        what = f"ENEM {self.year or ''} score validation" if self.cases is None else "ENEM case-list validation"
        n_cases = int(self.reproducibility.loc[self.reproducibility["booklet"] == "all", "n_cases"].sum())
        n_exact = int(self.reproducibility.loc[self.reproducibility["booklet"] == "all", "n_exact"].sum())
        unit = "microdata rows" if self.cases is None else "cases"
        lines = [f"{what}: {self.n_rows:,} {unit} in {self.seconds:.1f} s "
                 f"({self.n_rows / max(self.seconds, 1e-9):,.0f} {unit.split()[-1]}/s); "
                 f"{n_exact:,} of {n_cases:,} scores equal NU_NOTA at 0.1"
                 + (f" ({n_exact / n_cases:.1%})" if n_cases else ""), "",
                 self.summary.to_string(index=False, formatters={**pct, **num}, na_rep="-"), "",
                 shown.to_string(index=False, formatters={**pct, **num}, na_rep="-")]
        problems = self.table[self.table["item_set_rule"] == ""]
        unscored = self.cases[self.cases["problem"] != ""] if self.cases is not None else problems.iloc[:0]
        if len(unscored):               # a case list: every case, by record and field (the first SHOWN)
            lines += ["", f"cases that could not be scored ({len(unscored)}; all in the per-case file):"]
            lines += [f"  {p}" for p in unscored["problem"].head(SHOWN)]
            lines += [f"  ... and {len(unscored) - SHOWN} more"] if len(unscored) > SHOWN else []
        elif len(problems):
            lines += ["", "rows that could not be used (first message per booklet and problem):"]
            lines += [f"  {r.area} {r.CO_PROVA}: {r.detail}" for r in problems.itertuples()]
        lines += ["", "written: " + ", ".join(str(f) for f in self.files)]
        if self.discovery is not None:
            lines = [self.discovery.text(), "", "validation with the discovered errata:", *lines]
        return "\n".join(lines)


def validate_enem(item_params: str | Path, data: str | Path, out_dir: str | Path = "enem_validation",
                  areas: list[str] | None = None, chunksize: int = 100_000, progress: bool = True,
                  errata: bool | str | Path = True, discover: str | Path | None = None,
                  strict: bool = False) -> EnemValidation:
    """Score every candidate of `data` (INEP microdata CSV, or a .json/.jsonl case list) with `item_params`
    (ITENS_PROVA csv; for a case list also a directory of ITENS_PROVA_<year>.csv) and tabulate the agreement
    with NU_NOTA (see the module docstring); bad files raise ValueError / FileNotFoundError naming the file. A
    case that cannot be read or scored is a row of the table naming its record and field (strict=True: a
    DatasetError instead).
    The validation itself is the measurement: it does not warn about exams we do not reproduce."""
    for f in (item_params, data) + ((errata,) if isinstance(errata, (str, Path)) else ()):
        if not Path(f).exists():
            raise FileNotFoundError(f"{f}: no such file")
    if isinstance(errata, (str, Path)):
        load_errata(errata)                      # a bad errata file: one error naming it, before any scoring
    found = None
    discovered: tuple[Path, ...] = ()             # the errata file written by discover=
    if discover is not None:
        found = discover_errata(item_params, data, areas, chunksize=chunksize, progress=progress)
        errata = found.write(discover)
        discovered = (errata,)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EnemReproducibilityWarning)
        if is_case_list(data):
            got = read_case_list(data, strict)
            cases = got.cases[got.cases["area"].isin(areas)] if areas else got.cases
            scored = score_cases(cases, item_params, errata=errata, strict=strict)
            if got.left_out:
                scored = pd.concat([scored, left_out_rows(got.left_out)]).sort_index(kind="stable")
            table, year, n_rows = _case_table(scored), None, len(cases)
        else:
            if Path(item_params).is_dir():
                raise ValueError(f"{item_params}: a microdata file needs one ITENS_PROVA file, not a directory")
            scored = None
            table, year, n_rows = _microdata_table(item_params, data, areas, chunksize, progress, errata)
    seconds = time.perf_counter() - t0
    summary = area_summary(table)
    repro = reproducibility_rows(table)
    stem = (f"enem_validation_{year}" if year else "enem_validation") if scored is None else \
        f"enem_validation_{Path(data).stem}"
    files = _write(table, summary, repro, scored, out_dir, stem)
    return EnemValidation(table, summary, repro, scored, year, n_rows, seconds, files + discovered,
                          stem, found)


def _microdata_table(item_params, microdata, areas, chunksize, progress,
                     errata) -> tuple[pd.DataFrame, int | None, int]:
    year = year_in_name(microdata) or year_in_name(item_params)
    counts = problems = None
    n_rows = 0
    for chunk in iter_microdata(microdata, item_params, areas, chunksize, strict=False, progress=progress,
                                errata=errata):
        n_rows += chunk.n_rows
        counts = add_counts(counts, agreement_counts(chunk.scores))
        if len(chunk.problems):
            problems = add_problems(problems, problem_counts(chunk.problems))
    return validation_table(counts, problems, year), year, n_rows


def _case_table(scored: pd.DataFrame) -> pd.DataFrame:
    """The validation table of scored cases, year by year (set 1 and its alternatives count as set 1 only)."""
    tables = []
    for year, sub in scored.groupby("year", sort=True, dropna=False):   # a case left out may have no year
        ok = sub[sub["problem"] == ""]
        counts = agreement_counts(ok.assign(item_set=ok["item_set"].astype(int))) if len(ok) else None
        bad = sub[sub["problem"] != ""]
        problems = None
        if len(bad):
            problems = problem_counts(pd.DataFrame({"area": bad["area"].fillna("-"),   # a case left out unread
                                                    "CO_PROVA": ["-" if pd.isna(c) else str(int(c))
                                                                 for c in bad["CO_PROVA"]],
                                                    "problem": bad["problem"].str.split(":").str[0],
                                                    "detail": bad["problem"], "n_rows": 1,
                                                    "first_row": bad.index.to_numpy()}))
        tables.append(validation_table(counts, problems, None if pd.isna(year) else int(year)))
    return pd.concat(tables, ignore_index=True)


def _write(table: pd.DataFrame, summary: pd.DataFrame, repro: pd.DataFrame, cases: pd.DataFrame | None,
           out_dir: str | Path, stem: str) -> tuple[Path, ...]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / f"{stem}.csv", out / f"{stem}.parquet", out / f"{stem}_areas.csv",
             out / f"{stem.replace('enem_validation', 'enem_reproducibility')}.csv"]
    table.to_csv(files[0], index=False)
    table.to_parquet(files[1], index=False)
    summary.to_csv(files[2], index=False)
    repro.to_csv(files[3], index=False)
    if cases is not None:
        files.append(out / f"{stem}_cases.csv")
        cases.to_csv(files[-1])
    return tuple(files)
