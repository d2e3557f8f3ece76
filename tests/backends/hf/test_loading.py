"""backends.hf.loading's dequantised cache under concurrency (several Ray workers of one node loading the embedded
model at once): one process writes the copy while the others wait and read it, the copy appears whole or not at
all, and a writer killed mid-copy leaves nothing the next load would take for a complete copy. The dequantising
itself is replaced by a slow fake writer (forked processes; the real one takes ~50 s)."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from mcqa_toolkit.backends.hf import loading

CTX = multiprocessing.get_context("fork")  # the children run only file operations: no torch, no threads


def _waiting_for(lock_file: Path) -> int:
    """How many processes wait for the flock on `lock_file`: /proc/locks marks a blocked request "->"."""
    st = lock_file.stat()
    file = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return sum(line.split()[1] == "->" and file in line.split()
               for line in Path("/proc/locks").read_text().splitlines())


def _slow_writer(log: Path, die: bool = False, waiting: int = 0):
    """A fake dequantiser; with `waiting`, it writes the copy's last file only once that many other processes
    wait for the cache's lock (they arrive while it is being written; 60 s bounds a hang)."""
    def write(gguf: Path, out: Path) -> None:
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        if die:
            os.kill(os.getpid(), signal.SIGKILL)
        deadline = time.monotonic() + 60
        while _waiting_for(out.parent.parent / "dequantised.lock") < waiting:
            assert time.monotonic() < deadline, "the other loads did not wait for the cache's lock"
            time.sleep(0.01)
        (out / "model.safetensors").write_bytes(b"w" * 4096)
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
    return write


def _load(gguf: str, cache: str, barrier, results) -> None:
    barrier.wait(timeout=30)
    target, digest = loading.dequantised_dir(Path(gguf), Path(cache))
    results.put((str(target), digest, sorted(p.name for p in target.iterdir())))


@pytest.fixture
def gguf(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    return path


def test_concurrent_first_loads_write_the_copy_once_and_all_read_it(gguf, tmp_path, monkeypatch):
    cache, log = tmp_path / "cache", tmp_path / "writers.log"
    monkeypatch.setattr(loading, "_write_dequantised", _slow_writer(log, waiting=2))
    barrier, results = CTX.Barrier(3), CTX.Queue()
    children = [CTX.Process(target=_load, args=(str(gguf), str(cache), barrier, results)) for _ in range(3)]
    for c in children:
        c.start()
    got = [results.get(timeout=60) for _ in children]
    for c in children:
        c.join(timeout=60)
    assert [c.exitcode for c in children] == [0, 0, 0]
    assert len({g[:2] for g in got}) == 1  # one copy, one digest for everybody
    assert all(g[2] == ["config.json", "mcqa_cache.json", "model.safetensors"] for g in got)  # always whole
    assert len(log.read_text().splitlines()) == 1  # dequantised once
    assert not list((cache / "dequantised").glob(".*.tmp")) and json.loads((cache / "sha256.json").read_text())


def test_a_writer_killed_mid_copy_leaves_nothing_taken_for_a_copy(gguf, tmp_path, monkeypatch):
    cache, log = tmp_path / "cache", tmp_path / "writers.log"
    monkeypatch.setattr(loading, "_write_dequantised", _slow_writer(log, die=True))
    child = CTX.Process(target=loading.dequantised_dir, args=(gguf, cache))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == -signal.SIGKILL
    assert [p.name for p in (cache / "dequantised").iterdir()][0].endswith(".tmp")  # only its temporary folder
    monkeypatch.setattr(loading, "_write_dequantised", _slow_writer(log))
    target, _ = loading.dequantised_dir(gguf, cache)  # the lock died with its holder: the next load goes on
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "mcqa_cache.json", "model.safetensors"]
    assert [p.name for p in (cache / "dequantised").iterdir()] == [target.name]  # the leftover is gone


def test_the_conversion_reads_a_gguf_once(tmp_path, monkeypatch):
    """Inside _one_gguf_reader every GGUFReader of one path is the same reader (transformers constructs one for the
    config, the weights and the tokenizer; each parses the whole metadata), another path gets its own, and the real
    class is back afterwards, also when the block raises."""
    import gguf

    made = []

    class Reader:
        def __init__(self, path, mode="r"):
            made.append((str(path), mode))

    monkeypatch.setattr(gguf, "GGUFReader", Reader)
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    with loading._one_gguf_reader() as opened:
        first = gguf.GGUFReader(a)
        assert gguf.GGUFReader(str(a)) is first and gguf.GGUFReader(b) is not first
        assert gguf.GGUFReader(b, "r") is gguf.GGUFReader(b)
    assert made == [(str(a), "r"), (str(b), "r")] and opened == [a, b]
    assert gguf.GGUFReader is Reader
    with pytest.raises(RuntimeError), loading._one_gguf_reader():
        raise RuntimeError("conversion failed")
    assert gguf.GGUFReader is Reader


@pytest.mark.parametrize("unit", [None, "avx512_bf16"])
def test_bfloat16_on_a_cpu_without_a_bf16_unit_warns(tiny_model_dir, monkeypatch, unit):
    """Loading in bfloat16 says so where bf16 products would be emulated (an x86 CPU without a bf16 unit oneDNN
    uses); float32, or a CPU with one, is quiet."""
    import warnings

    from mcqa_toolkit.backends.hf import compute

    monkeypatch.setattr(compute, "bf16_emulated", lambda: unit is None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lm = loading.load_model(str(tiny_model_dir), device="cpu", dtype="bfloat16")
        loading.load_model(str(tiny_model_dir), device="cpu", dtype="float32")
    said = [w for w in caught if str(w.message) == loading.NO_BF16_UNIT]
    assert len(said) == (1 if unit is None else 0) and str(lm.model.dtype) == "torch.bfloat16"
