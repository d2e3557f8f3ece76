"""How familiar each question's text is to a model: the numbers the text detectors of the contamination audit start
from (contamination.min_k_prob, min_k_pp, zlib_ratio and reference_ratio turn them into scores).

The text is the one Min-K% prob reads (`scoring.min_k.question_text`: stem, then the options one per line, in the
published order), read from the start of a document. Per item: its number of scored tokens and of UTF-8 bytes,
the size of its zlib compression (level 6; the zlib ratio of Carlini et al. 2021), the sum of its token
log-probs (per byte it compares models with different tokenizers: the reference ratio), Min-K% prob (the one
computation every run's min_k.parquet uses too: `scoring.min_k.min_k_prob`), and Min-K%++
(Zhang et al. 2024), which needs the model's whole next-token distribution at every token: a backend offers it
through the optional `token_distributions(texts)` (backends.base.DistributionBackend; a local model does); with
any other backend the log-probs come from `text_logprobs` and min_k_pp is NaN.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit.backends.base import Backend, DistributionBackend
from mcqa_toolkit.contamination.min_k_pp import min_k_plus_plus
from mcqa_toolkit.contamination.zlib_ratio import zlib_bytes
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.scoring.loglik import text_logprobs
from mcqa_toolkit.scoring.methods import MIN_K, check_need
from mcqa_toolkit.scoring.min_k import min_k_prob, question_text

__all__ = ["FAMILIARITY_COLUMNS", "familiarity_table"]

FAMILIARITY_COLUMNS = ("model", "language", "item_id", "parallel_id", "n_tokens", "n_bytes", "zlib_bytes",
                       "loglik_sum", "min_k_prob", "min_k_pp")


def familiarity_table(backend: Backend, items: ItemSet, k: float = 0.2, block_size: int = 16,
                      progress: bool = False) -> pd.DataFrame:
    """One row per item (FAMILIARITY_COLUMNS), `block_size` texts per backend call, in item order."""
    check_need(backend, MIN_K, "familiarity")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    dists = backend.token_distributions if isinstance(backend, DistributionBackend) else None
    todo, rows = list(items), []
    with tqdm(total=len(todo), desc=f"familiarity {backend.name}", disable=not progress, unit="item") as bar:
        for lo in range(0, len(todo), block_size):
            chunk = todo[lo:lo + block_size]
            texts = [question_text(it) for it in chunk]
            if dists is not None:
                got = [(d.logprobs, min_k_plus_plus(d.logprobs, d.mean, d.var, k)) for d in dists(texts)]
            else:
                got = [(lp, np.nan) for lp in text_logprobs(backend, texts)]
            for it, text, (lp, pp) in zip(chunk, texts, got, strict=True):
                rows.append({"model": backend.name, "language": it.exam_language, "item_id": it.item_id,
                             "parallel_id": it.parallel_id, "n_tokens": len(lp), "n_bytes": len(text.encode()),
                             "zlib_bytes": zlib_bytes(text), "loglik_sum": float(np.sum(lp)),
                             "min_k_prob": min_k_prob(lp, k), "min_k_pp": float(pp)})
            bar.update(len(chunk))
    return pd.DataFrame(rows, columns=list(FAMILIARITY_COLUMNS))
