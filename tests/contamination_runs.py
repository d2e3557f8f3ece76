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


def familiarity_frame(items: ItemSet, model: str, seen: set, signal: float, rng) -> pd.DataFrame:
    """A familiarity table whose text scores rise by `signal` on the `seen` items."""
    n = len(items)
    hot = np.array([it.item_id in seen for it in items], dtype=float) * signal
    return pd.DataFrame({"model": model, "language": [it.exam_language for it in items], "item_id": items.ids,
                         "parallel_id": [it.parallel_id for it in items], "n_tokens": 100, "n_bytes": 400,
                         "zlib_bytes": rng.integers(200, 260, n), "loglik_sum": -300 + 60 * hot + rng.normal(0, 20, n),
                         "min_k_prob": 6 - hot + rng.normal(0, 0.5, n), "min_k_pp": -1 + hot + rng.normal(0, 0.4, n)})


def write_validation(folder, n_items: int = 30, seed: int = 0, partial: bool = False):
    """Raw results shaped like studies/contamination_validation.py --collect's (contamination.validation), from
    simulated audits: a clean model and s0-x1, s0-x3, s1-x3 (signal growing with exposures) on pt2021 (half of
    each seed's split exposed), its translation en2021 (a weaker signal) and pt2019 (never seen), and two controls
    c0-x3, c1-x3 (fine-tuned on other exams: no signal anywhere). `partial`: a validation stopped early: pt2021 only
    (no control exam), no probe."""
    import json
    from pathlib import Path
    from types import SimpleNamespace

    from mcqa_toolkit.contamination.validation import validation_results
    from mcqa_toolkit.prompts.solved_page import exposure_split

    rng = np.random.default_rng(seed)
    exams = {"pt2021": exam(n_items, seed=1), "en2021": exam(n_items, seed=1, language="en"),
             "pt2019": exam(n_items, seed=2)}
    exams["pt2019"] = ItemSet([it.with_(item_id=f"q{k}-pt", parallel_id=f"q{k}")
                               for k, it in enumerate(exams["pt2019"])])
    if partial:
        exams = {"pt2021": exams["pt2021"]}
    splits = {s: set(exposure_split(exams["pt2021"], 0.5, s)[0]) for s in (0, 1)}
    models = {"clean": (0, 0), "s0-x1": (0, 1), "s0-x3": (0, 3), "s1-x3": (1, 3), "c0-x3": (0, 3), "c1-x3": (1, 3)}
    audits = {}
    for model, (s, e) in models.items():
        for name, items in exams.items():
            control = model.startswith("c") and model != "clean"
            if control and name == "en2021":
                continue   # the controls are audited on the exposure exam and its control exam
            seen = ({i for i in items.ids if i.replace("-en", "-pt") in splits[s]}
                    if name != "pt2019" and not control else set())
            strength = e * (0.3 if name == "en2021" else 1.0)
            records = letters_records(items, model=model, pull=0.5 * strength, saw=seen, shuffles=4,
                                      seed=int(rng.integers(1e6)))
            probe = pd.DataFrame({"model": model, "language": items[0].exam_language, "item_id": items.ids,
                                  "parallel_id": [it.parallel_id for it in items], "hidden": 1,
                                  "exact": [i in seen and rng.random() < 0.1 * e for i in items.ids],
                                  "rouge_l": rng.random(len(items)), "probe_logprob": rng.normal(-3, 1, len(items))})
            audits[(model, name)] = SimpleNamespace(records=records,
                                                    probe=probe if name == "pt2021" and not partial else None,
                                                    familiarity=familiarity_frame(items, model, seen,
                                                                                  0.5 * strength, rng))
    pt = exams["pt2021"]

    def split_labels(model, s):
        return pd.DataFrame({"model": model, "parallel_id": [it.parallel_id for it in pt], "split": f"s{s}",
                             "exposed": [it.item_id in splits[s] for it in pt]})
    labels = pd.concat([split_labels(m, s) for m, (s, e) in models.items() if m[0] == "s"]
                       + [split_labels(m, s) for m in models if m[0] != "s" for s in splits], ignore_index=True)
    results = validation_results(audits, exams, labels, {"pt2021": "pt2019"}, n_perm=199)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in {**results, "labels": labels}.items():
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    info = {m: {"kind": "control" if m[0] == "c" else "contaminated", "exposures": e, "recipe": {"seed": s},
                "train_loss": [2.0 / (k + 1) for k in range(e)]} for m, (s, e) in models.items() if e}
    (folder / "models.json").write_text(json.dumps(info))
    return folder
