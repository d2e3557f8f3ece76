"""A model among the real candidates: the official scores of everyone who sat an ENEM exam, read from INEP's
microdata in bounded memory, the percentile of any score among them, and the models' scores on INEP's scale.

`candidate_scores(microdata, area, co_prova=None)` streams MICRODADOS_ENEM_<year>.csv (';', latin-1) in chunks,
reading only NU_NOTA_<area>, CO_PROVA_<area> and TP_PRESENCA_<area>, and keeps the candidates present at the
area's exam (TP_PRESENCA = 1) with a score, of the given booklet(s) when `co_prova` is set (None: every
booklet of the area; they share INEP's scale). It keeps counts per distinct score, not the scores: INEP
publishes NU_NOTA with one decimal, so an area holds at most ~10,000 distinct values however many millions
sat it, and every percentile is exact (the figure's histogram is binned from the same counts).
`CandidateScores.percentile(score, kind)` gives scipy.stats.percentileofscore's four kinds ("mean", the default:
the share below plus half the share equal; "rank", "weak" = at or below, "strict" = below), in percent.
`percentile(score, microdata, area, co_prova)` is the one-call form.

A model's official score is INEP's scale, round(k theta + d, 1) with the area's constants (ENEM_CONSTANTS), of
its EAP theta on INEP's grid (`measure.model_abilities` on the booklet's items with INEP's parameters);
`place_among_candidates` averages it over a system's shuffles and places the mean (and the shuffles' range).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS, check_area
from mcqa_toolkit.items import DatasetError, ItemSet

KINDS = ("mean", "rank", "weak", "strict")


@dataclass(frozen=True)
class CandidateScores:
    """The present candidates' official scores of one area (and booklets) as counts per distinct score:
    values (sorted) and counts; n_rows: data rows read; source: the file."""

    area: str
    co_prova: tuple[int, ...] | None
    values: np.ndarray
    counts: np.ndarray
    n_rows: int
    source: str = ""

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def label(self) -> str:
        booklets = "every booklet" if self.co_prova is None else "booklet " + ", ".join(map(str, self.co_prova))
        return f"{self.area}, {booklets}"

    def percentile(self, score: ArrayLike, kind: str = "mean") -> float | np.ndarray:
        """Percentile (0-100) of each score among the candidates, as scipy.stats.percentileofscore(all scores,
        score, kind) computes it; NaN for a NaN score or without candidates."""
        if kind not in KINDS:
            raise ValueError(f"kind = {kind!r}: expected one of {KINDS}")
        s = np.asarray(score, dtype=float)
        cum = np.concatenate([[0], np.cumsum(self.counts)])
        left = cum[np.searchsorted(self.values, s, side="left")]
        right = cum[np.searchsorted(self.values, s, side="right")]
        n = self.n
        with np.errstate(invalid="ignore", divide="ignore"):
            pct = {"mean": (left + right) * 50.0, "rank": (left + right + (left < right)) * 50.0,
                   "weak": right * 100.0, "strict": left * 100.0}[kind] / (n if n else np.nan)
        pct = np.where(np.isnan(s), np.nan, pct)
        return float(pct) if pct.ndim == 0 else pct

    def quantile(self, q: ArrayLike) -> float | np.ndarray:
        """The smallest score with at least a share q of the candidates at or below it (inverted CDF)."""
        cum = np.cumsum(self.counts) / max(self.n, 1)
        idx = np.searchsorted(cum, np.asarray(q, dtype=float) - 1e-12, side="left").clip(0, len(self.values) - 1)
        out = self.values[idx] if len(self.values) else np.full(np.shape(q), np.nan)
        return float(out) if np.ndim(out) == 0 else out

    def histogram(self, width: float = 10.0) -> pd.DataFrame:
        """Fixed bins of `width` points (aligned on multiples of it): area, exam (the label), score_low,
        score_high, n, share (of the candidates), and the candidates' n_candidates and median (for the figure)."""
        if width <= 0:
            raise ValueError(f"width = {width}: must be > 0")
        if not self.n:
            return pd.DataFrame(columns=["area", "exam", "score_low", "score_high", "n", "share", "n_candidates",
                                         "median"])
        first = np.floor(self.values[0] / width)
        edges = (np.arange(first, np.floor(self.values[-1] / width) + 2) * width)
        n = np.bincount(np.floor(self.values / width - first).astype(int), self.counts, len(edges) - 1)
        return pd.DataFrame({"area": self.area, "exam": self.label, "score_low": edges[:-1], "score_high": edges[1:],
                             "n": n.astype(np.int64), "share": n / self.n, "n_candidates": self.n,
                             "median": self.quantile(0.5)})

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"score": self.values, "n": self.counts})

    def describe(self) -> str:
        if not self.n:
            return f"no present candidate with a score in {self.source} ({self.label})"
        mean = float(self.values @ self.counts / self.n)
        return (f"{self.n:,} present candidates of {self.label} in {Path(self.source).name} ({self.n_rows:,} rows): "
                f"mean {mean:.1f}, median {self.quantile(0.5):.1f}, range {self.values[0]:.1f}-{self.values[-1]:.1f}")


def _booklets(co_prova: int | Iterable[int] | None) -> tuple[int, ...] | None:
    if co_prova is None:
        return None
    if isinstance(co_prova, Iterable) and not isinstance(co_prova, (str, np.ndarray)):
        return tuple(int(c) for c in co_prova)   # a list, tuple, set, generator or Series of booklet codes
    codes = np.asarray(co_prova)                 # a number (int, numpy integer, numeric string) or an array
    return (int(codes),) if codes.ndim == 0 else tuple(int(c) for c in codes)


def candidate_scores(microdata: str | Path, area: str, co_prova: int | Iterable[int] | None = None,
                     chunksize: int = 200_000) -> CandidateScores:
    """The present candidates' scores of `area` (of booklet(s) `co_prova`), streamed (see the module docstring).
    A missing column or a score that is not a number raises DatasetError naming the file, row and column."""
    area = check_area(area)
    booklets = _booklets(co_prova)
    if int(chunksize) < 1:
        raise ValueError(f"chunksize = {chunksize}: must be >= 1")
    cols = [f"NU_NOTA_{area}", f"CO_PROVA_{area}", f"TP_PRESENCA_{area}"]
    try:
        header = pd.read_csv(microdata, sep=";", encoding="latin-1", nrows=0).columns
    except pd.errors.EmptyDataError:
        raise DatasetError(microdata, "-", None, "empty file") from None
    missing = [c for c in cols if c not in header]
    if missing:
        raise DatasetError(microdata, "header", missing[0], f"missing column(s) {missing}; is this INEP's microdata?")
    totals, rows = pd.Series(dtype=np.int64), 0
    with pd.read_csv(microdata, sep=";", encoding="latin-1", usecols=cols, dtype=str, keep_default_na=False,
                     index_col=False, chunksize=int(chunksize)) as reader:
        for chunk in reader:
            keep = chunk[cols[2]].str.strip() == "1"
            if booklets is not None:
                keep &= pd.to_numeric(chunk[cols[1]], errors="coerce").isin(booklets)
            raw = chunk.loc[keep, cols[0]].str.strip()
            raw = raw[raw != ""]
            score = pd.to_numeric(raw, errors="coerce")
            if score.isna().any():
                bad = score.index[score.isna()][0]
                raise DatasetError(microdata, int(bad) + 1, cols[0], f"{raw[bad]!r} is not a score")
            totals = totals.add(score.value_counts(), fill_value=0)
            rows += len(chunk)
    totals = totals.sort_index()
    return CandidateScores(area, booklets, totals.index.to_numpy(float), totals.to_numpy(np.int64), rows,
                           str(microdata))


@dataclass(frozen=True)
class CandidatePercentile:
    """score (as given), percentile (same shape) among `candidates`, and the candidates' distribution."""

    score: ArrayLike
    percentile: float | np.ndarray
    candidates: CandidateScores


def percentile(score: ArrayLike, microdata: str | Path, area: str, co_prova: int | Iterable[int] | None = None,
               kind: str = "mean", chunksize: int = 200_000) -> CandidatePercentile:
    """The percentile of `score` (a number or an array) among the present candidates of `area` (of booklet(s)
    `co_prova`) in INEP's microdata, streamed in bounded memory, with their score distribution."""
    cands = candidate_scores(microdata, area, co_prova, chunksize)
    return CandidatePercentile(score, cands.percentile(score, kind), cands)


def official_scale(theta: ArrayLike, area: str) -> np.ndarray:
    """INEP's official score of EAP thetas: round(k theta + d, 1) with the area's ENEM_CONSTANTS."""
    k, d = ENEM_CONSTANTS[check_area(area)]
    return np.round(k * np.asarray(theta, dtype=float) + d, 1)


def items_area(items: ItemSet) -> str | None:
    """The ENEM area of the items (`meta["area"]`, set by the ENEM loader), None unless they all share one."""
    areas = {it.meta.get("area") for it in items}
    return areas.pop() if len(areas) == 1 and None not in areas else None


def place_among_candidates(abilities: pd.DataFrame, candidates: CandidateScores,
                           by: Sequence[str] = ("model", "strategy", "language"), kind: str = "mean") -> pd.DataFrame:
    """Per system (`by`) of `measure.model_abilities` output (one row per shuffle): n_persons, enem_score (the
    mean of the shuffles' official scores), score_min, score_max, percentile of the mean among the candidates,
    percentile_min, percentile_max (of the lowest and highest shuffle), n_candidates, exam."""
    by = list(by)
    missing = [c for c in [*by, "theta"] if c not in abilities.columns]
    if missing:
        raise ValueError(f"abilities lack column(s) {missing}")
    scored = abilities.dropna(subset=["theta"]).assign(score=lambda f: official_scale(f["theta"], candidates.area))
    out = scored.groupby(by, sort=True)["score"].agg(n_persons="size", enem_score="mean", score_min="min",
                                                     score_max="max").reset_index()
    for col, src in (("percentile", "enem_score"), ("percentile_min", "score_min"), ("percentile_max", "score_max")):
        out[col] = candidates.percentile(out[src].to_numpy(float), kind)
    return out.assign(n_candidates=candidates.n, exam=candidates.label)
