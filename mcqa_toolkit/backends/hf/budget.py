"""What the engine does per device: the forward calls' size, the items a backend call brings, and the kernels.

`BUDGETS` maps a device type to a `Budget`; a PrefixScorer takes its device's unless told otherwise (each field is
also an engine option). Chosen by measurement (docs/performance.md, benchmarks/results):
- cpu: one item per call, 8,192 slots, 64 rows (wider calls were slower on 2 cores: attention over wide masks);
  tree attention (tree.py) and the linear layers through oneDNN (kernels.py), faster in the branch's runs of
  benchmarks/scoring_throughput.py and body_kernels.py (those comparisons uncommitted; the defaults' own figures:
  benchmarks/results/engine3_2026-11-27/);
- cuda: 16 items, 32,768 slots, 128 rows per call (a GPU pays per launch, not per FLOP: few, wide calls); the dense
  masks and PyTorch's linear, as measured on an H100 (tree attention and oneDNN have no GPU measurement here).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

ATTENTION = ("masks", "tree")
# packed rows' width per attention: dense masks pay for the width, tree attention for the ancestors (engine.py)
ROW_TOKENS = {"masks": 256, "tree": 4096}


@dataclass(frozen=True)
class Budget:
    """What one forward call may carry on a device (rows x width slots, rows), how many items a backend call
    should bring (so calls can be filled), how packed rows attend (`attention`: "masks" = dense 4D masks for the
    model's sdpa / eager attention, "tree" = tree.py) and which linear kernel the model's layers use (`linear`:
    "torch" or "onednn", kernels.py)."""

    max_batch_tokens: int
    max_batch_rows: int
    items_per_call: int
    attention: str = "masks"
    linear: str = "torch"


BUDGETS = {"cpu": Budget(8192, 64, 1, "tree", "onednn"), "cuda": Budget(32768, 128, 16, "masks", "torch")}


def device_budget(device: torch.device) -> Budget:
    """The budget for `device`'s type (CPU's where none is set)."""
    return BUDGETS.get(torch.device(device).type, BUDGETS["cpu"])
