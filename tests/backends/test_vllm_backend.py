"""The in-process vLLM backend (backends/vllm.py) against a stand-in `vllm` module whose engine is the naive
computation on a tiny random Gemma 3 (one full forward per prompt, log-softmax over the vocabulary): the backend's
token plumbing (letters by token id, continuations from prompt log-probs, generation, chat rendering) must give
the local transformers backend's numbers on the same weights. The stand-in comes in three versions of vLLM's
sampling parameters: an older one without the prefix-cache switch, 0.32 on CPU (the switch; prompt log-probs rows
of cached positions never written, simulated by poison values; scoring ids by row refused) and a V2 model runner
(ids scored from a given row; a request whose first scored row was cached dropped). The real vLLM engine runs in
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
from mcqa_toolkit.prompts import load_template, render
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.run import Strategy, run


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
    prompt_token_id_logprobs: object = None


FIELDS = ("max_tokens", "temperature", "logprobs", "prompt_logprobs", "logprob_token_ids", "stop", "seed")
NEW_FIELDS = ("skip_reading_prefix_cache", "detokenize", "prompt_logprob_token_ids", "prompt_logprob_start")
VERSIONS = {"older": (FIELDS, False), "0.32-cpu": (FIELDS + NEW_FIELDS, False),
            "v2-runner": (FIELDS + NEW_FIELDS, True)}
BLOCK = 16     # the stand-in's prefix-cache block
POISON = 99.0  # what a prompt log-probs row of a cached position holds (vLLM never writes those rows)


def _sampling_params(fields):
    class _SamplingParams:
        __struct_fields__ = fields

        def __init__(self, **kw):
            for f in self.__struct_fields__:
                setattr(self, f, kw.pop(f, None))
            assert not kw, kw
    return _SamplingParams


_SamplingParams = _sampling_params(FIELDS)


def _lcp(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@dataclass
class _LLM:
    """vllm.LLM on a transformers model: full forward per prompt (the naive reference computation). With
    `caching`, a request that reads the prefix cache gets num_cached_tokens (whole blocks of earlier prompts, at
    most all but its last token) and poison in the prompt log-probs rows it did not compute."""

    lm: object
    kwargs: dict = field(default_factory=dict)
    caching: bool = False
    rows_by_id: bool = False
    seen: list = field(default_factory=list)

    def get_tokenizer(self):
        return self.lm.tokenizer

    def _cached(self, ids, p):
        skip = getattr(p, "skip_reading_prefix_cache", None)
        if skip is None:  # vLLM's default: skip for prompt log-probs
            skip = p.prompt_logprobs is not None or getattr(p, "prompt_logprob_token_ids", None) is not None
        best = max((_lcp(ids, s) for s in self.seen), default=0) if self.caching and not skip else 0
        self.seen.append(tuple(ids))
        return min(best, len(ids) - 1) // BLOCK * BLOCK

    def generate(self, prompts, params, use_tqdm=True):
        import torch

        params = params if isinstance(params, list) else [params] * len(prompts)
        if any(getattr(p, "prompt_logprob_token_ids", None) is not None for p in params) and not self.rows_by_id:
            raise ValueError("prompt_logprob_token_ids requires the V2 model runner")
        out = []
        for prompt, p in zip(prompts, params, strict=True):
            ids = list(prompt["prompt_token_ids"])
            cached = self._cached(ids, p)
            with torch.no_grad():
                logits = self.lm.model(torch.tensor([ids])).logits[0].float()
            lp = torch.log_softmax(logits, -1)
            prompt_lp = by_rows = None
            if p.prompt_logprobs is not None:
                prompt_lp = [None] + [{ids[i]: _Logprob(float(lp[i - 1, ids[i]]) if i - 1 >= cached else POISON)}
                                      for i in range(1, len(ids))]
            rows = getattr(p, "prompt_logprob_token_ids", None)
            if rows is not None and cached <= p.prompt_logprob_start:
                start = p.prompt_logprob_start
                by_rows = np.array([[float(lp[start + r, t]) for t in row] for r, row in enumerate(rows)])
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
            out.append(_Output(ids, prompt_lp, [_Completion(text, text_ids, gen)], cached, by_rows))
        return out


def _install(monkeypatch, lm, version):
    fields, rows_by_id = VERSIONS[version]
    made = []

    def llm(path, **kwargs):
        made.append((path, kwargs))
        return _LLM(lm, kwargs, caching=bool(kwargs.get("enable_prefix_caching")), rows_by_id=rows_by_id)

    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = llm, _sampling_params(fields)
    monkeypatch.setitem(sys.modules, "vllm", module)
    return made


@pytest.fixture
def fake_vllm(monkeypatch, tiny_gemma):
    return _install(monkeypatch, tiny_gemma, "older")


@pytest.mark.parametrize("version", list(VERSIONS))
def test_continuations_read_only_rows_vllm_computed(monkeypatch, tiny_gemma, tiny_model_dir, version):
    """Option log-likelihoods and Min-K% texts (one of them twice: its second request is cached up to its last
    token) equal the transformers backend's, whatever the vLLM: rows of cached positions are never read; with the
    switch the shared contexts come from the cache, and a request with no computed row is asked again."""
    from mcqa_toolkit.backends.base import Continuation

    _install(monkeypatch, tiny_gemma, version)
    items = load("demo", language="pt")[:2]
    hf = HFBackend(tiny_gemma)
    for reuse in (True, False):
        vllm = load_backend({"backend": "vllm", "model": str(tiny_model_dir), "name": "tiny",
                             "reuse_prefix_cache": reuse})
        texts = ["A canção é bonita e o coração também, muito bonita.", "¿Dónde está la estación?"]
        reqs = [Continuation("", t) for t in texts + texts[:1]]
        for a, b in zip(vllm.loglikelihoods(reqs), hf.loglikelihoods(reqs), strict=True):
            np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)
        orders = [(tuple(range(it.n_options)), tuple(range(it.n_options))[::-1]) for it in items]
        prompts = [render(it, load_template("pt", "default"), shots=[], permutation=p, shuffle=k)
                   for it, perms in zip(items, orders, strict=True) for k, p in enumerate(perms)]
        cont = [Continuation(p, c) for p in prompts for c in p.continuations]
        for a, b in zip(vllm.loglikelihoods(cont), hf.loglikelihoods(cont), strict=True):
            np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)
        used = vllm.usage()
        reads = reuse and version != "older"
        assert vllm.provenance()["continuations_read_prefix_cache"] is reads
        assert (used["cached_tokens"] > 0) is reads and (used["rescored"] >= 1) is reads
        assert used["requests"] == len(reqs) + len(cont) + used["rescored"]


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
    for a, b in zip(text_logprobs(vllm, texts), text_logprobs(HFBackend(tiny_gemma), texts), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
