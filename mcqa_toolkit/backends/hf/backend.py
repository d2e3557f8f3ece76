"""HFBackend: a local transformers model behind the Backend protocol, scored with the KV-prefix engine.

Every call takes all the prompts of one block: one item's shuffles, or several items (the runner brings
`items_per_call` items per scoring call, the engine's device budget: one on CPU, several on a GPU so forward calls
can be filled; several for padded greedy generation). Prompts are grouped by item (`item_id`) so the engine
shares each item's stem across its shuffles and options; the run prefix (instruction + few-shot block) comes from
each item's first prompt's declared `shared_prefix` and its KV cache is kept in the engine's LRU. Prompts are
tokenised through the backend's `TokenCache` (segments.py): the few-shot block once per run, each stem once per
item, the same ids as encoding every text whole. Token accounting (`usage()`) counts real tokens forwarded for
every call, generation included.
"""
from __future__ import annotations

import importlib.metadata as md
from collections.abc import Sequence
from typing import Any

from mcqa_toolkit.backends.base import Capabilities, Continuation, ContinuationLogprobs, Generation, LetterLogprobs
from mcqa_toolkit.backends.hf.distributions import TokenDistribution, token_distributions
from mcqa_toolkit.backends.hf.engine import PrefixScorer, Request
from mcqa_toolkit.backends.hf.gencheck import padded_generation
from mcqa_toolkit.backends.hf.generation import DEFAULT_STOP, generate_one, generate_padded
from mcqa_toolkit.backends.hf.loading import LM
from mcqa_toolkit.backends.hf.segments import TokenCache
from mcqa_toolkit.backends.hf.tokens import (
    continuation_requests,
    encode,
    letter_requests,
    prompt_text,
    shared_prefix_ids,
)

_PACKAGES = ("torch", "transformers", "tokenizers")


class HFBackend:
    """A loaded `LM` (model + tokenizer) as a Backend. One per model; pass it around (no globals)."""

    def __init__(self, lm: LM, tokens: TokenCache | None = None, prepare_ahead: bool | None = None,
                 **engine_options: Any):
        self.lm = lm
        self.name = lm.name
        self.tokens = tokens or TokenCache(lm.tokenizer)  # exact memo of token ids: shared by renewed backends
        self.engine = PrefixScorer(lm, **engine_options)
        # a renewed backend computes with this one's threads (compute.py), whatever the process has by then
        self._engine_options = {**engine_options, "threads": self.engine.threads, "prepare_ahead": prepare_ahead}
        self.items_per_call = self.engine.items_per_call  # base.items_per_call: what the runner brings per call
        # base.PreparingBackend: the runner tokenises the next block while this one is computed (the budget's)
        self.prepare_ahead = self.engine.budget.prepare_ahead if prepare_ahead is None else prepare_ahead
        self._generated = {"generated_tokens": 0, "generation_padded": 0}

    def renew(self) -> HFBackend:
        """A backend on the same loaded weights with empty caches and counters, as good as a fresh load: the
        KV-prefix cache and the token accounting start over, so records do not depend on earlier runs."""
        return HFBackend(self.lm, self.tokens, **self._engine_options)

    @property
    def capabilities(self) -> Capabilities:
        chat = self.lm.tokenizer.chat_template is not None
        return Capabilities(next_token_logprobs=True, continuation_logprobs=True, generate=True, chat=chat,
                            chat_scoring=chat)

    def provenance(self) -> dict[str, Any]:
        versions: dict[str, str | None] = {}
        for pkg in _PACKAGES:
            try:
                versions[pkg] = md.version(pkg)
            except md.PackageNotFoundError:
                versions[pkg] = None
        return {"backend": "hf", **self.lm.provenance(), "packages": versions,
                "engine": {**self.engine.settings(), "prepare_ahead": self.prepare_ahead}}

    def usage(self) -> dict[str, float]:
        return {**self.engine.stats.as_dict(), **self._generated, "forwarded_tokens": self.engine.stats.forwarded}

    def prepare(self, prompts: Sequence[Any], method: str) -> None:
        """base.PreparingBackend: tokenise a block's prompts into the run's TokenCache ahead of its call (the
        letters, or each option as a continuation), so the call finds every segment encoded; the same ids as
        without it. Safe beside a running call (TokenCache takes a lock; the engine is not touched)."""
        if method == "first_token":
            letter_requests(self.lm, prompts, self.tokens)
        elif method in ("loglik", "cloze"):
            continuation_requests(self.lm, [Continuation(p, c) for p in prompts for c in p.continuations], self.tokens)

    # ---- the protocol's three calls ----------------------------------------------------------------------
    def letter_logprobs(self, prompts: Sequence[Any]) -> list[LetterLogprobs]:
        """Candidate letter tokens are whatever the tokenizer makes of cue + letter (' A' vs 'A')."""
        if not prompts:
            return []
        reqs, extras = [], []
        for ids, cands, exact in letter_requests(self.lm, prompts, self.tokens):
            reqs.append(Request(ids, len(ids), cands))
            extras.append({"letter_token_ids": list(cands), "letter_token_exact": list(exact)})
        groups = _by_item([getattr(p, "item_id", None) for p in prompts])
        logps = self._score(reqs, groups, [shared_prefix_ids(self.lm, prompts[g[0]], reqs[g[0]].tokens,
                                                             cache=self.tokens) for g in groups])
        return [LetterLogprobs(lp, len(r.tokens), ex) for lp, r, ex in zip(logps, reqs, extras, strict=True)]

    def token_distributions(self, texts: Sequence[str]) -> list[TokenDistribution]:
        """Optional part of the protocol (Min-K%++): per token of each text, its log-prob and the mean and
        variance of log p over the whole next-token distribution (backends.hf.distributions)."""
        with self.engine.pinned():
            dists = token_distributions(self.lm, texts)
        n = sum(len(d.logprobs) + 1 for d in dists)
        self.engine.stats.forwarded += n
        self.engine.stats.naive += n
        return dists

    def loglikelihoods(self, requests: Sequence[Continuation]) -> list[ContinuationLogprobs]:
        """Context/continuation split the lm-evaluation-harness way (backends.hf.tokens)."""
        if not requests:
            return []
        split = continuation_requests(self.lm, requests, self.tokens)
        reqs = [Request(ids, n_context) for ids, n_context, _ in split]
        contexts = [r.context for r in requests]
        groups = _by_item([None if isinstance(c, str) else getattr(c, "item_id", None) for c in contexts])
        shared = [() if isinstance(contexts[g[0]], str)
                  else shared_prefix_ids(self.lm, contexts[g[0]], cache=self.tokens)
                  for g in groups]
        logps = self._score(reqs, groups, shared)
        return [ContinuationLogprobs(lp, text, r.n_context)
                for lp, (_, _, text), r in zip(logps, split, reqs, strict=True)]

    def _score(self, reqs: list[Request], groups: list[list[int]], shared: list[tuple[int, ...]]) -> list[Any]:
        """The engine's results for `reqs`, scored as one block of items (`groups`: each item's request indices)."""
        out: list[Any] = [None] * len(reqs)
        for idx, values in zip(groups, self.engine.score_block([([reqs[i] for i in g], s)
                                                                for g, s in zip(groups, shared, strict=True)]),
                               strict=True):
            for i, v in zip(idx, values, strict=True):
                out[i] = v
        return out

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = DEFAULT_STOP, seeds: Sequence[int] | None = None) -> list[Generation]:
        """Greedy with several prompts: left-padded into one tensor where that is exact on this model (selfcheck's
        padded_generation); otherwise one by one (own seed, run-prefix cache where the engine keeps one)."""
        id_lists = [encode(self.lm, *prompt_text(self.lm, p), cache=self.tokens) for p in prompts]
        with self.engine.pinned():
            gens = self._generate(prompts, id_lists, max_new_tokens, temperature, stop, seeds)
        self._generated["generated_tokens"] += sum(g.n_generated_tokens for g in gens)
        return gens

    def _generate(self, prompts: Sequence[Any], id_lists: list[tuple[int, ...]], max_new_tokens: int,
                  temperature: float, stop: Sequence[str], seeds: Sequence[int] | None) -> list[Generation]:
        stats = self.engine.stats
        if temperature == 0 and len(prompts) > 1 and padded_generation(self.engine):
            gens, forwarded, padded = generate_padded(self.lm, id_lists, max_new_tokens=max_new_tokens, stop=stop)
            stats.forwarded += forwarded
            stats.naive += sum(len(x) for x in id_lists)
            self._generated["generation_padded"] += padded
        else:
            gens = []
            for i, (p, ids) in enumerate(zip(prompts, id_lists, strict=True)):
                shared = shared_prefix_ids(self.lm, p, cache=self.tokens)
                cache = self.engine.prefix_cache_for(ids, shared)
                gen, forwarded = generate_one(self.lm, ids, max_new_tokens=max_new_tokens, temperature=temperature,
                                              stop=stop, seed=seeds[i] if seeds is not None else 0, cache=cache,
                                              cached=len(shared))
                stats.forwarded += forwarded
                stats.naive += len(ids)
                gens.append(gen)
        return gens


def _by_item(keys: Sequence[Any]) -> list[list[int]]:
    """Indices grouped by item key, in order of first appearance (None: one group of requests without an item)."""
    groups: dict[Any, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    return list(groups.values())


def load(name_or_path: str = "gemma-3-270m", device: Any = None, dtype: Any = None,
         engine: dict[str, Any] | None = None, **kwargs: Any) -> HFBackend:
    """Load a causal LM (embedded Gemma-3-270M, HF id, local directory or .gguf) as an HFBackend; `engine` holds
    PrefixScorer options (e.g. {"items_per_call": 8, "max_batch_tokens": 16384, "graphs": True})."""
    from mcqa_toolkit.backends.hf.loading import load_model

    return HFBackend(load_model(name_or_path, device=device, dtype=dtype, **kwargs), **(engine or {}))

