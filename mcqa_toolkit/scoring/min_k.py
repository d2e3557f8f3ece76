"""Min-K% prob of each question under a backend: the measurement side of the contamination probe.

The question text is the stem, plus the options one per line when `with_options`; its token log-probs are
taken from the start of a document (`scoring.loglik.text_logprobs`), `block_size` questions per backend call
in item order: one forward over many short texts amortises reading the weights (on 2 CPU cores, 12 demo
questions take 4.1 s in one block vs 9.2 s one by one; an API backend sends a block's requests concurrently).
Batch-mates change a question's log-probs only by floating-point noise (~1e-5 in fp32; tests compare with one
call per question). `min_k_prob` is the one computation of Min-K% prob: this table (every run's min_k.parquet,
written by run.recipe) and the contamination audit's familiarity table (contamination.familiarity) both call it.
It sits here, below run/, because every run writes the table; the contamination wing (which runs runs in its audit)
reads it from here.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit.backends.base import Backend
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.scoring.loglik import text_logprobs
from mcqa_toolkit.scoring.methods import MIN_K, check_need


def min_k_prob(logprobs: Sequence[float] | np.ndarray, k: float = 0.2) -> float:
    """Min-K% prob of one text: minus the mean of its k-fraction lowest token log-probs (higher = less familiar).

    The number of tokens kept is floor(k x N) as in the reference implementation (swj0419/detect-pretrain-code,
    `int(len(all_prob) * ratio)`), but at least 1 so short texts still get a score; a 1e-9 slack keeps
    k x N = 2.9999999 from flooring to 2. `k` is a fraction in (0, 1] (0.2 = 20%).
    """
    x = np.asarray(logprobs, dtype=float).ravel()
    n_kept(k, 1)
    if x.size == 0:
        raise ValueError("min_k_prob needs at least one token log-prob")
    if np.isnan(x).any() or (x > 0).any():
        raise ValueError("token log-probs must be <= 0 and not NaN")
    return float(-np.sort(x)[:n_kept(k, x.size)].mean())


def n_kept(k: float, n: int) -> int:
    """How many of n tokens the k-fraction keeps: floor(k x n), at least 1 (see `min_k_prob`; Min-K%++ keeps as
    many)."""
    if not 0 < k <= 1:
        raise ValueError(f"k is a fraction in (0, 1] (0.2 = 20%), got {k}")
    return max(1, int(np.floor(k * n + 1e-9)))


def question_text(item: Item, with_options: bool = True) -> str:
    """The text whose familiarity Min-K% measures."""
    return item.stem + ("\n" + "\n".join(item.options) if with_options and item.options else "")


def min_k_table(backend: Backend, items: ItemSet, k: float = 0.2, with_options: bool = True,
                progress: bool = False, block_size: int = 16) -> pd.DataFrame:
    """One row per item: model, language, item_id, parallel_id, min_k_prob, n_tokens."""
    check_need(backend, MIN_K, "min_k")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    todo, rows = list(items), []
    with tqdm(total=len(todo), desc=f"Min-K% {backend.name}", disable=not progress, unit="item") as bar:
        for lo in range(0, len(todo), block_size):
            chunk = todo[lo:lo + block_size]
            for it, lp in zip(chunk, text_logprobs(backend, [question_text(it, with_options) for it in chunk]),
                              strict=True):
                rows.append({"model": backend.name, "language": it.exam_language, "item_id": it.item_id,
                             "parallel_id": it.parallel_id, "min_k_prob": float(min_k_prob(lp, k)),
                             "n_tokens": len(lp)})
            bar.update(len(chunk))
    return pd.DataFrame(rows)
