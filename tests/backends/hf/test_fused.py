"""The fused body (backends/hf/fused.py): the engine with `fused=True` equals the plain forward per sequence (1e-4,
fp32) on families of every kind the tree path serves, through compiled layers; a compiler that reaches its
recompilation limit is said and the calls go on uncompiled, equal; the self-check's verdict is kept apart from the
uncompiled path's. Every tree family of the sweep: results/tests/fused_sweep.json (scripts/fused_table.py)."""
from __future__ import annotations

from contextlib import nullcontext

import fused_sweep
import numpy as np
import pytest
import support_sweep
import torch
from engine_requests import PREFIX, block_items

from mcqa_toolkit.backends.hf import fused, verdict_key
from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores
from mcqa_toolkit.backends.hf.tokens import encode

# a family of each kind: full attention (llama), sliding and full layers with soft norms (gemma3_text), latent
# attention (deepseek_v3), mixture of experts (qwen3_moe), learned positions and Conv1D projections (gpt2), a
# hybrid of convolution and attention layers (lfm2)
FAMILIES = ("llama", "gemma3_text", "deepseek_v3", "qwen3_moe", "gpt2", "lfm2")


@pytest.fixture
def sweep_threads():
    """The sweep's torch threads (support_sweep.THREADS) for the test, the process's count put back after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(support_sweep.THREADS)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_fused_body_equals_the_plain_forward(family, tiny_tokenizer, sweep_threads):
    row = fused_sweep.fused_row(family, tiny_tokenizer)
    assert fused_sweep.exact(row), row
    assert row["path"] == "tree" and row["tree_calls"] > 0, row  # scored through the compiled layers


def _delta(lm, scorer) -> float:
    items = block_items(lm)
    got = scorer.score_block([(r, encode(lm, PREFIX)) for r in items])
    return max(float(np.abs(a - b).max()) for r, g in zip(items, got, strict=True)
               for a, b in zip(naive_scores(lm, r), g, strict=True))


def _no_layers(body):
    raise fused.Unfusable(f"no list of decoder layers in {type(body).__name__}")


@pytest.mark.parametrize("cause", ["recompilation limit", "no decoder layers"])
def test_a_body_that_cannot_be_compiled_is_said_and_scored_uncompiled(tiny_lm, monkeypatch, cause):
    """The compiler's recompilation limit reached before the first graph, or a body whose decoder layers are not
    found: the engine warns, turns `fused` off and scores that call and the rest uncompiled, equal to the naive
    computation."""
    monkeypatch.setattr(fused, "_COMPILED", {})  # a fresh compiled forward (its own code object, no graphs yet)
    if cause == "no decoder layers":
        monkeypatch.setattr(fused, "_layers", _no_layers)
    limit = torch._dynamo.config.patch(recompile_limit=0) if cause == "recompilation limit" else nullcontext()
    scorer = PrefixScorer(tiny_lm, fused=True, check=False, row_tokens=12)
    assert scorer.settings()["fused"] is True
    with limit, pytest.warns(UserWarning, match="fused: .*uncompiled from now"):
        delta = _delta(tiny_lm, scorer)
    assert delta <= 1e-4
    assert scorer.fused is False and scorer.settings()["fused"] is False and scorer.stats.fused_calls == 0


def test_the_fused_calls_are_counted_and_equal_the_naive_computation(tiny_lm):
    scorer = PrefixScorer(tiny_lm, fused=True, check=False, row_tokens=12)
    assert _delta(tiny_lm, scorer) <= 1e-4
    assert scorer.fused and scorer.stats.fused_calls > 0


def test_the_verdict_of_the_fused_path_is_its_own(tiny_lm):
    eager = PrefixScorer(tiny_lm, check=False)
    compiled = PrefixScorer(tiny_lm, fused=True, check=False)
    assert verdict_key.key(eager) != verdict_key.key(compiled)
    assert compiled.path_options()["fused"] is True and eager.settings()["fused"] is False
