"""One writer per run folder (records.lock): a second run() or run_job() stops at once naming the holder, a stale
lock of a killed process is taken over, finalising keeps one record per (item, shuffle), and two `mcqa run`
started at once on one params file end with every record exactly once.

The two `mcqa run` talk to an OpenAI-compatible stand-in served on 127.0.0.1 (tests/fake_api.py with
tests/fake_openai.py's documented /v1/completions wire format), slowed to 0.1 s a request. In each `mcqa run`'s
kernel the run notebook opens a combination's folder (state, lock, state) and the lock is held until the executed
notebook is in it, so two processes started together meet on the first one."""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest
import yaml
from fake_api import FakeAPI
from fake_openai import completion
from faults_children import hold_lock, in_child, lookup_job, run_lookup, start_child
from paths import REPO

from mcqa_toolkit.datasets import load
from mcqa_toolkit.records import lock as lock_module
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run import Strategy, run
from mcqa_toolkit.run.jobs import expand, load_params
from mcqa_toolkit.run.recipe import BackendCache, run_job

pytestmark = pytest.mark.faults


def _holding(run_dir, then="wait"):
    """A child process holding the folder's lock (killed by the caller)."""
    proc, _ = start_child(hold_lock, str(run_dir), then)
    deadline = time.monotonic() + 60
    while not (run_dir / "held").exists():
        assert proc.is_alive() and time.monotonic() < deadline, "the child did not take the lock"
        time.sleep(0.02)
    return proc


def test_a_second_writer_stops_at_once_naming_the_holder(tmp_path, figures, monkeypatch):
    """"At once" by construction: the holder never lets go, so a writer that waited for the lock would hang here,
    and the only pause taken is the lock's own retry over a momentary contention (records.lock._flock)."""
    out = tmp_path / "run"
    holder = _holding(out)
    try:
        items = load("demo", language="pt")
        job, cache = lookup_job(out)
        backend = cache.for_run([{"backend": "hf", "model": "lookup", "device": None, "dtype": None}])[0]
        pauses, sleep = [], time.sleep
        monkeypatch.setattr(time, "sleep", lambda s: pauses.append(s) or sleep(s))
        t0 = time.monotonic()
        with pytest.raises(RunLocked) as refused:
            run(items, backend, Strategy.first_token(), out, progress=False)
        seconds = time.monotonic() - t0  # a figure for results/tests/reliability.json, not a condition
        monkeypatch.undo()
        message = str(refused.value)
        assert f"pid {holder.pid} on host {socket.gethostname()}, since 20" in message
        assert message.count(". ") == 0 and "\n" not in message  # one sentence
        tries, pause = lock_module._flock.__defaults__
        assert sum(pauses) <= (tries - 1) * pause and not RunDir(out).jsonl.exists()

        class NoLoading(BackendCache):
            def for_run(self, entries):
                raise AssertionError("a run another process is writing loads no model")

        with pytest.raises(RunLocked, match=f"pid {holder.pid} "):
            run_job(job, NoLoading(), progress=False)
    finally:
        holder.kill()
        holder.join(10)
    figures.add("second_run", cases=2, max_seconds_to_refuse=round(seconds, 3))


def test_a_stale_lock_from_a_killed_process_is_taken_over(tmp_path, reference_run, caplog, figures):
    out = tmp_path / "run"
    dead = in_child(hold_lock, str(out), "sigkill")
    assert dead.exitcode == -signal.SIGKILL
    rd = RunDir(out)
    assert rd.lock_file.read_bytes().strip() and rd.holder() is None  # a record, but nobody holds the lock
    job, cache = lookup_job(out)
    with caplog.at_level(logging.WARNING, logger="mcqa_toolkit.records"):
        result = run_job(job, cache, progress=False)
    taken = [r.getMessage() for r in caplog.records if "took over the lock" in r.getMessage()]
    pid = (out / "held").read_text()
    assert len(taken) == 1 and f"pid {pid} on host" in taken[0]
    assert_same_records(result.records, reference_run[1])
    assert rd.lock_file.read_bytes() == b""  # released: no holder recorded
    figures.add("stale_lock", cases=1)


def test_finalising_keeps_one_record_per_item_and_shuffle(tmp_path, reference_run, caplog, figures):
    """Two writers before the lock: every record appended twice; the finished run keeps one of each."""
    out = tmp_path / "run"
    assert in_child(run_lookup, str(out), kill_in="finalize").exitcode == -signal.SIGKILL
    rd = RunDir(out)
    lines = rd.jsonl.read_bytes().splitlines(keepends=True)
    rd.jsonl.write_bytes(b"".join(lines) + b"".join(lines[::-1]))  # the second writer's copies
    assert len(rd.load()) == len(lines)  # reading an unfinished run already counts each record once
    job, cache = lookup_job(out)
    with caplog.at_level(logging.WARNING, logger="mcqa_toolkit.records"):
        result = run_job(job, cache, progress=False)
    records = rd.load()
    assert not records.duplicated(["item_id", "shuffle"]).any() and result.summary["n_records"] == len(lines)
    assert_same_records(records, reference_run[1])
    dropped = [r.getMessage() for r in caplog.records if "duplicate record(s)" in r.getMessage()]
    assert dropped and f"{rd.jsonl}: {len(lines)} duplicate record(s)" in dropped[-1]
    figures.add("duplicates", cases=1, duplicates_dropped=len(lines))


@pytest.mark.notebooks
def test_two_mcqa_run_at_once_write_every_record_once(tmp_path, figures):
    """The stand-in answers no question of either language until it has been asked one of each: the process that
    takes pt first cannot finish it before the other has found it running elsewhere and taken es, so they meet
    whatever the machine's speed (300 s bounds a hang)."""
    stems = {lang: [it.stem[:40] for it in load("demo", language=lang)] for lang in ("pt", "es")}
    asked, both_asked, lock = set(), threading.Event(), threading.Lock()

    def slow(req):
        prompt = json.dumps(req.json, ensure_ascii=False)
        langs = {lang for lang, starts in stems.items() if any(start in prompt for start in starts)}
        if langs:  # a question (not the capability probe): held back until both languages were asked
            with lock:
                asked.update(langs)
                if asked == set(stems):
                    both_asked.set()
            assert both_asked.wait(300), "only one language was asked: the two runs did not meet"
        time.sleep(0.1)
        return 200, completion(req.json)

    with FakeAPI() as api:
        api.route("POST", "/v1/completions", slow)
        model = {"backend": "openai", "model": "fake-gemma", "name": "fake", "base_url": api.url + "/v1",
                 "cache_dir": str(tmp_path / "cache")}
        params = tmp_path / "two.yaml"
        params.write_text(yaml.safe_dump({
            "output_dir": "out", "models": [model], "datasets": ["demo"], "languages": ["pt", "es"],
            "strategies": [{"base": "enem_0shot", "shuffles": 2}], "limit": 5, "min_k": False}))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        procs = [subprocess.Popen([sys.executable, "-m", "mcqa_toolkit.cli", "run", str(params)], cwd=tmp_path,
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for _ in range(2)]
        try:
            outputs = [p.communicate(timeout=400)[0] for p in procs]
        finally:
            for p in procs:
                p.kill() if p.poll() is None else None
        assert [p.returncode for p in procs] == [0, 0], outputs
        jobs = expand(load_params(params), base_dir=tmp_path)
        reference = dict(load_params(params), output_dir="reference", models=[{**model, "cache_dir": str(
            tmp_path / "cache_reference")}])
        ref_jobs = expand(reference, base_dir=tmp_path)
        n_records = 0
        for job, ref_job in zip(jobs, ref_jobs, strict=True):
            rd = job.run_dir
            records = pd.read_parquet(rd.parquet)
            lines = rd.jsonl.read_bytes().splitlines()
            assert rd.is_complete() and len(lines) == len(records) == 10
            assert not records.duplicated(["item_id", "shuffle"]).any()
            expected = run_job(ref_job, BackendCache(), progress=False).records
            assert_same_records(records, expected)
            n_records += len(records)
    elsewhere = sum(out.count("running elsewhere") for out in outputs)
    assert elsewhere >= 1, outputs  # they met: one of them found a combination being run by the other
    figures.add("two_writers", cases=1, records_exactly_once=n_records, combinations_found_running_elsewhere=elsewhere)
