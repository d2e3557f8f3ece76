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
