"""The embedded demo exam: 66 original questions in six subjects, each in pt, es, it and en.

SYNTHETIC CALIBRATION: the 3PL parameters in `data/demo/items/*.jsonl` were set by hand to plausible
values, and the "human population" is simulated from those parameters (theta ~ N(0, 1), fixed seed).
They let every human-vs-model analysis run out of the box; they are not measurements of real students.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.datasets.common import UniqueIds, check_options, require, require_text
from mcqa_toolkit.items import DatasetError, Item, ItemSet
from mcqa_toolkit.resources import demo_dir
from mcqa_toolkit.textfiles import iter_jsonl

LANGUAGES = ("pt", "es", "it", "en")
POPULATION_FILE = "human_population.npz"
POPULATION_SEED = 20261122
POPULATION_SIZE = 20_000


def _demo_dir(path: str | Path | None) -> Path:
    return Path(path) if path is not None else demo_dir()


def load_demo(language: str | list[str] | None = None, path: str | Path | None = None,
              per_subject: int | None = None) -> ItemSet:
    """Demo items in one language, several, or all four (None). Item ids are `<parallel_id>-<language>`.
    `per_subject`: keep only the first N questions of each subject (in file order; the short `make demo`)."""
    if per_subject is not None and per_subject < 1:
        raise ValueError(f"per_subject must be a positive number of questions, got {per_subject}")
    langs = LANGUAGES if language is None else ((language,) if isinstance(language, str) else tuple(language))
    unknown = [lg for lg in langs if lg not in LANGUAGES]
    if unknown:
        raise ValueError(f"language {unknown[0]!r} not in the demo exam; available: {LANGUAGES}")
    files = sorted((_demo_dir(path) / "items").glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no demo item files in {_demo_dir(path) / 'items'}")
    items, ids = [], UniqueIds("demo", "id")
    for f in files:
        for k, (n, rec) in enumerate(iter_jsonl(f)):
            if per_subject is not None and k >= per_subject:
                break
            pid = ids.add(require_text(rec, "id", f, n), n, f)
            subject = require_text(rec, "subject", f, n)
            answer = require(rec, "answer", f, n, types=int)
            irt = require(rec, "irt", f, n, types=dict)
            try:
                params = (float(irt["a"]), float(irt["b"]), float(irt["c"]))
                finite = all(math.isfinite(x) for x in params)
            except (KeyError, TypeError, ValueError, OverflowError):
                finite = False
            if not finite:
                raise DatasetError(f, n, "irt", f"expected finite numbers a, b, c; got {irt!r:.80}")
            text = require(rec, "text", f, n, types=dict)
            for lang in langs:
                if lang not in text:
                    raise DatasetError(f, n, f"text.{lang}", "missing translation")
                t = require(text, lang, f, n, types=dict)
                stem = require_text(t, "stem", f, n)
                options = check_options(require(t, "options", f, n, types=list), f, n, f"text.{lang}.options",
                                        n_allowed=(4, 5))
                if not 0 <= answer < len(options):
                    raise DatasetError(f, n, "answer", f"answer {answer} out of range for {len(options)} options")
                items.append(Item(
                    item_id=f"{pid}-{lang}", source="demo", exam="DEMO", year=2026, subject=subject,
                    language=lang, parallel_id=pid, stem=stem, options=options, answer=answer, irt=params,
                    meta={"calibration": "synthetic"},
                ))
    return ItemSet(items, name="demo" if language is None else f"demo:{','.join(langs)}")


@dataclass(frozen=True)
class HumanPopulation:
    """Simulated human examinees: `theta` (persons,) and 0/1 `responses` (persons x items) on `item_ids`."""

    item_ids: tuple[str, ...]     # parallel ids (language-independent)
    theta: np.ndarray
    responses: np.ndarray

    def proportion_correct(self) -> pd.Series:
        return pd.Series(self.responses.mean(axis=0), index=list(self.item_ids), name="p_human")

    def to_frame(self) -> pd.DataFrame:
        """Wide frame: one row per person, column theta and one 0/1 column per item."""
        df = pd.DataFrame(self.responses, columns=list(self.item_ids))
        df.insert(0, "theta", self.theta)
        return df


def simulate_population(items: ItemSet, n: int = POPULATION_SIZE, seed: int = POPULATION_SEED) -> HumanPopulation:
    """Draw `n` examinees with theta ~ N(0, 1) answering the 3PL items of `items` (one per parallel id)."""
    from mcqa_toolkit.irt.simulate import simulate_3pl

    first: dict[str, Item] = {}
    for it in items:
        first.setdefault(it.parallel_id, it)
    pids = sorted(first)
    irt = {p: first[p].irt for p in pids}
    missing = [p for p, params in irt.items() if params is None]
    if missing:
        raise ValueError(f"simulate_population: no 3PL parameters (Item.irt) for {len(missing)} item(s), e.g. "
                         f"{missing[0]!r}")
    a, b, c = (np.array([params[k] for params in irt.values() if params is not None]) for k in range(3))
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n)
    return HumanPopulation(tuple(pids), theta, simulate_3pl(theta, a, b, c, rng))


def save_population(pop: HumanPopulation, path: str | Path) -> None:
    """Compact storage: responses bit-packed per person (20,000 x 66 -> ~170 kB), theta as float32."""
    np.savez_compressed(path, item_ids=np.array(pop.item_ids), theta=pop.theta.astype(np.float32),
                        packed=np.packbits(pop.responses.astype(bool), axis=1), n_items=len(pop.item_ids))


def load_population(path: str | Path | None = None) -> HumanPopulation:
    """The committed simulated human population of the demo exam (see module docstring)."""
    f = Path(path) if path is not None else demo_dir() / POPULATION_FILE
    with np.load(f) as z:
        n_items = int(z["n_items"])
        responses = np.unpackbits(z["packed"], axis=1)[:, :n_items]
        return HumanPopulation(tuple(str(x) for x in z["item_ids"]), z["theta"].astype(np.float64), responses)
