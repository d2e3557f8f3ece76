"""oneDNN linears (backends/hf/kernels.py): the same products as PyTorch's linear up to float rounding, the
modules back as they were after the block (also after an error), the weights read as they are at each call; the
engine with them equals the naive computation (1e-4, fp32) on both tiny architectures."""
import numpy as np
import pytest
import torch
from engine_requests import PREFIX, block_items

from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores
from mcqa_toolkit.backends.hf.kernels import onednn_available, onednn_linear, onednn_linears
from mcqa_toolkit.backends.hf.tokens import encode

pytestmark = pytest.mark.skipif(not onednn_available(torch.device("cpu"), torch.float32), reason="no oneDNN")


def test_products_equal_torch_linear_and_modules_are_restored():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Linear(96, 8, bias=False))
    x = torch.randn(5, 7, 64)
    with torch.inference_mode():
        want = model(x)
        with onednn_linears(model):
            assert all("forward" in m.__dict__ for m in (model[0], model[2]))
            got = model(x)
        assert not any("forward" in m.__dict__ for m in model)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(onednn_linear(x, model[0].weight, model[0].bias), model[0](x), rtol=1e-5, atol=1e-5)
        model[0].weight.mul_(2)  # the weights are read as they are at each call
        with onednn_linears(model):
            again = model(x)
        torch.testing.assert_close(again, model(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ZeroDivisionError):
        with onednn_linears(model):
            raise ZeroDivisionError("inside the context")
    assert not any("forward" in m.__dict__ for m in model)


@pytest.mark.parametrize("attention", ["tree", "masks"])
def test_engine_with_onednn_equals_naive(tiny_lm, attention):
    items = block_items(tiny_lm)
    shared = encode(tiny_lm, PREFIX)
    scorer = PrefixScorer(tiny_lm, linear="onednn", attention=attention, row_tokens=12)
    got = scorer.score_block([(r, shared) for r in items])
    delta = max(float(np.abs(a - b).max()) for r, g in zip(items, got, strict=True)
                for a, b in zip(naive_scores(tiny_lm, r), g, strict=True))
    assert delta <= 1e-4
    with pytest.raises(ValueError, match="linear 'mkl'"):
        PrefixScorer(tiny_lm, linear="mkl")


def test_bf16_is_routed_only_where_onednn_computes_it():
    """An AVX2-only CPU's oneDNN (or one whose ISA is forced down to AVX2) has no bf16 inner product: "could not create
    a primitive descriptor". There a bf16 model keeps PyTorch's linear (a bf16 load on such a machine failed in its
    self-check before); where oneDNN has one, bf16 is routed. fp32 is routed on every CPU with oneDNN."""
    x, w = torch.randn(5, 8, dtype=torch.bfloat16), torch.randn(3, 8, dtype=torch.bfloat16)
    try:
        onednn_linear(x, w)
        runs = True
    except RuntimeError:
        runs = False
    assert onednn_available("cpu", torch.bfloat16) is runs
    assert onednn_available("cpu", torch.float32) is torch.backends.mkldnn.is_available()
    model = torch.nn.Sequential(torch.nn.Linear(8, 3)).to(torch.bfloat16)
    with onednn_linears(model):
        got = model(x)
    torch.testing.assert_close(got, torch.nn.functional.linear(x, model[0].weight, model[0].bias), rtol=2e-2,
                               atol=2e-2)
