"""run.pool.sizing: what a Ray worker asks of its node; by default a local model's CPU worker asks the in-process
run's torch threads (so it computes as in-process: tests/run/pool/test_driver.py runs it on a real cluster)."""
from __future__ import annotations

import pytest

from mcqa_toolkit.run.pool.sizing import fitting_threads, in_process_threads, worker_resources


def test_resources_per_worker_come_from_the_model_entry():
    assert worker_resources({"backend": "hf", "model": "m"}) == {"num_cpus": 1}
    assert worker_resources({"backend": "hf", "model": "m"}, threads=3) == {"num_cpus": 3}
    assert worker_resources({"backend": "hf", "model": "m", "device": "cuda:0"}) == {"num_gpus": 1}
    assert worker_resources({"backend": "vllm", "model": "m", "tensor_parallel_size": 4}) == {"num_gpus": 4}
    assert worker_resources({"backend": "vllm", "model": "m", "tensor_parallel_size": 2,
                             "pipeline_parallel_size": 2}) == {"num_gpus": 4}
    given = {"num_gpus": 1, "num_cpus": 8, "resources": {"A100": 1}}
    assert worker_resources({"backend": "hf", "model": "m", "resources": given}) == given
    for bad in ({"gpus": 1}, {"num_gpus": -1}, {"num_cpus": "two"}, [1]):
        with pytest.raises(ValueError, match="model 'm': resources"):
            worker_resources({"backend": "hf", "model": "m", "resources": bad})


def test_a_cpu_worker_asks_as_many_cpus_as_the_in_process_run_has_threads(monkeypatch):
    """By default a local model's CPU worker computes with the in-process run's torch threads (Ray gives an actor one
    thread per CPU it asks), so its fp32 sums are taken as in-process; capped, with a warning, at the largest node."""
    import torch

    monkeypatch.setattr(torch, "get_num_threads", lambda: 6)
    assert in_process_threads({"backend": "hf", "model": "m", "device": None}) == 6
    for other in ({"backend": "hf", "model": "m", "device": "cuda:0"}, {"backend": "vllm", "model": "m"},
                  {"backend": "hf", "model": "m", "resources": {"num_cpus": 1}}):
        assert in_process_threads(other) is None
    def nodes():
        return [{"Alive": True, "Resources": {"CPU": 4.0}}, {"Alive": False, "Resources": {"CPU": 64.0}}]

    assert fitting_threads(None, nodes) is None and fitting_threads(4, nodes) == 4
    with pytest.warns(UserWarning, match=r"computes with 6 torch threads, the largest node of the cluster has 4 CPUs"):
        assert fitting_threads(6, nodes) == 4
