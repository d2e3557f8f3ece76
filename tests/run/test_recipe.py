"""The run recipe (run.recipe): run_job does every step of one run and reads a finished run back, refuses what
the backends cannot serve before any file, BackendCache loads each model once and renews it per run (records equal
to a fresh load), and the run notebook only calls the recipe."""
from __future__ import annotations

import dataclasses
import json

import nbformat
import pytest
from lookup_backend import LookupBackend, demo_table, lookup_cache, lookup_job

from mcqa_toolkit.backends import Capabilities, CapabilityError, backend_entry
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.state import RunState, run_state
from mcqa_toolkit.resources import notebooks_dir
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import BackendCache, prepare, run_job


@pytest.fixture(scope="module")
def table():
    return demo_table()




def test_run_job_does_every_step_and_a_finished_run_is_only_read_back(tmp_path, table):
    job = lookup_job(tmp_path)
    cache = lookup_cache(table)
    first = run_job(job, cache, progress=False)
    assert first.state is RunState.NEW and len(first.records) == 8 and first.min_k is not None
    rd = job.run_dir
    identity = prepare(job).identity
    assert rd.is_complete() and rd.min_k_file.exists() and run_state(rd, identity) is RunState.COMPLETE
    assert first.summary["min_k_prob_mean"] == pytest.approx(first.min_k["min_k_prob"].mean())
    assert first.headline()["n_items"] == 4 and first.provenance["identity_hash"] == identity.hash
    assert json.loads(rd.summary_file.read_text())["identity"] == identity.to_dict() == first.provenance["identity"]
    text = rd.run_info_file.read_text() + rd.summary_file.read_text()   # no notebook parameter names
    assert not any(name in text for name in ("MODEL", "DATASET", "STRATEGY", "SHUFFLES", "BACKEND", "job"))
    assert (first.provenance["dataset"], first.provenance["dataset_args"], first.provenance["language"]) == \
        ("demo", {}, "pt")
    assert rd.items().fingerprint() == job.items().fingerprint()   # the items it was given: shots and all

    class NoLoading(BackendCache):
        def for_run(self, entries):
            raise AssertionError("a finished run loads no model")

    again = run_job(job, NoLoading(), progress=False)
    assert again.state is RunState.COMPLETE and again.summary == first.summary
    assert_same_records(again.records, first.records)


def test_min_k_without_prompt_log_probs_is_refused_before_any_work(tmp_path, table):
    cache = lookup_cache(table, Capabilities(next_token_logprobs=True, generate=True))
    with pytest.raises(CapabilityError, match="cannot score min_k: .* use min_k: false"):
        run_job(lookup_job(tmp_path), cache, progress=False)
    assert not (tmp_path / "run").exists()
    assert run_job(lookup_job(tmp_path, min_k=False), cache, progress=False).min_k is None


def test_backend_cache_returns_one_object_per_entry_and_keeps_backends_without_renew(table):
    cache = lookup_cache(table)
    a, b = cache.for_run([{"backend": "hf", "model": "lookup", "device": None, "dtype": None}] * 2)
    assert a is b and isinstance(a, LookupBackend)


def test_backend_cache_loads_once_renews_per_run_and_releases_the_rest(tiny_model_dir):
    cache = BackendCache()
    entry = backend_entry(str(tiny_model_dir))
    (first,) = cache.for_run([entry])
    same, judge = cache.for_run([entry, backend_entry({"model": str(tiny_model_dir)})])  # equal entries: one object
    assert same is judge and same is not first and same.lm is first.lm and same.engine is not first.engine
    (other,) = cache.for_run([backend_entry(str(tiny_model_dir), dtype="bfloat16")])  # another entry: loaded
    assert other.lm is not first.lm and len(cache) == 1  # and the float32 model released


def test_records_of_a_renewed_backend_equal_a_fresh_load(tiny_model_dir, tmp_path):
    """What `mcqa run` does (one load, renewed per run, after other runs) vs a load per run."""
    plan = ["enem_1shot", "S5", {"base": "S2", "max_new_tokens": 3}]
    cache = BackendCache()
    for st in plan:
        name = st if isinstance(st, str) else "S2"
        job = Job(str(tiny_model_dir), "demo", {}, "pt", st, tmp_path / "shared" / name, shuffles=2, limit=4,
                  min_k=False)
        reused = run_job(job, cache, progress=False).records
        fresh = run_job(dataclasses.replace(job, run_dir=tmp_path / "fresh" / name), progress=False).records
        assert_same_records(reused, fresh, ignore=["run_id"])
        usage = [json.loads((tmp_path / d / name / "provenance.json").read_text())["usage"]
                 for d in ("shared", "fresh")]
        assert {k: v for k, v in usage[0].items() if not k.endswith("seconds")} == \
               {k: v for k, v in usage[1].items() if not k.endswith("seconds")}    # timings aside


def test_run_notebook_only_calls_the_package_with_its_parameters():
    """The notebook's run is one call of importable code with its parameters (run.kernel.notebook_run: run_job
    alone, the kernel's runs under `mcqa run`); the other cells only show what it returned."""
    nb = nbformat.read(notebooks_dir() / "run_model.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    assert max(len(c.source.splitlines()) for c in code) <= 5
    assert sum("notebook_run(globals())" in c.source for c in code) == 1
    assert not any("RUNS" in c.source or "run_job(" in c.source for c in code)
