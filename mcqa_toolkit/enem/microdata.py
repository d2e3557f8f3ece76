"""Every candidate of INEP's MICRODADOS_ENEM_<year>.csv scored officially (`enem.official`), streamed in bounded
memory: `iter_microdata` chunk by chunk, `score_microdata` one area at once. Rows that cannot be scored are errors
naming the file, row and column (strict) or counted problems (validation).
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit.enem import reproducibility
from mcqa_toolkit.enem.booklet import (
    ENEM_CONSTANTS,
    Booklet,
    KeyMismatch,
    blank_scores_zero,
    booklet_sets,
    check_area,
    choose_sets,
    layout,
    score_chars,
    valid_rows,
)
from mcqa_toolkit.enem.itens_prova import read_itens_prova, year_in_name
from mcqa_toolkit.enem.official import items_year
from mcqa_toolkit.items import DatasetError

_COLUMNS = ["CO_PROVA", "TP_LINGUA", "theta", "psd", "score", "NU_NOTA", "n_correct", "n_scored", "item_set",
            "item_set_rule", "inep_validation", "inep_share_exact"]
_SCORE_COLUMNS = ["area", *_COLUMNS]
PROBLEM_COLUMNS = ["area", "CO_PROVA", "problem", "detail", "n_rows", "first_row"]


class MicrodataChunk(NamedTuple):
    """One chunk of a microdata file: rows read, scores (score_microdata's columns + area), problems."""

    n_rows: int
    scores: pd.DataFrame
    problems: pd.DataFrame

def score_microdata(microdata_csv: str | Path, item_params_csv: str | Path, area: str,
                    chunksize: int = 200_000, item_set: int | Mapping[int, int] | None = None,
                    progress: bool = False) -> pd.DataFrame:
    """Score every present candidate of INEP's MICRODADOS_ENEM_<year>.csv for one area, streaming.

    Reads only the area's columns (';', latin-1) in chunks; skips candidates with TP_PRESENCA_<area>
    != 1. Returns one row per scored candidate (per item set when undetermined), indexed by the 0-based
    data row of the file: CO_PROVA, TP_LINGUA, theta, psd, score (ours), NU_NOTA (official), n_correct,
    n_scored, item_set, item_set_rule, inep_validation, inep_share_exact (see `enem.official`; one
    warning per call for booklets whose INEP scores we do not reproduce). Bad input (a booklet absent from
    item_params_csv, a TX_GABARITO_<area> that agrees with no item set, a malformed answer string) raises
    DatasetError naming the file, the 1-based data row and the column.
    The whole result is held in memory; `iter_microdata` gives it chunk by chunk.
    """
    frames = [c.scores for c in iter_microdata(microdata_csv, item_params_csv, [area], chunksize, item_set,
                                               strict=True, progress=progress) if len(c.scores)]
    if not frames:
        return pd.DataFrame(columns=_COLUMNS)
    df = pd.concat(frames).sort_index(kind="mergesort")[_COLUMNS]
    df.index.name = "row"
    return df


def iter_microdata(microdata_csv: str | Path, item_params_csv: str | Path, areas: list[str] | None = None,
                   chunksize: int = 200_000, item_set: int | Mapping[int, int] | None = None, strict: bool = True,
                   progress: bool = False, errata: bool | str | Path = True) -> Iterator[MicrodataChunk]:
    """Stream a microdata file: per chunk, rows read, scores and problems for every area in `areas` (default:
    every area whose columns the file has). scores: the `score_microdata` columns plus `area`; problems (only
    with strict=False, else DatasetError naming the file, data row and column): rows that could not be
    scored, per area, booklet and kind (PROBLEM_COLUMNS: problem in "bad booklet code", "absent from item
    file", "item sets do not split", "empty answer string", "answer string length", "key mismatch", "invalid
    answer characters"). errata=False: the item file as INEP published it; a path: that errata table instead of
    the shipped one (see `enem.errata`).
    Memory is bounded by `chunksize`; progress=True shows a tqdm bar over the file's bytes. When the stream
    ends, one warning names the booklets scored whose INEP scores we do not reproduce (or not validated), and one
    the items scored with estimated parameters (EnemEstimatedParamsWarning).
    """
    if int(chunksize) < 1:
        raise ValueError(f"chunksize = {chunksize}: must be >= 1")
    try:
        header = pd.read_csv(microdata_csv, sep=";", encoding="latin-1", nrows=0).columns
    except pd.errors.EmptyDataError:
        raise DatasetError(microdata_csv, "-", None, "empty file") from None
    except pd.errors.ParserError as e:
        raise DatasetError(microdata_csv, "header", None, f"malformed CSV: {_one_line(e)}") from None
    if areas is None:
        areas = [a for a in ENEM_CONSTANTS if f"TX_RESPOSTAS_{a}" in header]
        if not areas:
            raise DatasetError(microdata_csv, "header", "TX_RESPOSTAS_<area>",
                               "no such column; is this an ENEM microdata file?")
    areas = [check_area(a) for a in areas]
    needed = [f"{col}_{a}" for a in areas for col in ("TX_RESPOSTAS", "TX_GABARITO", "CO_PROVA", "NU_NOTA",
                                                      "TP_PRESENCA")] + (["TP_LINGUA"] if "LC" in areas else [])
    missing = [col for col in needed if col not in header]
    if missing:
        raise DatasetError(microdata_csv, "header", missing[0], f"missing column(s) {missing}")
    year = None if year_in_name(item_params_csv) else year_in_name(microdata_csv)   # the item file's name wins
    scorer = ChunkScorer(read_itens_prova(item_params_csv, errata=errata, year=year), item_set, strict,
                          microdata_csv, item_params_csv)
    size = Path(microdata_csv).stat().st_size
    # object (Python str) columns parse and join faster than Arrow strings; `with` closes on errors too
    with open(microdata_csv, encoding="latin-1", newline="") as fh, \
            tqdm(total=size, unit="B", unit_scale=True, desc=f"scoring {Path(microdata_csv).name}",
                 disable=not progress) as bar, \
            pd.read_csv(fh, sep=";", usecols=needed, dtype=object, keep_default_na=False, index_col=False,
                        chunksize=int(chunksize)) as reader:  # index_col=False: rows numbered 0.. whatever the cells
        while True:
            try:
                chunk = next(reader)
            except StopIteration:
                break
            except pd.errors.ParserError as e:  # e.g. a row with more cells than the header
                line = re.search(r"line (\d+)", str(e))
                raise DatasetError(microdata_csv, int(line.group(1)) - 1 if line else "-", None,
                                   f"malformed CSV: {_one_line(e)}") from None
            scores, problems = [], []
            for area in areas:
                s, p = scorer.area(chunk, area)
                scores += s
                problems += p
            yield MicrodataChunk(len(chunk), pd.concat(scores) if scores else pd.DataFrame(columns=_SCORE_COLUMNS),
                                 pd.DataFrame(problems, columns=PROBLEM_COLUMNS))
            bar.update(fh.buffer.tell() - bar.n)  # type: ignore[attr-defined]  # typeshed: _WrappedBuffer lacks tell
    reproducibility.warn(scorer.agreements.values(), stacklevel=2)
    reproducibility.warn_estimated(scorer.estimated, stacklevel=2)


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


class _Problem(Exception):
    """Rows of one group that cannot be scored: a kind (see iter_microdata), a message "row N: ...", the
    0-based data row N and the column at fault (in the item file when `in_items`)."""

    def __init__(self, kind: str, message: str, row: int, field: str, in_items: bool = False):
        super().__init__(message)
        self.kind, self.row, self.field, self.in_items = kind, row, field, in_items


class ChunkScorer:
    """Scores the chunks of one microdata file, caching each booklet's item sets across chunks."""

    def __init__(self, items: pd.DataFrame, item_set: int | Mapping[int, int] | None, strict: bool,
                 path: str | Path = "", items_path: str | Path = ""):
        self.by_area = {a: items[items["SG_AREA"] == a] for a in ENEM_CONSTANTS}
        self.item_set, self.strict, self.path, self.items_path = item_set, strict, path, items_path
        self.year = items_year(items)
        self.blank_zero = {a: blank_scores_zero(rows, self.year, a) for a, rows in self.by_area.items()}
        self.sets: dict[tuple[str, str], list[Booklet] | tuple] = {}
        self.agreements: dict[tuple[str, int], reproducibility.Agreement] = {}   # every booklet scored
        self.estimated: set[tuple[int | None, str, int]] = set()                # items scored with estimates

    def _error(self, err: _Problem) -> DatasetError:
        """strict=True: the problem as a DatasetError naming the file, the 1-based data row and the column."""
        if err.in_items:
            return DatasetError(self.items_path, "-", err.field, str(err))
        message = re.sub(r"^row \d+: ", "", str(err))
        return DatasetError(self.path, err.row + 1, err.field, message)

    def area(self, chunk: pd.DataFrame, area: str) -> tuple[list[pd.DataFrame], list[dict]]:
        """One area of a chunk, scored per (booklet, language, string length, key) group, never per row."""
        cols = {f"TX_RESPOSTAS_{area}": "answers", f"TX_GABARITO_{area}": "key", f"CO_PROVA_{area}": "booklet",
                f"NU_NOTA_{area}": "NU_NOTA", f"TP_PRESENCA_{area}": "present"}
        sub = chunk[list(cols)].rename(columns=cols)
        present = _equals(sub["present"], "1")
        if not present.any():
            return [], []
        sub = sub[present]
        # the foreign language only changes the layout of LC strings; codes, language and key are stripped
        # per group (below), not per row: string methods over millions of rows are the slow part
        lang = chunk.loc[sub.index, "TP_LINGUA"] if area == "LC" else ""
        sub = sub.assign(lingua=lang, length=sub["answers"].str.len())
        frames, problems = [], []
        groups = sub.groupby(["booklet", "lingua", "length", "key"], sort=False).indices
        for (co, lang, length, key), idx in groups.items():
            group = sub.iloc[idx]
            try:
                f, p = self._group(group, area, co, lang.strip(), int(length), key.strip())
            except _Problem as err:
                if self.strict:
                    raise self._error(err) from None
                f, p = [], [_problem(area, co, err.kind, str(err), group.index, err.field)]
            frames += f
            problems += p
        return frames, problems

    def _group(self, group: pd.DataFrame, area: str, co: str, lang: str, length: int,
               key: str) -> tuple[list[pd.DataFrame], list[dict]]:
        row = group.index[0]
        sets = self._sets(area, co, row)
        lingua = int(lang) if lang in ("0", "1") else None
        answers = f"TX_RESPOSTAS_{area}"
        if length == 0:
            raise _Problem("empty answer string", f"row {row}: present candidate with an empty {area} answer string",
                           row, answers)
        try:
            src = layout(sets[0], length, lingua)
        except ValueError as err:                # name the first row of the group in the message
            raise _Problem("answer string length", f"row {row}: {err}", row, answers) from None
        forced = self.item_set.get(sets[0].co_prova) if isinstance(self.item_set, Mapping) else self.item_set
        try:
            chosen, rule = choose_sets(sets, key, lingua, forced, area)
        except KeyMismatch as err:
            raise _Problem("key mismatch", f"row {row}: {err}", row, f"TX_GABARITO_{area}") from None
        chars = np.frombuffer("".join(group["answers"]).encode("latin-1"), dtype=np.uint8).reshape(len(group), length)
        problems = []
        ok = valid_rows(chars, src)              # drop (and count) rows with marks other than A-E . *
        if not ok.all():
            bad = group.index[~ok]
            message = f"row {bad[0]}: {area} answer string with a character other than A-E, '.' or '*'"
            if self.strict:
                raise _Problem("invalid answer characters", message, int(bad[0]), answers)
            problems.append(_problem(area, co, "invalid answer characters", message, bad, answers))
            group, chars = group[ok], chars[ok]
        nota = pd.to_numeric(group["NU_NOTA"], errors="coerce")
        if nota.isna().any():                    # a decimal comma, or blanks around the number
            nota = nota.fillna(pd.to_numeric(group["NU_NOTA"][nota.isna()].str.strip().str.replace(",", "."),
                                             errors="coerce"))
        found = self.agreements.setdefault((area, sets[0].co_prova),
                                           reproducibility.agreement(self.year, area, sets[0].co_prova))
        frames = [pd.DataFrame({"area": area, "CO_PROVA": bk.co_prova,
                                "TP_LINGUA": pd.array([lingua] * len(group), "Int64"),
                                **score_chars(chars, bk, src, area, group.index.to_numpy(), self.blank_zero[area]),
                                "NU_NOTA": nota, "item_set": bk.item_set, "item_set_rule": rule,
                                "inep_validation": found.status, "inep_share_exact": found.share_exact},
                               index=group.index)
                  for bk in chosen if len(group)]
        self.estimated |= {(self.year, area, i) for bk in chosen for i in bk.estimated} if len(group) else set()
        return frames, problems

    def _sets(self, area: str, co: str, row: int) -> list[Booklet]:
        """The booklet's item sets, or the _Problem that makes its rows unusable (cached either way)."""
        if (area, co) not in self.sets:
            self.sets[area, co] = self._load_sets(area, co, row)
        entry = self.sets[area, co]
        if isinstance(entry, tuple):
            kind, message, in_items = entry
            raise _Problem(kind, message, row, "CO_POSICAO" if in_items else f"CO_PROVA_{area}", in_items)
        return entry

    def _load_sets(self, area: str, co: str, row: int) -> list[Booklet] | tuple[str, str, bool]:
        try:
            code = int(co)
        except ValueError:
            return "bad booklet code", f"row {row}: CO_PROVA_{area} = {co!r} is not a booklet code", False
        rows = self.by_area[area][self.by_area[area]["CO_PROVA"] == code]
        if rows.empty:
            return ("absent from item file",
                    f"row {row}: booklet CO_PROVA_{area} = {code} is not in item_params_csv for {area}", False)
        try:
            return booklet_sets(rows, area)
        except ValueError as err:
            return "item sets do not split", f"row {row}: {err}", True


def _equals(values: pd.Series, flag: str) -> pd.Series:
    """values == flag, ignoring surrounding blanks (stripping only the few values that are not bare)."""
    out = values == flag
    odd = ~(out | values.isin(("0", "", "2")))
    if odd.any():
        out[odd] = values[odd].str.strip() == flag
    return out


def _problem(area: str, co: str, kind: str, detail: str, rows: pd.Index, field: str) -> dict:
    """One problem of a group (PROBLEM_COLUMNS; `rows` and `field`, the column at fault, for case lists, which
    name each case's record)."""
    return {"area": area, "CO_PROVA": co, "problem": kind, "detail": detail, "n_rows": len(rows),
            "first_row": int(rows[0]), "rows": rows, "field": field}
