"""The Mantel-Haenszel permutation test within blocks: for persons that are not independent (one language model
answers in both groups), the group labels are swapped among the persons of each block (e.g. the model),
seeded and vectorised over relabellings; under "no DIF within a block" its p-values are exact. The observed
analysis, its strata and (with purification) its anchor items are measure.dif.mantel_haenszel's.
"""
from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit.measure.dif.base import MIN_GROUP, DifResult, block_codes, check_groups, with_bh
from mcqa_toolkit.measure.dif.mantel_haenszel import mantel_haenszel, mh_statistics, score_strata

__all__ = ["permuted_labels", "mh_permutation"]

_CHUNK = 2_000_000      # (permutations x persons x items) entries counted at once


def permuted_labels(ref: np.ndarray, blocks: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n relabellings (n, persons) of the 0/1 vector `ref`, each a uniform permutation within every block."""
    order = np.argsort(blocks, kind="stable")
    shuffled = np.argsort(blocks[order][None, :] + rng.random((n, blocks.size)), axis=1)  # within-block orders
    out = np.empty((n, blocks.size))
    out[:, order] = ref[order][shuffled]
    return out


def mh_permutation(responses: pd.DataFrame, group: ArrayLike, focal: Hashable, reference: Hashable,
                   within: ArrayLike | None, strata: ArrayLike | None = None, *, purify: bool = False,
                   n_permutations: int = 999, seed: int = 0, alpha: float = 0.05,
                   min_group: int = MIN_GROUP) -> DifResult:
    """`mantel_haenszel` (strata crossed with `within`) plus p_perm: the share of `n_permutations` relabellings
    (group labels swapped among the persons of each `within` block, seeded) whose MH chi-square reaches the
    observed one, (1 + count) / (1 + n_permutations). p_bh and flag_bh are recomputed from p_perm. The strata
    (and, with `purify`, the anchor items) are those of the observed analysis."""
    if n_permutations < 1:
        raise ValueError(f"n_permutations = {n_permutations}: must be >= 1")
    res = mantel_haenszel(responses, group, focal, reference, strata, within=within, purify=purify, alpha=alpha,
                          min_group=min_group)
    u, is_f, items, kept = check_groups(responses, group, focal, reference, min_group)
    blocks = block_codes(within, kept)
    codes, k = score_strata(u, np.isin(items, res.anchor), blocks,
                            None if strata is None else np.asarray(strata, object)[kept])
    observed = res.table["chi2_mh"].to_numpy(float)
    ref, rng = (~is_f).astype(float), np.random.default_rng(seed)
    exceed, step = np.zeros(len(items)), max(1, _CHUNK // (u.shape[0] * u.shape[1]))
    for start in range(0, n_permutations, step):          # chunks of relabellings bound the memory
        labels = permuted_labels(ref, blocks, min(step, n_permutations - start), rng)
        chi2 = mh_statistics(u, codes, k, labels)["chi2"]
        exceed += (np.nan_to_num(chi2, nan=-np.inf) >= observed * (1 - 1e-12)).sum(axis=0)
    table = res.table.copy()
    table.insert(table.columns.get_loc("ets_class"), "p_perm",
                 np.where(np.isnan(observed), np.nan, (1 + exceed) / (1 + n_permutations)))
    return DifResult("mantel-haenszel permutation", focal, reference, with_bh(table, alpha, "p_perm"), res.anchor,
                     res.iterations, res.converged)
