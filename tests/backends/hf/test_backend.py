"""HFBackend (backends/hf/backend.py) on the tiny Gemma 3: prompts of several items in one call are grouped by
item for the engine (one block, fewer forward calls) and give the numbers of one call per item (float rounding
aside); the engine's device budget is what the runner reads (`items_per_call`); `load(engine=...)` reaches it."""
import numpy as np

from mcqa_toolkit.backends.base import Continuation, items_per_call
from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.datasets import load
from mcqa_toolkit.prompts import load_template, render
from mcqa_toolkit.prompts.permutations import permutations


def _prompts(items, shuffles=3):
    template = load_template("pt", "enem")
    return [render(it, template, shots=[], permutation=p, shuffle=k)
            for it in items for k, p in enumerate(permutations(it.n_options, shuffles, seed=0, key=it.parallel_id))]


def test_several_items_in_one_call_equal_one_call_each(tiny_gemma):
    items = load("demo", language="pt")[:3]
    prompts = _prompts(items)
    block, alone = HFBackend(tiny_gemma, items_per_call=3), HFBackend(tiny_gemma)
    assert items_per_call(block) == 3 and items_per_call(alone) == 1  # CPU's budget: one item per call
    got = block.letter_logprobs(prompts)
    want = [r for it in items for r in alone.letter_logprobs([p for p in prompts if p.item_id == it.item_id])]
    assert max(float(np.abs(a.logprobs - b.logprobs).max()) for a, b in zip(got, want, strict=True)) <= 1e-5
    assert [a.n_prompt_tokens for a in got] == [b.n_prompt_tokens for b in want]
    assert block.engine.stats.items == 3 and block.engine.stats.calls < alone.engine.stats.calls
    reqs = [Continuation(p, c) for p in prompts for c in p.continuations]
    got = block.loglikelihoods(reqs)
    want = [r for it in items for r in alone.loglikelihoods([q for q in reqs if q.context.item_id == it.item_id])]
    assert max(float(np.abs(a.logprobs - b.logprobs).max()) for a, b in zip(got, want, strict=True)) <= 1e-5
    texts = block.loglikelihoods([Continuation("", "A canção é bonita."), Continuation("", "Perché?")])
    assert [t.n_tokens for t in texts] == [len(t.logprobs) for t in texts]


def test_engine_options_reach_the_engine(tiny_gemma, tiny_model_dir):
    from mcqa_toolkit.backends.hf.backend import load as load_hf

    backend = load_hf(str(tiny_model_dir), engine={"items_per_call": 4, "max_batch_tokens": 1024})
    assert backend.items_per_call == 4 and backend.engine.max_batch_tokens == 1024
    assert backend.renew().items_per_call == 4


def test_provenance_records_the_engine_budget(tiny_gemma):
    """A run's provenance says how the engine computed: its budget (and how it was chosen), kernels, whether the body
    is fused, whether the next block was prepared ahead, the path its self-check kept, and the compute state
    (threads, fp32 products, the CPU)."""
    engine = HFBackend(tiny_gemma).provenance()["engine"]
    compute = {k: engine.pop(k) for k in ("threads", "fp32_matmul", "cpu", "check")}
    assert engine == {"items_per_call": 1, "max_batch_tokens": 8192, "max_batch_rows": 64, "head_rows": 256,
                      "attention": "tree", "linear": "onednn", "row_tokens": 4096, "graphs": False,
                      "fused": False, "budget": "fixed", "prepare_ahead": False, "attn_implementation": "sdpa",
                      "path": "tree"}
    assert compute["check"]["path"] == compute["check"]["asked"] == "tree" and compute["fp32_matmul"] == "ieee"
    assert HFBackend(tiny_gemma, prepare_ahead=True, items_per_call=2).provenance()["engine"]["prepare_ahead"]
