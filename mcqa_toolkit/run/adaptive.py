"""Adaptive administration (computerised adaptive testing) of a model through any backend.

With `Strategy.adaptive` set (irt.CatConfig fields, e.g. {se_target: 0.3, max_items: 20}), run() gives the
model one item at a time: the next item is the most informative at the model's current EAP theta, given
its own answers so far, using the items' human 3PL parameters (Item.irt). Each shuffle is one examinee
(one CAT, its own seed; the item is shown in that shuffle's option order, as in a full run). Every record
carries, in `extra["cat"]`, its position in the CAT, theta and SE after the answer, the stopping rule once it
fired, the bank size, and `full_form_hash`: the strategy_hash of the same strategy without `adaptive`, i.e.
of the fixed-form run it is compared with (measure.adaptive.pair_adaptive_runs). A killed run resumes mid-CAT: the
recorded answers of each shuffle are replayed in order (irt.cat_replay), which reproduces the same next item.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from mcqa_toolkit.irt.cat import CatBank, cat_next, cat_replay, cat_update
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.prompts.permutations import permutations, stable_seed


def cat_bank(items: ItemSet, balance_subjects: bool) -> CatBank:
    """The CAT's item bank from the items' 3PL parameters; every item needs them."""
    missing = [it.item_id for it in items if it.irt is None]
    if missing:
        raise ValueError(f"adaptive administration needs IRT parameters (Item.irt) for every item; {len(missing)} "
                         f"lack them (e.g. {missing[:3]}): filter them out or drop `adaptive`")
    params = [it.irt for it in items if it.irt is not None]  # every item (checked above)
    a, b, c = (np.array([p[i] for p in params]) for i in range(3))
    return CatBank(a, b, c, subject=[it.subject for it in items] if balance_subjects else None)


def cat_seed(seed: int, shuffle: int) -> int:
    return stable_seed(seed, "cat", shuffle) % 2 ** 32


def _past(store: Any, index: dict[str, int]) -> dict[int, list[tuple[int, int]]]:
    """(item index, correct) per shuffle from the records already written, in CAT order."""
    out: dict[int, list[tuple[int, int, int]]] = {}
    for r in store.read_records():
        cat = json.loads(r["extra"])["cat"]
        out.setdefault(int(r["shuffle"]), []).append((cat["position"], index[r["item_id"]], int(bool(r["correct"]))))
    return {k: [(i, x) for _, i, x in sorted(v)] for k, v in out.items()}


def run_adaptive(items: ItemSet, strategy: Any, store: Any, render_one: Callable[..., Any],
               score_one: Callable[..., dict[str, Any]], progress: bool = True) -> None:
    """Run one CAT per shuffle, appending one record per administered item.

    render_one(item, permutation, shuffle) -> Prompt; score_one(item, prompt) -> record, made by the runner's
    own scoring and record factory, so adaptive records are ordinary records (plus extra["cat"]).
    """
    config = strategy.cat_config()
    bank = cat_bank(items, config.subject_targets is not None)
    index = {it.item_id: j for j, it in enumerate(items)}
    past = _past(store, index)
    limit = config.max_items or len(items)
    full_form_hash = strategy.with_(adaptive=None).hash
    bar = tqdm(total=strategy.shuffles * limit, desc=f"{strategy.name} CAT", disable=not progress, unit="item")
    for k in range(strategy.shuffles):
        answered = past.get(k, [])
        state = cat_replay(bank, config, cat_seed(strategy.seed, k), [i for i, _ in answered],
                           [x for _, x in answered])
        bar.update(len(state.items))
        while not state.done:
            j = cat_next(state)
            it = items[j]
            perm = permutations(it.n_options, strategy.shuffles, seed=strategy.seed, key=it.parallel_id,
                                keep_original=strategy.keep_original)[k]
            prompt = render_one(it, perm, k)
            record = score_one(it, prompt)
            state = cat_update(state, j, int(bool(record["correct"])))
            extra = {**json.loads(record["extra"]), "cat": {
                "position": len(state.items), "theta": state.theta, "se": state.psd, "stop": state.stop,
                "n_bank": bank.n_items, "full_form_hash": full_form_hash}}
            store.append([{**record, "extra": json.dumps(extra, default=float)}])
            bar.update(1)
        bar.update(limit - len(state.items))
    bar.close()
