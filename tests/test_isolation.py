"""The isolation check (tests/isolation.py): what it finds changed, what it leaves alone, and that the suite's hooks
fail the test that left the state changed."""
from __future__ import annotations

import os
import subprocess
import sys

import isolation
import torch
from paths import TESTS

from mcqa_toolkit.backends.hf import wrap


def test_a_changed_thread_count_environment_variable_and_fp32_precision_are_named(monkeypatch):
    before = isolation.process_state()
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1 if threads > 1 else 2)
        monkeypatch.setenv("MCQA_ISOLATION_PROBE", "1")
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        found = isolation.changes(before, isolation.process_state())
    finally:
        torch.backends.mkldnn.matmul.fp32_precision = "none"
        torch.set_num_threads(threads)
    assert any(c.startswith("torch.threads:") for c in found)
    assert any(c.startswith("env:MCQA_ISOLATION_PROBE: added") for c in found)
    assert any(c.startswith("torch.fp32_precision:") for c in found)
    monkeypatch.delenv("MCQA_ISOLATION_PROBE")
    assert isolation.changes(before, isolation.process_state()) == []


def test_a_patched_attention_function_and_a_folder_put_on_sys_path_are_named(monkeypatch, tmp_path):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    before = isolation.process_state()
    monkeypatch.setitem(ALL_ATTENTION_FUNCTIONS._global_mapping, "sdpa", lambda *a, **k: None)
    monkeypatch.syspath_prepend(str(tmp_path))
    found = isolation.changes(before, isolation.process_state())
    assert "attention:sdpa" in " ".join(found) and f"sys.path: {tmp_path} added" in found


def test_a_library_folder_or_variable_its_import_sets_is_not_a_change():
    before = isolation.process_state()
    after = {**before, "sys.path": before["sys.path"] | {"/x/site-packages/lib/thirdparty"}}
    assert isolation.changes(before, after) == []
    assert "HF_XET_HIGH_PERFORMANCE" in isolation.SET_BY_IMPORTS


def test_a_shared_model_changed_by_a_test_is_named_and_one_torn_down_is_not(tiny_tokenizer):
    from tiny_models import tiny_model

    lm = isolation.shared_model("probe_model", wrap(tiny_model("llama", tiny_tokenizer), tiny_tokenizer))
    before = isolation.process_state({"probe_model"})
    with torch.no_grad():
        next(lm.model.parameters()).add_(1.0)
    lm.model.config._attn_implementation = "eager"
    lm.model.config.rope_theta = 1.0
    found = isolation.changes(before, isolation.process_state({"probe_model"}))
    assert {c.split(":")[1].split(".")[1] for c in found} == {"weights", "attn_implementation", "config"}, found
    del lm, found
    assert not [c for c in isolation.changes(before, isolation.process_state({"probe_model"}))]


LEAKING = '''
import os, torch

def test_leaves_threads_changed():
    torch.set_num_threads(1)

def test_cleans_up(monkeypatch):
    monkeypatch.setenv("MCQA_PROBE", "1")
'''


def test_the_suite_fails_the_test_that_left_the_state_changed_and_only_it(tmp_path):
    """The hooks as tests/conftest.py uses them (isolation.py as a plugin), on two tests in a pytest of their own:
    the one that left torch on one thread errs at its teardown naming it; both pass as tests."""
    (tmp_path / "test_leak.py").write_text(LEAKING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "isolation",
                           "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_leak.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "2 passed, 1 error" in out and "ERROR at teardown of test_leaves_threads_changed" in out, out
    assert "torch.threads: 2 -> 1" in out, out
