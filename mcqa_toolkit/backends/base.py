"""The Backend protocol: the only thing `run/` and `scoring/` know about a model.

A backend answers three questions about *rendered prompts* (`prompts.Prompt`, or plain text), never about
token ids, so a local transformers model, an OpenAI-compatible server or a hosted API can stand behind it:

1. `letter_logprobs(prompts)`: log P(letter) of each shown option letter at the prompt's answer slot
   (the token the model would emit right after the answer cue). Letters the backend cannot see (outside
   an API's top-k) are NaN.
2. `loglikelihoods(requests)`: per-token log-probs of a continuation given a context (a Prompt, whose
   rendering the backend owns, or plain text; "" means "from the start of a document", used by Min-K%).
3. `generate(prompts, ...)`: text written after the prompt (greedy or sampled with a per-record seed,
   stop strings cut off, at most `max_new_tokens`).

What a backend can do is declared in `capabilities`; the table of methods (scoring.methods) says what each
method needs, and `scoring.methods.check_method` turns a strategy that needs a missing capability into one
sentence before any work starts. Token accounting (`usage()`), caching and retries
are the backend's business. Records are computed from these calls only, so two backends serving the
same weights give comparable records.

Beyond the three calls, a backend may offer declared optional parts, each a Protocol checked with isinstance
(never an attribute looked up by name):
- `MultiItemBackend`: `items_per_call`, how many items the runner brings in one log-prob scoring call (the local
  engine fills its forward calls with several items on a GPU; `items_per_call()` reads it, one otherwise);
- `RenewableBackend`: `renew()`, the same loaded model with fresh KV caches and token counters (run.recipe's
  BackendCache renews a model between runs instead of loading it again);
- `PooledBackend`: a backend whose blocks of items are scored elsewhere (run.pool's RemoteBackend, a Ray
  cluster's workers): `score_blocks` gives each block's records, `pool_info` what the pool did, and it is a
  MultiItemBackend, so its runs cut the blocks an in-process run cuts;
- `DistributionBackend`: `token_distributions(texts)`, per token its log-prob and the mean and variance of log p
  over the whole next-token distribution, which Min-K%++ needs and no API returns (the local model offers it:
  backends.hf.distributions; contamination.familiarity uses it);
- `BatchBackend`: a provider's batch API (run.batch);
- `PreparingBackend`: `prepare(prompts, method)` does a block's host-side preparation (the local engine: its
  tokenisation into the run's token cache) ahead of the block's call, and `prepare_ahead` says whether the runner
  should run it for the next block while this one is scored (run.pipeline; the result never depends on it).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from mcqa_toolkit.backends.batch import BatchClient

__all__ = [
    "Capabilities", "LetterLogprobs", "Continuation", "ContinuationLogprobs", "Generation", "Backend",
    "BatchBackend", "MultiItemBackend", "RenewableBackend", "PooledBackend", "DistributionBackend",
    "PreparingBackend", "CapabilityError",
    "items_per_call",
    "usage_delta",
]


@dataclass(frozen=True)
class Capabilities:
    """What a backend can compute. `chat` is generation from chat messages; `chat_scoring` is log-probs
    (letters, continuations) on chat-rendered prompts; `batch` is an offline batch API; `top_logprobs` bounds
    how many next tokens it can show (None: the whole vocabulary)."""

    next_token_logprobs: bool = False
    continuation_logprobs: bool = False
    generate: bool = False
    chat: bool = False
    chat_scoring: bool = False
    batch: bool = False
    top_logprobs: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class LetterLogprobs:
    """Log-probabilities of each SHOWN letter (shown order) as the next token; NaN = not visible."""

    logprobs: np.ndarray
    n_prompt_tokens: int
    extra: dict[str, Any] = field(default_factory=dict)   # e.g. token ids used, how many letters were seen


@dataclass(frozen=True)
class Continuation:
    """Score `continuation` after `context` (a Prompt, rendered by the backend, or plain text)."""

    context: Any
    continuation: str


@dataclass(frozen=True)
class ContinuationLogprobs:
    """Per-token log-probs of a continuation; `text` is the continuation as scored (leading whitespace
    moved from the context, see backends.hf.tokens), from which char/byte lengths are taken."""

    logprobs: np.ndarray
    text: str
    n_context_tokens: int

    @property
    def n_tokens(self) -> int:
        return int(len(self.logprobs))


@dataclass(frozen=True)
class Generation:
    """Generated text (stop strings cut off) and its token counts. A reasoning model's thinking, when the
    provider returns it apart from the answer (vLLM's / DeepSeek's `reasoning_content`, Gemini's thought parts,
    Claude's thinking blocks), is `reasoning`, and `n_reasoning_tokens` its token count where the provider
    reports one (included in `n_generated_tokens`; None: not reported)."""

    text: str
    n_prompt_tokens: int
    n_generated_tokens: int
    finish_reason: str = ""
    reasoning: str = ""
    n_reasoning_tokens: int | None = None


@runtime_checkable
class Backend(Protocol):
    """A model as the scorers see it. Implementations: backends.hf (local transformers), and others under
    backends/. `provenance()` must contain `source` (what was loaded/called), used to refuse mixing models
    in one run folder; `usage()` returns cumulative counters, at least `forwarded_tokens`."""

    name: str

    @property
    def capabilities(self) -> Capabilities: ...

    def provenance(self) -> dict[str, Any]: ...

    def usage(self) -> dict[str, float]: ...

    def letter_logprobs(self, prompts: Sequence[Any]) -> list[LetterLogprobs]: ...

    def loglikelihoods(self, requests: Sequence[Continuation]) -> list[ContinuationLogprobs]: ...

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Generation]: ...


@runtime_checkable
class BatchBackend(Protocol):
    """Declared optional part of the protocol, for backends behind a provider's API (openai, anthropic, google):
    their requests go through an on-disk request cache (backends.cache) keyed by request, and they have a batch API
    (`capabilities.batch`). Batch mode (run.batch) uses only these three:

    - `request_cache`: where every answer is kept (a batch's results are stored there by custom_id);
    - `collecting()`: a context manager during which requests the cache lacks are recorded, not sent; it yields
      the dict {cache key: (endpoint, body)} it fills;
    - `batch_api()`: the provider's batch client for this backend (backends.batch.BatchClient: submit, poll,
      results, submitted, cache_key); backends.api.ApiBackend implements all three."""

    @property
    def request_cache(self) -> Any: ...

    def collecting(self) -> AbstractContextManager[dict[str, tuple[str, dict[str, Any]]]]: ...

    def batch_api(self) -> BatchClient: ...


@runtime_checkable
class MultiItemBackend(Protocol):
    """Declared optional part: how many items one log-prob scoring call should carry (an execution detail that
    changes float rounding, never what is asked). The local engine declares its device budget's."""

    items_per_call: int


@runtime_checkable
class RenewableBackend(Protocol):
    """Declared optional part: `renew()` returns this loaded model with fresh state (KV caches, token counters), so
    a run's records are those of a fresh load without loading the weights again."""

    def renew(self) -> Backend: ...


@runtime_checkable
class PooledBackend(Protocol):
    """Declared optional part: a backend whose blocks are scored by other processes (run.pool.remote.RemoteBackend).
    `items_per_call` is the workers' model's (MultiItemBackend), so a pooled run cuts the blocks an in-process run
    cuts; `score_blocks(blocks, plan, run_info)` yields each block's records (run.runner's record dicts) in block
    order, each block once; `pool_info()` is what the pool did for the run (workers, nodes, retries), recorded in
    the run's provenance."""

    items_per_call: int

    def score_blocks(self, blocks: Sequence[Sequence[Any]], plan: Any,
                     run_info: Mapping[str, Any]) -> Iterator[list[dict[str, Any]]]: ...

    def pool_info(self) -> dict[str, Any]: ...


@runtime_checkable
class DistributionBackend(Protocol):
    """Declared optional part: `token_distributions(texts)` gives, per text, each token's log-prob and the mean and
    variance of log p over the model's whole next-token distribution at its place (Min-K%++; the local model:
    backends.hf.distributions.TokenDistribution)."""

    def token_distributions(self, texts: Sequence[str]) -> list[Any]: ...


@runtime_checkable
class PreparingBackend(Protocol):
    """Declared optional part: `prepare(prompts, method)` does the host-side work of a block's log-prob call ahead
    of it (the local engine: tokenising the prompts into its run's token cache, which gives the same ids whenever it
    is filled), so that a runner can prepare the next block while this one is computed; `prepare_ahead` says
    whether that overlap helps on the backend's device (a GPU waits for the host; on a CPU both compete for the
    cores). A block's results never depend on whether it was prepared."""

    prepare_ahead: bool

    def prepare(self, prompts: Sequence[Any], method: str) -> None: ...


class CapabilityError(ValueError):
    """A strategy asks for something the backend cannot do; raised before any request is made."""


def items_per_call(backend: Any) -> int:
    """How many items one log-prob scoring call to `backend` should carry: its declared `items_per_call`
    (MultiItemBackend; an execution detail that changes float rounding, never what is asked), else 1."""
    n = backend.items_per_call if isinstance(backend, MultiItemBackend) else 1
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1


def usage_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """What a backend's cumulative usage counters (`Backend.usage()`) grew by between two readings."""
    return {k: v - before.get(k, 0) for k, v in after.items() if isinstance(v, (int, float))}
