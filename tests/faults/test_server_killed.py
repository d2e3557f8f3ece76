"""The model server dies mid-run: a REAL llama-cpp-python server (backends/llama_server.py, the embedded
Gemma-3-270M) is killed with SIGKILL while a run is using it, then restarted on the same port. The run stops
with one clear line; the re-run sends only the requests never answered and ends with every record once, equal
to an undisturbed run.

"Undisturbed" has to mean the same server history: llama-cpp-python keeps the previous request's evaluated prompt
and evaluates only the part of the next prompt that differs, and a request that shares only its header with the
previous one (another question) can get other log-probs than on a fresh server (docs/backends.md: the conditions
and the measured bound, benchmarks/server_history.py). So the reference run's server is restarted cleanly at the
point where the other run's server is killed; how far an uninterrupted run (the second question asked after the
first on the same server) is from it is reported as `server_history_max_delta`: that is the server's history, not
the kill or the restart. Requests are few and short: a new prompt costs about a second on 2 cores, and the server
(n_ctx 512) restarts in about two."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import mcqa_toolkit.run.runner as runner_mod
from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.http import ApiError
from mcqa_toolkit.backends.llama_server import LlamaServer
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run import Strategy, run

pytestmark = [pytest.mark.faults, pytest.mark.server]
ROWS = [("Two plus two is", ("four", "five", "ten"), 0), ("The sky on a clear day is", ("green", "blue", "red"), 1)]
ITEMS = ItemSet([Item(item_id=f"short-{k}", source="test", exam="short", stem=stem, options=opts, answer=ans,
                      language="en", subject="general") for k, (stem, opts, ans) in enumerate(ROWS)], "short")
STRATEGY = Strategy.first_token(shuffles=2, style="default")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module, fresh (no request seen yet) when the test starts."""
    with LlamaServer(tmp_path_factory.mktemp("llama"), n_ctx=512) as s:
        yield s


def _backend(server, cache_dir, **kw):
    return load_backend({"backend": "openai", "model": "gemma-3-270m", "base_url": server.url, "probe": False,
                         "cache_dir": str(cache_dir), "concurrency": 1, **kw})


@contextlib.contextmanager
def _at_second_item(monkeypatch, action):
    """Call `action` as the runner asks the second item (the first item's records are written)."""
    real_ask, calls = runner_mod.ask, {"n": 0}

    def ask(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            action()
        return real_ask(*args, **kwargs)

    monkeypatch.setattr(runner_mod, "ask", ask)
    try:
        yield
    finally:
        monkeypatch.setattr(runner_mod, "ask", real_ask)


def _fresh(server):
    server.stop()
    server.start()


def test_server_killed_mid_run_then_restarted(server, tmp_path, monkeypatch, figures):
    with _at_second_item(monkeypatch, lambda: _fresh(server)):  # the reference: a clean restart at that point
        reference = run(ITEMS, _backend(server, tmp_path / "c1"), STRATEGY, tmp_path / "reference" / "run",
                        progress=False)
    _fresh(server)
    out = tmp_path / "killed" / "run"
    with _at_second_item(monkeypatch, server.kill), pytest.raises(ApiError) as stopped:
        run(ITEMS, _backend(server, tmp_path / "c2", retries=2, backoff=0.05), STRATEGY, out, progress=False)
    message = str(stopped.value)
    assert "\n" not in message and "APIConnectionError" in message and "run again to resume" in message
    assert len(RunDir(out).read_records()) == 2  # the first item's shuffles, written before the kill
    server.start()  # same port, same URL
    again = _backend(server, tmp_path / "c2")
    resumed = run(ITEMS, again, STRATEGY, out, progress=False)
    assert again.usage()["requests"] == again.usage()["http_requests"] == 2  # only the ones never answered
    lines = RunDir(out).jsonl.read_bytes().splitlines()
    assert len(lines) == len(resumed) == 4 and not resumed.duplicated(["item_id", "shuffle"]).any()
    assert_same_records(resumed, reference)
    _fresh(server)
    uninterrupted = run(ITEMS, _backend(server, tmp_path / "c3"), STRATEGY, tmp_path / "plain" / "run",
                        progress=False)
    delta = max(float(np.nanmax(np.abs(np.asarray(a, float) - np.asarray(b, float))))
                for a, b in zip(uninterrupted["option_scores"], reference["option_scores"], strict=True))
    figures.add("server_killed", cases=1, server_kills=1, records=len(resumed), requests_resent=0,
                server_history_max_delta=round(delta, 3))
