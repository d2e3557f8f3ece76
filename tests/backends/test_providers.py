"""Provider limits (backends.providers) against stand-ins that reject what each real API rejects, with its error
shape (tests/fake_openai.py: OpenAI's documented limits and reasoning-model errors, vLLM 0.32.0's measured ones),
served on 127.0.0.1 (the hosted APIs cannot be reached from here). The stand-ins would refuse an over-limit
request; the backends never send one: letters through chat top_logprobs on an OpenAI chat model (the ENEM paper's
GPT-3.5 protocol), through completions logprobs <= 5 on a legacy one, reasoning models' parameter rules, and a
probe that sends exactly the shapes the run sends."""
from __future__ import annotations

import json

import httpx
import pytest
from fake_api import FakeAPI
from fake_openai import LEGACY, provider_route
from paths import FIXTURES

from mcqa_toolkit.backends import CapabilityError, load_backend
from mcqa_toolkit.backends.openai_wire import letter_body
from mcqa_toolkit.backends.providers import PROVIDERS, profile, provider_for
from mcqa_toolkit.datasets import load
from mcqa_toolkit.run import Strategy, run, strategy

KEY = "sk-canary-providers-0001"


@pytest.fixture(scope="module")
def items():
    return load("demo", language="pt").filter(subject="chemistry")[:3]


def _served(provider):
    api = FakeAPI()
    api.route("POST", "/v1/completions", provider_route(provider))
    api.route("POST", "/v1/chat/completions", provider_route(provider))
    return api


def _backend(api, tmp_path, model, provider, **kw):
    return load_backend({"backend": "openai", "model": model, "base_url": api.url + "/v1", "provider": provider,
                         "cache_dir": str(tmp_path / "cache"), "backoff": 0.001, **kw})


def test_provider_is_named_or_inferred_from_the_host():
    assert provider_for(None, [None]).name == "openai"  # the SDK's default base URL
    assert provider_for(None, ["https://api.openai.com/v1"]).name == "openai"
    assert provider_for(None, ["https://chat.maritaca.ai/api"]).name == "maritaca"
    assert provider_for(None, ["https://integrate.api.nvidia.com/v1"]).name == "nim"
    assert provider_for(None, ["https://generativelanguage.googleapis.com/v1beta/openai/"]).name == "gemini_openai"
    assert provider_for(None, ["http://gpu1:8000/v1"]).name == "compatible"
    assert provider_for("vllm", ["http://gpu1:8000/v1"]).name == "vllm"
    with pytest.raises(ValueError, match=r"unknown provider 'vlm'; known: \["):
        provider_for("vlm", [None])
    openai = PROVIDERS["openai"]
    assert profile(openai, "gpt-4o-mini").letters_endpoint == "chat"
    assert (profile(openai, "gpt-4o-mini").top_k, profile(openai, "davinci-002").top_k) == (20, 5)
    assert profile(openai, "davinci-002").letters_endpoint == "completions"
    o3 = profile(openai, "o3-mini")
    assert o3.letters_endpoint is None and o3.rule.token_param == "max_completion_tokens" and not o3.rule.stop
    assert profile(openai, "gpt-5-mini").rule.stop and profile(PROVIDERS["vllm"], "gpt-5-mini").rule is None


def test_a_server_whose_history_moves_scores_says_so_in_the_provenance(tmp_path):
    """llama.cpp evaluates only what differs from the previous prompt, and a request's log-probs can then differ
    from a fresh server's (docs/backends.md, benchmarks/server_history.py): a run's provenance says so; servers
    with nothing known to say have no such key."""
    def provenance(provider):
        return load_backend({"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                             "provider": provider, "probe": False, "cache_dir": str(tmp_path)}).provenance()

    said = provenance("llama_cpp")
    assert said["provider"] == "llama_cpp" and "previous request" in said["server_history"]
    assert "docs/backends.md" in said["server_history"]
    assert "server_history" not in provenance("vllm") and PROVIDERS["vllm"].history is None


def test_stand_ins_reject_over_limit_requests_with_the_real_error_shape():
    with _served("openai") as openai_api, _served("vllm") as vllm_api:
        over = httpx.post(f"{openai_api.url}/v1/completions", json=letter_body("davinci-002", "Q:", 20))
        assert over.status_code == 400 and over.json() == {"error": {
            "message": "Invalid 'logprobs': integer above maximum value. Expected a value <= 5, but got 20 instead.",
            "type": "invalid_request_error", "param": "logprobs", "code": "integer_above_max_value"}}
        chat = httpx.post(f"{openai_api.url}/v1/completions", json=letter_body("gpt-4o-mini", "Q:", 5))
        assert chat.status_code == 404 and "not supported in the v1/completions endpoint" in chat.json()["error"][
            "message"]
        o1 = httpx.post(f"{openai_api.url}/v1/chat/completions", json={"model": "o1", "max_tokens": 5, "messages": []})
        assert o1.status_code == 400 and o1.json()["error"]["code"] == "unsupported_parameter"
        logprobs = httpx.post(f"{openai_api.url}/v1/chat/completions", json={
            "model": "o4-mini", "max_completion_tokens": 5, "messages": [], "logprobs": True, "top_logprobs": 5})
        assert logprobs.status_code == 403
        measured = json.loads((FIXTURES / "vllm" / "a_letters_logprobs21.json").read_text())
        vllm = httpx.post(f"{vllm_api.url}/v1/completions", json=measured["request"]["body"])
        assert (vllm.status_code, vllm.json()) == (measured["status"], measured["response"])  # as vLLM 0.32.0 said


def test_openai_chat_model_letters_through_top_logprobs(items, tmp_path, monkeypatch):
    """gpt-3.5-turbo (the ENEM paper's API model): one token, top-20 log-probs of the reply to the prompt sent as
    the user turn; every letter found whatever its spacing; nothing rejected, probe shape = run shape."""
    monkeypatch.setenv("FAKE_OPENAI_KEY", KEY)
    with _served("openai") as api:
        backend = _backend(api, tmp_path, "gpt-3.5-turbo", "openai", api_key_env="FAKE_OPENAI_KEY")
        df = run(items, backend, strategy("enem_0shot", shuffles=2), tmp_path / "r", progress=False)
        assert not api.rejected() and not api.calls("/v1/completions")
        bodies = [r.json for r in api.calls("/v1/chat/completions")]
        probe, sent = bodies[0], bodies[1:]
        assert len(sent) == len(df) == 6 and {json.dumps({k: v for k, v in b.items() if k != "messages"},
                                                          sort_keys=True) for b in bodies} == {json.dumps(
            {"logprobs": True, "max_tokens": 1, "model": "gpt-3.5-turbo", "temperature": 0.0, "top_logprobs": 20},
            sort_keys=True)}
        assert [m["role"] for m in probe["messages"]] == [m["role"] for m in sent[0]["messages"]] == ["user"]
        extra = df["extra"].map(json.loads)
        assert (extra.map(lambda e: e["letters_seen"]) == df["n_options"]).all() and (df["choice"] >= 0).all()
        assert set(extra.map(lambda e: (e["endpoint"], e["letter_match"]))) == {("chat", "stripped")}
        assert backend.provenance()["provider"] == "openai" and KEY not in json.dumps(backend.provenance())
        with pytest.raises(CapabilityError, match="cannot score cloze: it cannot return log-probabilities of given"):
            run(items, backend, strategy("S5"), tmp_path / "s5", progress=False)


def test_openai_legacy_completions_letters_at_most_five(items, tmp_path):
    with _served("openai") as api:
        backend = _backend(api, tmp_path, "davinci-002", "openai", top_logprobs=20)
        df = run(items, backend, Strategy.first_token(shuffles=2, style="enem"), tmp_path / "r", progress=False)
        sent = [r.json for r in api.calls("/v1/completions")]
        assert not api.rejected() and {b["logprobs"] for b in sent if not b["echo"]} == {5}
        extra = df["extra"].map(json.loads)
        assert (extra.map(lambda e: e["letters_seen"]) <= 5).all() and (extra.map(lambda e: e["top_k"]) == 5).all()
        assert backend.capabilities.top_logprobs == 5 and backend.capabilities.continuation_logprobs
    with _served("openai") as api:  # gpt-3.5-turbo-instruct rejects echo with logprobs: never asked, loglik refused
        backend = _backend(api, tmp_path / "i", "gpt-3.5-turbo-instruct", "openai")
        assert not backend.capabilities.continuation_logprobs and backend.capabilities.next_token_logprobs
        assert [r.json["echo"] for r in api.requests] == [False] and not api.rejected()
    assert set(LEGACY) >= {"davinci-002", "gpt-3.5-turbo-instruct"}


def test_compatible_server_falls_back_to_five_when_twenty_is_refused(items, tmp_path):
    """A server of unknown limits that accepts only 5: the probe finds it, and the run sends 5."""
    def strict(req):
        if (req.json.get("logprobs") or 0) > 5:
            return 400, {"error": {"message": "logprobs must be <= 5"}}
        return provider_route("vllm")(req)

    with FakeAPI() as api:
        api.route("POST", "/v1/completions", strict)
        backend = load_backend({"backend": "openai", "model": "m", "base_url": api.url + "/v1",
                                "cache_dir": str(tmp_path / "c"), "backoff": 0.001})
        run(items[:1], backend, Strategy.first_token(), tmp_path / "r", progress=False)
        ks = [r.json.get("logprobs") for r in api.calls("/v1/completions") if not r.json["echo"]]
        assert ks == [20, 5, 5] and backend.provenance()["top_logprobs"] == 5


def test_reasoning_model_parameter_rules(items, tmp_path):
    """o3-mini: max_completion_tokens (answer + reasoning budget), no temperature, no stop, no logprobs (letters
    refused in one sentence before any request); reasoning tokens split from the answer's."""
    with _served("openai") as api:
        backend = _backend(api, tmp_path, "o3-mini", "openai", reasoning_budget=1000)
        with pytest.raises(CapabilityError, match=r"^backend 'o3-mini' cannot score first_token: it exposes no"):
            run(items, backend, Strategy.first_token(), tmp_path / "ft", progress=False)
        assert not api.requests
        df = run(items, backend, strategy("S1", max_new_tokens=8), tmp_path / "g", progress=False)
        sent = [r.json for r in api.calls("/v1/chat/completions")]
        assert not api.rejected() and all(b["max_completion_tokens"] == 1008 and "temperature" not in b
                                          and "stop" not in b and "max_tokens" not in b for b in sent)
        extra = df["extra"].map(json.loads)
        assert (extra.map(lambda e: (e["reasoning_tokens"], e["answer_tokens"])) == (40, 3)).all()
        assert (df["choice"] >= 0).all() and backend.usage()["reasoning_tokens"] == 40 * len(items)


def test_stop_strings_over_the_limit_are_an_error_not_a_silent_cut(items, tmp_path):
    with _served("openai") as api:
        backend = _backend(api, tmp_path, "gpt-4o-mini", "openai", probe=False)
        with pytest.raises(ValueError, match="openai accepts at most 4 stop strings; the strategy has 5"):
            run(items[:1], backend, strategy("S1", stop=("a", "b", "c", "d", "e")), tmp_path / "x", progress=False)
        assert not api.requests


def test_vllm_chat_prefill_and_letters_within_max_logprobs(items, tmp_path):
    with _served("vllm") as api:
        backend = _backend(api, tmp_path, "gemma", "vllm", prefill=True, top_logprobs=50)
        df = run(items, backend, strategy("uned", method="first_token"), tmp_path / "r", progress=False)
        sent = [r.json for r in api.calls("/v1/chat/completions")]
        assert not api.rejected() and {b["top_logprobs"] for b in sent} == {20}
        assert all(b["continue_final_message"] and not b["add_generation_prompt"] for b in sent)
        extra = df["extra"].map(json.loads)
        assert (extra.map(lambda e: (e["letters_seen"], e["letter_match"])) == [(n, "exact") for n in df["n_options"]]
                ).all() and (df["choice"] >= 0).all()


def test_chat_only_model_behind_a_gateway_scores_letters_through_chat(items, tmp_path):
    """A gateway on an unknown host (provider inferred `compatible`) in front of an OpenAI chat model: its
    /v1/completions answers 404 "This is a chat model and not supported in the v1/completions endpoint" (the
    stand-in serves OpenAI's documented error body on 127.0.0.1); the probe switches letters to chat
    top_logprobs once, remembers it for the model, and the run sends nothing the gateway rejects afterwards."""
    with _served("openai") as api:
        backend = load_backend({"backend": "openai", "model": "gpt-4o-mini", "base_url": api.url + "/v1",
                                "cache_dir": str(tmp_path / "cache"), "backoff": 0.001})
        assert backend.provider.name == "compatible"
        caps = backend.capabilities
        assert caps.next_token_logprobs and not caps.continuation_logprobs and caps.top_logprobs == 20
        assert [r.path for r in api.requests] == ["/v1/completions", "/v1/chat/completions"]   # probed once each
        df = run(items, backend, strategy("enem_0shot", shuffles=2), tmp_path / "r", progress=False)
        assert len(api.rejected()) == 1 and not api.calls("/v1/completions")[1:]
        assert (df["choice"] >= 0).all() and set(df["extra"].map(lambda e: json.loads(e)["endpoint"])) == {"chat"}
        prov = backend.provenance()
        assert prov["letters_endpoint"] == "chat" and "chat model" in prov["probe"]["letters endpoint"]
        gen = run(items, backend, strategy("S1", max_new_tokens=4), tmp_path / "g", progress=False)
        assert len(gen) == len(items) and not api.calls("/v1/completions")[1:]   # generation through chat too
        with pytest.raises(CapabilityError, match="cannot score cloze"):
            run(items, backend, strategy("S5"), tmp_path / "s5", progress=False)


def test_a_completions_refusal_that_is_not_about_chat_models_is_not_a_switch(tmp_path):
    """A `compatible` server whose completions refuse letters for another reason stays refused for letters (no
    switch to chat on an unrelated error)."""
    def refuse(req):
        if "/chat/" in req.path:
            return 200, {"unexpected": True}
        return 400, {"error": {"message": "logprobs are disabled on this deployment", "type": "invalid_request_error",
                               "param": "logprobs", "code": None}}
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", refuse)
        api.route("POST", "/v1/chat/completions", refuse)
        backend = load_backend({"backend": "openai", "model": "m", "base_url": api.url + "/v1",
                                "cache_dir": str(tmp_path / "cache"), "backoff": 0.001})
        assert not backend.capabilities.next_token_logprobs
        assert not api.calls("/v1/chat/completions") and backend.profile.letters_endpoint == "completions"
