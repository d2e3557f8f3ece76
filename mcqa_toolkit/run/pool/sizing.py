"""What each Ray worker of a model asks of its node (Ray actor options), and why.

`worker_resources`: the model entry's `resources` ({num_cpus, num_gpus, memory, resources, accelerator_type}, Ray's
actor options), else `num_gpus` = tensor x pipeline parallel size for vLLM, 1 GPU for a `device: cuda` model, else
as many CPUs as this process has torch threads (`in_process_threads`): Ray gives an actor one torch thread per CPU,
and fp32 sums taken over another number of threads differ by a few 1e-5, so by default a worker computes as the
in-process run would and its records equal that run's (1 CPU for a model given by a factory). `fitting_threads`
caps that at the largest node of the cluster, with a warning.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["RESOURCE_KEYS", "cpu_threads", "fitting_threads", "in_process_threads", "worker_resources"]

RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory", "resources", "accelerator_type")


def in_process_threads(entry: dict[str, Any]) -> int | None:
    """The torch threads an in-process run of this model would compute with (this process's), for a local model
    on the CPU without `resources`; None otherwise (a GPU, a server, resources given)."""
    if entry.get("backend", "hf") != "hf" or entry.get("resources") is not None \
            or str(entry.get("device") or "cpu").startswith("cuda"):
        return None
    from mcqa_toolkit.backends.hf.loading import torch_threads

    return torch_threads()


def worker_resources(entry: dict[str, Any], threads: int | None = None) -> dict[str, Any]:
    """What each worker of this model asks of its node (Ray actor options; see the module docstring); `threads`:
    the in-process run's torch threads (in_process_threads), which a CPU worker asks as CPUs."""
    given = entry.get("resources")
    if given is not None:
        if not isinstance(given, dict) or set(given) - set(RESOURCE_KEYS):
            raise ValueError(f"model {entry.get('model')!r}: resources must be a mapping of {list(RESOURCE_KEYS)}, "
                             f"got {given!r}")
        for key in ("num_cpus", "num_gpus", "memory"):
            if key in given and (isinstance(given[key], bool) or not isinstance(given[key], (int, float))
                                 or given[key] < 0):
                raise ValueError(f"model {entry.get('model')!r}: resources.{key} must be a number >= 0, "
                                 f"got {given[key]!r}")
        return dict(given)
    if entry.get("backend") == "vllm":
        return {"num_gpus": int(entry.get("tensor_parallel_size") or 1) * int(entry.get("pipeline_parallel_size") or 1)}
    if str(entry.get("device") or "").startswith("cuda"):
        return {"num_gpus": 1}
    return {"num_cpus": threads or 1}


def cpu_threads(entry: dict[str, Any], resources: dict[str, Any]) -> int | None:
    """The torch threads a worker of a local model on the CPU computes with (run.pool.worker.PoolWorker): the CPUs
    it asks (`resources`, given or by default); None for a server, an API, a GPU model."""
    if entry.get("backend", "hf") != "hf" or str(entry.get("device") or "cpu").startswith("cuda") \
            or resources.get("num_gpus"):
        return None
    return max(1, int(resources.get("num_cpus") or 1))


def fitting_threads(threads: int | None, nodes: Callable[[], list[dict[str, Any]]]) -> int | None:
    """`threads` CPUs per worker, or as many as the largest alive node has when none has that many (warned: the
    workers' scores may then differ from an in-process run's by a few 1e-5, docs/cluster.md); `nodes`: ray.nodes."""
    if threads is None:
        return None
    largest = max((n["Resources"].get("CPU", 0) for n in nodes() if n.get("Alive")), default=0)
    if largest and threads > largest:
        warnings.warn(f"the in-process run computes with {threads} torch threads, the largest node of the "
                      f"cluster has {largest:g} CPUs: each worker asks {int(largest)}, and its scores may differ "
                      "from an in-process run's past the equality rule's 1e-6 (docs/cluster.md)", stacklevel=4)
        return max(1, int(largest))
    return threads
