"""The benchmarks' references (benchmarks/_reference.py) say what they measured: rates with their spread over
repeats, ratios against the best repeat and the range, the useful FLOP count from the parameters (a second count
from the config's shapes), GEMM rates for both kernels on a CPU, and null (never a guess) for an MFU without a
datasheet peak."""
import sys
from types import SimpleNamespace

import pytest
import torch
from paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import _reference as ref  # noqa: E402


def test_body_rate_and_ratios(tiny_gemma):
    r = ref.body_rate(tiny_gemma, 64, 16, repeats=3)
    assert (r["rows"], r["length"], r["repeats"]) == (4, 16, 3)
    t = r["tok_s"]
    assert 0 < t["min"] <= t["median"] <= t["max"] == t["best"]
    v = ref.vs(2 * t["best"], r)
    assert v["vs_best"] == pytest.approx(2) and v["vs_min"] <= v["vs_best"] <= v["vs_max"]


def test_model_flops_count_the_matrices(tiny_tokenizer):
    """2 x (per layer: q, k, v, o, gate, up, down) x tokens + 2 x vocabulary x hidden x head positions."""
    from tiny_models import tiny_model

    model = tiny_model("llama", tiny_tokenizer)
    c = model.config
    kv = c.num_key_value_heads * c.head_dim
    per_layer = c.hidden_size * (2 * c.hidden_size + 2 * kv) + 3 * c.hidden_size * c.intermediate_size
    want = 2.0 * c.num_hidden_layers * per_layer * 10 + 2.0 * c.vocab_size * c.hidden_size * 3
    assert ref.model_flops(model, 10, 3) == want


def test_gemm_rates_and_useful_rate(tiny_gemma):
    g = ref.gemm_rate("cpu", torch.float32, repeats=2, side=128)
    assert g["torch_mm_gflops"]["best"] > 0 and g["dtype"] == "float32"
    assert (g["onednn_gflops"] is None) == (not torch.backends.mkldnn.is_available())
    stats = SimpleNamespace(unique=100, scored_positions=5)
    u = ref.useful_rate(tiny_gemma, stats, 0.5, g)
    assert u["useful_gflops"] == pytest.approx(ref.model_flops(tiny_gemma.model, 100, 5) / 0.5 / 1e9)
    assert u["useful_vs_torch_mm"] == pytest.approx(u["useful_gflops"] / g["torch_mm_gflops"]["best"])
    assert u["mfu"] is None and u["peak_tflops"] is None  # a CPU has no datasheet peak here
    assert ref.useful_rate(tiny_gemma, stats, 0.5, None)["useful_vs_torch_mm"] is None


def test_datasheet_peaks_are_keyed_by_device_and_dtype():
    assert ref.DATASHEET_TFLOPS["NVIDIA H100 80GB HBM3", "bfloat16"][0] == 989.4
    assert all(v > 0 and "datasheet" in s for v, s in ref.DATASHEET_TFLOPS.values())
    assert ("NVIDIA H100 80GB HBM3", "float32") not in ref.DATASHEET_TFLOPS  # no fp32 tensor-core guess


def test_engine_references_fields_and_line(tiny_gemma):
    """The fields the scoring benchmarks write (scoring_throughput.py, vs_lm_eval.py): ratios over both body
    references, the useful FLOP rate, null MFU on a CPU, JSON as is; the printed line with and without the body's
    own timing (only scoring_throughput.py has it)."""
    import json

    g = ref.gemm_rate("cpu", torch.float32, repeats=1, side=64)
    stats = SimpleNamespace(unique=48, scored_positions=6)
    r = ref.engine_references(tiny_gemma, stats, 0.5, 16.0, 2, g)
    assert r["unique_tok_s"] == 96
    assert (r["body_full_rows"]["rows"], r["body_full_rows"]["length"]) == (3, 16)
    assert (r["body_short_rows"]["rows"], r["body_short_rows"]["length"]) == (1, 48)  # capped at the unique tokens
    for name in ("full", "short"):
        assert r[f"vs_body_{name}_rows"]["vs_best"] == pytest.approx(96 / r[f"body_{name}_rows"]["tok_s"]["best"])
    assert r["mfu"] is None and json.loads(json.dumps(r))["mfu"] is None
    line = ref.references_line(r)
    assert "ours 96 unique tok/s" in line and "of torch.mm" in line and "inside the body" not in line
    assert "inside the body's calls 200 forwarded tok/s" in ref.references_line({**r, "body_tok_s": 200.0})
    assert r["body_short_rows"]["linear"] == r["body_full_rows"]["linear"] == "torch"


def test_body_references_use_the_engines_linear_kernel(tiny_gemma, monkeypatch):
    """With linear="onednn" the reference body computes through kernels.onednn_linears (the engine's CPU kernel),
    so that the engine and its reference differ in rows and attention only; the modules are restored after."""
    from mcqa_toolkit.backends.hf import kernels

    calls = []
    real = kernels._forward
    monkeypatch.setattr(kernels, "_forward", lambda m, x: calls.append(1) or real(m, x))
    r = ref.body_rate(tiny_gemma, 32, 16, repeats=1, linear="onednn")
    assert r["linear"] == "onednn"
    assert calls if kernels.onednn_available(torch.device("cpu"), torch.float32) else not calls
    n = len(calls)
    ref.body_rate(tiny_gemma, 32, 16, repeats=1)
    assert len(calls) == n and all("forward" not in m.__dict__ for m in tiny_gemma.model.modules())
