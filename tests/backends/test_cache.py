"""backends.cache: entries carry their key and a checksum; a damaged entry is reported, set aside and never
used; entries written before the checksum are still read; writes go to a temporary name and are renamed.
(SIGKILL during writes and damage in a real run: tests/faults.)"""
from __future__ import annotations

import json
import logging

from mcqa_toolkit.backends.cache import RequestCache, request_key


def test_entries_round_trip_and_damage_is_reported(tmp_path, caplog):
    cache = RequestCache(tmp_path)
    key = request_key("openai", "m", "completions", {"prompt": "x"})
    cache.put(key, {"choices": [{"text": "A"}]})
    path = tmp_path / key[:2] / f"{key}.json"
    assert json.loads(path.read_text())["key"] == key and cache.get(key) == {"choices": [{"text": "A"}]}
    assert not list(tmp_path.rglob("*.tmp"))
    entry = json.loads(path.read_text())
    entry["response"]["choices"][0]["text"] = "B"  # valid JSON, wrong answer
    path.write_text(json.dumps(entry))
    with caplog.at_level(logging.WARNING, logger="mcqa_toolkit.backends"):
        assert cache.get(key) is None
    assert cache.corrupt == [path] and str(path) in caplog.text and "checksum mismatch" in caplog.text
    assert not path.exists() and path.with_name(path.name + ".corrupt").exists()


def test_legacy_entries_without_checksum_are_read(tmp_path):
    cache = RequestCache(tmp_path)
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / ("ab" + "0" * 62 + ".json")).write_text(json.dumps({"choices": []}))
    assert cache.get("ab" + "0" * 62) == {"choices": []} and not cache.corrupt


def test_a_cached_answer_keeps_the_providers_key_order(tmp_path):
    """Legacy completions' top_logprobs is an object ordered by probability; on a tie its order decides the top
    token. The cache returns the response exactly as received, so a run answered from the cache records what the
    fresh run recorded (entries were once written with sorted keys: " the" then sorted before "B")."""
    from mcqa_toolkit.backends.openai_wire import parse_letters

    response = {"choices": [{"text": "B", "logprobs": {"tokens": ["B"], "token_logprobs": [-0.7],
                                                        "top_logprobs": [{"B": -0.7, " the": -0.7, "A": -1.1}]}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 1}}
    cache = RequestCache(tmp_path)
    key = request_key("openai", "m", "completions", {"prompt": "Resposta: ("})
    cache.put(key, response)
    again = cache.get(key)
    assert list(again["choices"][0]["logprobs"]["top_logprobs"][0]) == ["B", " the", "A"]
    fresh, cached = parse_letters(response, ["A", "B"], exact=True), parse_letters(again, ["A", "B"], exact=True)
    assert fresh.extra["top_token"] == cached.extra["top_token"] == "B"
