"""run.pool: what a Ray run is given (address, workers, resources; one clear line for bad input or a missing ray),
and, on a real Ray cluster on this machine (marker `ray`, tests/run/conftest.py): `mcqa run --ray` on the embedded
model gives the in-process records with each worker loading the model once for the grid; a worker process
SIGKILLed mid-run, the driver killed mid-run, and a worker node removed mid-run each end with every record exactly
once, equal to an in-process run; and a latency-bound run scales with the workers (benchmarks/ray_scaling.py)."""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from lookup_backend import Gated, KilledOnce, LookupBackend, Together
from paths import REPO

from mcqa_toolkit import cli
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run.jobs import Job, expand, load_params
from mcqa_toolkit.run.pool import ClusterOptions, RayPool, check_address, cluster_options, require_ray
from mcqa_toolkit.run.recipe import BackendCache, run_job

IGNORE = ["n_forwarded_tokens"]  # each worker encodes the run's shared prefix for itself


@pytest.fixture(scope="module")
def table():
    items = load("demo", language="pt")
    return {it.item_id: [math.log(0.6 if o == (it.answer + 1) % it.n_options else 0.4 / (it.n_options - 1))
                         for o in range(it.n_options)] for it in items}


# ---- what a Ray run is given -------------------------------------------------------------------------------
@pytest.mark.parametrize("address", ["auto", "local", "127.0.0.1:6379", "ray://head-node:10001", "[::1]:6379",
                                     "node-7.cluster.example:6380"])
def test_addresses_ray_init_takes_are_accepted(address):
    assert check_address(address) == address


@pytest.mark.parametrize("address", ["", "head", "head:", "head:0", "head:70000", "http://head:8265", "auto ", 6379])
def test_other_addresses_are_one_clear_error(address):
    with pytest.raises(ValueError, match=r"^--ray .*: expected auto, local, HOST:PORT or ray://HOST:PORT$"):
        check_address(address)


def test_the_command_line_wins_over_the_params_file_cluster_block():
    block = {"address": "auto", "workers": 3}
    assert cluster_options(block) == ClusterOptions("auto", 3)
    assert cluster_options(block, "local") == ClusterOptions("local", 3)
    assert cluster_options(block, None, 5) == ClusterOptions("auto", 5)
    assert cluster_options(None, "10.0.0.1:6379") == ClusterOptions("10.0.0.1:6379", 2)
    assert cluster_options(None) is None and cluster_options({}) is None
    for bad, match in [({"workers": 2}, "cluster: needs an address"), ({"address": "auto", "gpus": 1}, "unknown key"),
                       ({"address": "auto", "workers": 0}, r"cluster.workers must be a whole number >= 1, got 0"),
                       ({"address": "auto", "workers": True}, "got True"), ("auto", "must be a mapping")]:
        with pytest.raises(ValueError, match=match):
            cluster_options(bad)
    with pytest.raises(ValueError, match=r"--workers needs --ray ADDRESS"):
        cluster_options(None, None, 4)
    with pytest.raises(ValueError, match=r"--workers must be a whole number >= 1, got -1"):
        cluster_options(block, None, -1)


def test_a_pool_is_given_a_valid_address_and_worker_count_and_serves_local_models_only():
    with pytest.raises(ValueError, match="address 'head'"):
        RayPool("head")
    with pytest.raises(ValueError, match="workers must be a whole number >= 1, got 0"):
        RayPool("local", 0)
    pool = RayPool("local", 2)
    assert pool.serves({"backend": "hf", "model": "m"}) and pool.serves({"backend": "vllm", "model": "m"})
    api = {"backend": "openai", "model": "gpt-4o-mini"}
    assert not pool.serves(api)  # API models keep running in the driver
    pool.put(api, dict)  # unless given a factory for the workers
    assert pool.serves(api)


def _params(tmp_path: Path, **extra) -> Path:
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump({"output_dir": "out", "models": ["gemma-3-270m"], "datasets": ["demo"],
                                 "languages": ["pt"], "strategies": ["S5"], "limit": 2, **extra}))
    return p


def test_bad_ray_input_is_one_error_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = [(["--ray", "nowhere"], "mcqa: error: --ray 'nowhere': expected auto, local, HOST:PORT or ray://HOST:PORT"),
             (["--workers", "2"], "mcqa: error: --workers needs --ray ADDRESS"),
             (["--ray", "local", "--workers", "0"], "mcqa: error: --workers must be a whole number >= 1, got 0"),
             (["--ray", "local", "--batch-submit"], "mcqa: error: --ray / --workers and batch mode do not combine")]
    for args, line in cases:
        assert cli.main(["run", str(_params(tmp_path)), *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith(line) and err.count("\n") == 1, err
    bad = _params(tmp_path, cluster={"address": "head", "workers": 2})
    assert cli.main(["run", str(bad), "--dry-run"]) == 2
    assert capsys.readouterr().err == f"mcqa: error: {bad}: cluster.address 'head': expected auto, local, HOST:PORT " \
                                      "or ray://HOST:PORT\n"
    assert load_params(_params(tmp_path, cluster={"address": "auto"}))["cluster"] == {"address": "auto"}


def test_a_dry_run_says_where_the_runs_would_be_scored(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = _params(tmp_path, cluster={"address": "auto", "workers": 3})
    assert cli.main(["run", str(p), "--dry-run", "--workers", "4"]) == 0
    assert "1 to run; on the Ray cluster auto (4 workers per model)" in capsys.readouterr().out


def test_a_ray_run_without_ray_installed_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ValueError, match=r"needs the ray package, which is not installed: pip install "
                                         r"'mcqa_toolkit\[ray\]'"):
        require_ray()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", str(_params(tmp_path)), "--ray", "local"]) == 2
    assert "mcqa_toolkit[ray]" in capsys.readouterr().err and not (tmp_path / "out").exists()


# ---- on a real cluster ----------------------------------------------------------------------------------------
def _keys(run_dir: RunDir) -> list[tuple[str, int]]:
    return [(r["item_id"], r["shuffle"]) for r in run_dir.read_records()]


def _exactly_once_and_in_process_records(got_dir: RunDir, ref_dir: RunDir) -> int:
    """Every record of the reference once, in its order, equal by the equality rule; the number of records."""
    keys = _keys(got_dir)
    assert keys == _keys(ref_dir) and len(keys) == len(set(keys))  # nothing twice, in the in-process order
    assert_same_records(ref_dir.load(), got_dir.load(), ignore=IGNORE)
    return len(keys)


def _lookup_job(out: Path, **kw) -> Job:
    return Job("lookup", "demo", {}, "pt", "enem_1shot", out / "run", **{"shuffles": 3, "min_k": False, **kw})


def _started(pool: RayPool, spec: str = "lookup") -> None:
    """Every worker started with its model, so that a fault lands mid-run whatever the machine's load."""
    pool.backend(spec)
    assert pool.wait_for_workers(timeout=240) == pool.workers


@contextlib.contextmanager
def _gate(path: Path, opens_when):
    """While the block runs, a thread creates the file `path` (the gate Gated / KilledOnce calls wait for) as soon
    as `opens_when()` holds: the run cannot end before what the test waits for has happened."""
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            if opens_when():
                path.touch()
                return
            stop.wait(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(timeout=60)


def _loss_seen(pool: RayPool) -> bool:
    """Whether the pool's current run has seen a worker lost (its dispatch counted it)."""
    return pool._group is not None and pool._group.stats.workers_lost >= 1


def _in_process(table, job: Job) -> RunDir:
    cache = BackendCache()
    cache.put("lookup", LookupBackend(table))
    run_job(job, cache, progress=False)
    return job.run_dir


@pytest.mark.ray
def test_mcqa_run_on_two_workers_gives_the_in_process_records(ray_cluster, gemma, tmp_path):
    """(a) The embedded model through 2 workers with the default resources: the in-process records by the equality
    rule, each worker loading the model once for the whole grid; a model that cannot load on a worker is one line
    naming the worker and the model. By default each worker asks as many CPUs as the driver has torch threads
    (Ray gives a worker one thread per CPU), so its fp32 sums are the in-process run's (with 1 thread against 2 the
    scores differ within THREADS_BOUND: the next test holds that bound). The driver (`mcqa run`'s
    kernel) and the in-process reference both compute with the worker nodes' CPU count, whatever this machine has."""
    import torch

    from mcqa_toolkit.backends.hf import HFBackend

    threads = ray_cluster.cpus_per_node  # the in-process run's threads: one worker per node, with all of its CPUs
    gemma_entry = {"model": "gemma-3-270m"}
    spec = {"output_dir": "out", "models": [gemma_entry, "/nonexistent/weights"], "datasets": ["demo"],
            "languages": ["pt"], "strategies": ["enem_0shot", "S5"], "limit": 3, "shuffles": 2}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(spec))
    done = subprocess.run([sys.executable, "-m", "mcqa_toolkit.cli", "run", "p.yaml", "--ray", ray_cluster.address,
                           "--workers", "2"], cwd=tmp_path,
                          env={**os.environ, **ray_cluster.env, "OMP_NUM_THREADS": str(threads)},
                          capture_output=True, text=True, timeout=540)
    assert done.returncode == 1, done.stdout + done.stderr  # the missing model's runs failed, the others not
    failed = [line for line in done.stdout.splitlines() if "FAILED nonexistent-weights" in line]
    assert len(failed) == 2 and all(
        "PoolError: worker " in line and ", pid " in line and "could not load model '/nonexistent/weights': OSError"
        in line for line in failed), done.stdout
    cache = BackendCache()
    cache.put(gemma_entry, HFBackend(gemma))
    jobs = [j for j in expand(load_params(tmp_path / "p.yaml"), base_dir=tmp_path / "ref") if j.model == "gemma-3-270m"]
    loads, threads_before = [], torch.get_num_threads()
    for job in jobs:
        torch.set_num_threads(threads)
        try:
            ref = run_job(job, cache, progress=False)
        finally:
            torch.set_num_threads(threads_before)
        got = RunDir(tmp_path / "out" / job.run_dir.name)
        _exactly_once_and_in_process_records(got, job.run_dir)
        pool = got.provenance()["pool"]
        assert pool["workers"] == 2 and pool["nodes"] == ["127.0.0.1"] and pool["blocks"] == 3
        assert pool["resources_per_worker"] == {"num_cpus": threads}  # the default: the in-process threads
        loads.append(pool["worker_loads"])
        if ref.min_k is not None:
            import pandas as pd

            pd.testing.assert_frame_equal(pd.read_parquet(got.min_k_file), ref.min_k, atol=1e-6)
    assert loads[-1] == {"0": 1, "1": 1}  # each worker loaded the model once for both runs


def _pool_figures(info: dict, records: int) -> dict:
    """What a Ray fault test records for results/tests/reliability.json: the run's records and its dispatch counts."""
    return {"cases": 1, "records": records, "blocks": info["blocks"], "blocks_sent": info["sent"],
            "blocks_sent_again_after_a_loss": info["retried"], "backup_copies": info["copies"],
            "workers_lost": info["workers_lost"]}


THREADS_BOUND = 1e-4  # docs/invariance.md: scores with 1 torch thread against 2 stay within it (measured far below)


@pytest.mark.ray
def test_a_worker_given_fewer_cpus_computes_with_as_many_threads_within_the_stated_bound(ray_cluster, gemma,
                                                                                        tmp_path):
    """The condition the README states: a CPU worker given `resources: {num_cpus: 1}` computes with 1 torch thread
    (Ray's rule), so its records equal an in-process run with 1 thread by the equality rule, and differ from the
    default (2 threads here) by at most THREADS_BOUND, with the same choices."""
    import torch

    from mcqa_toolkit.backends.hf import HFBackend
    from mcqa_toolkit.run import run
    from mcqa_toolkit.run.strategy import strategy

    items, st = load("demo", language="pt"), strategy("enem_0shot", shuffles=2)
    entry = {"model": "gemma-3-270m", "device": "cpu", "dtype": "float32", "resources": {"num_cpus": 1}}
    with RayPool(ray_cluster.address, 1) as pool:
        got = run(items, entry, st, tmp_path / "pool", limit=4, progress=False, pool=pool)
    before = torch.get_num_threads()
    refs = {}
    for threads in (1, ray_cluster.cpus_per_node):
        torch.set_num_threads(threads)
        try:
            refs[threads] = run(items, HFBackend(gemma), st, tmp_path / f"t{threads}", limit=4, progress=False)
        finally:
            torch.set_num_threads(before)
    assert_same_records(refs[1], got, ignore=IGNORE + ["run_id"])
    far = refs[ray_cluster.cpus_per_node]
    delta = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
                for a, b in zip(far.sort_values(["item_id", "shuffle"])["option_scores"],
                                got.sort_values(["item_id", "shuffle"])["option_scores"], strict=True))
    assert delta <= THREADS_BOUND, delta  # another thread count may move the scores, within the bound
    assert (far.sort_values(["item_id", "shuffle"])["choice"].to_numpy()
            == got.sort_values(["item_id", "shuffle"])["choice"].to_numpy()).all()


@pytest.mark.ray
@pytest.mark.faults
def test_a_worker_killed_mid_run_ends_with_every_record_once(ray_cluster, table, tmp_path, figures):
    """(b) A worker's process SIGKILLed inside its 4th backend call: its blocks are computed by the other worker
    (sent again once Ray reports the loss), Ray restarts it, and every record is written once, equal to an
    in-process run. After the kill every call waits until the pool has seen the loss (a gate file), so the run
    cannot end before it, whatever the machine's speed; the test asserts it."""
    marker, gate = tmp_path / "killed", tmp_path / "gate"
    job = _lookup_job(tmp_path / "pool")
    with RayPool(ray_cluster.address, 2) as pool:
        pool.put("lookup", functools.partial(KilledOnce, table, str(marker), 4, 0.1, str(gate)))
        _started(pool)
        with _gate(gate, lambda: _loss_seen(pool)):
            run_job(job, BackendCache(), progress=False, pool=pool)
    assert marker.exists()  # a worker process did die
    n = _exactly_once_and_in_process_records(job.run_dir, _in_process(table, _lookup_job(tmp_path / "ref")))
    info = job.run_dir.provenance()["pool"]
    assert n == 180 and info["blocks"] == 60, info
    assert info["workers_lost"] >= 1 and info["sent"] > 60, info  # the pool saw the loss
    figures.add("ray_worker_killed", **_pool_figures(info, n))


@pytest.mark.ray
@pytest.mark.faults
def test_the_driver_killed_mid_run_resumes_from_its_records(ray_cluster, table, tmp_path, figures):
    """The driver SIGKILLed mid-run (its workers die with it): a new driver resumes from the records written. Each
    worker's calls after its 20th wait for a gate never opened, so the killed run cannot have ended first."""
    job = _lookup_job(tmp_path / "pool")
    script = tmp_path / "driver.py"
    script.write_text(f"""
import functools, math
from lookup_backend import Gated
from mcqa_toolkit.datasets import load
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.pool import RayPool
from mcqa_toolkit.run.recipe import BackendCache, run_job
table = {table!r}
with RayPool({ray_cluster.address!r}, 2) as pool:
    pool.put("lookup", functools.partial(Gated, table, {str(tmp_path / "never")!r}, 20, 0.05))
    pool.backend("lookup")
    pool.wait_for_workers(timeout=240)
    run_job(Job("lookup", "demo", {{}}, "pt", "enem_1shot", {str(job.run_dir.dir)!r}, shuffles=3, min_k=False),
            BackendCache(), progress=False, pool=pool)
""")
    driver = subprocess.Popen([sys.executable, str(script)], env={**os.environ, **ray_cluster.env},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while len(_keys(job.run_dir)) < 30:
            assert driver.poll() is None, driver.stderr.read()
            assert time.monotonic() < deadline, "the driver wrote no records in time"
            time.sleep(0.05)
        driver.kill()
    finally:
        driver.kill()
        driver.wait(timeout=60)
    assert driver.returncode == -signal.SIGKILL  # the driver was killed, it did not finish
    before = _keys(job.run_dir)
    assert 30 <= len(before) < 180 and not job.run_dir.is_complete()
    with RayPool(ray_cluster.address, 2) as pool:
        pool.put("lookup", functools.partial(LookupBackend, table))
        run_job(job, BackendCache(), progress=False, pool=pool)
    assert _keys(job.run_dir)[:len(before)] == before  # what the killed driver wrote is kept as it was
    n = _exactly_once_and_in_process_records(job.run_dir, _in_process(table, _lookup_job(tmp_path / "ref")))
    assert n == 180
    figures.add("ray_driver_killed", cases=1, records=n, records_before_the_kill=len(before),
                records_written_on_resume=n - len(before))


@pytest.mark.ray
def test_a_latency_bound_run_scales_with_the_workers(ray_cluster, table, tmp_path):
    """(d) A pool of 4 computes on its 4 workers at once (each worker's first call waits until all 4 are inside
    one: a serialising pool would never get there), with the in-process records; benchmarks/ray_scaling.py runs
    at 1 and 4 workers with equal records. How well it scales (efficiency, a wall-clock figure) is the benchmark's
    to measure (docs/performance.md), not a condition here."""
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    job = _lookup_job(tmp_path / "pool", shuffles=1)
    with RayPool(ray_cluster.address, 4) as pool:
        pool.put("lookup", functools.partial(Together, table, str(meeting), 4))
        _started(pool)
        run_job(job, BackendCache(), progress=False, pool=pool)
    assert len(list(meeting.iterdir())) == 4
    _exactly_once_and_in_process_records(job.run_dir, _in_process(table, _lookup_job(tmp_path / "ref", shuffles=1)))
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "ray_scaling.py"), "--address",
                           ray_cluster.address, "--items", "16", "--shuffles", "2", "--delay", "0.05", "--workers", "1",
                           "4", "--json", str(tmp_path / "scaling.json")],
                          env={**os.environ, **ray_cluster.env}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr  # it exits 1 when the records differ across pool sizes
    assert set(json.loads((tmp_path / "scaling.json").read_text())["efficiency"]) == {"1", "4"}
    assert "RESULT ray_scaling workers=1" in done.stdout


@pytest.mark.ray
@pytest.mark.faults
def test_a_worker_node_removed_mid_run_ends_with_every_record_once(ray_cluster, table, tmp_path, figures):
    """(c) A worker node (its raylet and the worker on it) killed once 10 records are written: the run ends with
    every record once, equal to an in-process run, the lost worker's blocks sent again once Ray reported the loss.
    Each worker's calls after its 10th wait until the node is removed and the pool has seen the loss (a gate
    file), so neither can come after the run's end. The node is replaced afterwards for the tests that follow."""
    job, gate = _lookup_job(tmp_path / "pool", shuffles=2), tmp_path / "gate"
    removed_at: list[int] = []

    def node_removed_and_loss_seen(pool: RayPool) -> bool:
        if not removed_at:
            if len(_keys(job.run_dir)) < 10:
                return False
            removed_at.append(len(_keys(job.run_dir)))
            ray_cluster.remove_worker_node(ray_cluster.nodes[0])
        return _loss_seen(pool)

    try:
        with RayPool(ray_cluster.address, 2) as pool:
            pool.put("lookup", functools.partial(Gated, table, str(gate), 10, 0.1))
            _started(pool)
            with _gate(gate, lambda: node_removed_and_loss_seen(pool)):
                run_job(job, BackendCache(), progress=False, pool=pool)
    finally:
        while len(ray_cluster.nodes) < 2:
            ray_cluster.add_worker_node()
    n = _exactly_once_and_in_process_records(job.run_dir, _in_process(table, _lookup_job(tmp_path / "ref",
                                                                                          shuffles=2)))
    pool_info = job.run_dir.provenance()["pool"]
    assert removed_at and removed_at[0] < 120 and n == 120, (removed_at, pool_info)
    assert pool_info["workers_lost"] >= 1 and pool_info["sent"] > 60, pool_info  # the pool saw the loss
    figures.add("ray_node_lost", **_pool_figures(pool_info, n), records_before_the_loss=removed_at[0])


def _namespaces() -> bool:
    """Whether this process may make network and PID namespaces (root, or a kernel that lets users)."""
    try:
        return shutil.which("unshare") is not None and shutil.which("ip") is not None and subprocess.run(
            ["unshare", "--net", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, timeout=30
        ).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.ray
@pytest.mark.alone  # Ray's head, its agents and Ray Client start inside the namespace: slow on a loaded machine
def test_a_head_registered_at_its_ip_is_reached_through_every_address(table, tmp_path):
    """`ray start --head` on a machine with one outward interface registers the head at that IP (10.201.0.1 in a
    network namespace of the test's own, tests/run/pool/ray_netns.py; stopped with the namespace whatever happens):
    the toolkit joins it through 127.0.0.1:PORT (fails before issue 41: "Failed to connect to Ray cluster at
    127.0.0.1:PORT", the driver pinned to a loopback node that does not exist), through its IP, `auto`, and Ray
    Client's ray://127.0.0.1:10001 (failed too: a loopback driver address was passed to Ray Client), each run
    giving the in-process records."""
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]')")
    if not _namespaces():
        pytest.skip("needs network and PID namespaces (unshare; root)")
    (tmp_path / "table.json").write_text(json.dumps(table))
    addresses = ["127.0.0.1:{port}", "{head}:{port}", "auto", "ray://127.0.0.1:{client}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests"),
                                                        *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run(["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", sys.executable,
                           str(REPO / "tests" / "run" / "pool" / "ray_netns.py"), str(tmp_path / "out"),
                           str(tmp_path / "table.json"), *addresses], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    said = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert not [s for s in said if "error" in s], said
    assert [s["address"] for s in said] == ["127.0.0.1:6390", "10.201.0.1:6390", "auto", "ray://127.0.0.1:10001"]
    ref = _in_process(table, Job("lookup", "demo", {}, "pt", "enem_1shot", tmp_path / "ref" / "run", shuffles=1,
                                 min_k=False))
    for s in said:
        assert s["nodes"] == ["10.201.0.1"], s                    # the head's node, registered at its IP
        assert _exactly_once_and_in_process_records(RunDir(s["run_dir"]), ref) == len(_keys(ref)) > 0
