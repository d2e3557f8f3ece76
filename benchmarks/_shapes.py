"""Random-weight models of published shapes, built on the target device, for GPU correctness and speed runs.

Equality and speed do not need trained weights, and a machine without a model hub cannot fetch them: each shape
is the published config of a model (layer count, widths, heads, KV heads, head size, sliding windows, RoPE
bases, bias and tying as in its config.json), built with random weights straight on the device in the chosen
dtype, with a real tokenizer (the embedded Gemma-3-270M's, saved by `save_tokenizer`) and the vocabulary size set
to that tokenizer's. The `--random-shape` option of the scoring benchmarks uses them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

# published configs (the fields that set cost and numerics); vocab_size comes from the tokenizer
SHAPES: dict[str, dict[str, Any]] = {
    "gemma-3-1b": dict(  # google/gemma-3-1b-pt: 5 sliding (512) : 1 full, head_dim 256, one KV head
        model_type="gemma3_text", hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
        num_attention_heads=4, num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256, sliding_window=512,
        layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 4 + ["sliding_attention"] * 2,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}},
        hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, tie_word_embeddings=True,
        max_position_embeddings=32768),
    "llama-3-8b": dict(  # meta-llama/Meta-Llama-3-8B
        model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, rope_parameters={"rope_type": "default",
                                                                       "rope_theta": 500_000.0},
        rms_norm_eps=1e-5, tie_word_embeddings=False, max_position_embeddings=8192),
    "qwen2.5-7b": dict(  # Qwen/Qwen2.5-7B: biased q/k/v projections
        model_type="qwen2", hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
        num_attention_heads=28, num_key_value_heads=4, rope_parameters={"rope_type": "default",
                                                                       "rope_theta": 1_000_000.0},
        rms_norm_eps=1e-6, tie_word_embeddings=False, max_position_embeddings=32768, use_sliding_window=False),
}


def save_tokenizer(out: str | Path, model: str = "gemma-3-270m") -> Path:
    """Save the tokenizer of a loadable model (default: the embedded GGUF's) to `out`, to carry to a GPU machine."""
    from mcqa_toolkit.backends.hf import load_model

    lm = load_model(model, device="cpu")
    lm.tokenizer.save_pretrained(out)
    return Path(out)


def random_model(shape: str, tokenizer_dir: str | Path, device: str = "cuda", dtype: str = "bfloat16",
                 attn: str = "sdpa", seed: int = 0):
    """An LM (backends.hf.wrap) of a published shape with seeded random weights, built on `device` in `dtype`."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from mcqa_toolkit.backends.hf import wrap

    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    spec = dict(SHAPES[shape])
    cfg = AutoConfig.for_model(spec.pop("model_type"), vocab_size=len(tok), bos_token_id=tok.bos_token_id,
                               eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **spec)
    torch.manual_seed(seed)
    with torch.device(device):  # weights are created (and initialised) on the device, never on the host
        model = AutoModelForCausalLM.from_config(cfg, dtype=getattr(torch, dtype), attn_implementation=attn)
    model.eval()
    return wrap(model, tok, name=f"random-{shape}")
