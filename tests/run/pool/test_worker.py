"""run.pool.worker without Ray (PoolWorker is a plain class): a block's records are the in-process ones, the model
is loaded once per worker and renewed per run (token), a stale task is skipped, a model that cannot load is one
line naming the worker and the model, and protocol calls are forwarded with their usage."""
from __future__ import annotations

import functools
import math

import pytest
from lookup_backend import LookupBackend

from mcqa_toolkit.backends import Continuation, backend_entry
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.factory import run_fields
from mcqa_toolkit.run.pool.worker import PoolWorker, WorkerLoadError
from mcqa_toolkit.run.recipe import BackendCache
from mcqa_toolkit.run.runner import block_records, plan_run
from mcqa_toolkit.run.strategy import strategy

ENTRY = backend_entry("lookup")


@pytest.fixture(scope="module")
def table():
    items = load("demo", language="pt")
    return {it.item_id: [math.log(0.5 if o == it.answer else 0.5 / (it.n_options - 1)) for o in range(it.n_options)]
            for it in items}


def _worker(table, index: int = 0) -> PoolWorker:
    return PoolWorker(index, {BackendCache.key(ENTRY): (ENTRY, functools.partial(LookupBackend, table))})


def _payload(plan, block, run_info):
    return {"block": block, "strategy": plan.strategy, "shots": {it.item_id: plan.shots[it.item_id] for it in block},
            "run_info": run_info, "judges": [], "combine": "mean"}


def test_a_block_scored_on_a_worker_gives_the_in_process_records(table):
    plan = plan_run(load("demo", language="pt"), strategy("enem_1shot", shuffles=3), "demo", limit=3)
    run_info = run_fields(run_id="r", model="lookup", dataset="demo", strategy="enem_1shot",
                          strategy_hash=plan.strategy.hash, method=plan.strategy.method,
                          normalization=plan.strategy.normalization, shots=1, seed=plan.strategy.seed)
    worker = _worker(table)
    info = worker.prepare(1, [ENTRY])
    assert info["loads"] == 1 and info["worker"] == 0 and info["backends"][0]["name"] == "lookup"
    assert info["backends"][0]["capabilities"]["next_token_logprobs"] is True
    block = list(plan.items)[:1]
    got = worker.score(1, [ENTRY], _payload(plan, block, run_info))
    want = block_records(LookupBackend(table), block, plan.strategy, plan.shots, run_info)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in want]
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in got["records"]] == strip
    assert got["usage"] == {"forwarded_tokens": 10} and got["worker"] == 0


def test_a_model_is_loaded_once_per_worker_and_renewed_per_run(tiny_model_dir):
    entry = backend_entry(str(tiny_model_dir))
    worker = PoolWorker(1)
    worker.prepare(1, [entry])
    first = worker.backends[0]
    worker.prepare(1, [entry])  # the same run: the same backend
    assert worker.backends[0] is first
    info = worker.prepare(2, [entry])  # the next run: renewed (fresh caches), not loaded again
    assert info["loads"] == 1 and worker.backends[0] is not first and worker.backends[0].lm is first.lm
    assert worker.score(1, [entry], {}) is None  # a leftover copy of a finished run is skipped


def test_a_model_that_cannot_load_is_one_line_naming_the_worker_and_the_model():
    def missing():
        raise FileNotFoundError("weights not on this node:\n  /models/x")

    entry = backend_entry("broken-model")
    worker = PoolWorker(3, {BackendCache.key(entry): (entry, missing)})
    with pytest.raises(WorkerLoadError) as e:
        worker.prepare(1, [entry])
    line = str(e.value)
    assert "\n" not in line and line.startswith("worker 3 (") and ", pid " in line
    assert "could not load model 'broken-model': FileNotFoundError: weights not on this node: /models/x" in line


def test_calls_are_forwarded_with_their_usage_and_only_protocol_calls(table):
    worker = _worker(table)
    result, usage = worker.call(1, [ENTRY], 0, "loglikelihoods", ([Continuation("", "texto")],), {})
    assert len(result) == 1 and usage == {"forwarded_tokens": 10}
    with pytest.raises(ValueError, match="not a Backend call: 'renew'"):
        worker.call(1, [ENTRY], 0, "renew", (), {})
