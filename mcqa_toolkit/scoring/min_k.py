"""Min-K% prob of each question under a backend: the measurement side of the contamination probe.

The question text is the stem, plus the options one per line when `with_options`; its token log-probs are
taken from the start of a document (`scoring.loglik.text_logprobs`), one text per backend call so a
question's numbers never depend on which others were scored with it. The formula is
`measure.contamination.min_k_prob`.
"""
from __future__ import annotations

import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit.backends.base import Backend, check_capabilities
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.measure.contamination import min_k_prob
from mcqa_toolkit.scoring.loglik import text_logprobs


def question_text(item: Item, with_options: bool = True) -> str:
    """The text whose familiarity Min-K% measures."""
    return item.stem + ("\n" + "\n".join(item.options) if with_options and item.options else "")


def min_k_table(backend: Backend, items: ItemSet, k: float = 0.2, with_options: bool = True,
                progress: bool = False) -> pd.DataFrame:
    """One row per item: model, language, item_id, parallel_id, min_k_prob, n_tokens."""
    check_capabilities(backend, "min_k")
    rows = []
    for it in tqdm(items, desc=f"Min-K% {backend.name}", disable=not progress, unit="item"):
        (lp,) = text_logprobs(backend, [question_text(it, with_options)])
        rows.append({"model": backend.name, "language": it.language, "item_id": it.item_id,
                     "parallel_id": it.parallel_id, "min_k_prob": float(min_k_prob(lp, k)), "n_tokens": len(lp)})
    return pd.DataFrame(rows)
