"""Schema-exact synthetic results folders written with the record factory, shared by the measure, plot and
notebook tests: `write_synthetic_results` (2 models x 2 languages x 2 strategies from the 3PL) and
`write_adaptive_results` (adaptive runs and their full-form partners)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit import irt
from mcqa_toolkit.datasets.demo import load_demo
from mcqa_toolkit.irt.cat import cat_next, cat_start, cat_update
from mcqa_toolkit.measure.summary import summarize_run
from mcqa_toolkit.prompts.permutations import permutations
from mcqa_toolkit.records.factory import make_record, run_fields
from mcqa_toolkit.records.identity import RunIdentity
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run import plan_shots
from mcqa_toolkit.run import strategy as build
from mcqa_toolkit.run.adaptive import cat_bank, cat_seed

MODEL_THETA = {"model-a": 1.0, "model-b": -0.5}
LANGUAGE_SHIFT = {"en": 0.0, "pt": -0.4}
SHUFFLES = 3
# name -> (method, shots, shuffles): S1 generates (some unanswered), enem_4shot keeps its 4 easiest items as shots
STRATEGIES = {"S1": ("generate", 0, SHUFFLES), "enem_4shot": ("first_token", 4, SHUFFLES)}
ANNULLED = "demo-mat-11"


def _records(model, theta, strategy, spec, language, items, rng, skip):
    method, shots, shuffles = spec
    run_id = f"{model}__demo__{language}__{strategy}"
    run = run_fields(run_id=run_id, model=model, dataset="demo", strategy=strategy, strategy_hash="0" * 12,
                     method=method, shots=shots)
    out = []
    for it in items:
        if it.parallel_id in skip:
            continue
        a, b, c = it.irt
        p = float(irt.irf(theta, [a], [b], [c])[0])
        key = it.with_(answer=None) if it.parallel_id == ANNULLED else it
        for k, perm in enumerate(permutations(it.n_options, shuffles, seed=0, key=it.parallel_id)):
            wrong = [o for o in range(it.n_options) if o != it.answer]
            if rng.random() < p:
                choice = it.answer
            elif theta < 0 and perm[0] != it.answer and rng.random() < 0.6:
                choice = perm[0]                         # a position-A bias for weaker models
            else:
                choice = int(rng.choice(wrong))
            status = None  # graded by the record factory
            if method == "generate" and rng.random() < 0.03:
                choice, status = -1, "unanswered"
            scores = rng.normal(size=it.n_options)
            if choice >= 0:
                scores[choice] = scores.max() + 1.0
            out.append(make_record(key, run, shuffle=k, permutation=perm, choice=choice, option_scores=scores,
                                   status=status, extraction_rule="letter" if method == "generate" else "",
                                   n_prompt_tokens=100, n_forwarded_tokens=20, seconds=0.01))
    return run_id, out


def _finish(store: RunDir, provenance: dict) -> None:
    """Compact the records and write summary.json, as a finished run does (reports read complete runs only)."""
    frame = store.finalize(provenance)
    identity = RunIdentity(f"synthetic:{provenance['model']['name']}", "demo", "synthetic", provenance["strategy_hash"])
    store.write_summary(summarize_run(frame), identity)


def write_synthetic_results(root: str | Path, seed: int = 7, models: dict[str, float] = MODEL_THETA,
                            languages: dict[str, float] = LANGUAGE_SHIFT,
                            strategies: dict[str, tuple] = STRATEGIES, n_items: int | None = None) -> Path:
    """2 models x 2 languages x 2 strategies x 3 shuffles on the demo items (by default), via ResultStore.

    n_items: only the first n questions of each language, and every run folder then carries them (items.jsonl),
    as a run of a cut exam does; None: every question, the folders without items.jsonl (their dataset is loaded).

    Choices are drawn from the 3PL at a fixed theta per model (+ a language shift), so IRT outputs are
    meaningful; one item is annulled; generate strategies have ~3% unanswered records; a strategy with
    shots skips its easiest items; weaker models prefer position A when wrong; every run folder also gets
    a min_k.parquet (higher Min-K% prob for harder items).
    """
    root = Path(root)
    rng = np.random.default_rng(seed)
    for model, theta in models.items():
        for language, shift in languages.items():
            items = load_demo(language)
            items = items if n_items is None else items[:n_items]
            by_b = sorted(items, key=lambda it: it.irt[1])
            min_k = pd.DataFrame([{"model": model, "language": language, "item_id": it.item_id,
                                   "parallel_id": it.parallel_id, "n_tokens": int(rng.integers(20, 80)),
                                   "min_k_prob": 3.0 + 0.5 * it.irt[1] + 0.3 * rng.standard_normal()}
                                  for it in items])
            for strategy, spec in strategies.items():
                skip = {it.parallel_id for it in by_b[:spec[1]]}
                run_id, recs = _records(model, theta + shift, strategy, spec, language, items, rng, skip)
                store = RunDir(root / run_id)
                store.append(recs)
                if n_items is not None:
                    store.write_items(items)
                _finish(store, {"model": {"name": model}, "strategy_hash": "0" * 12, "dataset": "demo"})
                min_k.to_parquet(store.min_k_file, index=False)
    return root


# adaptive runs and their full-form partners
MODELS = {"model-a": 1.0, "model-b": -0.5}
FULL = build("enem_4shot", shuffles=3)
CAT = FULL.with_(name="enem_4shot_cat", adaptive={"se_target": 0.3, "max_items": 20})
N_EVALUATED = len(plan_shots(load_demo("en"), FULL)[0])   # the demo items left after reserving the shots


def _write(root: Path, model: str, language: str, s, records: list[dict]) -> None:
    store = RunDir(root / f"{model}__demo__{language}__{s.name}")
    store.append(records)
    _finish(store, {"model": {"name": model}, "strategy": s.to_dict(), "strategy_hash": s.hash, "dataset": "demo"})


def write_adaptive_results(root: str | Path, seed: int = 11, models: dict[str, float] = MODELS,
                           language: str = "en", unpaired: str | None = "pt") -> Path:
    """For each model: a full-form run (FULL) and its adaptive run (CAT) in `language`; plus, for the first
    model, an adaptive run in `unpaired` without a full-form partner. Full records forward 60-119 tokens
    (prefix sharing), CAT records 150-249."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    first = next(iter(models))
    for model, theta in models.items():
        for lang, with_full in [(language, True)] + ([(unpaired, False)] if unpaired and model == first else []):
            items, _ = plan_shots(load_demo(lang), FULL)
            bank, config = cat_bank(items, False), CAT.cat_config()
            common = dict(model=model, dataset="demo", method="first_token", shots=FULL.shots, seed=FULL.seed)
            full_run = run_fields(run_id=f"{model}__demo__{lang}__{FULL.name}", strategy=FULL.name,
                                  strategy_hash=FULL.hash, **common)
            cat_run = run_fields(run_id=f"{model}__demo__{lang}__{CAT.name}", strategy=CAT.name,
                                 strategy_hash=CAT.hash, **common)
            full_recs, cat_recs = [], []
            for k in range(FULL.shuffles):
                answers = {}
                for it in items:
                    perm = permutations(it.n_options, FULL.shuffles, seed=FULL.seed, key=it.parallel_id)[k]
                    right = rng.random() < float(irt.irf(theta, *([v] for v in it.irt))[0])
                    answers[it.item_id] = (perm, it.answer if right else (it.answer + 1 + k) % it.n_options)
                    full_recs.append(make_record(it, full_run, shuffle=k, permutation=perm,
                                                 choice=answers[it.item_id][1], n_prompt_tokens=300,
                                                 n_forwarded_tokens=int(rng.integers(60, 120))))
                state = cat_start(bank, config, cat_seed(CAT.seed, k))
                while not state.done:
                    j = cat_next(state)
                    it = items[j]
                    perm, choice = answers[it.item_id]
                    if rng.random() < 0.1:
                        choice = (choice + 2) % it.n_options
                    state = cat_update(state, j, int(choice == it.answer))
                    cat = {"position": len(state.items), "theta": state.theta, "se": state.psd, "stop": state.stop,
                           "n_bank": bank.n_items, "full_form_hash": FULL.hash}
                    cat_recs.append(make_record(it, cat_run, shuffle=k, permutation=perm, choice=choice,
                                                n_prompt_tokens=300, n_forwarded_tokens=int(rng.integers(150, 250)),
                                                extra={"shot_ids": [], "cat": cat}))
            if with_full:
                _write(root, model, lang, FULL, full_recs)
            _write(root, model, lang, CAT, cat_recs)
    return root
