"""The real tools, run for real: lm-evaluation-harness (`--model hf` on the embedded model's dequantised folder,
a task YAML of our own, `--log_samples`) and inspect_ai (a `multiple_choice` task through inspect's `hf`
provider) evaluate the embedded Gemma-3-270M on ENEM fixture items; what they wrote is imported, matched to
the ENEM loader's items (INEP parameters attached), compared with our own backend on the same prompts, and the
imported runs go through `mcqa report --html` with IRT theta. Also: the committed item-bank sample is what the
real tools write again, and `inspect view` lists an exported run.

Tolerance between the tools' log-probabilities and our backend's (both fp32 on CPU, same weights): 1e-3
absolute per option (measured: at most ~2e-4; lm-eval forwards each full sequence with transformers' SDPA
attention, our engine packs shared prefixes, so the float sums differ in the last digits), and the same argmax.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from paths import FIXTURES, REPO

from mcqa_toolkit.datasets import load
from mcqa_toolkit.interop import export_run, import_run
from mcqa_toolkit.items import LETTERS
from mcqa_toolkit.measure.circular import rotations
from mcqa_toolkit.records.equality import assert_same_records

BIN = Path(sys.executable).parent
ENEM = dict(path=FIXTURES / "enem" / "exams", item_params=FIXTURES / "enem" / "ITENS_PROVA_2022.csv")
IDS = ("ENEM_2022_CN_9102_q91-pt", "ENEM_2022_CN_9102_q92-pt", "ENEM_2022_LC_9101_q6-pt")
ATOL = 1e-3


@pytest.fixture(scope="module")
def enem_items():
    return load("enem", **ENEM)


@pytest.fixture(scope="module")
def model_dir():
    from mcqa_toolkit.backends.hf.loading import dequantised_dir, embedded_gguf

    return dequantised_dir(embedded_gguf("gemma-3-270m"))[0]


@pytest.fixture(scope="module")
def backend():
    from mcqa_toolkit.backends import load_backend

    return load_backend("gemma-3-270m", device="cpu")


def _env(tmp: Path) -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp / "hf"),
            "OPENBLAS_NUM_THREADS": "1", "INSPECT_DISPLAY": "none", "TOKENIZERS_PARALLELISM": "false"}


def _run(cmd: list[str], tmp: Path, timeout: int = 420) -> None:
    done = subprocess.run(cmd, cwd=tmp, env=_env(tmp), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd[0]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def _lm_eval_task(items, folder: Path) -> None:
    """Each question in its original order and rotated by one (an order lm-eval shows as given)."""
    rows = []
    for it in items:
        for perm in rotations(range(it.n_options))[:2]:
            rows.append({"id": it.parallel_id, "year": it.year, "number": it.meta["number"],
                         "question": it.stem, "choices": [it.options[p] for p in perm], "label": perm.index(it.answer)})
    (folder / "enem_tiny.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    (folder / "enem_tiny.yaml").write_text(
        "task: enem_tiny\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {folder / 'enem_tiny.jsonl'}\ntest_split: test\noutput_type: multiple_choice\n"
        "doc_to_text: \"Pergunta: {{question}}\\nResposta:\"\ndoc_to_choice: \"{{choices}}\"\ndoc_to_target: label\n"
        "metric_list:\n  - metric: acc\n  - metric: acc_norm\n")


@pytest.mark.slow
def test_lm_eval_run_imports_agrees_with_our_backend_and_reports_theta(tmp_path, enem_items, model_dir, backend):
    items = [enem_items[i] for i in IDS]
    (tmp_path / "tasks").mkdir()
    _lm_eval_task(items, tmp_path / "tasks")
    _run([str(BIN / "lm_eval"), "--model", "hf", "--model_args", f"pretrained={model_dir},dtype=float32",
          "--device", "cpu", "--tasks", "enem_tiny", "--include_path", str(tmp_path / "tasks"), "--output_path",
          str(tmp_path / "lm_out"), "--log_samples", "--batch_size", "8"], tmp_path)
    runs = tmp_path / "outputs"
    res = import_run("lm-eval", tmp_path / "lm_out", runs / "gemma__enem__lm-eval", items=enem_items, dataset="enem",
                     model="gemma-3-270m")
    rec = res.records
    assert len(rec) == 6 and res.unmatched.empty and set(rec["item_id"]) == set(IDS)
    assert sorted(rec["shuffle"]) == [0, 0, 0, 1, 1, 1]
    for r in rec.itertuples():  # the rotated copy shows option p at position p - 1
        assert list(r.permutation) == list(rotations(range(5))[r.shuffle])
        assert float(r.correct) == json.loads(r.extra)["lm_eval"]["metrics"]["acc"]   # lm-eval's own verdict
    prov = res.provenance
    assert prov["imported_from"]["tool"] == "lm-eval" and prov["imported_from"]["version"] != "unknown"
    assert all(len(f["sha256"]) == 64 for f in prov["imported_from"]["files"])
    assert enem_items[IDS[0]].irt is not None and prov["items"]["matched"] == 6

    samples = [json.loads(line) for line in next((tmp_path / "lm_out").rglob("samples_*.jsonl")).open()]
    from mcqa_toolkit.backends.base import Continuation

    worst = 0.0
    for s in samples:
        args = [s["arguments"][f"gen_args_{i}"] for i in range(len(s["arguments"]))]
        ours = np.array([float(c.logprobs.sum()) for c in
                         backend.loglikelihoods([Continuation(a["arg_0"], a["arg_1"]) for a in args])])
        theirs = np.array([float(r[0]) for r in s["filtered_resps"]])
        worst = max(worst, float(np.abs(ours - theirs).max()))
        assert int(np.argmax(ours)) == int(np.argmax(theirs))
    assert worst < ATOL, f"max |ours - lm-eval| = {worst}"

    from mcqa_toolkit.cli import report

    failures = report(runs, tmp_path / "figures", tmp_path / "latex", dataset="enem", html=runs / "report.html")
    assert failures == 0
    irt = json.loads((tmp_path / "latex" / "11_irt_headline.json").read_text())
    assert irt["has_irt"] and irt["n_persons"] == 2 and irt["theta_mean"]
    page = (runs / "report.html").read_text(encoding="utf-8")
    assert "gemma-3-270m / lm-eval:enem_tiny" in page and "11 · IRT" in page


INSPECT_TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice

TEMPLATE = """Question: What is 2 + 2?
A) 3
B) 4
C) 5
ANSWER: B

Question: What colour is a clear sky?
A) Green
B) Red
C) Blue
ANSWER: C

Question: Which animal barks?
A) Dog
B) Cat
C) Fish
ANSWER: A

Question: {question}
{choices}
"""


@task
def enem_tiny():
    rows = %s
    return Task(dataset=[Sample(input=r["stem"], choices=r["options"], target=r["key"], id=r["id"],
                                metadata={"year": r["year"], "number": r["number"]}) for r in rows],
                solver=multiple_choice(template=TEMPLATE, max_tokens=6), scorer=choice())
'''


@pytest.mark.slow
def test_inspect_hf_run_imports_and_agrees_with_our_backend(tmp_path, enem_items, model_dir, backend):
    items = [enem_items[i] for i in IDS]
    rows = [{"stem": it.stem, "options": list(it.options), "key": LETTERS[it.answer], "id": it.parallel_id,
             "year": it.year, "number": it.meta["number"]} for it in items]
    (tmp_path / "enem_tiny.py").write_text(INSPECT_TASK % json.dumps(rows, ensure_ascii=False))
    (tmp_path / "model.json").write_text(json.dumps({"model_path": str(model_dir), "device": "cpu", "do_sample": False,
                                                     "chat_template": "{{ messages[-1]['content'] }}"}))
    _run([str(BIN / "inspect"), "eval", "enem_tiny.py", "--model", "hf/local", "--model-config", "model.json",
          "--temperature", "0", "--logprobs", "--top-logprobs", "20", "--log-dir", str(tmp_path / "logs")], tmp_path)
    res = import_run("inspect", tmp_path / "logs", tmp_path / "outputs" / "gemma__enem__inspect", items=enem_items,
                     dataset="enem")
    rec = res.records.set_index("item_id")
    assert set(rec.index) == set(IDS) and res.unmatched.empty
    assert res.provenance["imported_from"]["version"] not in ("", "unknown")

    from inspect_ai.log import read_eval_log

    from mcqa_toolkit.backends.base import Continuation

    log = read_eval_log(str(next((tmp_path / "logs").glob("*.eval"))))
    worst, answered = 0.0, 0
    for s in log.samples:
        r = rec.loc[f"{s.id}-pt"]
        score = s.scores["choice"]
        assert bool(r["correct"]) == (score.value == "C")          # the tool's verdict is the record's
        if not score.answer:
            assert r["status"] == "unanswered"
            continue
        answered += 1
        assert LETTERS[r["choice_position"]] == score.answer
        completion = s.output.completion
        cue = completion[:re.search(r"(?i)answer\s*:", completion).end()]  # "ANSWER:" as the model wrote it
        prompt = s.messages[0].text
        ours = [float(c.logprobs.sum()) for c in
                backend.loglikelihoods([Continuation(prompt + cue, f" {L}") for L in LETTERS[:5]])]
        theirs = [r["option_scores"][p] for p in r["permutation"]]
        finite = [(o, t) for o, t in zip(ours, theirs, strict=True) if t is not None and not np.isnan(t)]
        assert len(finite) == 5
        worst = max(worst, max(abs(o - t) for o, t in finite))
    assert answered >= 2, "the embedded model should answer in inspect's 'ANSWER: X' format with this template"
    assert worst < ATOL, f"max |ours - inspect| = {worst}"


@pytest.mark.slow
def test_item_bank_sample_is_what_the_tools_write(tmp_path):
    """Models 0 (lm-eval) and 1 (inspect_ai) of data/item_bank_sample, written again by the real tools from the
    same seed, import to the same records as the committed files."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import make_item_bank_sample as sample
    finally:
        sys.path.remove(str(REPO / "scripts"))
    assert sample.main(["--out", str(tmp_path / "new"), "--only", "0", "1"]) == 0
    committed = REPO / "data" / "item_bank_sample"
    items = load("demo", language="pt")
    for tool, rel in (("lm-eval", "lm-eval/sim-00"), ("inspect", "inspect/sim-01.eval")):
        a = import_run(tool, committed / rel, tmp_path / "a" / tool, items=items, dataset="demo").records
        b = import_run(tool, tmp_path / "new" / rel, tmp_path / "b" / tool, items=items, dataset="demo").records
        assert len(a) == 66
        assert_same_records(a, b)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.mark.server
def test_inspect_view_lists_an_exported_run(tmp_path):
    """`inspect view` on 127.0.0.1 lists our exported run (its /api/log-files listing); bounded wait (180 s, a
    hang's bound), always stopped. Its port is picked here and bound there: if another process takes it in
    between, inspect says so ("address already in use") and exits, and another port is tried (3 in all). Its
    data folder (where it keeps a pid file per port, and terminates the process one names) is the test's own."""
    path = export_run("inspect", REPO / "data" / "demo" / "results" / "gemma-3-270m__demo__pt__enem_1shot",
                      tmp_path / "logs", items=load("demo"))
    log, listing = tmp_path / "inspect_view.log", None
    for _ in range(3):
        port = _free_port()
        with open(log, "w") as out:
            proc = subprocess.Popen([str(BIN / "inspect"), "view", "--log-dir", str(tmp_path / "logs"), "--host",
                                     "127.0.0.1", "--port", str(port)], cwd=tmp_path,
                                    env={**_env(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}, stdout=out,
                                    stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while listing is None and proc.poll() is None and time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/log-files", timeout=5) as r:
                        listing = json.loads(r.read())
                except OSError:
                    time.sleep(0.5)
        finally:
            _stop(proc)
        if listing is not None or "address already in use" not in log.read_text().lower():
            break
    assert listing is not None, f"inspect view did not answer within 180 s:\n{log.read_text()[-3000:]}"
    names = [Path(f["name"]).name for f in listing["files"]]
    assert path.name in names
