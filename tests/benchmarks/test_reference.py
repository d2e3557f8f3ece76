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
