"""Official ENEM scoring, reproducing INEP's NU_NOTA to 0.1: `score_answers`, `score_microdata`, `iter_microdata`.

INEP's method (reference/irt_reference.json -> enem.method): 3PL with D = 1 and the published
NU_PARAM_A/B/C; EAP over 40 equally spaced points on [-4, 4] with N(0, 1) weights normalised over the
grid; score = round(k * theta + d, 1) with per-area constants. Items are the booklet's ITENS_PROVA rows
sorted by CO_POSICAO (LC: by TP_LINGUA, then CO_POSICAO, common items last) and paired with the answer
string by position; annulled items (IN_ITEM_ABAN = 1) leave the likelihood; '.' (blank) and '*'
(double mark) are wrong. LC answer strings of 45 characters (2020+) start with the 5 answers of the
chosen foreign language (TP_LINGUA 0 = English, 1 = Spanish) and the other language's items are not
administered; 50-character strings (up to 2019) hold both blocks, '9' marking the language not taken.
A booklet with no answer at all scores 0 (theta and psd are still those of the all-wrong pattern), except in
years where INEP gave it the all-wrong pattern's score (`enem.booklet.BLANK_AS_ALL_WRONG`: 2013).

Item files are read with INEP's errata applied (`enem.errata`; `read_itens_prova(path, errata=False)` for the
file as published). The year (for the blank rule and the reproducibility table) is the item rows' NU_ANO
(`read_itens_prova` takes it from the file) or `year=`.

Reproducibility. Every result says whether INEP's scores are reproduced for its exam, as measured on real
candidates (`enem.reproducibility`): EnemScore.inep_validation / inep_share_exact and the columns of the same
names in `score_microdata`; one warning per call names the exam-areas (or booklets) whose official scores we
do not reproduce, with the measured agreement and its cause, or says the exam was not validated against INEP.

Booklet codes with two item sets. Some codes list two rows per (position, language) in ITENS_PROVA (2013:
187-190; 2020 LC: 691-694): two item sets share the code; `enem.itens_prova.split_item_sets` numbers
them in file order (the k-th row of a position is set k). The set candidates took is chosen, in order:
1. the caller's `item_set` (an int, or {CO_PROVA: set} for microdata);
2. the answer key: the one set whose TX_GABARITO agrees with the candidates' key string (microdata column
   TX_GABARITO_<area>, `key=` for one string) on every scored, administered item;
3. nothing tells them apart (no key, a key laid out unlike the answers, or several sets agree):
   `score_microdata` scores those candidates under each such set, one row per set, and `score_answers`
   returns the score under set 1 with item_set_rule "undetermined" and the score under each other set in
   `EnemScore.alternatives` (so a batch over many candidates never stops).
A key that agrees with no set is an error. Results record `item_set` and `item_set_rule`: single (the code
has one set), given, key, or undetermined.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterator, Mapping, NamedTuple

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit.enem import reproducibility
from mcqa_toolkit.enem.itens_prova import read_itens_prova, year_in_name
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.enem.booklet import (ENEM_CONSTANTS, ENEM_GRID, RULES, Booklet, KeyMismatch,  # noqa: F401
                                           blank_scores_zero, booklet_sets, check_area, choose_sets, infer_lingua,
                                           layout, score_chars, valid_rows)

_COLUMNS = ["CO_PROVA", "TP_LINGUA", "theta", "psd", "score", "NU_NOTA", "n_correct", "n_scored", "item_set",
            "item_set_rule", "inep_validation", "inep_share_exact"]
_SCORE_COLUMNS = ["area", *_COLUMNS]
PROBLEM_COLUMNS = ["area", "CO_PROVA", "problem", "detail", "n_rows", "first_row"]


class MicrodataChunk(NamedTuple):
    """One chunk of a microdata file: rows read, scores (score_microdata's columns + area), problems."""

    n_rows: int
    scores: pd.DataFrame
    problems: pd.DataFrame


@dataclass(frozen=True)
class EnemScore:
    """One candidate's result: EAP theta and psd, official-scale score, correct and scored item counts, the
    booklet's item set the answers were scored with (1 for codes with one set) and how it was chosen
    (`RULES`). alternatives: when nothing told a booklet's item sets apart (item_set_rule "undetermined"), the
    score under each other set (EnemScores), else (). inep_validation / inep_share_exact: whether INEP's
    scores are reproduced for this exam and the measured share of exact scores (`enem.reproducibility`)."""

    theta: float
    psd: float
    score: float
    n_correct: int
    n_scored: int
    item_set: int = 1
    item_set_rule: str = "single"
    alternatives: tuple["EnemScore", ...] = ()
    inep_validation: str = "not validated"
    inep_share_exact: float | None = None

    def to_frame(self) -> pd.DataFrame:
        """One row per item set: this score, then its alternatives."""
        rows = [{k: v for k, v in asdict(s).items() if k != "alternatives"} for s in (self, *self.alternatives)]
        return pd.DataFrame(rows)


def score_answers(answers: str, booklet_items: pd.DataFrame, area: str, foreign_language: int | None = None,
                  item_set: int | None = None, key: str | None = None, year: int | None = None) -> EnemScore:
    """Official ENEM score of one answer string (case-insensitive) for one booklet's ITENS_PROVA rows.

    foreign_language: TP_LINGUA, 0 English or 1 Spanish; needed for 45-character LC strings, inferred
    from the '9' block of 50-character ones. item_set / key: which item set, for booklet codes with two
    (see the module docstring); a key is also checked against the chosen set. When nothing tells the sets
    apart, the result is set 1's with item_set_rule "undetermined" and the others in `alternatives`.
    year: the exam's year when booklet_items has no NU_ANO column (blank rule, reproducibility). Warns once
    (EnemReproducibilityWarning) when INEP's scores are not reproduced for this exam, or not validated.
    """
    area = check_area(area)
    if not isinstance(answers, str):
        raise ValueError(f"answers must be a str, got {type(answers).__name__}")
    year = items_year(booklet_items) if year is None else int(year)
    sets = booklet_sets(booklet_items, area)
    ans = answers.strip().upper()
    lingua = foreign_language if foreign_language is not None else infer_lingua(ans, sets[0])
    if key is not None:
        key = key.strip().upper()
        try:
            layout(sets[0], len(key), lingua)
        except ValueError as err:
            raise ValueError(f"key: {err}") from None
    chosen, rule = choose_sets(sets, key, lingua, item_set)
    src = layout(chosen[0], len(ans), lingua)
    try:
        chars = np.frombuffer(ans.encode("ascii"), dtype=np.uint8)[None, :]
    except UnicodeEncodeError:
        raise ValueError(f"answers {answers!r}: contains a non-ASCII character") from None
    found = reproducibility.agreement(year, area, chosen[0].co_prova)
    scores = [_score(score_chars(chars, bk, src, area, np.array([0]), blank_scores_zero(year)), bk.item_set, rule,
                     found) for bk in chosen]
    reproducibility.warn([found], stacklevel=3)
    return replace(scores[0], alternatives=tuple(scores[1:]))


def _score(r: dict[str, np.ndarray], item_set: int, rule: str, found: reproducibility.Agreement) -> EnemScore:
    return EnemScore(float(r["theta"][0]), float(r["psd"][0]), float(r["score"][0]), int(r["n_correct"][0]),
                     int(r["n_scored"][0]), item_set, rule, (), found.status, found.share_exact)


def items_year(items: pd.DataFrame) -> int | None:
    """The year of ITENS_PROVA rows: their NU_ANO when they hold exactly one (read_itens_prova adds it)."""
    if "NU_ANO" not in items.columns:
        return None
    years = pd.to_numeric(items["NU_ANO"], errors="coerce").dropna().unique()
    return int(years[0]) if len(years) == 1 else None


def score_microdata(microdata_csv: str | Path, item_params_csv: str | Path, area: str,
                    chunksize: int = 200_000, item_set: int | Mapping[int, int] | None = None,
                    progress: bool = False) -> pd.DataFrame:
    """Score every present candidate of INEP's MICRODADOS_ENEM_<year>.csv for one area, streaming.

    Reads only the area's columns (';', latin-1) in chunks; skips candidates with TP_PRESENCA_<area>
    != 1. Returns one row per scored candidate (per item set when undetermined), indexed by the 0-based
    data row of the file: CO_PROVA, TP_LINGUA, theta, psd, score (ours), NU_NOTA (official), n_correct,
    n_scored, item_set, item_set_rule, inep_validation, inep_share_exact (see the module docstring; one
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
                   progress: bool = False, errata: bool = True) -> Iterator[MicrodataChunk]:
    """Stream a microdata file: per chunk, rows read, scores and problems for every area in `areas` (default:
    every area whose columns the file has). scores: the `score_microdata` columns plus `area`; problems (only
    with strict=False, else DatasetError naming the file, data row and column): rows that could not be
    scored, per area, booklet and kind (PROBLEM_COLUMNS: problem in "bad booklet code", "absent from item
    file", "item sets do not split", "empty answer string", "answer string length", "key mismatch", "invalid
    answer characters"). errata=False: the item file as INEP published it (see `enem.errata`).
    Memory is bounded by `chunksize`; progress=True shows a tqdm bar over the file's bytes. When the stream
    ends, one warning names the booklets scored whose INEP scores we do not reproduce (or not validated).
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
    scorer = _ChunkScorer(read_itens_prova(item_params_csv, errata=errata, year=year), item_set, strict,
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
            bar.update(fh.buffer.tell() - bar.n)
    reproducibility.warn(scorer.agreements.values(), stacklevel=2)


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


class _Problem(Exception):
    """Rows of one group that cannot be scored: a kind (see iter_microdata), a message "row N: ...", the
    0-based data row N and the column at fault (in the item file when `in_items`)."""

    def __init__(self, kind: str, message: str, row: int, field: str, in_items: bool = False):
        super().__init__(message)
        self.kind, self.row, self.field, self.in_items = kind, row, field, in_items


class _ChunkScorer:
    """Scores the chunks of one microdata file, caching each booklet's item sets across chunks."""

    def __init__(self, items: pd.DataFrame, item_set: int | Mapping[int, int] | None, strict: bool,
                 path: str | Path = "", items_path: str | Path = ""):
        self.by_area = {a: items[items["SG_AREA"] == a] for a in ENEM_CONSTANTS}
        self.item_set, self.strict, self.path, self.items_path = item_set, strict, path, items_path
        self.year = items_year(items)
        self.blank_zero = blank_scores_zero(self.year)
        self.sets: dict[tuple[str, str], list[Booklet] | tuple] = {}
        self.agreements: dict[tuple[str, int], reproducibility.Agreement] = {}   # every booklet scored

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
                f, p = [], [_problem(area, co, err.kind, str(err), group.index)]
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
            problems.append(_problem(area, co, "invalid answer characters", message, bad))
            group, chars = group[ok], chars[ok]
        nota = pd.to_numeric(group["NU_NOTA"], errors="coerce")
        if nota.isna().any():                    # a decimal comma, or blanks around the number
            nota = nota.fillna(pd.to_numeric(group["NU_NOTA"][nota.isna()].str.strip().str.replace(",", "."),
                                             errors="coerce"))
        found = self.agreements.setdefault((area, sets[0].co_prova),
                                           reproducibility.agreement(self.year, area, sets[0].co_prova))
        frames = [pd.DataFrame({"area": area, "CO_PROVA": bk.co_prova,
                                "TP_LINGUA": pd.array([lingua] * len(group), "Int64"),
                                **score_chars(chars, bk, src, area, group.index.to_numpy(), self.blank_zero),
                                "NU_NOTA": nota, "item_set": bk.item_set, "item_set_rule": rule,
                                "inep_validation": found.status, "inep_share_exact": found.share_exact},
                               index=group.index)
                  for bk in chosen if len(group)]
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


def _problem(area: str, co: str, kind: str, detail: str, rows: pd.Index) -> dict:
    return {"area": area, "CO_PROVA": co, "problem": kind, "detail": detail, "n_rows": len(rows),
            "first_row": int(rows[0])}
