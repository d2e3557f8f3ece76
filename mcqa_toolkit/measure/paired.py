"""Paired bootstrap of the accuracy difference between two runs (or models, strategies, languages) on the same
items, beside the McNemar test of measure.compare.

Each item is one pair: its accuracy under a and under b (the mean over its shuffles, so shuffles are not
counted as independent items), d_i = acc_a,i - acc_b,i. The difference is mean(d); resampling the items with
replacement n_boot times gives its percentile interval, and the two-sided p-value of "no difference" is the
share of resampled differences at least as far from the observed one as the observed one is from 0
((1 + #{|d* - d| >= |d|}) / (n_boot + 1), the shifted paired bootstrap of Berg-Kirkpatrick et al. 2012).

`language_differences` does the same between each language and a reference language (items paired on
parallel_id), for accuracy or for the subject-averaged kappa (items resampled within their subject): the
absolute differences with intervals that the language-gap figure shows instead of a relative gap %.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit.measure.frames import finish, groups, per_item, prepare, two_conditions
from mcqa_toolkit.measure.scores import bootstrap_means

__all__ = ["paired_bootstrap", "language_differences"]


def paired_bootstrap(frame: pd.DataFrame, between: str = "run_id", a: str = "", b: str = "",
                     pair_on: str = "item_id", by: str | Sequence[str] = (), n_boot: int = 10_000,
                     level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Paired bootstrap per group of accuracy(a) - accuracy(b) over the items both answered (see the module
    docstring). between: the column telling a from b (run_id, model, strategy, language); pair_on: what
    pairs records (item_id; parallel_id for two languages). Columns: by..., a, b, n_items, n_unpaired,
    accuracy_a, accuracy_b, diff, ci_low, ci_high, p_value, n_boot."""
    if n_boot < 1 or not 0 < level < 1:
        raise ValueError(f"n_boot must be >= 1 and level in (0, 1), got {n_boot}, {level}")
    f, by = two_conditions(frame, by, (between, pair_on, "item_id", "correct", "status"), between, a, b)
    ids = f[list(dict.fromkeys([*by, between, "item_id", pair_on]))].drop_duplicates()
    items = per_item(f, [*by, between]).merge(ids, on=[*by, between, "item_id"])
    if items.duplicated([*by, between, pair_on]).any():
        raise ValueError(f"several items share one {pair_on} within a {between}: pairs are ambiguous")
    wide = items.set_index([*by, pair_on, between])["accuracy"].unstack(between).reindex(columns=[a, b])
    rows = []
    rng = np.random.default_rng(seed)
    for key, g in groups(wide.reset_index(), by):
        paired = g[[a, b]].notna().all(axis=1)
        d = (g.loc[paired, a] - g.loc[paired, b]).to_numpy(dtype=float)
        row = {**key, "a": a, "b": b, "n_items": int(d.size), "n_unpaired": int((~paired).sum()),
               "accuracy_a": float(g.loc[paired, a].mean()) if d.size else np.nan,
               "accuracy_b": float(g.loc[paired, b].mean()) if d.size else np.nan,
               "diff": float(d.mean()) if d.size else np.nan, "ci_low": np.nan, "ci_high": np.nan,
               "p_value": np.nan, "n_boot": n_boot}
        if d.size:
            draws = bootstrap_means(d[:, None], n_boot, rng)[:, 0]
            lo, hi = np.quantile(draws, [(1 - level) / 2, 1 - (1 - level) / 2])
            far = int((np.abs(draws - row["diff"]) >= abs(row["diff"]) - 1e-12).sum())
            row.update(ci_low=float(lo), ci_high=float(hi), p_value=(1 + far) / (n_boot + 1))
        rows.append(row)
    return finish(pd.DataFrame(rows))


def language_differences(frame: pd.DataFrame, reference: str = "en", score: str = "kappa",
                         by: str | Sequence[str] = ("model", "strategy"), subject: str | None = "subject",
                         n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Score in each language minus the score in `reference`, per group, on the questions asked in both
    (matched on parallel_id), with a paired item-bootstrap interval: the absolute counterpart of
    `language_gap`'s relative gap %, defined however close to 0 the reference score is.

    score "accuracy": mean over the paired items of acc_other,i - acc_ref,i (proportion correct; x100 for
    percentage points). score "kappa": the difference of the macro-averaged kappas (`scores.kappa`),
    mean over subjects of (mean acc_other - mean acc_ref) / (1 - chance) on the subject's paired items.
    Items are resampled with replacement within their subject (the same draw for both languages), as
    `scores.kappa` does, and diff > 0 means better than the reference. Columns: by..., reference, language,
    n_items (paired), n_unpaired, score_ref, score_other, diff, ci_low, ci_high, p_value (the shifted paired
    bootstrap of the module docstring; NaN with n_boot = 0), note. Scores are on the paired items only, so
    with unpaired items (few-shot examples) they can differ from `scores.kappa` of the whole run."""
    if score not in ("kappa", "accuracy"):
        raise ValueError(f"score = {score!r}: expected 'kappa' or 'accuracy'")
    if n_boot < 0 or not 0 < level < 1:
        raise ValueError(f"n_boot must be >= 0 (0: no CI) and level in (0, 1), got {n_boot}, {level}")
    strata = (subject,) if score == "kappa" and subject else ()
    needed = ("language", "parallel_id", "item_id", "correct", "status", *strata,
              *(("n_options",) if score == "kappa" else ()))
    f, by = prepare(frame, by, needed)
    if "language" in by:
        raise ValueError("'language' is what is compared; it cannot also be in `by`")
    if reference not in set(f["language"]):
        raise ValueError(f"reference language {reference!r} not in the frame; found {sorted(set(f['language']))}")
    items = per_item(f, [*by, "language", *strata])
    items = items.merge(f[[*by, "language", "item_id", "parallel_id"]].drop_duplicates(),
                        on=[*by, "language", "item_id"])
    if items.duplicated([*by, "language", "parallel_id"]).any():
        raise ValueError("several items share one parallel_id within a language: pairs are ambiguous")
    if score == "kappa":
        items = items.assign(chance=1.0 / items["n_options"])
    rows = []
    for key, g in groups(items, by):
        ref = g[g["language"] == reference].set_index("parallel_id")
        for lang in sorted(set(g["language"]) - {reference}):
            other = g[g["language"] == lang].set_index("parallel_id")
            common = ref.index.intersection(other.index)
            rows.append({**key, "reference": reference, "language": lang,
                         **_difference(ref.loc[common], other.loc[common], strata, n_boot, level, seed),
                         "n_unpaired": int(len(ref.index.symmetric_difference(other.index)))})
    cols = [*by, "reference", "language", "n_items", "n_unpaired", "score_ref", "score_other", "diff", "ci_low",
            "ci_high", "p_value", "note"]
    return finish(pd.DataFrame(rows, columns=cols))


def _kappa_scale(means: np.ndarray) -> np.ndarray:
    """(acc_ref, acc_other) -> their kappas (acc - chance) / (1 - chance) from means (..., 3) of (acc_ref,
    acc_other, chance); with chance 0 (score "accuracy") the accuracies themselves."""
    return (means[..., :2] - means[..., 2:3]) / (1 - means[..., 2:3])


def _difference(ref: pd.DataFrame, other: pd.DataFrame, strata: tuple[str, ...], n_boot: int, level: float,
                seed: int) -> dict:
    """score_ref, score_other, diff and its bootstrap interval on paired items (rows aligned)."""
    out: dict[str, Any] = {"n_items": len(ref), "score_ref": np.nan, "score_other": np.nan, "diff": np.nan,
                           "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "note": ""}
    if len(ref) == 0:
        out["note"] = "no paired item: no difference"
        return out
    with_ci = len(ref) >= 2 and n_boot > 0
    if not with_ci:
        out["note"] = "n_boot=0: no CI" if n_boot == 0 else "one paired item: no CI"
    rng = np.random.default_rng(seed)
    strata_keys = ref[strata[0]].to_numpy() if strata else np.zeros(len(ref))
    points: list[np.ndarray] = []
    draws: list[np.ndarray] = []
    for s in sorted(set(strata_keys), key=str):
        m = strata_keys == s
        chance = ref["chance"].to_numpy(float)[m] if "chance" in ref else np.zeros(m.sum())
        cols = np.column_stack([ref["accuracy"].to_numpy(float)[m], other["accuracy"].to_numpy(float)[m], chance])
        points.append(cols.mean(axis=0))
        if with_ci:
            draws.append(bootstrap_means(cols, n_boot, rng))
    point = np.mean([_kappa_scale(p) for p in points], axis=0)
    out.update(score_ref=float(point[0]), score_other=float(point[1]), diff=float(point[1] - point[0]))
    if with_ci:
        boot = np.mean([_kappa_scale(d) for d in draws], axis=0)
        d = boot[:, 1] - boot[:, 0]
        lo, hi = np.quantile(d, [(1 - level) / 2, 1 - (1 - level) / 2])
        far = int((np.abs(d - out["diff"]) >= abs(out["diff"]) - 1e-12).sum())
        out.update(ci_low=float(lo), ci_high=float(hi), p_value=(1 + far) / (n_boot + 1))
    return out
