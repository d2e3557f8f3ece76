"""PriDe: estimate a model's prior over option positions (IDs) and debias its choices (Zheng et al., "Large
Language Models Are Not Robust Multiple Choice Selectors", ICLR 2024).

The paper writes the observed probability of option ID d_i as a prior over IDs times a content term:
    P_obs(d_i | q, x^I) = Z^-1 P_prior(d_i | q) P_debiased(o_f_I(i) | q, x^I)
where x^I shows the options permuted by I. Over the k cyclic permutations every option sits once at every
position, so the content terms sum to the same constant for every i in log space, and
    P_prior(d_i | q) = softmax_i( (1/|I|) sum_I log P_obs(d_i | q, x^I) )             (the item's prior)
is exact. The model's prior is the mean of the items' priors over a small estimation share of items (the
paper: 2-5%), and every other item's observed distribution is debiased by it:
    P_debiased(o_i | q, x) ∝ P_obs(d_i | q, x) / P_prior(d_i),   prediction = argmax.
The estimation items themselves are predicted from their permutations: the mean over permutations of each
option's observed probability (the authors' code, debias_utils.simple). `observed` is always by SHOWN
position; records hold option_probs in ORIGINAL order and their permutation (records.columns).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.special import softmax

from mcqa_toolkit.measure.frames import DEFAULT_BY, finish, groups, prepare, single_answer

__all__ = ["item_prior", "permutation_debiased", "debias", "pride", "PrideResult"]

EPS = 1e-10  # the authors' floor inside the logs


def _check(observed: ArrayLike, perms: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    p = np.asarray(observed, dtype=float)
    if p.ndim != 2 or p.shape[1] < 2 or np.isnan(p).any() or (p < 0).any():
        raise ValueError(f"observed must be (n_permutations, k >= 2) probabilities without NaN, got {p.shape}")
    p = p / p.sum(axis=1, keepdims=True)
    if perms is None:
        return p, None
    q = np.asarray(perms, dtype=int)
    if q.shape != p.shape or any(sorted(r) != list(range(p.shape[1])) for r in q.tolist()):
        raise ValueError(f"permutations must be {p.shape} rows, each a permutation of range({p.shape[1]})")
    return p, q


def item_prior(observed: ArrayLike) -> np.ndarray:
    """One item's prior over positions (k,): softmax of the mean over its permutations of log P_obs by position
    (observed: (n_permutations, k), rows renormalised to sum 1)."""
    p, _ = _check(observed)
    return softmax(np.log(p + EPS).mean(axis=0))


def permutation_debiased(observed: ArrayLike, permutations: ArrayLike) -> np.ndarray:
    """One estimation item's debiased distribution over ORIGINAL options (k,): the mean over permutations of
    each option's observed probability (permutations[r][pos] = original option shown at pos)."""
    p, q = _check(observed, permutations)
    assert q is not None  # _check returns None only when given no permutations
    out = np.zeros(p.shape[1])
    np.add.at(out, q.ravel(), p.ravel())
    return out / p.shape[0]


def debias(observed: ArrayLike, prior: ArrayLike) -> np.ndarray:
    """Debiased distributions by position (n, k): P_obs / prior, renormalised (log P_obs - log prior)."""
    p, _ = _check(observed)
    logit = np.log(p + EPS) - np.log(np.asarray(prior, dtype=float) + EPS)
    return softmax(logit, axis=1)


@dataclass(frozen=True)
class PrideResult:
    """`summary`: one row per group x n_options (n_items, n_estimation, the prior by position, accuracy and
    debiased_accuracy over every record, and both on the items outside the estimation share only);
    `records`: every record with its debiased choice (original option index) and whether it is correct."""

    summary: pd.DataFrame
    records: pd.DataFrame


def _observed_by_position(g: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    probs = np.array([list(p) for p in g["option_probs"]], dtype=float)
    perms = np.array([list(p) for p in g["permutation"]], dtype=int)
    return np.take_along_axis(probs, perms, axis=1), perms


def pride(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY, share: float = 0.05, seed: int = 0
          ) -> PrideResult:
    """PriDe per group and number of options on records with option probabilities (see the module docstring):
    ceil(share x items) estimation items (at least one), drawn with default_rng(seed) among the items with at
    least 2 shuffles (run the k cyclic rotations for the paper's exact estimate)."""
    if not 0 < share < 1:
        raise ValueError(f"share must be in (0, 1), got {share}")
    f, by = prepare(frame, by, ("item_id", "shuffle", "permutation", "option_probs", "answer", "n_options"))
    f = single_answer(f)
    f = f[(f["answer"] >= 0) & f["option_probs"].map(lambda p: not any(x is None or x != x for x in p))]
    if f.empty:
        raise ValueError("no keyed single-answer record with option probabilities: PriDe needs P(option)")
    rows, out = [], []
    for key, g in groups(f, [*by, "n_options"]):
        g = g.sort_values(["item_id", "shuffle"])
        counts = g.groupby("item_id").size()
        candidates = counts.index[counts >= 2].to_numpy()
        if candidates.size == 0:
            raise ValueError(f"{key}: no item has 2 or more shuffles to estimate the prior from")
        n_est = max(1, math.ceil(share * counts.size))
        est = set(np.random.default_rng(seed).permutation(np.sort(candidates))[:n_est].tolist())
        priors, choice = [], pd.Series(-1, index=g.index)
        for _, it in g[g["item_id"].isin(est)].groupby("item_id"):
            obs, perms = _observed_by_position(it)
            priors.append(item_prior(obs))
            choice[it.index] = int(np.argmax(permutation_debiased(obs, perms)))
        prior = np.mean(priors, axis=0)
        rest = g[~g["item_id"].isin(est)]
        if len(rest):
            obs, perms = _observed_by_position(rest)
            pos = np.argmax(debias(obs, prior), axis=1)
            choice[rest.index] = perms[np.arange(len(rest)), pos]
        observed_correct = g["choice"].to_numpy() == g["answer"].to_numpy()
        debiased_correct = choice.to_numpy() == g["answer"].to_numpy()
        in_rest = ~g["item_id"].isin(est).to_numpy()
        rows.append({**key, "n_items": int(counts.size), "n_estimation": len(est), "prior": prior.tolist(),
                     "accuracy": float(observed_correct.mean()), "debiased_accuracy": float(debiased_correct.mean()),
                     "accuracy_rest": float(observed_correct[in_rest].mean()) if in_rest.any() else float("nan"),
                     "debiased_accuracy_rest": float(debiased_correct[in_rest].mean()) if in_rest.any()
                     else float("nan")})
        out.append(g.assign(estimation=~in_rest, debiased_choice=choice.to_numpy(), debiased_correct=debiased_correct))
    return PrideResult(finish(pd.DataFrame(rows)), pd.concat(out).sort_index())
