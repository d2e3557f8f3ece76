"""The run recipe (run.recipe.run_job), the one decision about a run folder (records.state), the equality rule of
records (records.equality), the table of methods (scoring.methods) and the run notebook that only calls the recipe."""
from __future__ import annotations

import json
import math
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from lookup_backend import LookupBackend

from mcqa_toolkit.backends import Capabilities, CapabilityError
from mcqa_toolkit.datasets import load
from mcqa_toolkit.resources import notebooks_dir
from mcqa_toolkit.run import grid
from mcqa_toolkit.records.equality import assert_same_records, record_differences
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import BackendCache, run_job
from mcqa_toolkit.records.state import RunRefused, RunState, run_state
from mcqa_toolkit.run.strategy import STRATEGIES, Strategy
from mcqa_toolkit.scoring.methods import METHODS, MIN_K_COST, check_method, record_cost


@pytest.fixture(scope="module")
def table():
    items = load("demo", language="pt")
    return {it.item_id: [math.log(0.6 if o == (it.answer + 1) % it.n_options else 0.4 / (it.n_options - 1))
                         for o in range(it.n_options)] for it in items}


def _cache(table, caps: Capabilities | None = None) -> BackendCache:
    cache = BackendCache()
    cache.put("lookup", LookupBackend(table, caps))
    return cache


def _job(tmp_path: Path, strategy="enem_1shot", **kw) -> Job:
    return Job("lookup", "demo", {}, "pt", strategy, tmp_path / "run", **{"shuffles": 2, "limit": 4, **kw})


def test_run_job_does_every_step_and_a_finished_run_is_only_read_back(tmp_path, table):
    job = _job(tmp_path)
    cache = _cache(table)
    first = run_job(job, cache, progress=False)
    assert first.state is RunState.NEW and len(first.records) == 8 and first.min_k is not None
    rd = job.run_dir
    assert rd.is_complete() and rd.min_k_file.exists() and rd.summary()["params"]["STRATEGY"] == "enem_1shot"
    assert first.summary["min_k_prob_mean"] == pytest.approx(first.min_k["min_k_prob"].mean())
    assert first.provenance["job"] == job.identity() and first.headline()["n_items"] == 4
    assert run_state(rd, {"job": job.identity()}) is RunState.COMPLETE

    class NoLoading(BackendCache):
        def for_run(self, entries):
            raise AssertionError("a finished run loads no model")

    again = run_job(job, NoLoading(), progress=False)
    assert again.state is RunState.COMPLETE and again.summary == first.summary
    assert_same_records(again.records, first.records)


def test_run_state_new_resumable_complete_and_refused(tmp_path, table, killed_at_call):
    import mcqa_toolkit.run.runner as runner_mod

    job = _job(tmp_path)
    assert run_state(job.run_dir, {"job": job.identity()}) is RunState.NEW
    with killed_at_call(runner_mod, "ask", 3):
        run_job(job, _cache(table), progress=False)
    assert run_state(job.run_dir, {"job": job.identity()}) is RunState.RESUMABLE
    for other, key in ((_job(tmp_path, shuffles=3), "SHUFFLES"), (_job(tmp_path, strategy="S5"), "STRATEGY"),
                       (_job(tmp_path, limit=5), "LIMIT")):
        with pytest.raises(RunRefused, match=f"holds a different run, made with job {key} "):
            run_job(other, _cache(table), progress=False)
    resumed = run_job(job, _cache(table), progress=False)
    assert resumed.state is RunState.RESUMABLE and len(resumed.records) == 8
    clean = run_job(_job(tmp_path / "clean"), _cache(table), progress=False)
    assert_same_records(resumed.records, clean.records)


def test_folders_made_another_way_are_refused_with_one_sentence(tmp_path, table):
    job = _job(tmp_path)
    job.run_dir.append([{"item_id": "x", "shuffle": 0}])
    with pytest.raises(RunRefused, match=r"holds records but no run.json"):
        run_job(job, _cache(table), progress=False)
    job.run_dir.write_run_info({"strategy_hash": "abc"})  # e.g. run() from Python: no job parameters
    with pytest.raises(RunRefused, match=r"recorded no 'job'"):
        run_state(job.run_dir, {"job": job.identity()})


def test_min_k_without_prompt_log_probs_is_refused_before_any_work(tmp_path, table):
    cache = _cache(table, Capabilities(next_token_logprobs=True, generate=True))
    with pytest.raises(CapabilityError, match="cannot score min_k: .* use min_k: false"):
        run_job(_job(tmp_path), cache, progress=False)
    assert not (tmp_path / "run").exists()
    assert run_job(_job(tmp_path, min_k=False), cache, progress=False).min_k is None


def test_backend_cache_returns_one_object_per_entry_and_keeps_backends_without_renew(table):
    cache = _cache(table)
    a, b = cache.for_run([{"backend": "hf", "model": "lookup", "device": None, "dtype": None}] * 2)
    assert a is b and isinstance(a, LookupBackend)


# ---- the equality rule ------------------------------------------------------------------------------------
def _records(tmp_path, table):
    return run_job(_job(tmp_path, min_k=False), _cache(table), progress=False).records


def test_equality_rule(tmp_path, table):
    a = _records(tmp_path, table)
    b = a.copy()
    b["seconds"] = b["seconds"] + 5  # timing never counts
    assert record_differences(a, b) == []
    b["option_scores"] = [list(np.asarray(s) + 5e-7) for s in a["option_scores"]]
    assert record_differences(a, b) == []  # within 1e-6
    b["option_scores"] = [list(np.asarray(s) + 5e-6) for s in a["option_scores"]]
    assert any("option_scores" in d for d in record_differences(a, b))
    c = a.copy()
    c.loc[0, "choice"] = (c.loc[0, "choice"] + 1) % c.loc[0, "n_options"]
    assert record_differences(a, c) and "choice" in record_differences(a, c)[0]
    d = a.copy()
    d.loc[0, "extra"] = json.dumps({**json.loads(d.loc[0, "extra"]), "letter_token_ids": [1]})
    assert any("extra" in x for x in record_differences(a, d))
    e = pd.concat([a, a.iloc[:1]], ignore_index=True)
    assert "duplicated keys: 0 vs 1" in record_differences(a, e)[0]
    nan = a.copy()
    nan.at[0, "option_scores"] = [float("nan")] * len(a.at[0, "option_scores"])
    assert record_differences(nan, nan.copy()) == [] and record_differences(a, nan)
    with pytest.raises(AssertionError, match="records differ"):
        assert_same_records(a, c)


# ---- the table of methods -----------------------------------------------------------------------------------
def test_every_reader_of_a_method_reads_the_table(tiny_backend):
    assert set(METHODS) == {"first_token", "loglik", "cloze", "generate", "cot"}
    assert {s.method for s in STRATEGIES.values()} <= set(METHODS)
    with pytest.raises(ValueError, match="not in"):
        Strategy(method="telepathy")
    with pytest.raises(ValueError, match="normalization applies to loglik/cloze"):
        Strategy(method="first_token", normalization="token")
    job = Job("m", "demo", {}, "pt", {"base": "S1", "max_new_tokens": 10}, Path("x"), shuffles=3)
    assert grid.estimated_cost(job) == 3 * record_cost("generate", 10) + MIN_K_COST
    assert record_cost("generate", 10) == METHODS["generate"].cost * 10
    assert record_cost("cloze", 10) == METHODS["cloze"].cost
    for name in METHODS:
        check_method(tiny_backend, name)  # the local model can do all of them


def test_run_notebook_only_calls_the_recipe():
    nb = nbformat.read(notebooks_dir() / "run_model.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    assert max(len(c.source.splitlines()) for c in code) <= 5
    assert sum("run_job(" in c.source for c in code) == 1
