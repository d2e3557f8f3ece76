"""Batch mode against the OpenAI Batch API and Anthropic Message Batches, served on 127.0.0.1 in the exact wire
format of their documentation (tests/fake_batches.py on tests/fake_api.py; the hosted batch APIs cannot be
reached from here).

Submit collects the run's requests (custom_id = request-cache key), polling shows progress, fetch fills the
request cache, and the final run then makes no request and writes the same records as an online run. A
failed (validation), cancelled, expired or partly failed batch is never ready: the user sees one line per such
batch with the provider's reason, stored + failed == submitted, nothing is sent online, and a resubmission sends
exactly the requests without an answer. Large runs are split at the documented per-batch limits."""
from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest
import yaml
from fake_api import FakeAPI
from fake_batches import AnthropicBatchServer, OpenAIBatchServer
from fake_openai import chat_completion, completion, provider_route

from mcqa_toolkit.backends import providers
from mcqa_toolkit.backends.batch.openai import import_results
from mcqa_toolkit.backends.cache import RequestCache
from mcqa_toolkit.prompts.types import question_kind
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.resources import notebooks_dir
from mcqa_toolkit.run import batch, grid
from mcqa_toolkit.run.jobs import Job, expand, load_params
from mcqa_toolkit.run.kernel import KernelRuns
from mcqa_toolkit.run.recipe import BackendCache, run_job


def _job(tmp_path, url, backend_options, strategy="enem_1shot", shuffles=2, limit=3):
    return Job(model="fake-model", dataset="demo", dataset_args={}, language="pt", strategy=strategy,
               run_dir=tmp_path / "run", shuffles=shuffles, limit=limit, min_k=False,
               backend_options={"base_url": url, "cache_dir": str(tmp_path / "cache"), "backoff": 0.001,
                                **backend_options})


def _ids(path):
    return {json.loads(x)["custom_id"] for x in path.read_text().splitlines()}


def _serve_completions(api):
    api.route("POST", "/v1/completions", provider_route("vllm"))


def test_openai_batch_submit_poll_fetch_resubmit_then_run_from_cache(tmp_path):
    with FakeAPI() as api:
        _serve_completions(api)
        server = OpenAIBatchServer(api)
        job = _job(tmp_path, api.url + "/v1", {"backend": "openai"})
        cache = BackendCache()
        state = batch.submit(job, cache)
        assert state["n_requests"] == 6 and len(state["batches"]) == 1  # 3 items x 2 shuffles, letters
        lines = (job.run_dir.dir / state["batches"][0]["input_file"]).read_text().splitlines()
        assert {json.loads(x)["url"] for x in lines} == {"/v1/completions"} and len(lines) == 6
        first = json.loads(lines[0])["custom_id"]
        server.fail = {first}
        assert not batch.fetch(job, cache)["ready"]  # first poll: in progress
        state = batch.fetch(job, cache)
        assert state["batches"][0]["status"] == "completed" and not state["ready"]
        assert [f["custom_id"] for f in state["failed"]] == [first] and "HTTP 500: server error" in state["failed"][0][
            "error"]
        assert "1 of 6 requests failed (HTTP 500: server error)" in batch.describe("r", state)
        again = batch.submit(job, cache)  # only the failed request is missing from the cache
        assert again["n_requests"] == 1 and _ids(job.run_dir.dir / again["batches"][0]["input_file"]) == {first}
        server.fail = set()
        batch.fetch(job, cache)
        assert batch.fetch(job, cache)["ready"] and json.loads(job.run_dir.batch_file.read_text())["ready"]
        before = len(api.calls("/v1/completions"))
        result = run_job(job, progress=False)  # a new process would load its own backend: from the cache only
        records = result.records
        assert len(api.calls("/v1/completions")) == before and result.provenance["usage"]["http_requests"] == 0
        assert not api.rejected()
    with FakeAPI() as api:  # the same job online, without batch: identical records
        _serve_completions(api)
        online = _job(tmp_path / "online", api.url + "/v1", {"backend": "openai"})
        direct = run_job(online, progress=False).records
    # tokens forwarded are what this execution paid: none for answers read from the cache
    assert_same_records(records, direct, ignore=["run_id", "n_forwarded_tokens"])


def _params(tmp_path, model):
    params = tmp_path / "p.yaml"
    params.write_text(yaml.safe_dump({"output_dir": "out", "models": [model], "datasets": ["demo"],
                                      "languages": ["pt"], "strategies": [{"base": "enem_0shot", "shuffles": 2}],
                                      "limit": 3, "min_k": False}))
    return params


def _kernel_step(runs: KernelRuns, job: Job, mode: str) -> str:
    """What `mcqa run --batch-submit / --batch-fetch` asks its kernel for one combination (run.grid), here, and what
    the grid prints from the folder's batch.json."""
    runs.batch(Job.from_parameters(job.parameters()), mode)
    assert job.run_dir.holder() is None   # opened for the step only
    return batch.describe(job.run_dir.name, job.run_dir.batch_state())


@pytest.mark.parametrize("outcome,reason,stored", [
    ("failed", "line 1: This line is not parseable as valid JSON. (invalid_json_line)", 0),
    ("cancelled", "cancelled", 3),
    ("expired", "not finished within its 24h completion window", 3)])
def test_failed_cancelled_expired_batches_end_in_one_line_and_no_online_request(tmp_path, outcome, reason, stored):
    with FakeAPI() as api:
        _serve_completions(api)
        server = OpenAIBatchServer(api, outcome=outcome)
        model = {"backend": "openai", "model": "fake-model", "base_url": api.url + "/v1",
                 "cache_dir": str(tmp_path / "cache"), "backoff": 0.001}
        (job,) = expand(load_params(_params(tmp_path, model)), base_dir=tmp_path)
        _kernel_step(KernelRuns(), job, "submit")
        probes = len(api.calls("/v1/completions"))  # the capability probe is the only online use
        lines = [_kernel_step(KernelRuns(), job, "fetch") for _ in range(2)]  # in progress, then ended: never ready
        state = json.loads(job.run_dir.batch_file.read_text())
        entry = state["batches"][0]
        assert not state["ready"] and entry["status"] == outcome and entry["stored"] == stored
        assert entry["stored"] + entry["n_failed"] == entry["n_requests"] == 6 == len(state["failed"]) + stored
        assert f"batch {entry['id']} {outcome}: {6 - stored} of 6 requests failed ({reason}); --batch-submit " \
               "resubmits them" in lines[-1]
        assert len(api.calls("/v1/completions")) == probes and not job.run_dir.jsonl.exists()
        server.outcome = "completed"
        _kernel_step(KernelRuns(), job, "submit")
        resubmitted = json.loads(job.run_dir.batch_file.read_text())
        assert (_ids(job.run_dir.dir / resubmitted["batches"][0]["input_file"])
                == {f["custom_id"] for f in state["failed"]})
        assert len(api.calls("/v1/completions")) == probes and not api.rejected()


@pytest.mark.notebooks
def test_mcqa_run_batch_submit_then_fetch_runs_in_its_kernel_from_the_cache(tmp_path, capsys):
    """`mcqa run --batch-submit`, then `--batch-fetch` until the batch has ended: the grid's kernel opens the run
    folder of the job's parameters, submits or fetches, and once every answer is stored the run notebook executes,
    which makes no request."""
    with FakeAPI() as api:
        _serve_completions(api)
        OpenAIBatchServer(api)
        model = {"backend": "openai", "model": "fake-model", "base_url": api.url + "/v1",
                 "cache_dir": str(tmp_path / "cache"), "backoff": 0.001}
        params, notebook = _params(tmp_path, model), notebooks_dir() / "run_model.ipynb"
        assert grid.run_params(params, notebook, tmp_path, batch="submit") == 0
        probes = len(api.calls("/v1/completions"))
        for _ in range(2):  # in progress, then ended: the second fetch runs the notebook
            assert grid.run_params(params, notebook, tmp_path, batch="fetch") == 0
        out = capsys.readouterr().out
        (run_dir,) = (tmp_path / "out").iterdir()
        assert "1 processed, 0 already complete, 0 failed" in out and (run_dir / "run_model.ipynb").exists()
        assert len(pd.read_parquet(run_dir / "records.parquet")) == 6 and len(api.calls("/v1/completions")) == probes


def test_large_runs_are_split_at_the_documented_limits(tmp_path, monkeypatch):
    """A run over a provider's per-batch limit becomes several batches within it (limits shrunk to 4 requests
    here, on the client and on the stand-in alike); together they hold every request once."""
    small = providers.BatchLimits(4, 200 * 1024 ** 2)
    monkeypatch.setitem(providers.PROVIDERS, "compatible", dataclasses.replace(providers.PROVIDERS["compatible"],
                                                                               batch=small))
    with FakeAPI() as api:
        _serve_completions(api)
        OpenAIBatchServer(api, max_requests=4)
        job = _job(tmp_path, api.url + "/v1", {"backend": "openai"}, limit=5)
        cache = BackendCache()
        state = batch.submit(job, cache)
        sizes = [e["n_requests"] for e in state["batches"]]
        files = [job.run_dir.dir / e["input_file"] for e in state["batches"]]
        assert sizes == [4, 4, 2] and sum(len(_ids(f)) for f in files) == len(set().union(*map(_ids, files))) == 10
        batch.fetch(job, cache)
        assert batch.fetch(job, cache)["ready"]
    monkeypatch.setattr("mcqa_toolkit.backends.batch.anthropic.ANTHROPIC", dataclasses.replace(providers.ANTHROPIC,
                                                                                                 batch=small))
    monkeypatch.setenv("FAKE_ANTHROPIC", "sk-ant-test")
    with FakeAPI() as api:
        AnthropicBatchServer(api, max_requests=4)
        job = _job(tmp_path / "a", api.url, {"backend": "anthropic", "api_key_env": "FAKE_ANTHROPIC"},
                   strategy={"base": "S1", "chat": True, "style": "default"}, shuffles=1, limit=5)
        cache = BackendCache()
        assert [e["n_requests"] for e in batch.submit(job, cache)["batches"]] == [4, 1]
        batch.fetch(job, cache)
        assert batch.fetch(job, cache)["ready"] and not api.rejected()


def test_anthropic_message_batches_unordered_results_and_failures(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC", "sk-ant-test")
    with FakeAPI() as api:
        server = AnthropicBatchServer(api)
        job = _job(tmp_path, api.url, {"backend": "anthropic", "api_key_env": "FAKE_ANTHROPIC"},
                   strategy={"base": "S1", "chat": True, "style": "default"}, shuffles=1)
        cache = BackendCache()
        submitted = batch.submit(job, cache)
        requests = server.batches["msgbatch_1"]
        assert submitted["n_requests"] == 3 and requests[0]["params"]["messages"][-1] == {"role": "assistant",
                                                                                          "content": "Resposta:"}
        server.expire = {requests[0]["custom_id"]}
        requests[1]["params"]["temperature"] = 3.0  # the API validates each request: this one is errored
        assert not batch.fetch(job, cache)["ready"]
        fetched = batch.fetch(job, cache)
        assert fetched["batches"][0]["stored"] == 1 and len(fetched["failed"]) == 2 and not fetched["ready"]
        assert sorted(f["error"] for f in fetched["failed"]) == [
            "errored: invalid_request_error: temperature: range: 0..1", "expired"]
        assert "2 of 3 requests failed (1 errored, 1 expired)" in batch.describe("r", fetched)


def test_vllm_run_batch_output_and_bad_lines(tmp_path):
    cache = RequestCache(tmp_path)
    ok = {"id": "1", "custom_id": "k1", "response": {"status_code": 200, "body": {"choices": []}}, "error": None}
    bad = {"id": "2", "custom_id": "k2", "response": {"status_code": 400, "body": {"error": "x"}}, "error": None}
    stored, failed = import_results([json.dumps(ok), "", json.dumps(bad)], cache)
    assert (stored, [f["custom_id"] for f in failed]) == (1, ["k2"]) and cache.get("k1") == {"choices": []}
    with pytest.raises(ValueError, match="batch output line 2 is not JSON"):
        import_results([json.dumps(ok), "{nope"], cache)


def test_vllm_batch_writes_run_batch_input_then_imports_its_output(tmp_path):
    """provider: vllm has no Batch API: --batch-submit writes the `vllm run-batch` input (chat lines only, the
    command to run said in one line) and --batch-fetch imports its output from the run folder. The output here
    is written the way vLLM writes it (input order, `error: null`), from the stand-in's chat answers; the real
    `vllm run-batch` runs in tests/backends/test_vllm_server.py."""
    from mcqa_toolkit.backends.batch.vllm import INPUT, OUTPUT

    with FakeAPI() as api:
        _serve_completions(api)
        api.route("POST", "/v1/chat/completions", provider_route("vllm"))
        job = _job(tmp_path, api.url + "/v1", {"backend": "openai", "provider": "vllm"},
                   strategy={"base": "uned", "max_new_tokens": 8}, shuffles=1)
        cache = BackendCache()
        state = batch.submit(job, cache)
        assert state["n_requests"] == 3 and state["batches"][0]["status"] == "written"
        assert "vllm.entrypoints.openai.run_batch -i" in batch.describe("r", state)
        lines = [json.loads(x) for x in (job.run_dir.dir / INPUT).read_text().splitlines()]
        assert {x["url"] for x in lines} == {"/v1/chat/completions"}
        before = len(api.calls("/v1/chat/completions"))
        assert not batch.fetch(job, cache)["ready"]  # nothing to import yet
        (job.run_dir.dir / OUTPUT).write_text("".join(json.dumps(
            {"id": f"vllm-{k}", "custom_id": x["custom_id"], "error": None,
             "response": {"status_code": 200, "request_id": f"vllm-batch-{k}", "body": chat_completion(x["body"])}})
            + "\n" for k, x in enumerate(lines)))
        assert batch.fetch(job, cache)["ready"]
        offline = run_job(job, progress=False)
        assert len(api.calls("/v1/chat/completions")) == before and offline.provenance["usage"]["http_requests"] == 0
    with FakeAPI() as api:  # the same run online, with an empty cache
        api.route("POST", "/v1/completions", provider_route("vllm"))
        api.route("POST", "/v1/chat/completions", provider_route("vllm"))
        fresh = _job(tmp_path / "fresh", api.url + "/v1", {"backend": "openai", "provider": "vllm"},
                     strategy={"base": "uned", "max_new_tokens": 8}, shuffles=1)
        direct = run_job(fresh, progress=False).records
    assert_same_records(offline.records, direct, ignore=["run_id", "n_forwarded_tokens"])


def test_vllm_batch_refuses_what_run_batch_cannot_read(tmp_path):
    with FakeAPI() as api:
        _serve_completions(api)
        job = _job(tmp_path, api.url + "/v1", {"backend": "openai", "provider": "vllm"})  # letters: completions
        with pytest.raises(ValueError, match=r"`vllm run-batch` reads chat-completions lines only, and this run "
                                             r"needs 6 \['completions'\] requests"):
            batch.submit(job, BackendCache())


def test_short_answer_grid_under_batch_submit(tmp_path):
    """A course exam (every question type, short answers judged by the model itself) through --batch-submit /
    --batch-fetch: the answers are batched; the judge's requests exist only once the answers are known, so a
    second submit batches them; the run then makes no request at all."""
    def judged(body):
        if "grading an answer" in body["prompt"]:  # the judge's prompt: a verdict in the documented JSON
            out = completion(body)
            out["choices"][0]["text"] = ' 1, "justification": "close to the reference"}'
            return out
        return completion(body)

    with FakeAPI() as api:
        _serve_completions(api)
        OpenAIBatchServer(api, answer=judged)
        entry = {"backend": "openai", "model": "fake-model"}
        job = Job(model="fake-model", dataset="course_exam", dataset_args={}, language="en",
                  strategy={"base": "S1", "max_new_tokens": 24}, run_dir=tmp_path / "run", min_k=False,
                  backend_options={"base_url": api.url + "/v1", "cache_dir": str(tmp_path / "cache"), "backoff": 0.001,
                                   "backend": "openai"},
                  judges=[{**entry, "base_url": api.url + "/v1", "cache_dir": str(tmp_path / "cache"),
                           "backoff": 0.001}])
        cache = BackendCache()
        first = batch.submit(job, cache)
        probes = len(api.calls("/v1/completions"))  # the capability probe (top-k and echo) is the only online use
        assert first["n_requests"] >= 10 and probes == 2
        batch.fetch(job, cache)
        assert batch.fetch(job, cache)["ready"]
        second = batch.submit(job, cache)  # the judge's requests, now that the answers are cached
        n_short = sum(question_kind(it)[0] == "short" for it in job.items())  # letter-keyed ones are read, not judged
        assert second["n_requests"] == n_short > 0 and len(api.calls("/v1/completions")) == probes
        batch.fetch(job, cache)
        assert batch.fetch(job, cache)["ready"]
        result = run_job(job, progress=False)
        assert len(api.calls("/v1/completions")) == probes and result.provenance["usage"]["http_requests"] == 0
    judged = result.records[result.records["judgements"] != ""]
    assert len(result.records) == 10 and len(judged) == n_short and (judged["points_earned"] == 1).all()
