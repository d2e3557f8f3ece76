"""The openai backend against a REAL OpenAI-compatible server: llama-cpp-python serving the embedded
Gemma-3-270M GGUF on 127.0.0.1 (backends/llama_server.py). Letters, log-likelihoods, generation, the capability
probe, the request cache, resume after a kill (runner and `mcqa run`), and agreement with the local HF
backend on the same weights (llama.cpp computes with the quantised Q4_K_M weights, HF with their fp32
dequantisation, so log-probs differ slightly; the tolerance below is what was measured, with margin).

llama-cpp-python builds an echo's log-probs by sorting the whole 262k vocabulary in Python at every prompt
position (about 0.4 s per token on 2 cores), so log-likelihood tests use short items of our own."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pandas as pd
import pytest
import yaml

import mcqa_toolkit.run.runner as runner_mod
from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.backends.llama_server import LlamaServer, llama_server
from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.resources import notebooks_dir
from mcqa_toolkit.run import Strategy, grid, run, strategy

pytestmark = pytest.mark.server
VOLATILE = ["seconds", "n_forwarded_tokens", "run_id"]
LETTER_TOL = 0.5     # max |delta log P(letter)| llama.cpp (Q4_K_M) vs HF (fp32 dequantised)
AGREEMENT = 0.75     # share of (item, shuffle) choices that must agree between the two


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    with llama_server(tmp_path_factory.mktemp("llama")) as url:
        yield url


@pytest.fixture(scope="module")
def items():
    return load("demo", language="pt").filter(subject=["chemistry", "biology"])[:4]


@pytest.fixture(scope="module")
def short_items():
    """Three short questions (few tokens each) for the echo-based methods."""
    rows = [("Two plus two is", ("four", "five", "ten"), 0), ("The sky on a clear day is", ("green", "blue", "red"), 1),
            ("Ice is water that is", ("hot", "boiling", "frozen"), 2)]
    return ItemSet([Item(item_id=f"short-{k}", source="test", exam="short", stem=stem, options=opts, answer=ans,
                         language="en", subject="general") for k, (stem, opts, ans) in enumerate(rows)], "short")


def test_a_port_taken_before_the_server_binds_it_is_replaced_by_another(tmp_path):
    """The port is picked, then bound by the server: another process that takes it in between (here a listening
    socket of this test's) makes the first start try a new port, and the server answers there."""
    server = LlamaServer(tmp_path)
    picked = server.port
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", picked))
        taken.listen()
        with server:
            assert server.port != picked
            models = json.load(urllib.request.urlopen(f"{server.url}/models", timeout=30))
            assert [m["id"] for m in models["data"]] == ["gemma-3-270m"]
    assert "address already in use" in server.log_path.read_text().lower()  # the first start's log says why


def backend(url, cache_dir, **kw):
    return load_backend({"backend": "openai", "model": "gemma-3-270m", "base_url": url, "cache_dir": str(cache_dir),
                         **kw})


ACCENTED = [("A canção é", " bonita."), ("¿Dónde está?", " Él sabe."), ("La città è", " così bella.")]


def test_echo_is_split_right_on_accented_text(server_url, tmp_path):
    """pt/es/it with accents before the boundary (character and UTF-8 byte offsets differ there): the continuation's
    log-probs are the echo's last n prompt tokens, n counted by the server's own tokenizer (/extras/tokenize),
    independently of text_offset."""
    import httpx

    from mcqa_toolkit.backends.base import Continuation
    from mcqa_toolkit.backends.openai_wire import echo_body

    b = backend(server_url, tmp_path, probe=False)
    got = b.loglikelihoods([Continuation(c, x) for c, x in ACCENTED])
    root = server_url.removesuffix("/v1")
    for (ctx, cont), res in zip(ACCENTED, got, strict=True):
        n_ctx, n_all = (len(httpx.post(f"{root}/extras/tokenize", json={"input": t}).json()["tokens"])
                        for t in (ctx, ctx + cont))
        raw = b.request_cache.get(b.sender.key("completions", echo_body("gemma-3-270m", ctx + cont)))
        lp = raw["choices"][0]["logprobs"]
        assert lp["text_offset"][-1] == len(ctx + cont)  # llama-cpp-python counts characters; the generated token
        assert res.logprobs.tolist() == lp["token_logprobs"][-1 - (n_all - n_ctx):-1]
        assert res.n_context_tokens == n_ctx - 1  # the echo drops BOS


def test_probe_finds_letters_and_echo(server_url, tmp_path):
    caps = backend(server_url, tmp_path).capabilities
    assert caps.next_token_logprobs and caps.continuation_logprobs and caps.generate and not caps.chat_scoring


@pytest.mark.slow
def test_agrees_with_the_local_hf_backend(server_url, items, short_items, gemma, tmp_path):
    """Same prompts, same weights, two engines: letters (ENEM-paper prompt) and cloze log-likelihoods."""
    server, local = backend(server_url, tmp_path / "cache"), HFBackend(gemma)
    st = strategy("enem_0shot", shuffles=2)
    a = run(items, server, st, tmp_path / "server", progress=False)
    b = run(items, local, st, tmp_path / "local", progress=False)
    sa, sb = (np.concatenate([np.array(x, dtype=float) for x in f["option_scores"]]) for f in (a, b))
    delta = np.nanmax(np.abs(sa - sb))
    agree = (a["choice"] == b["choice"]).mean()
    print(f"letters: max |delta| = {delta:.3f}, choices agree {agree:.0%} of {len(a)}")
    assert delta <= LETTER_TOL and agree >= AGREEMENT
    c = run(short_items, server, strategy("S5"), tmp_path / "server_cloze", progress=False)
    d = run(short_items, local, strategy("S5"), tmp_path / "local_cloze", progress=False)
    ca, cb = (np.concatenate([json.loads(e)["loglik_sum"] for e in f["extra"]]) for f in (c, d))
    worst = float(np.max(np.abs(ca - cb)))
    print(f"cloze sums: max |delta| = {worst:.3f}, choices agree {(c['choice'] == d['choice']).mean():.0%}")
    assert worst <= 4 * LETTER_TOL and (c["choice"] == d["choice"]).mean() >= AGREEMENT


def test_generate_and_min_k(server_url, items, short_items, tmp_path):
    b = backend(server_url, tmp_path)
    df = run(items[:3], b, strategy("S1", max_new_tokens=6), tmp_path / "gen", progress=False)
    assert len(df) == 3 and (df["generated_text"].str.len() > 0).all()
    assert set(df["status"]) <= {"correct", "incorrect", "unanswered", "refused"}
    from mcqa_toolkit.scoring.min_k import min_k_table

    mk = min_k_table(b, short_items[:2])
    assert (mk["min_k_prob"] > 0).all() and (mk["n_tokens"] >= 4).all()


def test_resume_after_kill_and_cache(server_url, items, tmp_path, killed_at_call):
    st = Strategy.first_token(shuffles=2, style="enem")
    full = run(items, backend(server_url, tmp_path / "c1"), st, tmp_path / "full", progress=False)
    with killed_at_call(runner_mod, "ask", 3):
        run(items, backend(server_url, tmp_path / "c2"), st, tmp_path / "killed", progress=False)
    resumed_backend = backend(server_url, tmp_path / "c2")
    resumed = run(items, resumed_backend, st, tmp_path / "killed", progress=False)
    assert resumed.drop(columns=VOLATILE).equals(full.drop(columns=VOLATILE))
    assert resumed_backend.usage()["http_requests"] == (len(items) - 2) * 2  # only the units not yet done
    again = backend(server_url, tmp_path / "c2")
    run(items, again, st, tmp_path / "again", progress=False)
    assert again.usage()["http_requests"] == 0  # the probe and every request come from the cache


@pytest.mark.notebooks
def test_mcqa_run_with_the_server_backend_kill_and_rerun(server_url, tmp_path):
    """`mcqa run` on a params file naming the server: records and summary like a local run; a kill mid-run and
    a re-run lose and duplicate nothing; a forced re-execution makes no request."""
    params = tmp_path / "server.yaml"
    model = {"backend": "openai", "model": "gemma-3-270m", "name": "gemma-server", "base_url": server_url,
             "cache_dir": str(tmp_path / "cache")}
    params.write_text(yaml.safe_dump({"output_dir": "out", "models": [model], "datasets": ["demo"],
                                      "languages": ["pt"], "strategies": [{"base": "enem_0shot", "shuffles": 2}],
                                      "limit": 4, "min_k": False}))
    proc = subprocess.Popen([sys.executable, "-m", "mcqa_toolkit.cli", "run", str(params)], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    jsonl = tmp_path / "out" / "gemma-server__demo__pt__enem_0shot" / "records.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if jsonl.exists() and len(jsonl.read_text().splitlines()) >= 2:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert jsonl.exists(), "the run was killed before it wrote a record"
    notebook = notebooks_dir() / "run_model.ipynb"
    assert grid.run_params(params, notebook, tmp_path) == 0
    run_dir = jsonl.parent
    records = pd.read_parquet(run_dir / "records.parquet")
    assert len(records) == 8 and not records.duplicated(["item_id", "shuffle"]).any()
    assert len(jsonl.read_text().splitlines()) == 8
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n_records"] == 8 and summary["accuracy"] == pytest.approx(
        records.groupby("item_id")["correct"].mean().mean())
    prov = json.loads((run_dir / "provenance.json").read_text())
    assert prov["model"]["backend"] == "openai" and "api_key" not in json.dumps(prov).replace("api_key_env", "")
    (run_dir / "summary.json").unlink()  # force a re-execution: everything comes from the request cache
    (run_dir / "records.jsonl").unlink()
    (run_dir / "records.parquet").unlink()
    (run_dir / "provenance.json").unlink()
    (run_dir / "run.json").unlink()
    assert grid.run_params(params, notebook, tmp_path) == 0
    prov = json.loads((run_dir / "provenance.json").read_text())
    assert prov["usage"]["http_requests"] == 0 and prov["usage"]["cache_hits"] == 8
    again = pd.read_parquet(run_dir / "records.parquet")
    assert again.drop(columns=VOLATILE).equals(records.drop(columns=VOLATILE))
