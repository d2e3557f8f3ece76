"""RayPool: a run's items scored by N Ray actors that each load the model once; this process writes the records.

    mcqa run params/x.yaml --ray auto --workers 4        # or `cluster: {address: auto, workers: 4}` in the file
    from mcqa_toolkit.run.pool import RayPool
    with RayPool("local", workers=2) as pool:             # auto | HOST:PORT | ray://HOST:PORT | local
        result = run_job(job, BackendCache(), pool=pool)

The driver is the process that calls run_job / run (under `mcqa run`, the grid's notebook kernel, where the pool
is held by run.kernel.KernelRuns beside the BackendCache). A run's items are split into blocks exactly as in-process
(run.runner: one item with all its shuffles and options, so the item's stem is shared; several items for padded
generation) and the blocks go to the workers as they free up (run.pool.scheduler); each worker (run.pool.worker)
loads the model once per pool and renews it per run, so a grid loads each model once per worker. The records come
back here and are written by this process alone, through records/ as in-process: no shared filesystem for
outputs, and the one-writer lock, resume and the equality rule hold as they are. The final records equal an
in-process run's by the equality rule, `n_forwarded_tokens` aside (each worker encodes the run's shared prefix
for itself), and records.jsonl holds them in the in-process order.

Which models go to the workers (`serves`): local ones (`hf`, `vllm`) and those given a factory (`put`). A model
behind an API (openai, anthropic, google) keeps running in the driver: its backend already keeps N requests in
flight within the provider's limits and caches every answer on this machine's disk (resume, batch mode), and
workers would multiply the concurrency past those limits and scatter the cache over the nodes. Ray adds
nothing for them.

Resources per worker: run.pool.sizing (by default a CPU worker computes with the in-process run's
threads). A local cluster (`local`) is started here, bound to 127.0.0.1, with max(cores, workers) CPUs. Ray
itself is imported only when a pool connects (`import mcqa_toolkit.run` does not).
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcqa_toolkit.backends import Backend, backend_entry, load_backend
from mcqa_toolkit.backends.base import PooledBackend
from mcqa_toolkit.run.pool.joining import (
    HOST_PORT,
    auth_refused,
    loopback,
    node_ip,
    reachable,
    stay_on_loopback,
    use_local_token,
)
from mcqa_toolkit.run.pool.sizing import cpu_threads, fitting_threads, in_process_threads, worker_resources
from mcqa_toolkit.run.recipe import BackendCache

__all__ = ["RayPool", "ClusterOptions", "cluster_options", "check_address", "require_ray", "INSTALL_HINT", "SERVED"]

INSTALL_HINT = "pip install 'mcqa_toolkit[ray]' (or: pip install 'ray[default]')"
ADDRESS_HELP = "auto, local, HOST:PORT or ray://HOST:PORT"
SERVED = ("hf", "vllm")  # backends whose model is loaded in the process: on a pool, the workers load it
DEFAULT_WORKERS = 2


@dataclass(frozen=True)
class ClusterOptions:
    """Where a grid's runs are scored: a Ray cluster's address and the number of workers per model."""

    address: str
    workers: int = DEFAULT_WORKERS


def check_address(address: Any, where: str = "--ray") -> str:
    """`address` if ray.init takes it (auto, local, HOST:PORT, ray://HOST:PORT), else one clear ValueError."""
    if isinstance(address, str) and address in ("auto", "local"):
        return address
    m = HOST_PORT.match(address) if isinstance(address, str) else None
    if m is None or not 1 <= int(m.group(2)) <= 65535:
        raise ValueError(f"{where} {address!r}: expected {ADDRESS_HELP}")
    return address


def _check_workers(workers: Any, where: str = "--workers") -> int:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"{where} must be a whole number >= 1, got {workers!r}")
    return workers


def cluster_options(block: Any = None, address: str | None = None, workers: int | None = None) -> ClusterOptions | None:
    """The cluster a grid runs on: the params file's `cluster: {address, workers}` block, each key overridden by
    the command line's --ray / --workers; None when neither asks for one. One clear ValueError for bad input."""
    if block is not None and not isinstance(block, dict):
        raise ValueError(f"'cluster' must be a mapping {{address, workers}}, got {block!r}")
    block = block or {}
    unknown = sorted(set(block) - {"address", "workers"}, key=str)
    if unknown:
        raise ValueError(f"cluster: unknown key(s) {unknown}; allowed: address, workers")
    if address is None and "address" not in block:
        if workers is not None:
            raise ValueError("--workers needs --ray ADDRESS (or a `cluster: {address: ...}` block in the params file)")
        if block:
            raise ValueError("cluster: needs an address (auto, local, HOST:PORT or ray://HOST:PORT)")
        return None
    addr = check_address(address, "--ray") if address is not None else check_address(block["address"],
                                                                                       "cluster.address")
    if workers is not None:
        n = _check_workers(workers)
    else:
        n = _check_workers(block.get("workers", DEFAULT_WORKERS), "cluster.workers")
    return ClusterOptions(addr, n)


def require_ray() -> None:
    """One clear error, saying how to install it, when the ray package is missing (checked without importing it)."""
    if importlib.util.find_spec("ray") is None:
        raise ValueError(f"a Ray run needs the ray package, which is not installed: {INSTALL_HINT}")




class RayPool:
    """Workers on a Ray cluster for the runs of one session (see the module docstring). `depth`: blocks held by
    each worker at once; `stall_seconds`: how long without any answer before the run is given up (PoolError);
    `runtime_env`: Ray's, passed to ray.init (e.g. {"py_modules": [...]} to ship this toolkit to the nodes)."""

    def __init__(self, address: str = "local", workers: int = DEFAULT_WORKERS, *,
                 runtime_env: dict[str, Any] | None = None, depth: int = 2, stall_seconds: float = 1800.0):
        self.address = check_address(address, "address")
        self.workers = _check_workers(workers, "workers")
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.runtime_env, self.depth, self.stall_seconds = runtime_env, depth, stall_seconds
        self._factories: dict[str, tuple[dict[str, Any], Callable[[], Backend]]] = {}
        self._group: Any = None
        self._ray: Any = None
        self._owns_connection = False

    def __enter__(self) -> RayPool:
        self.connect()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def connect(self) -> None:
        """Connect to the cluster (or start the local one); an existing connection of this process is used as it is."""
        if self._ray is not None:
            return
        require_ray()
        if self.address == "local":
            stay_on_loopback()
        import ray

        if not ray.is_initialized():
            options: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING",
                                       "runtime_env": self.runtime_env}
            if self.address == "local":
                ray.init(num_cpus=max(os.cpu_count() or 1, self.workers), include_dashboard=False,
                         _node_ip_address="127.0.0.1", **options)
            else:
                if self.address != "auto":  # Ray itself retries an unreachable address for minutes
                    reachable(self.address)
                    use_local_token(self.address)   # what Ray does for `auto` (run.pool.joining)
                if loopback(self.address):      # join where this machine's nodes registered
                    options["_node_ip_address"] = node_ip(self.address)
                    if options["_node_ip_address"] == "127.0.0.1":
                        stay_on_loopback()
                try:
                    ray.init(address=self.address, **options)
                except Exception as e:
                    refused = auth_refused(e, self.address)
                    if refused is None:
                        raise
                    raise refused from e
            self._owns_connection = True
        self._ray = ray

    def put(self, spec: str | dict[str, Any], factory: Callable[[], Backend]) -> None:
        """Load model `spec` on the workers with `factory` (a picklable callable returning a Backend, importable on
        the nodes), e.g. a test or benchmark backend no loader knows; before the first run of that model."""
        entry = backend_entry(spec)
        self._factories[BackendCache.key(entry)] = (entry, factory)

    def serves(self, entry: dict[str, Any]) -> bool:
        """Whether this model is loaded on the workers (local models, factories) or stays in this process (APIs)."""
        return entry.get("backend", "hf") in SERVED or BackendCache.key(entry) in self._factories

    def for_run(self, entries: list[dict[str, Any]]) -> list[Any]:
        """The run's backends (model first, then its judges) as RemoteBackends on the workers, like
        BackendCache.for_run: the model's workers are started once (a new model ends the previous one's) and
        its backends are loaded once per worker, renewed for every run."""
        entries = [backend_entry(e) for e in entries]
        self.connect()
        key = BackendCache.key(entries[0])
        if self._group is None or self._group.key != key:
            self._release()
            from mcqa_toolkit.run.pool.remote import WorkerGroup

            threads = None if key in self._factories else in_process_threads(entries[0])
            resources = worker_resources(entries[0], fitting_threads(threads, self._ray.nodes))
            self._group = WorkerGroup(self._ray, entries[0], self.workers, self._factories, resources, depth=self.depth,
                                      stall_seconds=self.stall_seconds, address=self.address,
                                      threads=None if key in self._factories else cpu_threads(entries[0], resources))
        return self._group.start_run(entries)

    def backend(self, spec: Any) -> Any:
        """The backend of model `spec` for run(): on the workers (a RemoteBackend), or here for an API model."""
        if isinstance(spec, PooledBackend):
            return spec
        if isinstance(spec, Backend):
            raise ValueError("with a pool, give run() the model to load (a name/path or a params-file entry), not a "
                             "loaded backend: each worker loads its own")
        entry = backend_entry(spec)
        return self.for_run([entry])[0] if self.serves(entry) else load_backend(entry)

    def wait_for_workers(self, timeout: float | None = None) -> int:
        """Block until every worker of the current model is ready (or `timeout` seconds); how many are. Runs do
        not wait (a worker joins when it is ready); benchmarks do, to time a whole pool."""
        return 0 if self._group is None else self._group.wait_ready(timeout)

    def _release(self) -> None:
        if self._group is not None:
            self._group.kill()
            self._group = None

    def close(self) -> None:
        """End the workers, and the connection if this pool made it (a local cluster stops with it)."""
        self._release()
        if self._ray is not None and self._owns_connection:
            self._ray.shutdown()
        self._ray, self._owns_connection = None, False
