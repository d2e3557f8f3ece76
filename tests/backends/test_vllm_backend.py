"""The in-process vLLM backend (backends/vllm.py) against a stand-in `vllm` module whose engine is the naive
computation on a tiny random Gemma 3 (one full forward per prompt, log-softmax over the vocabulary): the backend's
token plumbing (letters by token id, continuations from prompt log-probs, generation, chat rendering) must give
the local transformers backend's numbers on the same weights. The real vLLM engine runs in
tests/backends/test_vllm_server.py (marker `vllm`); tensor / pipeline parallelism and Ray cannot run on 2 CPU
cores, so here we check that those parameters reach `vllm.LLM` unchanged."""
from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass, field

import numpy as np
import pytest

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.datasets import load
from mcqa_toolkit.run import Strategy, run
from mcqa_toolkit.records.equality import assert_same_records


@dataclass
class _Logprob:
    logprob: float


@dataclass
class _Completion:
    text: str
    token_ids: list
    logprobs: list | None
    finish_reason: str = "length"


@dataclass
class _Output:
    prompt_token_ids: list
    prompt_logprobs: list | None
    outputs: list
    num_cached_tokens: int = 0


class _SamplingParams:
    __struct_fields__ = ("max_tokens", "temperature", "logprobs", "prompt_logprobs", "logprob_token_ids", "stop",
                         "seed")

    def __init__(self, **kw):
        for f in self.__struct_fields__:
            setattr(self, f, kw.pop(f, None))
        assert not kw, kw


@dataclass
class _LLM:
    """vllm.LLM on a transformers model: full forward per prompt (the naive reference computation)."""

    lm: object
    kwargs: dict = field(default_factory=dict)

    def get_tokenizer(self):
        return self.lm.tokenizer

    def generate(self, prompts, params, use_tqdm=True):
        import torch

        params = params if isinstance(params, list) else [params] * len(prompts)
        out = []
        for prompt, p in zip(prompts, params):
            ids = list(prompt["prompt_token_ids"])
            with torch.no_grad():
                logits = self.lm.model(torch.tensor([ids])).logits[0].float()
            lp = torch.log_softmax(logits, -1)
            prompt_lp = None
            if p.prompt_logprobs is not None:
                prompt_lp = [None] + [{ids[i]: _Logprob(float(lp[i - 1, ids[i]]))} for i in range(1, len(ids))]
            gen, text_ids = [], []
            cur = list(ids)
            for _ in range(p.max_tokens):
                with torch.no_grad():
                    nxt = torch.log_softmax(self.lm.model(torch.tensor([cur])).logits[0, -1].float(), -1)
                tok = int(nxt.argmax())
                wanted = p.logprob_token_ids or (nxt.topk(p.logprobs).indices.tolist() if p.logprobs else [])
                gen.append({int(t): _Logprob(float(nxt[t])) for t in [*wanted, tok]})
                text_ids.append(tok)
                cur.append(tok)
            text = self.lm.tokenizer.decode(text_ids)
            for s in p.stop or ():
                text = text.split(s)[0]
            out.append(_Output(ids, prompt_lp, [_Completion(text, text_ids, gen)]))
        return out


@pytest.fixture
def fake_vllm(monkeypatch, tiny_gemma):
    made = []

    def llm(path, **kwargs):
        made.append((path, kwargs))
        return _LLM(tiny_gemma, kwargs)

    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = llm, _SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    return made


def test_parallelism_and_engine_arguments_reach_vllm_llm(fake_vllm, tiny_model_dir):
    backend = load_backend({"backend": "vllm", "model": str(tiny_model_dir), "tensor_parallel_size": 8,
                            "pipeline_parallel_size": 2, "distributed_executor_backend": "ray",
                            "gpu_memory_utilization": 0.85, "top_logprobs": 25})
    path, kwargs = fake_vllm[-1]
    assert path == str(tiny_model_dir)
    assert kwargs == {"enable_prefix_caching": True, "max_logprobs": 25, "seed": 0, "tensor_parallel_size": 8,
                      "pipeline_parallel_size": 2, "distributed_executor_backend": "ray",
                      "gpu_memory_utilization": 0.85}
    prov = backend.provenance()
    assert prov["source"] == f"vllm:{tiny_model_dir}" and prov["engine"]["distributed_executor_backend"] == "ray"
    load_backend({"backend": "vllm", "model": str(tiny_model_dir), "enable_prefix_caching": False})
    assert fake_vllm[-1][1]["enable_prefix_caching"] is False  # the user's choice wins


@pytest.mark.parametrize("st", [Strategy.first_token(shuffles=2), Strategy.cloze(), Strategy.loglik("sum", shuffles=2),
                                Strategy.generate(max_new_tokens=3), Strategy.first_token(chat=True)],
                         ids=["letters", "cloze", "loglik", "generate", "chat_letters"])
def test_same_records_as_the_transformers_backend(fake_vllm, tiny_model_dir, tiny_gemma, tmp_path, st):
    items = load("demo", language="pt")[:2]
    vllm = load_backend({"backend": "vllm", "model": str(tiny_model_dir), "name": "tiny"})
    hf = HFBackend(tiny_gemma)
    hf.name = "tiny"
    ours = run(items, vllm, st, tmp_path / "vllm", progress=False)
    ref = run(items, hf, st, tmp_path / "hf", progress=False)
    # float32 on CPU: a full forward per prompt (the stand-in) vs the KV-prefix engine differ by float rounding
    # only; tokens forwarded are each engine's own accounting
    extra = [json.loads(x) for x in ours["extra"]]
    if st.method == "first_token":  # every shown letter is read by token id: none outside a top-k
        assert [x.pop("letters_seen") for x in extra] == list(ours["n_options"])
    ours = ours.assign(extra=[json.dumps(x) for x in extra])
    assert_same_records(ours, ref, atol=1e-4, ignore=["run_id", "n_forwarded_tokens"])


def test_min_k_text_logprobs_equal_the_transformers_backend(fake_vllm, tiny_model_dir, tiny_gemma):
    from mcqa_toolkit.scoring.loglik import text_logprobs

    texts = ["A canção é bonita e o coração também.", "¿Dónde está la estación?", "Perché la città è così bella?"]
    vllm = load_backend({"backend": "vllm", "model": str(tiny_model_dir)})
    for a, b in zip(text_logprobs(vllm, texts), text_logprobs(HFBackend(tiny_gemma), texts)):
        np.testing.assert_allclose(a, b, atol=1e-4)
