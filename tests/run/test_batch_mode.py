"""Batch mode against the OpenAI Batch API and Anthropic Message Batches, served on 127.0.0.1 in the exact wire
format of their documentation (tests/fake_api.py; the hosted batch APIs cannot be reached from here).

Submit collects the run's requests (custom_id = request-cache key), polling shows progress, fetch fills the
request cache, failed / expired requests are listed and resubmitted, and the final run then makes no
request and writes the same records as an online run."""
from __future__ import annotations

import json
import re

import pytest
from fake_api import FakeAPI
from fake_openai import completion, message

from mcqa_toolkit.backends.batch import import_results
from mcqa_toolkit.backends.cache import RequestCache
from mcqa_toolkit.prompts.types import question_kind
from mcqa_toolkit.run import batch
from mcqa_toolkit.run.equality import assert_same_records
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import BackendCache, run_job


class OpenAIBatchServer:
    """Files + Batches endpoints; a batch is in_progress on the first poll, completed on the next; the request
    whose custom_id is in `fail` lands in the error file."""

    def __init__(self, api: FakeAPI, fail: set[str]):
        self.api, self.fail, self.files, self.polls, self.batches = api, fail, {}, {}, {}
        self.answer = completion
        api.route("POST", "/v1/files", self.upload)
        api.route("POST", "/v1/batches", self.create)
        api.route("GET", "/v1/batches/", self.retrieve)
        api.route("GET", "/v1/files/", self.content)
        api.route("POST", "/v1/completions", lambda r: (200, completion(r.json)))

    def upload(self, req):
        part = re.search(rb'filename="[^"]*"\r\n(?:[^\r\n]+\r\n)*\r\n(.*?)\r\n--', req.raw, re.S)
        data = part.group(1)  # the multipart part that carries the file
        fid = f"file-{len(self.files)}"
        self.files[fid] = data.decode()
        return 200, {"id": fid, "object": "file", "bytes": len(data), "created_at": 0, "filename": "batch.jsonl",
                     "purpose": "batch", "status": "processed"}

    def _batch(self, bid, status, extra=None):
        n = len(self.files[self.batches[bid]].splitlines())
        return {"id": bid, "object": "batch", "endpoint": "/v1/completions", "input_file_id": self.batches[bid],
                "completion_window": "24h", "status": status, "created_at": 0,
                "request_counts": {"total": n, "completed": 0 if status != "completed" else n - 1,
                                   "failed": 0 if status != "completed" else 1}, **(extra or {})}

    def create(self, req):
        bid = f"batch_{len(self.batches)}"
        self.batches[bid] = req.json["input_file_id"]
        return 200, self._batch(bid, "validating")

    def retrieve(self, req):
        bid = req.path.rsplit("/", 1)[1]
        self.polls[bid] = self.polls.get(bid, 0) + 1
        if self.polls[bid] == 1:
            return 200, self._batch(bid, "in_progress")
        out, err = [], []
        for line in self.files[self.batches[bid]].splitlines():
            rec = json.loads(line)
            if rec["custom_id"] in self.fail:
                err.append({"id": "r", "custom_id": rec["custom_id"], "response": {"status_code": 500, "body": {
                    "error": {"message": "server error"}}}, "error": None})
            else:
                out.append({"id": "r", "custom_id": rec["custom_id"], "error": None,
                            "response": {"status_code": 200, "request_id": "q", "body": self.answer(rec["body"])}})
        self.files[f"out-{bid}"] = "\n".join(json.dumps(o) for o in reversed(out))  # unordered on purpose
        self.files[f"err-{bid}"] = "\n".join(json.dumps(e) for e in err)
        return 200, self._batch(bid, "completed", {"output_file_id": f"out-{bid}", "error_file_id": f"err-{bid}"})

    def content(self, req):
        fid = req.path.split("/")[3]
        return 200, self.files[fid].encode(), {"content-type": "application/jsonl"}


def _job(tmp_path, url, backend_options, strategy="enem_1shot", shuffles=2):
    return Job(model="fake-model", dataset="demo", dataset_args={}, language="pt", strategy=strategy,
               out_dir=tmp_path / "run", shuffles=shuffles, limit=3, min_k=False,
               backend_options={"base_url": url, "cache_dir": str(tmp_path / "cache"), "backoff": 0.001,
                                **backend_options})


def test_openai_batch_submit_poll_fetch_resubmit_then_run_from_cache(tmp_path):
    with FakeAPI() as api:
        server = OpenAIBatchServer(api, fail=set())
        job = _job(tmp_path, api.url + "/v1", {"backend": "openai"})
        cache = BackendCache()
        state = batch.submit(job, cache)
        assert state["n_requests"] == 6 and len(state["batches"]) == 1  # 3 items x 2 shuffles, letters
        lines = (job.run_dir.dir / state["batches"][0]["input_file"]).read_text().splitlines()
        assert {json.loads(x)["url"] for x in lines} == {"/v1/completions"} and len(lines) == 6
        server.fail = {json.loads(lines[0])["custom_id"]}
        assert not batch.fetch(job, cache)["ready"]  # first poll: in progress
        state = batch.fetch(job, cache)
        assert state["batches"][0]["status"] == "completed" and [f["custom_id"] for f in state["failed"]] == [
            json.loads(lines[0])["custom_id"]] and not state["ready"]
        again = batch.submit(job, cache)  # only the failed request is missing from the cache
        assert again["n_requests"] == 1
        server.fail = set()
        batch.fetch(job, cache)
        assert batch.fetch(job, cache)["ready"] and json.loads(job.run_dir.batch_file.read_text())["ready"]
        before = len(api.calls("/v1/completions"))
        result = run_job(job, progress=False)  # a new process would load its own backend: from the cache only
        records = result.records
        assert len(api.calls("/v1/completions")) == before and result.provenance["usage"]["http_requests"] == 0
    with FakeAPI() as api:  # the same job online, without batch: identical records
        api.route("POST", "/v1/completions", lambda r: (200, completion(r.json)))
        online = _job(tmp_path / "online", api.url + "/v1", {"backend": "openai"})
        direct = run_job(online, progress=False).records
    # tokens forwarded are what this execution paid: none for answers read from the cache
    assert_same_records(records, direct, ignore=["run_id", "n_forwarded_tokens"])


def test_anthropic_message_batches_unordered_results_and_failures(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC", "sk-ant-test")
    state = {"polls": 0, "requests": []}

    def create(req):
        state["requests"] = req.json["requests"]
        return 200, _message_batch("in_progress", len(state["requests"]))

    def retrieve(req):
        state["polls"] += 1
        return 200, _message_batch("ended" if state["polls"] > 1 else "in_progress", len(state["requests"]),
                                   api.url if state["polls"] > 1 else None)

    def results(req):
        lines = []
        for i, r in enumerate(reversed(state["requests"])):  # results come back in another order
            result = ({"type": "expired"} if i == 0 else
                      {"type": "errored", "error": {"type": "error", "error": {"type": "invalid_request_error",
                                                                              "message": "bad"}}} if i == 1 else
                      {"type": "succeeded", "message": message(r["params"])})
            lines.append(json.dumps({"custom_id": r["custom_id"], "result": result}))
        return 200, "\n".join(lines).encode(), {"content-type": "application/binary"}

    with FakeAPI() as api:
        api.route("POST", "/v1/messages/batches", create)
        api.route("GET", "/v1/messages/batches/msgbatch_1/results", results)
        api.route("GET", "/v1/messages/batches/msgbatch_1", retrieve)
        job = _job(tmp_path, api.url, {"backend": "anthropic", "api_key_env": "FAKE_ANTHROPIC"},
                   strategy={"base": "S1", "chat": True, "style": "default"}, shuffles=1)
        cache = BackendCache()
        submitted = batch.submit(job, cache)
        assert submitted["n_requests"] == 3 and state["requests"][0]["params"]["messages"][-1]["role"] == "assistant"
        assert not batch.fetch(job, cache)["ready"]
        fetched = batch.fetch(job, cache)
        assert fetched["batches"][0]["stored"] == 1 and len(fetched["failed"]) == 2 and not fetched["ready"]
        assert {f["error"] if isinstance(f["error"], str) else "errored" for f in fetched["failed"]} == {
            "expired", "errored"}


def _message_batch(status, n, url=None):
    return {"id": "msgbatch_1", "type": "message_batch", "processing_status": status,
            "request_counts": {"processing": n if status != "ended" else 0, "succeeded": 0 if status != "ended"
                               else n - 2, "errored": 0 if status != "ended" else 1, "canceled": 0,
                               "expired": 0 if status != "ended" else 1},
            "created_at": "2026-11-23T00:00:00Z", "expires_at": "2026-11-24T00:00:00Z", "ended_at": None,
            "cancel_initiated_at": None, "archived_at": None,
            "results_url": f"{url}/v1/messages/batches/msgbatch_1/results" if url else None}


def test_vllm_run_batch_output_and_bad_lines(tmp_path):
    cache = RequestCache(tmp_path)
    ok = {"id": "1", "custom_id": "k1", "response": {"status_code": 200, "body": {"choices": []}}, "error": None}
    bad = {"id": "2", "custom_id": "k2", "response": {"status_code": 400, "body": {"error": "x"}}, "error": None}
    stored, failed = import_results([json.dumps(ok), "", json.dumps(bad)], cache)
    assert (stored, [f["custom_id"] for f in failed]) == (1, ["k2"]) and cache.get("k1") == {"choices": []}
    with pytest.raises(ValueError, match="batch output line 2 is not JSON"):
        import_results([json.dumps(ok), "{nope"], cache)


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
        server = OpenAIBatchServer(api, fail=set())
        server.answer = judged
        entry = {"backend": "openai", "model": "fake-model"}
        job = Job(model="fake-model", dataset="course_exam", dataset_args={}, language="en",
                  strategy={"base": "S1", "max_new_tokens": 24}, out_dir=tmp_path / "run", min_k=False,
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
