"""The `google` backend (google-genai SDK) against a Gemini stand-in on 127.0.0.1 that follows the documented v1beta
request/response shapes and rejects what the API rejects (tests/fake_gemini.py; the real API cannot be reached
from here): generation (system instruction, temperature 0, thoughts kept apart), letters from response_logprobs
where the model offers them (probed; refused in one sentence where not), and a Batch Mode round trip (inline
requests, job states, results mapped back by key), whose records equal the online run's."""
from __future__ import annotations

import dataclasses
import json

import pytest
from fake_api import FakeAPI
from fake_gemini import GeminiServer, sizes

from mcqa_toolkit.backends import CapabilityError, load_backend, providers
from mcqa_toolkit.backends.batch import gemini as gemini_batch
from mcqa_toolkit.backends.google import request_body
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.run import batch, run, strategy
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import BackendCache, run_job

KEY = "AIza-canary-google-0001"


@pytest.fixture
def gemini(monkeypatch):
    monkeypatch.setenv("FAKE_GEMINI_KEY", KEY)
    with FakeAPI() as api:
        yield api, GeminiServer(api)


def _backend(api, tmp_path, model="gemini-2.0-flash", **kw):
    return load_backend({"backend": "google", "model": model, "api_key_env": "FAKE_GEMINI_KEY", "base_url": api.url,
                         "cache_dir": str(tmp_path / "cache"), "backoff": 0.001, **kw})


@pytest.fixture(scope="module")
def items():
    return load("demo", language="pt").filter(subject="chemistry")[:3]


def test_generation_with_system_instruction_and_thoughts_apart(gemini, items, tmp_path):
    api, _ = gemini
    backend = _backend(api, tmp_path, "gemini-2.5-flash-thinking", probe=False, thinking_budget=0)
    df = run(items, backend, strategy("uned"), tmp_path / "u", progress=False)
    sent = [r.json for r in api.calls("/v1beta/models/gemini-2.5-flash-thinking:generateContent")]
    assert len(sent) == 3 and not api.rejected() and all(r.headers["x-goog-api-key"] == KEY for r in api.requests)
    assert sent[0]["systemInstruction"]["parts"][0]["text"].startswith("Você é um sistema especialista")
    config = dict(sent[0]["generationConfig"])
    thinking = config.pop("thinkingConfig")  # google-genai sends the proto field name, which proto3 JSON accepts
    assert config == {"temperature": 0.0, "maxOutputTokens": 12, "stopSequences": ["\n\n"]}
    assert thinking in ({"thinkingBudget": 0}, {"thinking_budget": 0})
    assert sent[0]["contents"][-1]["parts"][0]["text"].endswith("Letra da resposta correta:")  # the cue, no prefill
    extra = df["extra"].map(json.loads)
    assert (df["choice"] >= 0).all() and (extra.map(lambda e: e["reasoning_tokens"]) == 25).all()
    assert extra.map(lambda e: e["reasoning"].startswith("A alternativa A parece")).all()
    assert backend.usage()["reasoning_tokens"] == 75 and KEY not in json.dumps(backend.provenance())


def test_letters_where_offered_refused_in_one_sentence_where_not(gemini, items, tmp_path):
    api, _ = gemini
    backend = _backend(api, tmp_path, top_logprobs=50)
    df = run(items, backend, strategy("enem_0shot", shuffles=2), tmp_path / "l", progress=False)
    sent = [r.json["generationConfig"] for r in api.requests]
    assert not api.rejected() and len(sent) == 1 + 6  # the probe, then one request per record: the same shape
    assert all(c == {"temperature": 0.0, "maxOutputTokens": 1, "responseLogprobs": True, "logprobs": 20} for c in sent)
    extra = df["extra"].map(json.loads)
    assert (extra.map(lambda e: e["letters_seen"]) == df["n_options"]).all() and (df["choice"] >= 0).all()
    pro = _backend(api, tmp_path / "p", "gemini-2.5-pro")
    n = len(api.requests)
    with pytest.raises(CapabilityError, match=r"^backend 'gemini-2.5-pro' cannot score first_token: it exposes no "
                                              r"next-token log-probabilities; use method='generate'$"):
        run(items, pro, strategy("enem_0shot"), tmp_path / "x", progress=False)
    assert len(api.requests) == n + 1 and "Logprobs is not enabled for models/gemini-2.5-pro" in pro.probed["letters"]
    with pytest.raises(ValueError, match="Gemini accepts at most 5 stop sequences; the strategy has 6"):
        run(items, pro, strategy("S1", stop=tuple("abcdef")), tmp_path / "y", progress=False)


def _job(tmp_path, url, **kw):
    return Job(model="gemini-2.0-flash", dataset="demo", dataset_args={}, language="pt", strategy="enem_0shot",
               run_dir=tmp_path / "run", shuffles=2, limit=3, min_k=False,
               backend_options={"backend": "google", "api_key_env": "FAKE_GEMINI_KEY", "base_url": url,
                                "cache_dir": str(tmp_path / "cache"), "backoff": 0.001, **kw})


def test_batch_mode_round_trip_and_failures(gemini, tmp_path):
    api, server = gemini
    job = _job(tmp_path, api.url)
    cache = BackendCache()
    state = batch.submit(job, cache)
    (sent,) = [r.json for r in api.requests if r.path.endswith(":batchGenerateContent")]
    inline = sent["batch"]["inputConfig"]["requests"]["requests"]
    assert state["n_requests"] == len(inline) == 6 and all(r["metadata"]["key"] for r in inline)
    assert not batch.fetch(job, cache)["ready"]  # running
    done = batch.fetch(job, cache)
    assert done["ready"] and done["batches"][0]["status"] == "JOB_STATE_SUCCEEDED" and done["batches"][0]["stored"] == 6
    n = len(api.requests)
    from_batch = run_job(job, progress=False).records
    assert len(api.requests) == n  # answered from the cache: no request
    online = run_job(_job(tmp_path / "online", api.url), progress=False).records
    assert_same_records(from_batch, online, ignore=["run_id", "n_forwarded_tokens"])
    assert not api.rejected()
    server.outcome = "FAILED"
    failed_job = _job(tmp_path / "f", api.url)
    batch.submit(failed_job, cache)
    batch.fetch(failed_job, cache)
    failed = batch.fetch(failed_job, cache)
    assert not failed["ready"] and len(failed["failed"]) == 6
    assert "6 of 6 requests failed (Input requests are malformed.)" in batch.describe("r", failed)


def test_batches_are_split_under_the_inline_limit(gemini, tmp_path, monkeypatch):
    api, _ = gemini
    small = providers.BatchLimits(None, 3000, custom_id=r"^.{1,}$")
    monkeypatch.setattr(gemini_batch, "GEMINI", dataclasses.replace(providers.GEMINI, batch=small))
    job = _job(tmp_path, api.url)
    state = batch.submit(job, BackendCache())
    assert len(state["batches"]) > 1 and sum(e["n_requests"] for e in state["batches"]) == 6
    assert max(sizes(api)) <= 3000  # every job's request, as the SDK sent it, within the limit


def test_request_body_is_the_documented_inline_request():
    body = request_body([{"role": "user", "parts": [{"text": "Q"}]}], "S", temperature=0.0, seed=None)
    assert body == {"contents": [{"role": "user", "parts": [{"text": "Q"}]}],
                    "config": {"temperature": 0.0, "system_instruction": "S"}}


def test_the_stand_in_rejects_what_gemini_rejects(gemini):
    import httpx

    api, _ = gemini
    url = f"{api.url}/v1beta/models/gemini-2.0-flash:generateContent"
    contents = [{"role": "user", "parts": [{"text": "Q"}]}]
    cases = [({"generationConfig": {"responseLogprobs": True, "logprobs": 21}}, "range [0, 20]"),
             ({"generationConfig": {"stopSequences": list("abcdef")}}, "at most 5 stop sequences"),
             ({"generationConfig": {"logprobs": 3}}, "only valid if responseLogprobs is true")]
    for extra, message in cases:
        got = httpx.post(url, json={"contents": contents, **extra}, headers={"x-goog-api-key": KEY})
        assert got.status_code == 400 and got.json()["error"]["status"] == "INVALID_ARGUMENT"
        assert message in got.json()["error"]["message"]
    assert httpx.post(url, json={"contents": contents}).json()["error"]["status"] == "PERMISSION_DENIED"
