"""The real Ray cluster of the pool tests (marker `ray`): a head and two worker nodes on this machine, bound to
127.0.0.1, CPU only, started once per session for the first test that asks for it, stopped after the last one (an
idle cluster holds ~1.3 GB and a few % of a core) and in any case when the session ends; skipped where ray is not
installed."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import isolation
import pytest
from paths import REPO, TESTS

WORKER_CPUS = 2  # per worker node: two nodes hold 4 one-CPU workers (the scaling test's largest pool)
_STOPS: list = []  # how to stop the running cluster (at most one), for pytest_runtest_teardown


@contextlib.contextmanager
def _environment(changes: dict[str, str]) -> Iterator[None]:
    """os.environ with `changes` while the block runs (processes started then inherit them), as it was after."""
    saved = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@dataclass
class LocalCluster:
    """A running ray.cluster_utils.Cluster, its address, and its worker nodes (the head has no CPU: every
    worker runs on a worker node, so removing one kills the workers it hosts)."""

    cluster: Any
    address: str
    env: dict[str, str]                 # what a process needs to join as a driver, or to start a node
    nodes: list = field(default_factory=list)
    cpus_per_node: int = WORKER_CPUS

    def add_worker_node(self) -> Any:
        with _environment(self.env):
            node = self.cluster.add_node(num_cpus=WORKER_CPUS, node_ip_address="127.0.0.1")
        self.nodes.append(node)
        return node

    def remove_worker_node(self, node: Any) -> None:
        """The node's processes (its raylet, its workers) are killed at once, as when a machine is lost."""
        self.nodes.remove(node)
        self.cluster.remove_node(node, allow_graceful=False)


@pytest.fixture(scope="session")
def ray_cluster():
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]')")
    import ray
    from ray.cluster_utils import Cluster

    from mcqa_toolkit.run.pool import RayPool

    tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    # this cluster's sessions, logs and address file apart from any other Ray on the machine; the nodes' workers
    # import this checkout's package and the tests' backends (tests/lookup_backend.py)
    env = {"RAY_TMPDIR": tmp, "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS),
                                                               *filter(None, [os.environ.get("PYTHONPATH")])])}
    cluster, driver, stopped = None, None, []

    def stop() -> None:
        if stopped:
            return
        stopped.append(True)
        if driver is not None:
            driver.close()
        if ray.is_initialized():
            ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
        signal.signal(signal.SIGTERM, sigterm)  # Ray's head node installs its own handler for its lifetime
        for key in os.environ.keys() - environ_before.keys():  # what Ray and RayPool.connect set for this process
            os.environ.pop(key)
        for key in held:
            isolation.release(key)

    _STOPS.append(stop)
    sigterm, environ_before = signal.getsignal(signal.SIGTERM), dict(os.environ)
    held = ["signal:SIGTERM"]  # state the running cluster holds in this process (tests/isolation.py)
    isolation.hold("signal:SIGTERM", "ray_cluster")
    try:
        with _environment(env):
            cluster = Cluster(initialize_head=True, head_node_args={
                "num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False, "gcs_server_port": 0,
                "dashboard_agent_listen_port": 0,
                # a lost node is noticed after ~3 s (Ray's default is ~30 s), so its workers restart during the test
                "_system_config": {"health_check_period_ms": 600, "health_check_failure_threshold": 5}})
            local = LocalCluster(cluster, cluster.address, env)
            for _ in range(2):
                local.add_worker_node()
            driver = RayPool(cluster.address, 1)
            driver.connect()  # this process joins as the driver (bound to 127.0.0.1); pools made in tests reuse it
        held += [f"env:{k}" for k in os.environ.keys() - environ_before.keys()]
        for key in held:
            isolation.hold(key, "ray_cluster")
        yield local
    finally:
        stop()
        _STOPS.remove(stop)


def _uses_cluster(item) -> bool:
    """Whether a collected item requests the cluster (notebook cells collected by nbval have no fixtures)."""
    return "ray_cluster" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test that uses the cluster is `alone` (before the checkout's conftest.py checks where such tests live, a
    hook registered earlier): each of the cluster's nodes must register within Ray's fixed 30 s
    (ray/_private/node.py), which 10 of 10 such tests missed beside the other worker's load in a fresh-clone
    `make test` on a 2-core AMD EPYC."""
    for item in items:
        if _uses_cluster(item):
            item.add_marker(pytest.mark.alone)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """Stop the cluster after the last test of the session that uses it."""
    if _STOPS and _uses_cluster(item):
        later = item.session.items[item.session.items.index(item) + 1:]
        if not any(_uses_cluster(other) for other in later):
            _STOPS[0]()
