"""backends.api.ApiBackend, the part the openai, anthropic and google backends share: their provenance keeps
exactly the keys, values and order it had when each backend wrote its own (it is recorded in every run folder
and compared on resume), usage is the sender's counters plus the tokens billed, and each backend gets its
provider's batch client (backends.batch). No request is made: the capability probes are off."""
from __future__ import annotations

import importlib.metadata as md

import pytest

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.batch import AnthropicBatches, GeminiBatches, OpenAIBatches, VLLMRunBatch

COMMON = ["backend", "model", "source", "served_model"]


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "sk-test-not-recorded")


def test_openai_provenance_and_batch_client():
    b = load_backend({"backend": "openai", "model": "m", "base_url": ["http://u:p@gpu1:8000/v1", "http://gpu2:8000/v1"],
                      "provider": "vllm", "prefill": True, "probe": False, "name": "nick"})
    p = b.provenance()
    assert list(p) == [*COMMON, "base_urls", "provider", "server_id", "api_key_env", "prefill", "top_logprobs",
                       "letters_endpoint", "reasoning_model", "probe", "notes", "capabilities", "packages"]
    assert p["base_urls"] == ["http://gpu1:8000/v1", "http://gpu2:8000/v1"] and p["provider"] == "vllm"
    assert (p["model"], p["source"], p["served_model"], p["api_key_env"]) == ("nick", "openai:m", "m", None)
    assert p["server_id"] == "http://gpu1:8000/v1,http://gpu2:8000/v1" and p["top_logprobs"] == 20
    assert p["packages"] == {"openai": md.version("openai")} and p["capabilities"]["batch"]
    assert isinstance(b.batch_api(), VLLMRunBatch)
    hosted = load_backend({"backend": "openai", "model": "gpt-4o-mini", "api_key_env": "FAKE_KEY", "probe": False})
    assert isinstance(hosted.batch_api(), OpenAIBatches) and hosted.provenance()["base_urls"] == []


def test_anthropic_provenance_and_batch_client():
    b = load_backend({"backend": "anthropic", "model": "claude-opus-4-7", "api_key_env": "FAKE_KEY"})
    p = b.provenance()
    assert list(p) == [*COMMON, "server_id", "api_key_env", "seeded_sampling", "prefill", "temperature_sent",
                       "capabilities", "packages"]
    assert (p["seeded_sampling"], p["prefill"], p["temperature_sent"]) == (False, False, False)
    assert p["server_id"] == "https://api.anthropic.com" and p["packages"] == {"anthropic": md.version("anthropic")}
    assert isinstance(b.batch_api(), AnthropicBatches)


def test_google_provenance_usage_and_batch_client():
    b = load_backend({"backend": "google", "model": "gemini-2.5-flash", "api_key_env": "FAKE_KEY", "probe": False,
                      "thinking_budget": 0, "price": {"input": 1.0, "output": 2.0}})
    p = b.provenance()
    assert list(p) == [*COMMON, "server_id", "api_key_env", "thinking_budget", "probe", "capabilities", "packages"]
    assert p["thinking_budget"] == 0 and p["probe"] == {} and p["api_key_env"] == "FAKE_KEY"
    assert p["packages"] == {"google-genai": md.version("google-genai")} and "sk-test" not in str(p)
    assert list(b.usage()) == ["requests", "cache_hits", "http_requests", "retries", "retry_wait_seconds",
                               "cache_corrupt", "prompt_tokens", "completion_tokens", "reasoning_tokens",
                               "forwarded_tokens", "cost_usd"]
    assert isinstance(b.batch_api(), GeminiBatches)
