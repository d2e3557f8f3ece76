"""A bounded sample of INEP's MICRODADOS_ENEM_<year>.csv as a case list, for `enem.errata.discover`: the errata search
needs candidates with their official score, not millions of them.

The file is streamed in chunks (only the areas' columns are read). Per area, booklet and foreign language, the
`per_group` present candidates with an answer string and a NU_NOTA whose pseudo-random priority (a hash of the
row number and `seed`) is smallest are kept, and apart from them up to `blank_per_area` all-blank answer sheets
per area (they are rare, and only they tell the blank-sheet rule). Each chunk is merged into the kept rows and cut
back to those bounds, so memory depends on `chunksize` and the number of booklets, not on the file.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS
from mcqa_toolkit.enem.cases import CASE_COLUMNS
from mcqa_toolkit.items import DatasetError

PER_GROUP = 300
BLANK_PER_AREA = 50
_KEYS = ["area", "CO_PROVA", "TP_LINGUA"]


def priority(rows: np.ndarray, seed: int) -> np.ndarray:
    """A pseudo-random uint64 per row number (splitmix64 of row + seed): the same row gets the same priority
    whatever the chunking, so the sample does not depend on `chunksize`."""
    x = (rows.astype(np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)) * np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def sample_microdata(microdata_csv: str | Path, year: int | None, areas: list[str] | None = None,
                     per_group: int = PER_GROUP, blank_per_area: int = BLANK_PER_AREA, chunksize: int = 100_000,
                     seed: int = 0, progress: bool = False) -> pd.DataFrame:
    """The sample as a case list (`enem.cases.CASE_COLUMNS`; case = the 0-based data row), ordered by area,
    booklet and row. Raises DatasetError naming the file for a missing column or a malformed row."""
    path = Path(microdata_csv)
    try:
        header = pd.read_csv(path, sep=";", encoding="latin-1", nrows=0).columns
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as e:
        raise DatasetError(path, "header", None, f"not an INEP microdata file: {' '.join(str(e).split())}") from None
    areas = areas or [a for a in ENEM_CONSTANTS if f"TX_RESPOSTAS_{a}" in header]
    needed = [f"{c}_{a}" for a in areas for c in ("TX_RESPOSTAS", "TX_GABARITO", "CO_PROVA", "NU_NOTA",
                                                  "TP_PRESENCA")] + (["TP_LINGUA"] if "LC" in areas else [])
    missing = [c for c in needed if c not in header]
    if not areas or missing:
        raise DatasetError(path, "header", (missing or ["TX_RESPOSTAS_<area>"])[0], "missing column(s)")
    kept = pd.DataFrame(columns=[*CASE_COLUMNS, "priority", "blank"])
    start = 0
    with open(path, encoding="latin-1", newline="") as fh, \
            tqdm(total=path.stat().st_size, unit="B", unit_scale=True, desc=f"sampling {path.name}",
                 disable=not progress) as bar, \
            pd.read_csv(fh, sep=";", usecols=needed, dtype=object, keep_default_na=False, index_col=False,
                        chunksize=int(chunksize)) as reader:
        while True:
            try:
                chunk = next(reader)
            except StopIteration:
                break
            except pd.errors.ParserError as e:
                raise DatasetError(path, "-", None, f"malformed CSV: {' '.join(str(e).split())}") from None
            rows = np.arange(start, start + len(chunk))
            start += len(chunk)
            parts = [p for p in [kept] + [_candidates(chunk, rows, a, year, seed) for a in areas] if len(p)]
            if parts:
                kept = _bound(pd.concat(parts, ignore_index=True), per_group, blank_per_area)
            bar.update(fh.buffer.tell() - bar.n)  # type: ignore[attr-defined]  # typeshed: _WrappedBuffer lacks tell
    kept = kept.assign(_row=kept["case"].astype(np.int64)).sort_values(["area", "CO_PROVA", "_row"])
    return kept[CASE_COLUMNS].reset_index(drop=True)


def _candidates(chunk: pd.DataFrame, rows: np.ndarray, area: str, year: int | None, seed: int) -> pd.DataFrame:
    """The chunk's present candidates of `area` with an answer string, a booklet code and a NU_NOTA."""
    answers = chunk[f"TX_RESPOSTAS_{area}"]
    nota = pd.to_numeric(chunk[f"NU_NOTA_{area}"].str.strip().str.replace(",", ".", regex=False), errors="coerce")
    co = pd.to_numeric(chunk[f"CO_PROVA_{area}"], errors="coerce")
    ok = (chunk[f"TP_PRESENCA_{area}"].str.strip() == "1") & (answers.str.len() > 0) & nota.notna() & co.notna()
    if not ok.any():
        return pd.DataFrame()
    lang = pd.to_numeric(chunk.loc[ok, "TP_LINGUA"], errors="coerce").astype("Int64") if area == "LC" else \
        pd.array([pd.NA] * int(ok.sum()), dtype="Int64")
    text = answers[ok].str.strip().str.upper()
    return pd.DataFrame({"case": rows[ok.to_numpy()].astype(str), "year": year, "area": area,
                         "CO_PROVA": co[ok].astype(np.int64).to_numpy(), "TP_LINGUA": lang, "answers": text.to_numpy(),
                         "NU_NOTA": nota[ok].to_numpy(),
                         "key": chunk.loc[ok, f"TX_GABARITO_{area}"].str.strip().to_numpy(),
                         "priority": priority(rows[ok.to_numpy()], seed),
                         "blank": text.str.fullmatch(r"[.9]+").to_numpy(dtype=bool)})


def _bound(df: pd.DataFrame, per_group: int, blank_per_area: int) -> pd.DataFrame:
    """Keep the per_group lowest priorities per (area, booklet, language) among sheets with a mark, and the
    blank_per_area lowest among all-blank sheets per area."""
    df = df.sort_values("priority", kind="stable")
    blank = df["blank"].to_numpy(dtype=bool)
    marked = df[~blank]
    keys = [marked["area"], marked["CO_PROVA"], marked["TP_LINGUA"].fillna(-1)]     # no language: -1, not NA
    marked = marked[marked.groupby(keys, sort=False, dropna=False).cumcount() < per_group]
    blank = df[blank]
    blank = blank[blank.groupby("area", sort=False).cumcount() < blank_per_area]
    return pd.concat([marked, blank], ignore_index=True)
