"""Official ENEM scoring of answer strings, reproducing INEP's NU_NOTA to 0.1: `score_answers`, `EnemScore`
(every candidate of a microdata file: `enem.microdata`).

INEP's method (tests/fixtures/irt_reference.json -> enem.method): 3PL with D = 1 and the published
NU_PARAM_A/B/C; EAP over 40 equally spaced points on [-4, 4] with N(0, 1) weights normalised over the
grid; score = round(k * theta + d, 1) with per-area constants. Items are the booklet's ITENS_PROVA rows
sorted by CO_POSICAO (LC: by TP_LINGUA, then CO_POSICAO, common items last) and paired with the answer
string by position; annulled items (IN_ITEM_ABAN = 1) leave the likelihood; '.' (blank) and '*'
(double mark) are wrong. LC answer strings of 45 characters (2020+) start with the 5 answers of the
chosen foreign language (TP_LINGUA 0 = English, 1 = Spanish) and the other language's items are not
administered; 50-character strings (up to 2019) hold both blocks, '9' marking the language not taken.
A booklet with no answer at all scores 0 (theta and psd are still those of the all-wrong pattern), except where
INEP gave it the all-wrong pattern's score (the errata's blank rule: 2013; `enem.booklet.blank_scores_zero`).

Estimated parameters. Rows whose (a, b, c) were estimated from candidates because INEP never published them
(column PARAMS_ESTIMATED, from an errata table) are used, and a score that uses one warns once per call naming
the items (`EnemEstimatedParamsWarning`).

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

from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from mcqa_toolkit.enem import reproducibility
from mcqa_toolkit.enem.booklet import (
    blank_scores_zero,
    booklet_sets,
    check_area,
    choose_sets,
    infer_lingua,
    layout,
    score_chars,
)

__all__ = ["EnemScore", "score_answers", "items_year"]


@dataclass(frozen=True)
class EnemScore:
    """One candidate's result: EAP theta and psd, official-scale score, correct and scored item counts, the
    booklet's item set the answers were scored with (1 for codes with one set) and how it was chosen
    (`enem.booklet.RULES`). alternatives: when nothing told a booklet's item sets apart (item_set_rule "undetermined"),
    the score under each other set (EnemScores), else (). inep_validation / inep_share_exact: whether INEP's
    scores are reproduced for this exam and the measured share of exact scores (`enem.reproducibility`)."""

    theta: float
    psd: float
    score: float
    n_correct: int
    n_scored: int
    item_set: int = 1
    item_set_rule: str = "single"
    alternatives: tuple[EnemScore, ...] = ()
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
    (EnemReproducibilityWarning) when INEP's scores are not reproduced for this exam, or not validated, and
    once (EnemEstimatedParamsWarning) when a scored item's parameters are estimates.
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
    blank_zero = blank_scores_zero(booklet_items, year, area)
    scores = [_score(score_chars(chars, bk, src, area, np.array([0]), blank_zero), bk.item_set, rule, found)
              for bk in chosen]
    reproducibility.warn([found], stacklevel=3)
    reproducibility.warn_estimated([(year, area, i) for bk in chosen for i in bk.estimated], stacklevel=3)
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
