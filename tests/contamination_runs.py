"""Simulated first-token runs with option shuffles, for the contamination tests: a model whose letter logits are a
position bias, plus `skill` on the shown key, plus `pull` on the published key letter of the items it `saw`, plus
noise; records made by the package's record factory (so option_probs, positions and grading are the real ones)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts.permutations import permutations
from mcqa_toolkit.records.columns import records_frame
from mcqa_toolkit.records.factory import make_record, run_fields


def exam(n_items: int = 40, n_options: int = 5, seed: int = 0, language: str = "pt", irt: bool = True) -> ItemSet:
    """Items with random keys (and 3PL parameters), parallel ids p0..p<n-1>."""
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, n_options, n_items)
    return ItemSet([Item(item_id=f"p{k}-{language}", parallel_id=f"p{k}", source="t", exam="T", year=2021,
                         stem=f"Question {k}?", options=tuple(f"option {j} of {k}" for j in range(n_options)),
                         answer=int(keys[k]), language=language, subject="s",
                         irt=(float(rng.uniform(0.8, 2.0)), float(rng.normal()), 0.2) if irt else None)
                    for k in range(n_items)])


def letters_records(items: ItemSet, model: str = "m", pull: float = 0.0, saw=None, skill: float = 1.0,
                    bias=(0.0, 0.3, 0.6, 0.2, 0.0), shuffles: int = 5, noise: float = 1.0, seed: int = 0,
                    strategy: str = "enem_0shot") -> pd.DataFrame:
    """Records of a simulated run (module docstring); `saw`: the item ids the pull applies to (None: all)."""
    rng = np.random.default_rng(seed)
    run = run_fields(model=model, strategy=strategy, method="first_token", run_id=f"{model}__{strategy}")
    rows = []
    for it in items:
        pulled = pull if saw is None or it.item_id in saw else 0.0
        for s, perm in enumerate(permutations(it.n_options, shuffles, seed=seed, key=it.item_id)):
            pos = np.arange(it.n_options)
            logits = (np.asarray(bias[:it.n_options]) + skill * (np.asarray(perm) == it.answer)
                      + pulled * (pos == it.answer) + noise * rng.normal(size=it.n_options))
            scores = np.empty(it.n_options)
            scores[list(perm)] = logits          # shown position -> original option
            rows.append(make_record(it, run, shuffle=s, permutation=perm, choice=int(np.argmax(scores)),
                                    option_scores=scores))
    return records_frame(rows)
