"""A latency-bound backend and a synthetic exam for the Ray pool benchmarks (ray_scaling.py, ray_overhead.py).

LatencyBackend answers from a table and sleeps `delay` seconds per call, as a model behind a network or a busy
accelerator makes its caller wait: with it a benchmark measures the pool (handing blocks out, Ray's transport,
this process writing the records), not a model. The workers load it through RayPool.put; `ship()` makes Ray
send this module by value, since benchmarks/ is not importable on a cluster's nodes.

`local_cluster_env()` is what a benchmark started without an address needs: its local cluster's sessions in a
private temporary folder, apart from any other Ray on the machine; `save_json` writes a benchmark's figures.
"""
from __future__ import annotations

import random
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mcqa_toolkit.backends import Capabilities, ContinuationLogprobs, Generation, LetterLogprobs
from mcqa_toolkit.items import Item, ItemSet

WORDS = "the of a to in is that for it as with cell force mass light atom acid gene market law state river".split()


class LatencyBackend:
    """Log-probs of each original option from `table` (item_id -> list), `delay` seconds per call."""

    def __init__(self, table: dict[str, list[float]], delay: float = 0.05):
        self.name, self.table, self.delay, self.calls = "latency", table, delay, 0
        self.capabilities = Capabilities(next_token_logprobs=True, continuation_logprobs=True, generate=True)

    def provenance(self) -> dict[str, Any]:
        return {"backend": "latency", "source": f"table, {self.delay} s per call"}

    def usage(self) -> dict[str, float]:
        return {"forwarded_tokens": 10 * self.calls, "calls": self.calls}

    def _wait(self) -> None:
        self.calls += 1
        time.sleep(self.delay)

    def letter_logprobs(self, prompts: Sequence[Any]) -> list[LetterLogprobs]:
        self._wait()
        return [LetterLogprobs(np.array([self.table[p.item_id][o] for o in p.permutation]), 7) for p in prompts]

    def loglikelihoods(self, requests: Sequence[Any]) -> list[ContinuationLogprobs]:
        self._wait()
        return [ContinuationLogprobs(np.array([-1.0]), r.continuation, 1) for r in requests]

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Generation]:
        self._wait()
        return [Generation(f"Resposta: {p.letters[int(np.argmax([self.table[p.item_id][o] for o in p.permutation]))]}",
                           7, 3, "stop") for p in prompts]


def synthetic_exam(n_items: int, n_options: int = 4, seed: int = 0) -> tuple[ItemSet, dict[str, list[float]]]:
    """`n_items` single-answer Portuguese questions of seeded random text, and a log-prob table for them."""
    rng = random.Random(seed)
    items = [Item(item_id=f"q{i:05d}", source="synthetic", exam="synthetic", language="pt", subject=f"s{i % 7}",
                  stem=" ".join(rng.choices(WORDS, k=30)) + "?",
                  options=tuple(" ".join(rng.choices(WORDS, k=5)) for _ in range(n_options)),
                  answer=rng.randrange(n_options)) for i in range(n_items)]
    table = {it.item_id: [rng.uniform(-6.0, -0.1) for _ in range(n_options)] for it in items}
    return ItemSet(items, "synthetic"), table


def ship() -> None:
    """Have Ray pickle this module's classes by value (the nodes cannot import benchmarks/)."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


def local_cluster_env() -> dict[str, str]:
    """RAY_TMPDIR for a local cluster of this benchmark's own (short: Ray's socket paths must fit 107 bytes)."""
    return {"RAY_TMPDIR": tempfile.mkdtemp(prefix="ray", dir="/tmp")}


def save_json(path: str | None, result: dict[str, Any]) -> None:
    """Write a benchmark's figures to `path` (results/benchmarks/...), when one is given, without machine paths."""
    try:
        from _results import write_json
    except ModuleNotFoundError:
        from benchmarks._results import write_json
    write_json(path, result)
