"""Small random models of every causal-LM family the installed transformers knows, for the engine's support sweep
(tests/backends/hf/test_support_sweep.py, scripts/support_table.py).

`small_config(model_type)` shrinks the family's default configuration by attribute name (widths, heads, layers,
experts, windows, latent ranks), keeping one layer of every layer type it declares (twice, so that a pattern's
alternation is exercised) and a sliding window shorter than the sweep's run prefix; `build(model_type)` makes the
model from it with weights at a scale where log-probabilities differ (the default initialisation's 0.02 makes every
next token nearly equally likely, so a wrong attention path would hardly show). A family that transformers itself
cannot build or run at that size raises `Unbuildable` with the reason."""
from __future__ import annotations

import math
from typing import Any

VOCAB = 400  # the tests' tiny tokenizer's vocabulary (tiny_models.tiny_tokenizer)
WINDOW = 24  # sliding windows: shorter than the sweep's run prefix, so every window cuts into it
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, INTERMEDIATE = 64, 4, 2, 16, 96

# attribute name -> small value, for every attribute of that name the default configuration has as an integer
SIZES = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "embed_dim", "dim", "backbone_hidden_size",
                     "attention_hidden_size", "hidden_size_per_layer_input", "embedding_size"), HIDDEN),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads", "decoder_attention_heads",
                     "encoder_attention_heads", "swa_num_attention_heads", "linear_num_value_heads",
                     "linear_num_heads", "index_n_heads", "mamba_n_heads"), HEADS),
    **dict.fromkeys(("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
                     "swa_num_key_value_heads", "linear_num_key_heads"), KV_HEADS),
    **dict.fromkeys(("head_dim", "attention_head_dim", "kv_channels", "dim_head", "swa_head_dim", "qk_head_dim",
                     "linear_key_head_dim", "linear_value_head_dim", "linear_head_dim", "v_head_dim",
                     "index_head_dim", "mamba_d_head"), HEAD_DIM),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "n_inner", "decoder_ffn_dim", "encoder_ffn_dim",
                     "ffn_hidden_size", "moe_intermediate_size", "shared_expert_intermediate_size",
                     "expert_ffn_hidden_size", "dim_ff", "dff", "shared_intermediate_size",
                     "dense_intermediate_size", "intermediate_size_mlp", "shared_experts_intermediate_size"),
                    INTERMEDIATE),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"), 4),
    **dict.fromkeys(("num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token", "moe_top_k"), 2),
    **dict.fromkeys(("sliding_window", "sliding_window_size", "window_size", "local_attention_window_len",
                     "attention_window", "local_attention"), WINDOW),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "model_max_length"), 512),
    **dict.fromkeys(("kv_lora_rank", "q_lora_rank", "o_lora_rank"), 32),
    **dict.fromkeys(("qk_rope_head_dim", "qk_nope_head_dim", "rotary_dim"), 8),
    **dict.fromkeys(("state_size", "mamba_d_state", "ssm_state_size"), 8),
    **dict.fromkeys(("mamba_expand",), 2),
    **dict.fromkeys(("time_step_rank", "mamba_dt_rank", "gated_norm_rank", "laurel_rank", "loop_gate_rank"), 8),
    **dict.fromkeys(("chunk_size", "mamba_chunk_size", "attention_chunk_size", "index_topk", "block_size"), 16),
    **dict.fromkeys(("vocab_size", "unpadded_vocab_size", "vocab_size_per_layer_input"), VOCAB),
}
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers")
TOKENS = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}
# families whose defaults need more than the sizes above to be consistent at a small size (found by building them)
OVERRIDES: dict[str, dict[str, Any]] = {
    "lfm2_moe": {"layer_types": ["conv", "full_attention"] * 2, "num_hidden_layers": 4},  # no default layer types
    "gemma3n_text": {"layer_types": ["sliding_attention", "full_attention"] * 2, "num_hidden_layers": 4,
                     "num_kv_shared_layers": 2},  # layers sharing a cache need one of each type to share from
    "dots1": {"n_routed_experts": 4},  # an MoE whose default leaves the expert count unset
}


class Unbuildable(Exception):
    """transformers cannot build or run this family at a small size (the message says why)."""


def _layer_plan(default: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """(layers, overrides): the layers kept of a long stack, chosen so that every per-layer list (layer types, MLP
    types, ...: lists as long as the stack) keeps each of its kinds twice, in order; two layers without such lists."""
    n = next((default[k] for k in LAYER_KEYS if isinstance(default.get(k), int)), None)
    lists = {k: v for k, v in default.items() if isinstance(v, list) and n and len(v) == n and v
             and all(isinstance(x, (str, int, float, bool)) for x in v)}
    if not lists:
        return 2, {}
    keep: set[int] = set()
    for values in lists.values():
        seen: dict[Any, int] = {}
        for i, x in enumerate(values):
            if seen.get(x, 0) < 2:
                seen[x] = seen.get(x, 0) + 1
                keep.add(i)
    index = sorted(keep)
    over = {k: [v[i] for i in index] for k, v in lists.items()}
    new = {old: i for i, old in enumerate(index)}
    for k, v in default.items():  # per-layer settings keyed by layer index: the kept layers' under their new index
        if isinstance(v, dict) and v and all(str(x).isdigit() and int(x) < n for x in v):
            over[k] = {new[int(x)]: y for x, y in v.items() if int(x) in new}
    return len(index), over


def _shrunk(default: dict[str, Any], top: bool = True) -> dict[str, Any]:
    """The overrides that make a configuration (as a dict) small; nested sub-configurations (a composite's text and
    vision towers) shrunk alike."""
    layers, over = _layer_plan(default)
    for key, value in default.items():
        if isinstance(value, dict) and key.endswith("_config") and "model_type" in value:
            over[key] = {**value, **_shrunk(value, top=False)}
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        if key in SIZES and value > SIZES[key]:
            over[key] = SIZES[key]
        elif key in LAYER_KEYS:
            over[key] = layers
        elif key in TOKENS:
            over[key] = TOKENS[key]
    if "qk_rope_head_dim" in default and "head_dim" in default:  # latent attention: rotary on the rope part only
        over["head_dim"] = over.get("qk_rope_head_dim", default["qk_rope_head_dim"])
    if "kv_lora_rank" in default and "num_key_value_heads" in default:  # latent attention: one key per query head
        over["num_key_value_heads"] = over.get("num_attention_heads", default.get("num_attention_heads"))
    for key in ("n_group", "num_expert_group", "topk_group"):  # expert groups: one group of the few experts
        if isinstance(default.get(key), int):
            over[key] = 1
    for key in ("num_experts_per_tok", "moe_k"):  # a router with no top-k set, or more than the experts kept
        if key in default and (default[key] is None or default[key] > 2):
            over[key] = 2
    for key in ("moe_layer_end_index", "max_window_layers"):
        if isinstance(default.get(key), int):
            over[key] = min(default[key], layers - 1)
    for key, value in (("head_dim", HEAD_DIM), ("num_key_value_heads", KV_HEADS)):  # left to be derived, unset
        if key in default and default[key] is None:
            over[key] = value
    hidden = over.get("hidden_size", default.get("hidden_size"))
    for heads, dim, expand in (("num_heads", "head_dim", "expand"), ("mamba_n_heads", "mamba_d_head", "mamba_expand")):
        if all(isinstance(default.get(k), int) for k in (heads, dim, expand)) and hidden:  # state heads fill expand x
            over[heads] = over.get(expand, default[expand]) * hidden // over.get(dim, default[dim])  # the width
    return over


def small_config(model_type: str) -> Any:
    """The family's default configuration at the sizes above (see the module docstring)."""
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    try:
        default = cls().to_dict()
    except Exception as e:  # noqa: BLE001 - any failure of the family's own default is its reason
        raise Unbuildable(f"its default configuration fails: {type(e).__name__}: {_first_line(e)}") from e
    over = {**_shrunk(default), **OVERRIDES.get(model_type, {})}
    try:
        return cls(**over)
    except Exception as e:  # noqa: BLE001
        raise Unbuildable(f"its configuration at small sizes fails: {type(e).__name__}: {_first_line(e)}") from e


def scale_weights(model: Any, seed: int = 0) -> None:
    """Every matrix (embeddings, projections, convolutions) drawn from N(0, 1/fan_in), norms and biases as
    initialised: activations of order one and next-token distributions far from uniform."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2 and p.is_floating_point():
                fan_in = math.prod(p.shape[1:])
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * fan_in ** -0.5)


def build(model_type: str, seed: int = 0) -> Any:
    """A small random fp32 model of `model_type` in eval mode (Unbuildable when transformers cannot make one)."""
    import torch
    from transformers import AutoModelForCausalLM

    config = small_config(model_type)
    torch.manual_seed(seed)
    try:
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    except Exception as e:  # noqa: BLE001
        raise Unbuildable(f"from_config fails: {type(e).__name__}: {_first_line(e)}") from e
    scale_weights(model, seed)
    return model.eval()


def _first_line(e: BaseException, limit: int = 160) -> str:
    text = (str(e).strip().splitlines() or [""])[0]
    return text if len(text) <= limit else text[:limit] + "..."
