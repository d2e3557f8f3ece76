"""The key-pull detector: where a run with option shuffles shows a wrong option at the published key letter, the
probability on that letter beyond the model's bias for it. A memorised key pulls the choice to the published letter,
whatever sits there; a model that learned the content but not the letter shows nothing. `letter_probabilities` is
also what the model-level key-pull test (contamination.model_tests.key_pull_test) permutes."""
from __future__ import annotations

import numpy as np
import pandas as pd

from mcqa_toolkit.measure.frames import prepare

__all__ = ["KEYS", "letter_probabilities", "key_pull"]

KEYS = ["model", "language", "item_id", "parallel_id"]


def letter_probabilities(records: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """(items, P): per (model, language, item) of keyed single-answer records with option probabilities (items:
    model, language, item_id, parallel_id, answer, n_options), P[i, L] = the mean
    probability on letter L over the item's shuffled records (the original order left out) in which letter L
    shows a wrong option (NaN when none does). Letters past an item's number of options are NaN."""
    prepare(records, (), ["model", "language", "item_id", "parallel_id", "answer", "shuffle", "permutation",
                          "option_probs", "n_options"])
    f = records[(records["answer"] >= 0) & records["option_probs"].map(lambda p: p is not None and len(p) > 0)]
    n_max = int(f["n_options"].max()) if len(f) else 0
    perm = np.full((len(f), n_max), -1)
    probs = np.full((len(f), n_max), np.nan)
    for r, (p, q) in enumerate(zip(f["permutation"], f["option_probs"], strict=True)):
        perm[r, :len(p)], probs[r, :len(q)] = p, q
    shown = np.where(perm >= 0, np.take_along_axis(probs, np.maximum(perm, 0), axis=1), np.nan)
    identity = (perm == np.where(perm >= 0, np.arange(n_max), -1)).all(axis=1)
    usable = (perm >= 0) & (perm != f["answer"].to_numpy()[:, None]) & ~identity[:, None]
    frame = pd.DataFrame(np.where(usable, shown, np.nan), index=f.index)
    g = frame.groupby([f["model"], f["language"], f["item_id"], f["parallel_id"], f["answer"], f["n_options"]],
                      sort=True)
    mean = g.mean()
    items = mean.index.to_frame(index=False)
    if items.duplicated(KEYS).any():
        raise ValueError("records of one model x language x item disagree on the key, or hold several strategies: "
                         "pass one strategy's records")
    return items, mean.to_numpy(float)


def key_pull(records: pd.DataFrame) -> pd.DataFrame:
    """Per model x language x item: p_key, the mean probability on the published key letter where it shows a
    wrong option, and key_pull = p_key minus the mean of p_key's letter over the model's items (position bias
    taken out). Columns: model, language, item_id, parallel_id, answer, n_options, p_key, key_pull."""
    items, P = letter_probabilities(records)
    k = items["answer"].to_numpy(int)
    p_key = P[np.arange(len(k)), k]
    letter_mean = pd.DataFrame(P).groupby([items["model"], items["language"]]).transform("mean").to_numpy()
    base = letter_mean[np.arange(len(k)), k]
    return items.assign(p_key=p_key, key_pull=p_key - base)
