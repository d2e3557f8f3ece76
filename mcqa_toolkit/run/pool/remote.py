"""The driver's side of a pool's workers: WorkerGroup (the Ray actors of one model and the run they are on) and
RemoteBackend (a backend loaded on them, as this process sees it).

A RemoteBackend is a Backend (name, capabilities, provenance, usage, the three calls), so everything that asks a
backend something (the run's checks, its provenance, Min-K%, an adaptive run's item-by-item calls) works
unchanged: a call goes to one ready worker, and to another if that one is lost. Its `score_blocks` is what
run.runner uses instead of scoring in this process: the blocks go out through run.pool.scheduler and their
records come back in block order; nothing here writes a file. Imported only once a Ray run is asked for (run.pool).
"""
from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from mcqa_toolkit import __version__
from mcqa_toolkit.backends.base import Capabilities
from mcqa_toolkit.run.jobs import model_label
from mcqa_toolkit.run.pool.scheduler import PROBE_AGAIN_SECONDS, DispatchStats, PoolError, dispatch
from mcqa_toolkit.run.pool.worker import PoolWorker, WorkerLoadError
from mcqa_toolkit.run.recipe import BackendCache

__all__ = ["WorkerGroup", "RemoteBackend", "MAX_RESTARTS"]

MAX_RESTARTS = 3  # Ray restarts a worker whose process or node died this many times, then it is dead for good


def _one_line(exc: BaseException) -> str:
    return " ".join(str(getattr(exc, "cause", None) or exc).split())


class WorkerGroup:
    """The `workers` Ray actors of one model entry (resources per actor from run.pool.worker_resources), spread
    over the nodes, restarted by Ray when their process or node dies (MAX_RESTARTS), and the run they are on."""

    def __init__(self, ray: Any, entry: dict[str, Any], workers: int, factories: dict[str, Any],
                 resources: dict[str, Any], *, depth: int = 2, stall_seconds: float = 1800.0, address: str = "",
                 threads: int | None = None):
        self.ray, self.entry, self.resources = ray, dict(entry), dict(resources)
        self.key = BackendCache.key(self.entry)  # the model these workers hold (run.pool starts a group per model)
        self.depth, self.stall_seconds, self.address = depth, stall_seconds, address
        options = dict(max_restarts=MAX_RESTARTS, max_task_retries=0, scheduling_strategy="SPREAD", **resources)
        actor = ray.remote(PoolWorker).options(**options)
        self.actors = [actor.remote(i, factories, threads) for i in range(workers)]
        self.token = 0
        self.entries: list[dict[str, Any]] = []
        self.backends: list[RemoteBackend] = []
        self.prepares: dict[int, Future] = {}
        self.known: dict[int, dict[str, Any]] = {}
        self.stats = DispatchStats()
        self.blocks_by_worker: Counter[int] = Counter()

    def failure(self, exc: BaseException) -> str | None:
        """run.pool.scheduler's classification of a Ray error: a worker lost (it restarts), dead, or neither."""
        errors = self.ray.exceptions
        if isinstance(exc, WorkerLoadError):
            return None
        if isinstance(exc, (errors.ActorDiedError, errors.ActorUnschedulableError)):
            return "dead"
        if isinstance(exc, (errors.RayActorError, errors.WorkerCrashedError, errors.NodeDiedError,
                            errors.ObjectLostError)):
            return "lost"
        return None

    def error(self, exc: BaseException) -> BaseException:
        """What to raise for a worker's error: a model that cannot load is one line (PoolError); others as raised."""
        return PoolError(_one_line(exc)) if isinstance(exc, WorkerLoadError) else exc

    def start_run(self, entries: Sequence[dict[str, Any]]) -> list[RemoteBackend]:
        """Ask every worker to load (first run) or renew (later runs) the run's backends; return once one is
        ready, as RemoteBackends (the others join the run as they become ready)."""
        self.token += 1
        self.entries = [dict(e) for e in entries]
        self.prepares = {i: self._prepare(i) for i in range(len(self.actors))}
        info = self._first_ready()
        if info["version"] != __version__:
            raise PoolError(f"worker {info['worker']} ({info['host']}) runs mcqa_toolkit {info['version']}, this "
                            f"process {__version__}: install the same version on every node")
        self.backends = [RemoteBackend(self, k, d) for k, d in enumerate(info["backends"])]
        return self.backends

    def _prepare(self, i: int) -> Future:
        future = self.actors[i].prepare.remote(self.token, self.entries).future()
        future.add_done_callback(lambda f: self._note(f.result()) if f.exception() is None else None)
        return future

    def _note(self, info: dict[str, Any]) -> None:
        self.known[info["worker"]] = {**self.known.get(info["worker"], {}), **{k: v for k, v in info.items()
                                                                                   if k != "backends"}}

    def _first_ready(self) -> dict[str, Any]:
        pending = {f: i for i, f in self.prepares.items()}
        deadline, last = time.monotonic() + self.stall_seconds, ""
        while time.monotonic() < deadline:
            done, _ = wait(list(pending), timeout=max(0.0, deadline - time.monotonic()), return_when=FIRST_COMPLETED)
            for f in done:
                i, exc = pending.pop(f), f.exception()
                if exc is None:
                    return f.result()
                kind = self.failure(exc)
                if kind is None:
                    raise self.error(exc) from None
                last = _one_line(exc)[:300]
                if kind == "lost":  # Ray is restarting it: ask again shortly
                    time.sleep(PROBE_AGAIN_SECONDS)
                    self.prepares[i] = self._prepare(i)
                    pending[self.prepares[i]] = i
            if not pending:
                raise PoolError(f"no worker of {model_label(self.entry)!r} could start; the last error: {last}")
        raise PoolError(f"no worker of {model_label(self.entry)!r} became ready in {self.stall_seconds:.0f} s: "
                        f"does the cluster have what each asks ({self.resources})? {last}")

    def wait_ready(self, timeout: float | None = None) -> int:
        """Wait until every worker has prepared the current run (or `timeout` seconds); how many have."""
        wait(list(self.prepares.values()), timeout=timeout)
        return sum(f.done() and f.exception() is None for f in self.prepares.values())

    def index_of(self, backend: Any) -> int:
        """Which of this run's backends `backend` is (a judge's backend must be one of them)."""
        for k, b in enumerate(self.backends):
            if b is backend:
                return k
        raise ValueError(f"backend {getattr(backend, 'name', backend)!r} is not loaded on this pool's workers: with a "
                         "pool, judges are LLMJudges over backends of pool.for_run([model, judge, ...])")

    def score(self, n_blocks: int, payload: Callable[[int], dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Each block's result (records, usage, worker), in block order, each once (run.pool.scheduler)."""
        def submit(w: int, i: int) -> Future:
            return self.actors[w].score.remote(self.token, self.entries, payload(i)).future()

        def probe(w: int) -> Future:  # a restarted worker loads the model again before it takes blocks
            self.prepares[w] = self._prepare(w)
            return self.prepares[w]

        self.stats, self.blocks_by_worker = DispatchStats(), Counter()  # this run's (info() reports them)
        waiting = {w: f for w, f in self.prepares.items() if not f.done() or f.exception() is not None}
        try:
            # a copy still out when the run is over is left to finish, its result ignored: cancelling a running
            # actor task interrupts it (KeyboardInterrupt) wherever it is, e.g. inside the engine's KV cache update
            for _, result in dispatch(n_blocks, range(len(self.actors)), submit, probe, self.failure, probes=waiting,
                                      depth=self.depth, stall_seconds=self.stall_seconds, stats=self.stats):
                self.blocks_by_worker[result["worker"]] += 1
                self.known.setdefault(result["worker"], {})["loads"] = result["loads"]
                yield result
        except WorkerLoadError as e:
            raise self.error(e) from None

    def call(self, which: int, method: str, args: tuple, kwargs: dict[str, Any]) -> tuple[Any, dict[str, float]]:
        """One protocol call on a ready worker (another one if it is lost), and its usage."""
        deadline, last = time.monotonic() + self.stall_seconds, ""
        ready = [w for w, f in self.prepares.items() if f.done() and f.exception() is None]
        order = ready + [w for w in range(len(self.actors)) if w not in ready]
        while time.monotonic() < deadline:
            for w in order:
                future = self.actors[w].call.remote(self.token, self.entries, which, method, args, kwargs).future()
                try:
                    return future.result(timeout=max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    break
                except Exception as e:
                    if self.failure(e) is None:
                        raise self.error(e) from None
                    last = _one_line(e)[:300]
            time.sleep(PROBE_AGAIN_SECONDS)
        raise PoolError(f"no worker answered a {method} call in {self.stall_seconds:.0f} s; the last error: {last}")

    def info(self) -> dict[str, Any]:
        """The pool as a run's provenance records it: Ray's version, the address, workers, their nodes, how many
        models each has loaded so far, how many blocks each scored, and the run's retries and copies."""
        known = dict(self.known)  # a copy: Ray's callback thread adds to it when a worker becomes ready
        return {"ray": self.ray.__version__, "address": self.address, "workers": len(self.actors),
                "resources_per_worker": self.resources,
                "nodes": sorted({k["node_ip"] for k in known.values() if k.get("node_ip")}),
                "worker_loads": {str(w): k.get("loads") for w, k in sorted(known.items())},
                "blocks_by_worker": {str(w): n for w, n in sorted(self.blocks_by_worker.items())},
                **self.stats.as_dict()}

    def kill(self) -> None:
        """End the actors (and their models); Ray does not restart them."""
        for actor in self.actors:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # the cluster is gone already
                pass
        self.actors = []


class RemoteBackend:
    """A backend loaded on a pool's workers (one of a run's entries, `which`), as this process sees it: what it
    is (name, capabilities, provenance, as the first ready worker described it), its usage as the workers
    reported it for this process's blocks and calls, its three calls forwarded to a worker, and what a
    backends.base.PooledBackend offers: `items_per_call` (the workers' model's, so the run cuts the blocks an
    in-process run of that model cuts), `score_blocks` and `pool_info`."""

    def __init__(self, group: WorkerGroup, which: int, described: dict[str, Any]):
        self.group, self.which = group, which
        self.name = described["name"]
        self.items_per_call: int = described["items_per_call"]
        self._capabilities = Capabilities(**described["capabilities"])
        self._provenance = described["provenance"]
        self._usage: dict[str, float] = {}

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def provenance(self) -> dict[str, Any]:
        return dict(self._provenance)

    def usage(self) -> dict[str, float]:
        return dict(self._usage)

    def _add(self, delta: dict[str, float]) -> None:
        for k, v in delta.items():
            self._usage[k] = self._usage.get(k, 0) + v

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result, delta = self.group.call(self.which, method, args, kwargs)
        self._add(delta)
        return result

    def letter_logprobs(self, prompts: Sequence[Any]) -> list[Any]:
        return self._call("letter_logprobs", list(prompts))

    def loglikelihoods(self, requests: Sequence[Any]) -> list[Any]:
        return self._call("loglikelihoods", list(requests))

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Any]:
        return self._call("generate", list(prompts), max_new_tokens=max_new_tokens, temperature=temperature,
                          stop=tuple(stop), seeds=None if seeds is None else list(seeds))

    def score_blocks(self, blocks: Sequence[Sequence[Any]], plan: Any, run_info: dict[str, Any]) -> Iterator[list]:
        """The records of each block (run.runner.RunPlan's strategy, shots, judges), in block order, each block
        once, scored by the workers."""
        if self.which != 0:
            raise ValueError("only the run's model scores blocks; a judge's backend does not")
        judges = [(self.group.index_of(j.backend), {f.name: getattr(j, f.name) for f in dataclasses.fields(j)
                                                    if f.init and f.name != "backend"}) for j in plan.judges]

        def payload(i: int) -> dict[str, Any]:
            block = list(blocks[i])
            return {"block": block, "strategy": plan.strategy, "shots": {it.item_id: plan.shots[it.item_id]
                                                                          for it in block},
                    "run_info": run_info, "judges": judges, "combine": plan.combine}

        for result in self.group.score(len(blocks), payload):
            self._add(result["usage"])
            yield result["records"]

    def pool_info(self) -> dict[str, Any]:
        return self.group.info()
