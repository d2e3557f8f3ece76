"""The machine reference every raw file records (benchmarks/_machine.py, written by benchmarks/_results.write_json):
the commit of the checkout, a GEMM rate on the benchmark's device and the timing of a fixed tokenisation, each
saying what it measured, and null with the reason for what could not be measured (never a guess)."""
import json
import re
import sys

from paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import _machine  # noqa: E402
import _results  # noqa: E402


def test_the_parts_say_what_they_measured(tiny_tokenizer):
    g = _machine.gemm("cpu", side=64, repeats=2)
    assert g["side"] == 64 and g["device"] == "cpu" and 0 < g["median"] <= g["best"]
    texts = _machine.texts()
    assert len(texts) == 10 * _machine.TEXT_COPIES and all(texts)
    h = _machine.host(tiny_tokenizer, repeats=2)
    assert h["texts"] == len(texts) and h["chars"] == sum(map(len, texts)) and h["vocab"] == len(tiny_tokenizer)
    assert 0 < h["best_ms"] <= h["median_ms"]
    c = _machine.commit()
    assert re.fullmatch(r"[0-9a-f]{40}", c["sha"]) and isinstance(c["dirty"], bool)


def test_another_tokenizer_is_left_aside_and_failures_are_named(tiny_tokenizer, monkeypatch):
    """A benchmark's tokenizer other than the embedded Gemma one does not time the reference; a part that fails
    is recorded with its reason."""
    loaded = []
    monkeypatch.setattr(_machine, "embedded_tokenizer", lambda: loaded.append(1) or tiny_tokenizer)
    monkeypatch.setattr(_machine, "gemm", lambda device: (_ for _ in ()).throw(RuntimeError("no device")))
    ref = _machine.reference("cpu", tiny_tokenizer)
    assert loaded == [1] and ref["host"]["vocab"] == len(tiny_tokenizer)
    assert ref["gemm"] == {"error": "RuntimeError: no device"}
    assert "no device" in _machine.line(ref) and "tokenisation of the fixed text set" in _machine.line(ref)


def test_the_writer_records_the_reference(tmp_path, monkeypatch):
    """write_json measures the reference in the writing process (on the device it is given) unless the benchmark
    measured its own; a benchmark's other machine fields stay beside it."""
    seen = []
    monkeypatch.setattr(_results, "machine_reference", lambda device, tokenizer: seen.append(device) or {"m": 1})
    written = json.loads(_results.write_json(tmp_path / "a.json", {"x": 1}, "cuda").read_text())
    assert written == {"x": 1, "machine": {"m": 1}} and seen == ["cuda"]
    beside = json.loads(_results.write_json(tmp_path / "b.json", {"machine": {"cpus": 2}}).read_text())
    assert beside == {"machine": {"m": 1, "cpus": 2}} and seen == ["cuda", "cpu"]  # make_demo's cores and load
    own = {"commit": {"sha": None}, "gemm": {"best": 1.0}, "host": {"best_ms": 2.0}}
    kept = json.loads(_results.write_json(tmp_path / "c.json", {"machine": own}).read_text())
    assert kept == {"machine": own} and seen == ["cuda", "cpu"]
