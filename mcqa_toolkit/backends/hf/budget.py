"""What the engine does per device: the forward calls' size, the items a backend call brings, the kernels, and
whether the runner prepares the next block while this one is computed.

`BUDGETS` maps a device type to a `Budget`; a PrefixScorer takes its device's unless told otherwise (each field is
also an engine option). Chosen by measurement (docs/performance.md, results/benchmarks):
- cpu: one item per call, 8,192 slots, 64 rows (wider calls were slower on 2 cores: attention over wide masks);
  tree attention (tree.py) and the linear layers through oneDNN (kernels.py), faster in the branch's runs of
  benchmarks/scoring_throughput.py and body_kernels.py (those comparisons uncommitted; the defaults' own figures:
  results/benchmarks/engine3_2026-11-27/); no preparation ahead until benchmarks/prepare_ahead.py has measured it
  here (not measured yet; the host's work would compete with the body for the same cores);
- cuda: the dense masks and PyTorch's linear, as measured on an H100 and an H200 (tree attention and oneDNN have no
  GPU measurement here); at least 16 items, 32,768 slots, 128 rows per call (a GPU pays per launch, not per FLOP:
  few, wide calls), widened to the device's free memory and the model's sizes by `sized_budget` (on the H200 a
  wider budget than the fixed one measured faster: docs/performance.md; the rule itself has not been measured on a
  GPU); the next block prepared ahead (the GPU otherwise waits for the host).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch

ATTENTION = ("masks", "tree")
# packed rows' width per attention: dense masks pay for the width, tree attention for the ancestors (engine.py)
ROW_TOKENS = {"masks": 256, "tree": 4096}
SHARE = 0.5          # of the device's free memory at load, for one block's working set
ITEM_TOKENS = 2048   # an item's cached prefix (run prefix + stem), as sized for its share of the block's memory
MAX_ITEMS, MAX_SLOTS, MAX_HEAD_ROWS = 64, 262_144, 4096


@dataclass(frozen=True)
class Budget:
    """What one forward call may carry on a device (rows x width slots, rows), how many items a backend call
    should bring (so calls can be filled), how packed rows attend (`attention`: "masks" = dense 4D masks for the
    model's sdpa / eager attention, "tree" = tree.py), which linear kernel the model's layers use (`linear`:
    "torch" or "onednn", kernels.py), the scored positions per LM-head call (`head_rows`), whether the runner should
    prepare the next block while this one is scored (`prepare_ahead`, run.pipeline) and how it was chosen."""

    max_batch_tokens: int
    max_batch_rows: int
    items_per_call: int
    attention: str = "masks"
    linear: str = "torch"
    head_rows: int = 256
    prepare_ahead: bool = False
    source: str = "fixed"


BUDGETS = {"cpu": Budget(8192, 64, 1, "tree", "onednn"),
           "cuda": Budget(32768, 128, 16, "masks", "torch", prepare_ahead=True)}


def _pow2_floor(x: float) -> int:
    return 1 << max(0, int(x).bit_length() - 1)


def sized_budget(base: Budget, free_bytes: int, config: Any, dtype_bytes: int) -> Budget:
    """`base` widened to a device with `free_bytes` free for a model of `config` (its hidden and intermediate
    sizes, layers, KV heads, head size, vocabulary) in a dtype of `dtype_bytes`, within SHARE of the free memory:
    - items per call: their cached prefixes (ITEM_TOKENS x the KV bytes per token over every layer) within a
      quarter of it, at most MAX_ITEMS;
    - slots per call: the rest of the share over what one slot holds while a layer runs (its activations:
      2 x intermediate + 4 x hidden values; its row's share of the per-row copy of the item's cached keys and
      values, ITEM_TOKENS / ROW_TOKENS slots' worth per layer; its dense-mask row, 2 layer groups), a power of two
      up to MAX_SLOTS; rows = slots / ROW_TOKENS;
    - LM-head positions per call: fp32 logits and their exponentials (3 x 4 bytes x vocabulary per position)
      within an eighth of it, a power of two up to MAX_HEAD_ROWS.
    Never below `base` (the fixed budget measured on an 80 GB card)."""
    share = SHARE * free_bytes
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    kv_layer = 2 * config.num_key_value_heads * head_dim * dtype_bytes  # bytes per token per layer
    item = ITEM_TOKENS * kv_layer * config.num_hidden_layers
    items = max(base.items_per_call, min(MAX_ITEMS, int(share / 4 // item)))
    width = ROW_TOKENS[base.attention]
    slot = dtype_bytes * (2 * config.intermediate_size + 4 * config.hidden_size) + \
        kv_layer * ITEM_TOKENS // width + 2 * (ITEM_TOKENS + width)
    slots = max(base.max_batch_tokens, min(MAX_SLOTS, _pow2_floor(max(1, share - items * item) / slot)))
    head = max(base.head_rows, min(MAX_HEAD_ROWS, _pow2_floor(share / 4 / (12 * config.vocab_size))))
    return replace(base, items_per_call=items, max_batch_tokens=slots,
                   max_batch_rows=max(base.max_batch_rows, slots // width), head_rows=head,
                   source=f"sized: {SHARE:.0%} of {free_bytes / 2 ** 30:.1f} GiB free, "
                          f"{kv_layer * config.num_hidden_layers:,} KV bytes per token")


def device_budget(device: torch.device, model: Any = None) -> Budget:
    """The budget for `device`'s type (CPU's where none is set); on CUDA with `model`, sized to the device's free
    memory now (`sized_budget`)."""
    device = torch.device(device)
    base = BUDGETS.get(device.type, BUDGETS["cpu"])
    if device.type == "cuda" and model is not None:
        free, _ = torch.cuda.mem_get_info(device)
        dtype = next(model.parameters()).dtype
        try:
            return sized_budget(base, free, model.config.get_text_config(), torch.finfo(dtype).bits // 8)
        except (AttributeError, TypeError) as e:  # a config without the sizes the rule reads: the fixed budget
            return replace(base, source=f"fixed (not sized: {type(e).__name__}: {e})")
    return base
