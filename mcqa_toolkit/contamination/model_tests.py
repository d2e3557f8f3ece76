"""Model-level contamination tests: did this model see this exam? One p-value per model x exam per test.

  key_pull_test      the published key letters pull the model's choices (option shuffles): statistic S = mean over
                     items of the probability on the item's published key letter where it shows a wrong option
                     (contamination.key_pull.letter_probabilities); null distribution: S with the key letters
                     permuted among the items of the model (same number of options), which keeps the model's
                     position bias and the exam's letter counts and breaks only the item-key link. Needs nothing
                     but the exam and a shuffled run; p = (1 + #{S* >= S}) / (1 + n_perm).
  dataset_inference  a detector's item scores on the suspect exam against those on a control exam the model cannot
                     have seen (published after its data were collected), one-sided Welch t-test (Maini et al.
                     2024 test a suspect set against a held-out set of the same distribution the same way).
  person_fit_test    l_z of the model's answers under the human 3PL (mean over shuffles): an aberrant pattern
                     (hard items right, easy ones wrong) gives l_z << 0; p = Phi(mean l_z), conservative for
                     shuffles that answer alike, and a model may misfit human IRT for reasons other than
                     contamination.
Each returns one row per model (x language): ..., statistic, p_value (flag with `flag(table, alpha)`).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from mcqa_toolkit.contamination.key_pull import letter_probabilities
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.abilities import model_abilities

__all__ = ["key_pull_null", "key_pull_test", "dataset_inference", "person_fit_test", "flag"]


def key_pull_null(P: np.ndarray, keys: np.ndarray, n_options: np.ndarray, n_perm: int,
                  rng: np.random.Generator) -> np.ndarray:
    """n_perm values of the statistic with the keys permuted among items of equal `n_options` (shape (n_perm,))."""
    out = np.zeros((n_perm, len(keys)))
    for k in np.unique(n_options):
        idx = np.flatnonzero(n_options == k)
        drawn = rng.permuted(np.tile(keys[idx], (n_perm, 1)), axis=1)
        out[:, idx] = P[idx[None, :], drawn]
    return np.nanmean(out, axis=1)


def key_pull_test(records: pd.DataFrame, n_perm: int = 9999, seed: int = 0) -> pd.DataFrame:
    """Per model x language: n_items, statistic (S), null_mean (mean of S*), p_value (module docstring).
    `records` of one strategy with option shuffles (first-token or any method with option_probs)."""
    if n_perm < 1:
        raise ValueError(f"n_perm must be >= 1, got {n_perm}")
    items, P = letter_probabilities(records)
    rows = []
    for (model, language), idx in items.groupby(["model", "language"], sort=True).groups.items():
        pos = items.index.get_indexer(idx)
        keys, opts, sub = items["answer"].to_numpy(int)[pos], items["n_options"].to_numpy(int)[pos], P[pos]
        ok = np.isfinite(sub[np.arange(len(pos)), keys])
        sub, keys, opts = sub[ok], keys[ok], opts[ok]
        s = float(np.mean(sub[np.arange(len(keys)), keys])) if len(keys) else np.nan
        rng = np.random.default_rng([seed, len(keys)])
        null = key_pull_null(sub, keys, opts, n_perm, rng) if len(keys) else np.array([np.nan])
        p = (1 + int(np.sum(null >= s - 1e-12))) / (1 + n_perm) if len(keys) else np.nan
        rows.append({"model": model, "language": language, "n_items": int(len(keys)), "statistic": s,
                     "null_mean": float(np.mean(null)), "p_value": p})
    return pd.DataFrame(rows)


def dataset_inference(suspect: pd.DataFrame, control: pd.DataFrame, detector: str,
                      by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Per group (`by`, e.g. model): mean score of `detector` on the suspect exam's items minus on the control
    exam's, Welch's t (unequal variances) and its one-sided p (suspect higher). Both are long frames of
    `contamination_scores`. Columns: by..., detector, n_suspect, n_control, difference, statistic, df, p_value."""
    by = list(by)
    rows = []
    s_all = suspect[suspect["detector"] == detector]
    c_all = control[control["detector"] == detector]
    for key, s in s_all.groupby(by, sort=True):
        mask = np.logical_and.reduce([c_all[b] == v
                                      for b, v in zip(by, key if isinstance(key, tuple) else (key,), strict=True)])
        x, y = s["score"].dropna().to_numpy(float), c_all.loc[mask, "score"].dropna().to_numpy(float)
        row = {**dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)), "detector": detector,
               "n_suspect": len(x), "n_control": len(y)}
        if len(x) < 2 or len(y) < 2:
            rows.append({**row, "difference": np.nan, "statistic": np.nan, "df": np.nan, "p_value": np.nan})
            continue
        t = stats.ttest_ind(x, y, equal_var=False, alternative="greater")
        rows.append({**row, "difference": float(x.mean() - y.mean()), "statistic": float(t.statistic),
                     "df": float(t.df), "p_value": float(t.pvalue)})
    return pd.DataFrame(rows)


def person_fit_test(records: pd.DataFrame, items: ItemSet) -> pd.DataFrame:
    """Per model x language: n_shuffles, statistic (mean l_z over the shuffles), p_value = Phi(statistic)."""
    persons = model_abilities(records, items, ["model", "language", "shuffle"])
    g = persons.groupby(["model", "language"], sort=True)["lz"]
    out = pd.DataFrame({"n_shuffles": g.count(), "statistic": g.mean()}).reset_index()
    out["p_value"] = stats.norm.cdf(out["statistic"])
    return out


def flag(table: pd.DataFrame, alpha: float = 0.01) -> pd.DataFrame:
    """The table with `flagged` = p_value < alpha (a missing p is not a flag)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return table.assign(flagged=table["p_value"].lt(alpha).fillna(False).astype(bool))
