"""OpenAI-compatible and Anthropic backends against responses in the exact wire format of their documentation,
served on 127.0.0.1 by tests/fake_api.py (the hosted APIs cannot be reached from here; the real
llama-cpp-python server is exercised in test_llama_server.py). Covers letters from top-k (missing letters
NaN), echo splitting by text_offset, the capability probe, retries, concurrency, the request cache, the API
key's hygiene and the Anthropic prefill."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
from fake_api import FakeAPI, sequence
from fake_openai import anthropic_rejects, chat_route, completion, completions_route, messages_route

from mcqa_toolkit.backends import CapabilityError, load_backend
from mcqa_toolkit.backends.http import ApiError
from mcqa_toolkit.backends.openai_wire import parse_echo, parse_letters
from mcqa_toolkit.datasets import load
from mcqa_toolkit.run import Strategy, run, strategy

SECRET = "sk-test-DO-NOT-LEAK-4242"
VOLATILE = ["seconds", "n_forwarded_tokens", "run_id"]


@pytest.fixture(scope="module")
def items():
    return load("demo", language="pt").filter(subject="chemistry")[:4]


@pytest.fixture
def server():
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", completions_route)
        api.route("POST", "/v1/chat/completions", chat_route)
        api.route("POST", "/v1/messages", messages_route)
        yield api


def openai_backend(api, tmp_path, **kw):
    return load_backend({"backend": "openai", "model": "fake-gemma", "base_url": api.url + "/v1",
                         "cache_dir": str(tmp_path / "cache"), "backoff": 0.001, **kw})


def test_letters_from_top_k_missing_letters_are_nan():
    response = completion({"model": "m", "prompt": "Q?\nResposta:", "logprobs": 3})
    got = parse_letters(response, [" A", " B", " C", " D", " E"])
    assert got.extra["letters_seen"] == int(np.isfinite(got.logprobs).sum()) <= 3 and got.extra["top_k"] == 3
    assert np.isnan(got.logprobs).sum() >= 2


def test_echo_is_split_by_text_offset():
    ctx, cont = "A água ferve a", " 100 graus"
    tokens = ["A", " água", " ferve", " a", " 100", " graus", "."]
    values = [None, -1.0, -2.0, -0.5, -3.0, -0.25, -0.1]
    offsets = np.cumsum([0] + [len(t) for t in tokens[:-1]]).tolist()
    r = {"choices": [{"logprobs": {"tokens": tokens, "token_logprobs": values, "text_offset": offsets}}]}
    got = parse_echo(r, ctx, cont)  # the generated "." starts at the prompt's end and is dropped
    assert got.logprobs.tolist() == [-3.0, -0.25] and got.n_context_tokens == 4 and got.text == cont
    whole = parse_echo(r, "", "A água ferve a 100 graus")  # Min-K%: the first token has no log-prob
    assert whole.logprobs.tolist() == values[1:-1]
    merged = {"choices": [{"logprobs": {"tokens": ["Q", ":(", "B", ")"], "token_logprobs": [None, -1.0, -2.0, -9.0],
                                        "text_offset": [0, 1, 3, 4]}}]}
    assert parse_echo(merged, "Q:", "(B").logprobs.tolist() == [-1.0, -2.0]  # ":(" merges the boundary
    with pytest.raises(ValueError, match="server ignored echo"):
        parse_echo({"choices": [{"logprobs": {"token_logprobs": [-1.0], "text_offset": []}}]}, "Q:", " A")


def test_online_run_cache_and_api_key_hygiene(server, items, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", SECRET)
    st = Strategy.first_token(shuffles=3, style="default")
    backend = openai_backend(server, tmp_path, api_key_env="FAKE_KEY")
    first = run(items, backend, st, tmp_path / "r1", progress=False)
    n_http = len(server.requests)
    assert n_http == 2 + 4 * 3  # the probe's 2 requests, then one per item x shuffle
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)
    seen = first["extra"].map(lambda e: json.loads(e)["letters_seen"])
    assert (seen == first["n_options"]).all() and (first["choice"] >= 0).all()
    again = openai_backend(server, tmp_path, api_key_env="FAKE_KEY")  # a new process: only the cache remains
    second = run(items, again, st, tmp_path / "r2", progress=False)
    assert len(server.requests) == n_http and again.usage()["http_requests"] == 0
    assert first.drop(columns=VOLATILE).equals(second.drop(columns=VOLATILE))
    stored = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert stored and not [p for p in stored if SECRET in p.read_text(errors="ignore")]
    assert backend.provenance()["api_key_env"] == "FAKE_KEY" and SECRET not in str(backend.provenance())


def test_loglik_and_cloze_through_echo(server, items, tmp_path):
    backend = openai_backend(server, tmp_path)
    df = run(items, backend, strategy("S5"), tmp_path / "c", progress=False)
    sums = df["extra"].map(lambda e: json.loads(e)["loglik_sum"])
    assert (df["choice"] >= 0).all() and all(all(v < 0 for v in s) for s in sums)
    bodies = [r.json for r in server.calls("/v1/completions")][2:]  # after the probe's two
    assert len(bodies) == sum(it.n_options for it in items)
    assert all(b["echo"] and b["max_tokens"] == 1 and b["logprobs"] == 1 for b in bodies)


def test_probe_refuses_loglik_on_a_server_that_ignores_echo(items, tmp_path):
    def no_echo(req):  # like upstream llama-server / Ollama: echo ignored, only the generated token comes back
        body = {**req.json, "echo": False}
        return 200, completion({**body, "logprobs": body.get("logprobs") or 1})

    with FakeAPI() as api:
        api.route("POST", "/v1/completions", no_echo)
        backend = openai_backend(api, tmp_path)
        with pytest.raises(CapabilityError, match=r"^backend 'fake-gemma' cannot score loglik: it cannot return "
                                                  r"log-probabilities of given text \(no echo\); use"):
            run(items, backend, Strategy.loglik("token"), tmp_path / "x", progress=False)
        assert len(api.requests) == 2  # the probe only
        assert backend.capabilities.next_token_logprobs  # letters still work


def test_retries_with_backoff_then_give_up(items, tmp_path):
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", sequence(
            (429, {"error": {"message": "slow down"}}, {"retry-after": "0"}), (503, {"error": {"message": "busy"}}),
            completions_route))
        backend = openai_backend(api, tmp_path, probe=False)
        got = backend.letter_logprobs(_prompts(items[:1]))
        assert np.isfinite(got[0].logprobs).all() and backend.usage()["retries"] == 2
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", lambda r: (500, {"error": {"message": "boom"}}))
        backend = openai_backend(api, tmp_path / "b", probe=False, retries=2)
        with pytest.raises(ApiError, match=r"openai backend, model 'fake-gemma', completions: .*gave up after 2"):
            backend.letter_logprobs(_prompts(items[:1]))
        assert len(api.requests) == 3
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", lambda r: (400, {"error": {"message": "bad request"}}))
        backend = openai_backend(api, tmp_path / "c", probe=False)
        with pytest.raises(ApiError, match="not retryable"):
            backend.letter_logprobs(_prompts(items[:1]))
        assert len(api.requests) == 1


def test_concurrency_bound_and_round_robin(items, tmp_path):
    """The first 3 requests meet inside the servers (3 in flight at once, whatever the machine's speed; the
    barrier's timeout only bounds a hang) and every request stays a moment, so a 4th at once would be seen."""
    live, peak, arrived, lock = [0], [0], [0], threading.Lock()
    first_three = threading.Barrier(3, timeout=120)

    def slow(req):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
            arrived[0] += 1
            meets = arrived[0] <= 3
        try:
            if meets:
                first_three.wait()
            time.sleep(0.05)  # lets a request over the bound overlap (it can only show a fault, never make one)
        finally:
            with lock:
                live[0] -= 1
        return completions_route(req)

    with FakeAPI() as a, FakeAPI() as b:
        for api in (a, b):
            api.route("POST", "/v1/completions", slow)
        backend = load_backend({"backend": "openai", "model": "m", "base_url": [a.url + "/v1", b.url + "/v1"],
                                "probe": False, "concurrency": 3, "cache_dir": str(tmp_path)})
        prompts = [p for it in items for p in _prompts([it], shuffles=3)]
        backend.letter_logprobs(prompts)
        assert peak[0] == 3 and len(a.requests) == len(b.requests) == len(prompts) // 2


def test_generation_bodies_chat_and_completions(server, items, tmp_path):
    backend = openai_backend(server, tmp_path, probe=False)
    run(items, backend, strategy("uned"), tmp_path / "u", progress=False)  # chat prompts -> chat completions
    chat = server.calls("/v1/chat/completions")
    assert len(chat) == 4 and chat[0].json["messages"][0]["role"] in ("system", "user")
    assert "seed" not in chat[0].json and chat[0].json["temperature"] == 0.0
    run(items, backend, strategy("S1", temperature=0.7), tmp_path / "s", progress=False)
    sampled = [r.json for r in server.calls("/v1/completions")]
    assert len({b["seed"] for b in sampled}) == 4 and all(b["temperature"] == 0.7 for b in sampled)


def test_anthropic_prefill_retries_and_refusal(server, items, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC", SECRET)
    server.route("POST", "/v1/messages", sequence((529, {"type": "error", "error": {"type": "overloaded_error",
                                                                                     "message": "Overloaded"}}),
                                                  messages_route))
    backend = load_backend({"backend": "anthropic", "model": "claude-fake", "api_key_env": "FAKE_ANTHROPIC",
                            "base_url": server.url, "cache_dir": str(tmp_path / "cache"), "backoff": 0.001})
    df = run(items, backend, strategy("S1", style="default", chat=True), tmp_path / "a", progress=False)
    body = server.calls("/v1/messages")[-1].json
    assert body["messages"][-1] == {"role": "assistant", "content": "Resposta:"} and body["temperature"] == 0.0
    assert (df["choice"] >= 0).all() and backend.usage()["retries"] == 1
    n = len(server.requests)
    with pytest.raises(CapabilityError, match=r"^backend 'claude-fake' cannot score first_token: it exposes no "
                                              r"next-token log-probabilities; use method='generate'$"):
        run(items, backend, Strategy.first_token(), tmp_path / "b", progress=False)
    assert len(server.requests) == n
    with pytest.raises(ValueError, match="environment variable NOT_SET_ANYWHERE"):
        load_backend({"backend": "anthropic", "model": "c", "api_key_env": "NOT_SET_ANYWHERE"})


def _prompts(items, shuffles=1):
    from mcqa_toolkit.prompts import load_template, render
    from mcqa_toolkit.prompts.permutations import permutations

    return [render(it, load_template("pt", "default"), permutation=p, shuffle=k)
            for it in items for k, p in enumerate(permutations(it.n_options, shuffles, seed=0, key=it.parallel_id))]


def test_usage_counts_billed_tokens_and_cost(server, items, tmp_path):
    """Tokens are the server's usage fields of requests actually sent; cost = tokens x USD per 1M tokens."""
    b = openai_backend(server, tmp_path, probe=False, price={"input": 2.0, "output": 8.0})
    b.generate(_prompts(items), max_new_tokens=5)
    bodies = server.calls("/v1/completions")
    sent = [completion(r.json)["usage"] for r in bodies]
    u = b.usage()
    assert u["prompt_tokens"] == sum(x["prompt_tokens"] for x in sent) and u["completion_tokens"] == 6 * len(sent)
    assert u["cost_usd"] == pytest.approx((u["prompt_tokens"] * 2.0 + u["completion_tokens"] * 8.0) / 1e6)
    b.generate(_prompts(items), max_new_tokens=5)  # cached: nothing more billed
    assert b.usage()["cost_usd"] == u["cost_usd"] and b.usage()["cache_hits"] == len(items)


def test_replicas_share_cached_answers_other_deployments_never(items, tmp_path):
    """The cache key holds a server identity: the sorted base URLs without credentials, or `server_id`. Replicas
    listed together share answers (in any order); the same model id on another deployment asks again."""
    with FakeAPI() as a, FakeAPI() as b, FakeAPI() as other:
        for api in (a, b, other):
            api.route("POST", "/v1/completions", completions_route)
        prompts = _prompts(items)

        def ask(urls, **kw):
            backend = load_backend({"backend": "openai", "model": "m", "base_url": urls, "probe": False,
                                    "cache_dir": str(tmp_path / "cache"), **kw})
            backend.letter_logprobs(prompts)
            return backend.usage()["http_requests"]

        assert ask([a.url + "/v1", b.url + "/v1"]) == len(prompts)
        assert ask([b.url + "/v1/", a.url + "/v1"]) == 0  # the same replicas: every answer from the cache
        host = other.url.split("://")[1]
        assert ask(f"http://user:pw@{host}/v1") == len(prompts)  # another deployment, same model id: asked again
        assert ask(other.url + "/v1") == 0  # credentials are not part of the identity
        assert ask(a.url + "/v1", server_id="gemma-27b-q4") == len(prompts)
        assert ask(other.url + "/v1", server_id="gemma-27b-q4") == 0  # a named deployment, wherever it is served


def test_anthropic_model_rules_prefill_and_temperature(items, tmp_path, monkeypatch):
    """Claude 4.6+ rejects prefill (the cue ends the user turn), Opus 4.7+ rejects temperature: the stand-in
    (tests/fake_openai.anthropic_rejects) answers both with Anthropic's error; the backend sends neither."""
    monkeypatch.setenv("FAKE_ANTHROPIC", SECRET)
    with FakeAPI() as api:
        api.route("POST", "/v1/messages", messages_route)
        for model in ("claude-sonnet-4-6", "claude-opus-4-7"):
            backend = load_backend({"backend": "anthropic", "model": model, "api_key_env": "FAKE_ANTHROPIC",
                                    "base_url": api.url, "cache_dir": str(tmp_path / "cache"), "backoff": 0.001})
            df = run(items, backend, strategy("S1", style="default", chat=True), tmp_path / model, progress=False)
            assert (df["choice"] >= 0).all()
        sent = [r.json for r in api.requests]
        assert not api.rejected() and all(b["messages"][-1]["role"] == "user" for b in sent)
        assert all(b["messages"][-1]["content"].endswith("\n\nResposta:") for b in sent)
        assert ["temperature" in b for b in sent] == [True] * len(items) + [False] * len(items)
        bad = {"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": [{"role": "user", "content": "Q"},
                                                                            {"role": "assistant", "content": "R:"}]}
        status, body = anthropic_rejects(bad)
        assert status == 400 and body["error"]["message"].startswith("This model does not support assistant message")
