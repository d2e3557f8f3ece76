"""run.pool.remote: a RemoteBackend is a Backend whose calls and blocks go to its worker group, with the usage the
workers report; each block carries only its own items' shots and the judges as (backend index, fields); it declares
its workers' items_per_call, so a pooled run cuts the in-process blocks and writes the in-process records. On the
real cluster (marker `ray`): a model's workers serve every run of that model (loaded once) and a new model ends
them; a judge's backend must be one of the pool's; a worker lost during a call is replaced by another."""
from __future__ import annotations

import dataclasses
import functools
import math
import time

import pytest
from lookup_backend import KilledOnce, LookupBackend

from mcqa_toolkit.backends import Backend, Continuation, backend_entry
from mcqa_toolkit.backends.base import PooledBackend
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.run.pool import RayPool
from mcqa_toolkit.run.pool.remote import RemoteBackend
from mcqa_toolkit.run.pool.worker import describe_backend
from mcqa_toolkit.run.runner import block_records, plan_run, run
from mcqa_toolkit.run.strategy import strategy
from mcqa_toolkit.scoring.judge import LLMJudge

DESCRIBED = {"name": "lookup", "capabilities": {"next_token_logprobs": True, "continuation_logprobs": True,
                                                 "generate": True}, "provenance": {"backend": "lookup", "source": "t"},
             "items_per_call": 1}


@pytest.fixture(scope="module")
def table():
    items = load("demo", language="pt")
    return {it.item_id: [math.log(0.6 if o == it.answer else 0.4 / (it.n_options - 1)) for o in range(it.n_options)]
            for it in items}


class Group:
    """A worker group answering in this process: calls on a LookupBackend, blocks as one record per item."""

    def __init__(self, table):
        self.backend, self.payloads, self.backends = LookupBackend(table), [], []

    def call(self, which, method, args, kwargs):
        return getattr(self.backend, method)(*args, **kwargs), {"forwarded_tokens": 10}

    def score(self, n_blocks, payload):
        for i in range(n_blocks):
            self.payloads.append(payload(i))
            yield {"records": [{"item_id": it.item_id} for it in self.payloads[-1]["block"]],
                   "usage": {"forwarded_tokens": 3}}

    def index_of(self, backend):
        return self.backends.index(backend)

    def info(self):
        return {"workers": 1}


def test_a_remote_backend_is_a_backend_whose_calls_go_to_its_workers(table):
    group = Group(table)
    rb = RemoteBackend(group, 0, DESCRIBED)
    assert isinstance(rb, Backend) and rb.name == "lookup" and rb.capabilities.generate
    assert rb.provenance() == {"backend": "lookup", "source": "t"} and rb.usage() == {}
    (got,) = rb.loglikelihoods([Continuation("", "texto")])
    assert got.text == "texto" and rb.usage() == {"forwarded_tokens": 10}
    assert rb.pool_info() == {"workers": 1}


def test_blocks_carry_their_own_shots_and_the_judges_by_index(table):
    group = Group(table)
    model, judge_backend = RemoteBackend(group, 0, DESCRIBED), RemoteBackend(group, 1, DESCRIBED)
    group.backends = [model, judge_backend]
    plan = plan_run(load("demo", language="pt"), strategy("enem_1shot", shuffles=2), "demo", limit=4)
    plan = dataclasses.replace(plan, judges=(LLMJudge(judge_backend, name="j"),))
    blocks = [list(plan.items)[:2], list(plan.items)[2:]]
    records = list(model.score_blocks(blocks, plan, {"run_id": "r"}))
    assert [[r["item_id"] for r in rs] for rs in records] == [[it.item_id for it in b] for b in blocks]
    first = group.payloads[0]
    assert set(first["shots"]) == {it.item_id for it in blocks[0]} and first["run_info"] == {"run_id": "r"}
    assert first["judges"] == [(1, {"name": "j", "language": "en", "path": None, "max_new_tokens": 96})]
    assert model.usage() == {"forwarded_tokens": 6}
    with pytest.raises(ValueError, match="only the run's model scores blocks"):
        list(judge_backend.score_blocks(blocks, plan, {}))


@pytest.mark.ray
def test_a_model_s_workers_serve_its_runs_and_a_new_model_ends_them(ray_cluster, table):
    import ray

    with RayPool(ray_cluster.address, 2) as pool:
        for name in ("lookup-a", "lookup-b"):
            pool.put(name, functools.partial(LookupBackend, table))
        (first,) = pool.for_run([backend_entry("lookup-a")])
        (again,) = pool.for_run([backend_entry("lookup-a")])
        assert again.group is first.group and pool.wait_for_workers(timeout=240) == 2
        assert again.pool_info()["worker_loads"] == {"0": 1, "1": 1}  # loaded once, renewed for the second run
        old = list(first.group.actors)
        (other,) = pool.for_run([backend_entry("lookup-b")])
        assert other.group is not first.group
        # ray.kill returns before the actor is gone: a call sent meanwhile may still be answered, so the test asks
        # until one is refused (120 s bounds a hang)
        deadline = time.monotonic() + 120
        while True:
            try:
                ray.get(old[0].hello.remote(), timeout=60)
            except ray.exceptions.RayActorError:
                break
            assert time.monotonic() < deadline, "the first model's worker still answers 120 s after a new model"
            time.sleep(0.1)


@pytest.mark.ray
def test_a_judge_must_be_one_of_the_pool_s_backends(ray_cluster, table):
    with RayPool(ray_cluster.address, 1) as pool:
        pool.put("lookup", functools.partial(LookupBackend, table))
        model = pool.backend("lookup")
        plan = plan_run(load("demo", language="pt"), strategy("S1"), "demo", limit=1)
        plan = dataclasses.replace(plan, judges=(LLMJudge(LookupBackend(table), name="local"),))
        with pytest.raises(ValueError, match="backend 'lookup' is not loaded on this pool's workers"):
            list(model.score_blocks([list(plan.items)], plan, {}))


@pytest.mark.ray
def test_a_call_whose_worker_dies_is_answered_by_another(ray_cluster, table, tmp_path):
    with RayPool(ray_cluster.address, 2) as pool:
        pool.put("lookup", functools.partial(KilledOnce, table, str(tmp_path / "killed"), 1))
        model = pool.backend("lookup")
        assert pool.wait_for_workers(timeout=240) == 2
        (got,) = model.loglikelihoods([Continuation("", "texto")])  # the first worker asked dies in this call
        assert got.text == "texto" and (tmp_path / "killed").exists()


@pytest.mark.ray
def test_every_question_type_judged_and_an_adaptive_run_give_the_in_process_records(ray_cluster, table, tmp_path):
    """Generation, yes/no and judged short answers (a course exam, its judge loaded on the same workers), and a CAT
    (one call at a time through a worker) give the records of the same runs in this process."""
    from scripted_backends import ScriptedJudge, ScriptedModel

    from mcqa_toolkit.records.equality import assert_same_records
    from mcqa_toolkit.run import Strategy, run

    exam, demo = load("course_exam"), load("demo", language="pt")
    st = Strategy.generate(shuffles=2, max_new_tokens=40)
    cat = Strategy.first_token(shuffles=1, style="enem", adaptive={"se_target": 0.5, "max_items": 6})
    with RayPool(ray_cluster.address, 2) as pool:
        for name, factory in (("scripted", ScriptedModel), ("judge", ScriptedJudge),
                              ("lookup", functools.partial(LookupBackend, table))):
            pool.put(name, factory)
        model, judge = pool.for_run([backend_entry("scripted"), backend_entry("judge")])
        judged = run(exam, model, st, tmp_path / "pool" / "exam", dataset="course_exam",
                     judges=[LLMJudge(judge)], progress=False)
        adaptive = run(demo, "lookup", cat, tmp_path / "pool" / "cat", progress=False, pool=pool)
    assert_same_records(run(exam, ScriptedModel(), st, tmp_path / "ref" / "exam", dataset="course_exam",
                            judges=[LLMJudge(ScriptedJudge())], progress=False), judged, ignore=["n_forwarded_tokens"])
    assert_same_records(run(demo, LookupBackend(table), cat, tmp_path / "ref" / "cat", progress=False), adaptive,
                        ignore=["n_forwarded_tokens"])
    assert set(judged["answer_type"]) == {"single", "multi", "truefalse", "short"}


class MultiItemLookup(LookupBackend):
    """A LookupBackend declaring several items per scoring call (backends.base.MultiItemBackend), as the local
    engine does on a GPU."""

    def __init__(self, table, items_per_call):
        super().__init__(table)
        self.items_per_call = items_per_call


class InProcessGroup(Group):
    """A worker group scoring each block in this process with the workers' own function (run.runner.block_records
    on the worker's backend), so a pooled run's records can be compared with an in-process run's."""

    def __init__(self, table, worker_backend):
        super().__init__(table)
        self.worker_backend = worker_backend

    def score(self, n_blocks, payload):
        for i in range(n_blocks):
            p = payload(i)
            self.payloads.append(p)
            yield {"records": block_records(self.worker_backend, p["block"], p["strategy"], p["shots"],
                                            p["run_info"], (), p["combine"]), "usage": {"forwarded_tokens": 0}}


@pytest.mark.parametrize("name", ["enem_1shot", "S5"])
def test_a_pooled_run_cuts_the_blocks_its_workers_model_cuts_and_equals_in_process(table, tmp_path, name):
    """The pooled backend declares the workers' model's items_per_call (issue 42): blocks of 3 items go out, as
    an in-process run of that model cuts them, and the records are the in-process ones."""
    items, st = load("demo", language="pt"), strategy(name, shuffles=2)
    group = InProcessGroup(table, MultiItemLookup(table, 3))
    remote = RemoteBackend(group, 0, describe_backend(group.worker_backend))
    assert isinstance(remote, PooledBackend) and remote.items_per_call == 3
    pooled = run(items, remote, st, tmp_path / "pooled" / "r", progress=False, limit=8)
    local = run(items, MultiItemLookup(table, 3), st, tmp_path / "local" / "r", progress=False, limit=8)
    assert [len(p["block"]) for p in group.payloads] == [3, 3, 2]
    assert_same_records(pooled, local)
