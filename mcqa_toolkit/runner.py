"""Strategy (how a model takes the exam) and run(): items x strategy -> one record per (item, shuffle).

A run is resumable: records are appended to `<out_dir>/records.jsonl` after each item; a re-run with the
same directory skips finished records, and refuses to mix a different strategy, model or dataset into it.
The finished run is compacted to Parquet with a provenance JSON. Same seed => identical records (timing
fields aside).
"""
from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit import __version__
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
from mcqa_toolkit.results import ResultStore
from mcqa_toolkit.schema import METHODS, NORMALIZATIONS
from mcqa_toolkit.shuffle import permutations, stable_seed



@dataclass(frozen=True)
class Strategy:
    """Everything that decides how the exam is administered; its hash identifies a run's records."""

    name: str = "custom"
    method: str = "first_token"        # first_token | loglik | generate | cloze
    normalization: str = ""            # loglik/cloze: sum | token | char | byte | pmi
    shots: int = 0
    shot_rule: str = "easiest"         # easiest | random | ids
    shot_ids: tuple[str, ...] = ()
    shuffles: int = 1
    keep_original: bool = True         # shuffle 0 shows the original option order
    language: str | None = None        # prompt language; None = each item's own language
    style: str = "default"             # template style in prompts/templates/<lang>.yaml
    chat: bool = False                 # render with the tokenizer's chat template
    temperature: float = 0.0           # generate: 0 = greedy
    max_new_tokens: int = 12
    stop: tuple[str, ...] = ("\n\n",)
    seed: int = 0
    batch_size: int = 8                # greedy generate: items per left-padded batch (execution detail, not hashed)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"Strategy.method {self.method!r} not in {METHODS}")
        if self.method in ("loglik", "cloze"):
            if self.normalization not in NORMALIZATIONS:
                raise ValueError(f"Strategy.normalization {self.normalization!r} not in {NORMALIZATIONS}")
        elif self.normalization:
            raise ValueError(f"Strategy.normalization applies to loglik/cloze, not {self.method!r}")
        if self.shuffles < 1 or self.shots < 0 or self.max_new_tokens < 1 or self.temperature < 0 or self.batch_size < 1:
            raise ValueError("Strategy needs shuffles >= 1, shots >= 0, max_new_tokens >= 1, temperature >= 0, "
                             "batch_size >= 1")
        object.__setattr__(self, "shot_ids", tuple(self.shot_ids))
        object.__setattr__(self, "stop", tuple(self.stop))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def hash(self) -> str:
        """Identifies what is administered; the name and batch size (like device and dtype) are not part of it."""
        fields = {k: v for k, v in self.to_dict().items() if k not in ("name", "batch_size")}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]

    def with_(self, **changes: Any) -> "Strategy":
        return replace(self, **changes)

    @classmethod
    def first_token(cls, shots: int = 0, shuffles: int = 1, **kw: Any) -> "Strategy":
        return cls(name=kw.pop("name", f"first_token_{shots}shot"), method="first_token", shots=shots,
                   shuffles=shuffles, **kw)

    @classmethod
    def loglik(cls, normalization: str = "token", shots: int = 0, shuffles: int = 1, **kw: Any) -> "Strategy":
        return cls(name=kw.pop("name", f"loglik_{normalization}_{shots}shot"), method="loglik",
                   normalization=normalization, shots=shots, shuffles=shuffles, **kw)

    @classmethod
    def cloze(cls, normalization: str = "token", shots: int = 0, **kw: Any) -> "Strategy":
        return cls(name=kw.pop("name", f"cloze_{normalization}_{shots}shot"), method="cloze",
                   normalization=normalization, shots=shots, style=kw.pop("style", "cloze"), **kw)

    @classmethod
    def generate(cls, shots: int = 0, shuffles: int = 1, **kw: Any) -> "Strategy":
        return cls(name=kw.pop("name", f"generate_{shots}shot"), method="generate", shots=shots, shuffles=shuffles,
                   **kw)


# Named strategies from the seeds. ENADE S1-S6 (enade-qa README): generation 0/1/2-shot, zero-shot shuffled
# (BPC), log-prob 0/1-shot (mean log-prob of each option's tokens given the stem -> cloze, token-normalised).
# ENEM paper (A.4): first-token letter scoring, 0/1/4 shots of the easiest items, 30 option shuffles.
# UNED: zero-shot chat prompt naming the subject, greedy generation.
STRATEGIES: dict[str, Strategy] = {
    "S1": Strategy(name="S1", method="generate", style="enade"),
    "S2": Strategy(name="S2", method="generate", style="enade", shots=1),
    "S3": Strategy(name="S3", method="generate", style="enade", shots=2),
    "S4": Strategy(name="S4", method="generate", style="enade", shuffles=5),
    "S5": Strategy(name="S5", method="cloze", normalization="token", style="cloze"),
    "S6": Strategy(name="S6", method="cloze", normalization="token", style="cloze", shots=1),
    "enem_0shot": Strategy(name="enem_0shot", method="first_token", style="enem", shuffles=30),
    "enem_1shot": Strategy(name="enem_1shot", method="first_token", style="enem", shots=1, shuffles=30),
    "enem_4shot": Strategy(name="enem_4shot", method="first_token", style="enem", shots=4, shuffles=30),
    "uned": Strategy(name="uned", method="generate", style="uned", chat=True),
    "medicina_mc": Strategy(name="medicina_mc", method="first_token", style="default"),
    "medicina_cloze": Strategy(name="medicina_cloze", method="cloze", normalization="token", style="cloze"),
}


def strategy(name_or_fields: str | dict[str, Any] | Strategy, **overrides: Any) -> Strategy:
    """A predefined strategy by name, or one built from a dict (e.g. from a params YAML), with overrides."""
    if isinstance(name_or_fields, Strategy):
        base = name_or_fields
    elif isinstance(name_or_fields, str):
        if name_or_fields not in STRATEGIES:
            raise ValueError(f"unknown strategy {name_or_fields!r}; predefined: {sorted(STRATEGIES)}")
        base = STRATEGIES[name_or_fields]
    else:
        fields = dict(name_or_fields)
        base = STRATEGIES[fields.pop("base")] if "base" in fields else Strategy()
        overrides = {**fields, **overrides}
    unknown = [k for k in overrides if k not in Strategy.__dataclass_fields__]
    if unknown:
        raise ValueError(f"unknown Strategy field(s) {unknown}; fields: {sorted(Strategy.__dataclass_fields__)}")
    return replace(base, **overrides) if overrides else base


def _check_items(items: ItemSet, strategy: Strategy) -> None:
    bad = [it.item_id for it in items if it.answer_type != "single"]
    if bad:
        raise ValueError(f"run() scores single-answer items; {len(bad)} are not (e.g. {bad[:3]}): filter them "
                         "first, e.g. items.filter(answer_type='single')")
    if strategy.shots and strategy.shot_rule == "ids" and not strategy.shot_ids:
        raise ValueError("Strategy.shot_rule 'ids' needs shot_ids")


def plan_shots(items: ItemSet, strategy: Strategy, pool: ItemSet | None = None) -> tuple[ItemSet, dict[str, list]]:
    """(items to evaluate, item_id -> few-shot examples [(Item, permutation)]) for a strategy.

    Without an explicit `pool`, the shot candidates are reserved from `items` (prompts.split_shots) and
    they and their translations are not evaluated. With a pool (e.g. another year's exam), items sharing a
    parallel_id with a pool item are dropped from evaluation, since their answer would be in the prompt.
    """
    if not strategy.shots:
        return items, {it.item_id: [] for it in items}
    ids = strategy.shot_ids or None
    if pool is None:
        pool, evaluated = split_shots(items, strategy.shots, strategy.shot_rule, seed=strategy.seed, ids=ids)
    else:
        reserved = {it.parallel_id for it in pool}
        evaluated = ItemSet([it for it in items if it.parallel_id not in reserved], items.name)
    plan = {it.item_id: select_shots(pool, it, strategy.shots, strategy.shot_rule, seed=strategy.seed, ids=ids)
            for it in evaluated}
    return evaluated, plan


def _record(item: Item, strategy: Strategy, prompt: Any, scored: Any, run_info: dict[str, Any],
            seconds: float, forwarded: float) -> dict[str, Any]:
    import numpy as np

    perm = list(prompt.permutation)
    scores = np.asarray(scored.option_scores, dtype=float)
    finite = np.where(np.isnan(scores), -np.inf, scores)
    if np.isfinite(finite).any():  # softmax over the options; NaN scores (no answer) get probability 0
        probs = np.exp(finite - finite.max())
        probs /= probs.sum()
    else:
        probs = np.full(len(scores), np.nan)
    answer = item.answer if isinstance(item.answer, int) else -1
    choice = int(scored.choice)
    return {
        **run_info,
        "item_id": item.item_id, "parallel_id": item.parallel_id, "language": item.language,
        "subject": item.subject, "exam": item.exam, "year": item.year, "n_options": item.n_options,
        "answer": answer, "shuffle": int(prompt.shuffle), "permutation": perm,
        "option_scores": [None if np.isnan(x) else float(x) for x in scores],
        "option_probs": [None if np.isnan(x) else float(x) for x in probs],
        "choice": choice, "choice_position": perm.index(choice) if choice >= 0 else -1,
        "correct_position": perm.index(answer) if answer >= 0 else -1,
        "correct": bool(choice >= 0 and choice == answer), "status": scored.status,
        "extraction_rule": scored.extraction_rule, "generated_text": scored.generated_text,
        "n_prompt_tokens": int(scored.n_prompt_tokens), "n_forwarded_tokens": int(round(forwarded)),
        "seconds": float(seconds),
        "extra": json.dumps({**scored.extra, "shot_ids": list(prompt.shot_ids)}, default=float),
    }


def _score(lm: Any, scorer: Any, block: list[Item], strategy: Strategy, prompts: list, shared: tuple[int, ...]) -> list:
    from mcqa_toolkit.scoring.first_token import score_first_token
    from mcqa_toolkit.scoring.generate import score_generate
    from mcqa_toolkit.scoring.loglik import score_loglik

    if strategy.method == "first_token":
        return score_first_token(lm, scorer, prompts, shared)
    if strategy.method in ("loglik", "cloze"):
        return score_loglik(lm, scorer, prompts, strategy.normalization, shared)
    seeds = [stable_seed(strategy.seed, p.item_id, p.shuffle) for p in prompts]
    languages = {strategy.language or it.language for it in block}
    return score_generate(lm, scorer, prompts, language=languages.pop() if len(languages) == 1 else None,
                          max_new_tokens=strategy.max_new_tokens, temperature=strategy.temperature,
                          stop=strategy.stop, seeds=seeds, shared_prefix=shared,
                          batch_size=len(prompts) if len(block) > 1 or strategy.shuffles > 1 else 1)


def provenance(lm: Any, strategy: Strategy, items: ItemSet, dataset: str, excluded: Iterable[str]) -> dict[str, Any]:
    """What produced a run: package versions, model identity and weights hash, strategy, dataset fingerprint."""
    import importlib.metadata as md

    versions = {}
    for pkg in ("torch", "transformers", "numpy", "pandas", "tokenizers"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    return {"mcqa_toolkit": __version__, "python": platform.python_version(), "packages": versions,
            "model": lm.provenance(), "strategy": strategy.to_dict(), "strategy_hash": strategy.hash,
            "dataset": dataset, "dataset_fingerprint": items.fingerprint(), "n_items": len(items),
            "excluded_shot_items": sorted(excluded), "seed": strategy.seed}


def run(items: ItemSet, lm: Any, strategy: Strategy, out_dir: str | Path, *, dataset: str = "",
        shot_pool: ItemSet | None = None, limit: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Administer `items` to `lm` under `strategy`; one record per (item, shuffle) in `out_dir`; resumable.

    Few-shot examples come from `shot_pool` (default: `items`) and are excluded from evaluation. `limit`
    keeps the first N evaluated items (smoke runs). Returns the records as a DataFrame (schema.COLUMNS + extra).
    """
    from mcqa_toolkit.scoring.encode import shared_prefix_ids
    from mcqa_toolkit.scoring.prefix import PrefixScorer

    _check_items(items, strategy)
    store = ResultStore(out_dir)
    todo_items, shots = plan_shots(items, strategy, shot_pool)
    excluded = set(items.ids) - set(todo_items.ids)
    if limit is not None:
        todo_items = todo_items[:limit]
    if not len(todo_items):
        raise ValueError("no items left to evaluate after excluding few-shot examples")
    prov = provenance(lm, strategy, todo_items, dataset, excluded)
    _check_resume(store, prov)
    run_info = {"run_id": Path(out_dir).name, "model": lm.name, "dataset": dataset, "strategy": strategy.name,
                "strategy_hash": strategy.hash, "method": strategy.method, "normalization": strategy.normalization,
                "shots": strategy.shots, "seed": strategy.seed}
    done = store.done_keys()
    store.dir.mkdir(parents=True, exist_ok=True)
    (store.dir / "run.json").write_text(json.dumps(prov, indent=2, default=str))
    scorer = PrefixScorer(lm)
    previous: tuple[int, ...] = ()
    # cloze hides the options; loglik follows its style; letter methods must show them
    with_options = {"cloze": False, "loglik": None}.get(strategy.method, True)
    # A unit (one item, or a block of items for batched greedy generation) is always computed whole, even
    # when a killed run already wrote some of its records, so float rounding never depends on where the kill
    # happened; only the missing records are written.
    size = strategy.batch_size if strategy.method == "generate" and strategy.temperature == 0 else 1
    blocks = [list(todo_items)[i:i + size] for i in range(0, len(todo_items), size)]
    bar = tqdm(total=len(todo_items), desc=f"{strategy.name} {lm.name}", disable=not progress, unit="item")
    for block in blocks:
        perms = {it.item_id: permutations(it.n_options, strategy.shuffles, seed=strategy.seed, key=it.parallel_id,
                                          keep_original=strategy.keep_original) for it in block}
        if all((it.item_id, k) in done for it in block for k in range(len(perms[it.item_id]))):
            bar.update(len(block))
            continue
        prompts = [render(it, load_template(strategy.language or it.language, strategy.style),
                          shots=shots[it.item_id], permutation=p, shuffle=k, chat=strategy.chat,
                          with_options=with_options)
                   for it in block for k, p in enumerate(perms[it.item_id])]
        shared = shared_prefix_ids(lm, prompts[0], previous)
        previous = shared or previous
        before, t0 = scorer.stats.forwarded, time.perf_counter()
        scored = _score(lm, scorer, block, strategy, prompts, shared)
        seconds = (time.perf_counter() - t0) / len(prompts)
        forwarded = (scorer.stats.forwarded - before) / len(prompts)
        by_id = {it.item_id: it for it in block}
        store.append(_record(by_id[pr.item_id], strategy, pr, sc, run_info, seconds, forwarded)
                     for pr, sc in zip(prompts, scored) if (pr.item_id, pr.shuffle) not in done)
        bar.update(len(block))
    bar.close()
    prov["engine"] = scorer.stats.as_dict()
    return store.finalize(prov)


def _check_resume(store: ResultStore, prov: dict[str, Any]) -> None:
    """Refuse to append to a directory holding records of another strategy, model or dataset."""
    meta = store.dir / "run.json"
    if not meta.exists():
        return
    old = json.loads(meta.read_text())
    for key in ("strategy_hash", "dataset_fingerprint"):
        if old.get(key) != prov.get(key):
            raise ValueError(f"{store.dir} holds a run with a different {key} ({old.get(key)} != {prov.get(key)}); "
                             "use another out_dir or delete it")
    if old.get("model", {}).get("source") != prov["model"]["source"]:
        raise ValueError(f"{store.dir} holds a run of model {old['model'].get('source')!r}, not "
                         f"{prov['model']['source']!r}; use another out_dir")
