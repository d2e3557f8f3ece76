"""Min-K% prob of each question under a backend: the measurement side of the contamination probe.

The question text is the stem, plus the options one per line when `with_options`; its token log-probs are
taken from the start of a document (`scoring.loglik.text_logprobs`), `block_size` questions per backend call
in item order: one forward over many short texts amortises reading the weights (on 2 CPU cores, 12 demo
questions take 4.1 s in one block vs 9.2 s one by one; an API backend sends a block's requests concurrently).
Batch-mates change a question's log-probs only by floating-point noise (~1e-5 in fp32; tests compare with one
call per question). The formulas, `min_k_prob` and `min_k_plus_plus` (scoring.familiarity), live here
(measure.contamination computes from the tables).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit.backends.base import Backend
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.scoring.loglik import text_logprobs
from mcqa_toolkit.scoring.methods import MIN_K, check_need


def min_k_prob(logprobs: Sequence[float], k: float = 0.2) -> float:
    """Min-K% prob of one text: minus the mean of its k-fraction lowest token log-probs (higher = less familiar).

    The number of tokens kept is floor(k x N) as in the reference implementation (swj0419/detect-pretrain-code,
    `int(len(all_prob) * ratio)`), but at least 1 so short texts still get a score; a 1e-9 slack keeps
    k x N = 2.9999999 from flooring to 2. `k` is a fraction in (0, 1] (0.2 = 20%).
    """
    x = np.asarray(logprobs, dtype=float).ravel()
    _n_kept(k, 1)
    if x.size == 0:
        raise ValueError("min_k_prob needs at least one token log-prob")
    if np.isnan(x).any() or (x > 0).any():
        raise ValueError("token log-probs must be <= 0 and not NaN")
    return float(-np.sort(x)[:_n_kept(k, x.size)].mean())


def _n_kept(k: float, n: int) -> int:
    """How many of n tokens the k-fraction keeps: floor(k x n), at least 1 (see `min_k_prob`)."""
    if not 0 < k <= 1:
        raise ValueError(f"k is a fraction in (0, 1] (0.2 = 20%), got {k}")
    return max(1, int(np.floor(k * n + 1e-9)))


def min_k_plus_plus(logprobs: Sequence[float], mean: Sequence[float], var: Sequence[float], k: float = 0.2) -> float:
    """Min-K%++ (Zhang et al. 2024) of one text: each token's log-prob standardised by the mean and variance of
    log p over the model's next-token distribution at its place, (log p(x_t) - mu_t) / sigma_t, and the mean of
    the k-fraction lowest (kept as in `min_k_prob`). Higher = more familiar (the sign of the paper's score, the
    opposite of `min_k_prob`'s). A place where the model is certain (sigma 0) contributes 0."""
    x, mu, v = (np.asarray(a, dtype=float).ravel() for a in (logprobs, mean, var))
    if not x.size or x.shape != mu.shape or x.shape != v.shape:
        raise ValueError(f"min_k_plus_plus needs equal, non-empty arrays, got {x.size}, {mu.size}, {v.size}")
    if np.isnan(x).any() or np.isnan(mu).any() or (v < 0).any() or np.isnan(v).any():
        raise ValueError("min_k_plus_plus: NaN values or a negative variance")
    sd = np.sqrt(v)
    z = np.divide(x - mu, sd, out=np.zeros_like(x), where=sd > 0)
    return float(np.sort(z)[:_n_kept(k, z.size)].mean())


def question_text(item: Item, with_options: bool = True) -> str:
    """The text whose familiarity Min-K% measures."""
    return item.stem + ("\n" + "\n".join(item.options) if with_options and item.options else "")


def min_k_table(backend: Backend, items: ItemSet, k: float = 0.2, with_options: bool = True,
                progress: bool = False, block_size: int = 16) -> pd.DataFrame:
    """One row per item: model, language, item_id, parallel_id, min_k_prob, n_tokens."""
    check_need(backend, MIN_K, "min_k")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    items, rows = list(items), []
    with tqdm(total=len(items), desc=f"Min-K% {backend.name}", disable=not progress, unit="item") as bar:
        for lo in range(0, len(items), block_size):
            chunk = items[lo:lo + block_size]
            for it, lp in zip(chunk, text_logprobs(backend, [question_text(it, with_options) for it in chunk])):
                rows.append({"model": backend.name, "language": it.exam_language, "item_id": it.item_id,
                             "parallel_id": it.parallel_id, "min_k_prob": float(min_k_prob(lp, k)),
                             "n_tokens": len(lp)})
            bar.update(len(chunk))
    return pd.DataFrame(rows)
