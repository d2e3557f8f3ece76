"""PoolWorker: what one Ray actor of a pool (run.pool) holds and does, on its node: the model it loaded, and the
blocks of items it scores.

It is a plain class (run.pool makes it a Ray actor with `ray.remote`), so it is tested without Ray. Each worker
keeps a BackendCache of its own (run.recipe): a model is loaded once per worker for the whole `mcqa run`, and
renewed for every run (fresh KV caches and token counters, as in-process), which the run's `token` says: a
task of a newer run renews the backends first. A restarted worker (Ray restarts an actor whose process died)
starts empty and loads again on its first task. A block is scored by the function the in-process path uses
(run.runner.block_records), so its records are the in-process ones; they go back to the driver, which alone
writes the run folder.

A model that cannot be loaded raises WorkerLoadError: one line naming the worker (index, host, pid) and the model.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from mcqa_toolkit import __version__
from mcqa_toolkit.backends import Backend
from mcqa_toolkit.backends.base import items_per_call, usage_delta
from mcqa_toolkit.run.jobs import model_label
from mcqa_toolkit.run.recipe import BackendCache
from mcqa_toolkit.run.runner import block_records
from mcqa_toolkit.scoring.judge import LLMJudge

__all__ = ["PoolWorker", "WorkerLoadError", "describe_backend"]


class WorkerLoadError(RuntimeError):
    """A worker could not load a model (one line naming the worker and the model)."""


def describe_backend(backend: Backend) -> dict[str, Any]:
    """What the driver needs to know of a backend a worker loaded: name, capabilities, provenance, and how many
    items it scores per call (backends.base.items_per_call: the driver cuts the run's blocks to it)."""
    return {"name": backend.name, "capabilities": backend.capabilities.as_dict(), "provenance": backend.provenance(),
            "items_per_call": items_per_call(backend)}


def _node() -> dict[str, str]:
    """This worker's node as Ray knows it (ip, id); empty outside a Ray worker."""
    try:
        import ray

        if ray.is_initialized():
            ctx = ray.get_runtime_context()
            return {"node_ip": ray.util.get_node_ip_address(), "node_id": ctx.get_node_id()}
    except ImportError:
        pass
    return {}


class PoolWorker:
    """One worker: `prepare` (load or renew a run's backends), `score` (a block's records), `call` (one protocol
    call, for Min-K% and adaptive runs). `factories`: entry key -> a picklable callable building a backend, for
    models no loader knows (tests, benchmarks: run.pool.RayPool.put). `threads`: the torch threads a local model on
    the CPU computes with here, set before anything loads (the CPUs the worker asked: run.pool.sizing), so that its
    records are those of an in-process run with as many threads whatever the worker's environment or process
    history (an OMP_NUM_THREADS its node inherited, a torch already started with another count)."""

    def __init__(self, index: int, factories: dict[str, tuple[dict[str, Any], Callable[[], Backend]]] | None = None,
                 threads: int | None = None):
        if threads:
            from mcqa_toolkit.backends.hf.loading import set_torch_threads

            set_torch_threads(threads)
        self.threads = threads
        self.index = index
        self.factories = dict(factories or {})
        self.cache = BackendCache()
        self.backends: list[Backend] = []
        self.token = -1
        self.loads = 0

    def hello(self) -> dict[str, Any]:
        """Who and where this worker is, its toolkit version and how many models it has loaded."""
        return {"worker": self.index, "pid": os.getpid(), "host": socket.gethostname(), "version": __version__,
                "loads": self.loads, **_node()}

    def _ready(self, token: int, entries: list[dict[str, Any]]) -> bool:
        """Hold the backends of run `token` (load what is missing, renew the rest); False for a stale token."""
        if token < self.token:
            return False
        if token == self.token:
            return True
        fresh = {BackendCache.key(e) for e in entries if e not in self.cache}
        try:
            for entry in entries:
                made = self.factories.get(BackendCache.key(entry))
                if made is not None and entry not in self.cache:
                    self.cache.put(made[0], made[1]())
            self.backends = self.cache.for_run(entries)
        except Exception as e:
            failed = next((x for x in entries if x not in self.cache), entries[0])
            me = self.hello()
            raise WorkerLoadError(" ".join(
                f"worker {self.index} ({me['host']}{', ' + me['node_ip'] if me.get('node_ip') else ''}, pid "
                f"{me['pid']}) could not load model {model_label(failed)!r}: "
                f"{type(e).__name__}: {e}".split())) from None
        self.loads += len(fresh)
        self.token = token
        return True

    def prepare(self, token: int, entries: list[dict[str, Any]]) -> dict[str, Any]:
        """Load or renew the run's backends; this worker (hello) and what each backend is (describe_backend)."""
        self._ready(token, entries)
        return {**self.hello(), "backends": [describe_backend(b) for b in self.backends]}

    def score(self, token: int, entries: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any] | None:
        """The records of one block (payload: block, strategy, its items' shots, run_info, judges as (backend
        index, LLMJudge fields), combine), the model's usage they cost, and this worker; None for a block of a
        finished run (a leftover copy)."""
        if not self._ready(token, entries):
            return None
        backend = self.backends[0]
        judges = [LLMJudge(self.backends[k], **fields) for k, fields in payload["judges"]]
        before = backend.usage()
        records = block_records(backend, payload["block"], payload["strategy"], payload["shots"],
                                payload["run_info"], judges, payload["combine"])
        return {"records": records, "usage": usage_delta(before, backend.usage()), "worker": self.index,
                "loads": self.loads}

    def call(self, token: int, entries: list[dict[str, Any]], which: int, method: str, args: tuple,
             kwargs: dict[str, Any]) -> tuple[Any, dict[str, float]]:
        """One protocol call (letter_logprobs, loglikelihoods, generate) on backend `which`, and its usage."""
        if method not in ("letter_logprobs", "loglikelihoods", "generate"):
            raise ValueError(f"not a Backend call: {method!r}")
        if not self._ready(token, entries):
            raise RuntimeError(f"worker {self.index} is on a newer run than this call's")
        backend = self.backends[which]
        before = backend.usage()
        result = getattr(backend, method)(*args, **kwargs)
        return result, usage_delta(before, backend.usage())
