"""The engine's budgets (backends/hf/budget.py): the CPU's fixed one; on CUDA the fixed one widened to the device's
free memory and the model's sizes by a stated rule (`sized_budget`), never below it, each limit from the memory it
bounds, and how it was chosen said in `source` (recorded in a run's provenance)."""
from types import SimpleNamespace

import pytest
import torch

from mcqa_toolkit.backends.hf.budget import BUDGETS, ITEM_TOKENS, MAX_SLOTS, SHARE, device_budget, sized_budget

GIB = 2 ** 30
LLAMA_8B = SimpleNamespace(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                           num_key_value_heads=8, head_dim=128, vocab_size=262_144)


def test_the_cpu_keeps_its_measured_budget(tiny_gemma):
    assert device_budget(torch.device("cpu"), tiny_gemma.model) == BUDGETS["cpu"]
    assert BUDGETS["cpu"].prepare_ahead is False and BUDGETS["cuda"].prepare_ahead is True


def test_a_large_device_widens_the_cuda_budget_by_the_rule():
    base = BUDGETS["cuda"]
    big = sized_budget(base, 125 * GIB, LLAMA_8B, 2)
    item = ITEM_TOKENS * 2 * 8 * 128 * 2 * 32  # an item's cached prefix over every layer, bf16
    assert big.items_per_call == min(64, int(SHARE * 125 * GIB / 4 // item))
    assert big.max_batch_tokens == MAX_SLOTS and big.max_batch_rows == MAX_SLOTS // 256
    assert big.head_rows == 4096 and "125.0 GiB free" in big.source and big.attention == base.attention
    mid = sized_budget(base, 62 * GIB, LLAMA_8B, 2)  # an 80 GB card after the weights: narrower, still wider
    assert base.items_per_call < mid.items_per_call < big.items_per_call
    assert base.max_batch_tokens < mid.max_batch_tokens < big.max_batch_tokens
    assert mid.max_batch_tokens & (mid.max_batch_tokens - 1) == 0  # a power of two


@pytest.mark.parametrize("free", [0, 1 * GIB, 8 * GIB])
def test_a_small_device_keeps_the_fixed_budget(free):
    base = BUDGETS["cuda"]
    small = sized_budget(base, free, LLAMA_8B, 2)
    for field in ("items_per_call", "max_batch_tokens", "max_batch_rows", "head_rows"):
        assert getattr(small, field) >= getattr(base, field)
    assert small.items_per_call == base.items_per_call


def test_a_config_without_the_sizes_keeps_the_fixed_budget(monkeypatch):
    """On CUDA a model whose config lacks a size the rule reads gets the fixed budget, saying why (no GPU needed:
    the device's free memory is asked through torch.cuda.mem_get_info, stood in for here)."""
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (100 * GIB, 141 * GIB))
    model = torch.nn.Linear(2, 2)
    model.config = SimpleNamespace(get_text_config=lambda: SimpleNamespace(hidden_size=8))
    got = device_budget(torch.device("cuda"), model)
    assert got.items_per_call == BUDGETS["cuda"].items_per_call and got.source.startswith("fixed (not sized")
    model.config = SimpleNamespace(get_text_config=lambda: LLAMA_8B)
    assert device_budget(torch.device("cuda"), model).source.startswith("sized: 50% of 100.0 GiB free")
