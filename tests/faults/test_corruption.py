"""Damaged files: request cache entries (cut short, altered, another request's answer, zeroed, empty) and
records.jsonl lines. Each is reported with its path and never used for an answer.

The API is a stand-in served on 127.0.0.1 (tests/fake_api.py) answering /v1/completions in the documented
OpenAI wire format (tests/fake_openai.py)."""
from __future__ import annotations

import json
import logging
import re
import signal

import pytest
from fake_api import FakeAPI
from fake_openai import completion
from faults_children import in_child, lookup_job, run_lookup

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run import Strategy, run
from mcqa_toolkit.run.recipe import run_job

pytestmark = pytest.mark.faults


def _cut_short(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _altered(path):  # valid JSON, plausible, wrong: a letter's log-prob moved by one
    entry = json.loads(path.read_text())
    top = entry["response"]["choices"][0]["logprobs"]["top_logprobs"][0]
    first = next(iter(top))
    top[first] += 1.0
    path.write_text(json.dumps(entry))


def _zeroed(path):  # what a power cut can leave of a file whose data never reached the disk
    path.write_bytes(b"\0" * path.stat().st_size)


def _empty(path):
    path.write_bytes(b"")


def test_damaged_cache_entries_are_reported_and_never_used(tmp_path, caplog, figures):
    items = load("demo", language="pt")[:4]
    strategy = Strategy.first_token(shuffles=2, style="enem")
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", lambda req: (200, completion(req.json)))

        def backend():
            return load_backend({"backend": "openai", "model": "fake-gemma", "base_url": api.url + "/v1",
                                 "cache_dir": str(tmp_path / "cache"), "concurrency": 1})

        first = run(items, backend(), strategy, tmp_path / "first" / "run", progress=False)
        entries = sorted((tmp_path / "cache").rglob("*.json"))
        letters = [p for p in entries if "top_logprobs" in p.read_text() and '"echo": true' not in p.read_text()
                   and json.loads(p.read_text())["response"]["choices"][0]["logprobs"]["top_logprobs"][0]]
        damage = {"cut short": _cut_short, "altered": _altered, "zeroed": _zeroed, "empty": _empty}
        damaged = dict(zip(letters, damage, strict=False))  # the first four entries, one kind of damage each
        for path, how in damaged.items():
            damage[how](path)
        other, victim = letters[len(damage)], letters[len(damage) + 1]
        victim.write_bytes(other.read_bytes())  # another request's (sound) answer under this key
        damaged[victim] = "another request's answer"
        again = backend()
        with caplog.at_level(logging.WARNING, logger="mcqa_toolkit.backends"):
            second = run(items, again, strategy, tmp_path / "second" / "run", progress=False)
    # equality rule: `n_forwarded_tokens` ignored because answers read from the request cache cost nothing
    assert_same_records(second, first, ignore=["n_forwarded_tokens"])  # no damaged answer was used
    usage = again.usage()
    assert usage["cache_corrupt"] == usage["http_requests"] == len(damaged)
    warned = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
    for path in damaged:
        assert sum(str(path) in w for w in warned) == 1, (path, warned)
        assert path.with_name(path.name + ".corrupt").exists() and path.exists()  # kept aside; fetched anew
    assert any("checksum mismatch" in w for w in warned) and any("another request" in w for w in warned)
    figures.add("cache_corrupt", cases=len(damaged), requests_sent_again=usage["http_requests"])


LINE_DAMAGE = {
    "garbage": lambda line: b"%PDF-1.4 \xff\xfe garbage",
    "nul bytes": lambda line: b"\0" * len(line),
    "cut short": lambda line: line[: len(line) // 2],
    "null": lambda line: b"null",
    "no item_id": lambda line: json.dumps({k: v for k, v in json.loads(line).items() if k != "item_id"}).encode(),
    "shuffle as text": lambda line: json.dumps({**json.loads(line), "shuffle": "0"}).encode(),
}


@pytest.mark.parametrize("how", list(LINE_DAMAGE))
def test_a_damaged_records_line_is_reported_with_its_path(tmp_path, reference_run, figures, how):
    out = tmp_path / "run"
    assert in_child(run_lookup, str(out), kill_in="finalize").exitcode == -signal.SIGKILL
    rd = RunDir(out)
    lines = rd.jsonl.read_bytes().split(b"\n")
    lines[2] = LINE_DAMAGE[how](lines[2])
    rd.jsonl.write_bytes(b"\n".join(lines))
    before = rd.jsonl.read_bytes()
    job, cache = lookup_job(out)
    where = re.escape(str(rd.jsonl))
    with pytest.raises(ValueError, match=rf"^{where}: line 3 (is corrupt|is not a record)") as refused:
        run_job(job, cache, progress=False)
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(rd.jsonl))}: line 3 "):
        rd.load()
    assert rd.jsonl.read_bytes() == before and not rd.parquet.exists() and not rd.summary_file.exists()
    del lines[2]  # what the message says to do
    rd.jsonl.write_bytes(b"\n".join(lines))
    # equality rule: `n_forwarded_tokens` ignored because a resumed run re-encodes its run prefix
    assert_same_records(run_job(job, cache, progress=False).records, reference_run[1], ignore=["n_forwarded_tokens"])
    figures.add("records_corrupt", cases=1)
