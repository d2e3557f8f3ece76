"""The compute state the engine pins for each scoring call (backends/hf/compute.py): its threads and IEEE fp32
products during the call, the process's own settings back afterwards; records that do not depend on what ran before
them in the process; the CPU recorded."""
from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest
import torch

from mcqa_toolkit.backends.hf import HFBackend, compute
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.run import run
from mcqa_toolkit.run.strategy import STRATEGIES


def test_a_call_computes_with_the_engines_threads_and_ieee_products_and_the_process_keeps_its_own():
    threads = torch.get_num_threads()
    other = 1 if threads > 1 else 2
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    try:
        with compute.pinned(other, "cpu", torch.float32):
            assert torch.get_num_threads() == other and torch.backends.mkldnn.matmul.fp32_precision == "ieee"
        assert torch.get_num_threads() == threads and torch.backends.mkldnn.matmul.fp32_precision == "bf16"
        with pytest.raises(RuntimeError, match="inside"):
            with compute.pinned(other, "cpu", torch.float32):
                raise RuntimeError("inside")
        assert torch.get_num_threads() == threads and torch.backends.mkldnn.matmul.fp32_precision == "bf16"
        with compute.pinned(None, "cpu", torch.bfloat16):  # half precision: fp32 products are not its concern
            assert torch.backends.mkldnn.matmul.fp32_precision == "bf16"
    finally:
        torch.backends.mkldnn.matmul.fp32_precision = "none"


def test_the_cpu_is_described_with_its_units_and_the_kernels_torch_uses():
    cpu = compute.cpu()
    assert cpu["capability"] == torch.backends.cpu.get_cpu_capability() and isinstance(cpu["flags"], list)
    assert set(cpu["flags"]) <= set(compute.ISA_FLAGS) and cpu["machine"]


def test_the_engine_records_what_it_computed_with(tiny_backend):
    engine = tiny_backend.provenance()["engine"]
    assert engine["threads"] == tiny_backend.engine.threads and engine["fp32_matmul"] == "ieee"
    assert engine["cpu"]["capability"] and engine["attn_implementation"] == "sdpa"
    assert tiny_backend.renew().engine.threads == tiny_backend.engine.threads


def _records(backend, items, out):
    return [run(items, backend.renew(), replace(STRATEGIES[name], shuffles=2), out / name, progress=False)
            for name in ("enem_0shot", "S5")]


@pytest.mark.slow
def test_records_do_not_depend_on_what_ran_before_in_the_process(gemma, tiny_model_dir, tmp_path, monkeypatch):
    """The embedded model's records (demo pt, 3 items, letters and cloze options, 2 shuffles), then in the same
    process: the other engine paths on the same model, a fine-tuning step of another model, and the process left on
    another thread count with bf16-rounded fp32 products (what torch.set_float32_matmul_precision("medium") does,
    1.1e-5 off on an AVX512_BF16 CPU unpinned); the same backend's records again: identical by the equality rule."""
    from mcqa_toolkit.contamination.fine_tuning import Recipe, contaminate
    from mcqa_toolkit.items import Item, ItemSet

    items = load("demo", language="pt")[:3]
    backend = HFBackend(gemma)
    first = _records(backend, items, tmp_path / "first")
    for options in ({"attention": "masks", "linear": "torch", "items_per_call": 16}, {"pack": False}):
        _records(HFBackend(gemma, **options), items, tmp_path / str(len(options)))
    exam = ItemSet([Item(item_id="q0", source="t", exam="T", year=2021, stem="Qual é a capital do Brasil?",
                         options=("Roma", "Brasília", "Lima", "Quito"), answer=1, subject="s", language="pt")],
                   name="tiny")
    contaminate(tiny_model_dir, exam, ["q0"], tmp_path / "tuned", Recipe(exposures=(1,), lr=1e-3, seed=3),
                progress=False)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1 if threads > 1 else 2)
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        second = _records(backend, items, tmp_path / "second")
        if {"avx512_bf16", "amx_bf16"} & set(compute.cpu()["flags"]):  # where bf16 products exist, unpinned they
            monkeypatch.setattr(compute, "pinned", lambda *a: contextlib.nullcontext())  # move the scores
            unpinned = _records(backend, items, tmp_path / "unpinned")
            with pytest.raises(AssertionError, match="records differ"):
                assert_same_records(first[1], unpinned[1], ignore=("run_id",))
    finally:
        torch.backends.mkldnn.matmul.fp32_precision = "none"
        torch.set_num_threads(threads)
    for a, b in zip(first, second, strict=True):
        assert_same_records(a, b, ignore=("run_id",))


@pytest.mark.parametrize(("flags", "runs", "forced", "unit"), [
    (("avx2", "avx512f"), True, {}, None),                                         # no bf16 unit
    (("avx2", "avx512f", "avx512_bf16"), True, {}, "avx512_bf16"),
    (("avx512_bf16", "amx_tile", "amx_bf16"), True, {}, "amx_bf16"),
    (("avx512_bf16", "amx_bf16"), True, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, "avx512_bf16"),
    (("avx512_bf16", "amx_bf16"), True, {"ONEDNN_MAX_CPU_ISA": "avx2"}, None),     # forced below bf16
    (("avx512_bf16",), True, {"DNNL_MAX_CPU_ISA": "AVX512_CORE"}, None),
    (("avx512_bf16",), False, {}, None),                                           # oneDNN has no bf16 product
])
def test_the_bf16_unit_is_the_cpus_where_onednn_can_use_it(monkeypatch, flags, runs, forced, unit):
    from mcqa_toolkit.backends.hf import kernels

    monkeypatch.setattr(compute, "_cpuinfo", lambda: ("a CPU", flags))
    monkeypatch.setattr(kernels, "onednn_available", lambda device, dtype: runs)
    for k in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(k, raising=False)
    for k, v in forced.items():
        monkeypatch.setenv(k, v)
    assert compute.bf16_unit() == unit


def test_a_process_forced_to_avx2_has_no_bf16_unit():
    """The real oneDNN of a fresh process whose instruction set is forced down to AVX2 (any x86 CPU)."""
    import os
    import subprocess
    import sys

    if compute.cpu()["machine"] not in compute.X86:
        pytest.skip("ONEDNN_MAX_CPU_ISA=AVX2 names an x86 instruction set")
    code = "from mcqa_toolkit.backends.hf import compute; print(compute.bf16_unit())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                         env={**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert out.stdout.strip() == "None"


@pytest.mark.parametrize(("machine", "unit", "emulated"), [("x86_64", None, True), ("x86_64", "amx_bf16", False),
                                                           ("aarch64", None, False)])
def test_bf16_is_called_emulated_only_on_an_x86_cpu_without_a_unit(monkeypatch, machine, unit, emulated):
    """Another CPU's bf16 units (e.g. Arm's) are not among BF16_UNITS: there nothing is claimed."""
    monkeypatch.setattr(compute.platform, "machine", lambda: machine)
    monkeypatch.setattr(compute, "bf16_unit", lambda: unit)
    assert compute.bf16_emulated() is emulated
