"""KV-prefix sharing engine: score many token sequences that share prefixes, forwarding each prefix once.

Three levels of sharing, matching how exam prompts are built:
1. the run prefix (instruction + few-shot block) is encoded once and its KV cache reused for every item;
2. the item prefix (longest common token prefix of all of an item's sequences: the stem, and for
   loglik the whole prompt) is encoded once per item on top of (1);
3. below that, the token trie of the item's sequences: shared runs (a shuffle's prompt for its options, shuffles
   that start with the same option) are encoded once more; the remaining suffixes are forwarded as one right-
   padded batch with the item cache expanded along the batch dimension. Right padding needs no attention
   mask: causal attention never lets a real token see a later pad.
Logits are computed only at scored positions: the LM head of Gemma 3 (262k vocabulary) costs more per
position than the transformer body. `naive_scores` is the reference: one full forward per sequence with
full logits; tests assert both agree to 1e-4 in fp32.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from mcqa_toolkit.backends.hf.loading import LM


@dataclass(frozen=True)
class Request:
    """One sequence to score.

    `tokens[:n_context]` is the context. With `candidates` set (first-token scoring), `n_context` must equal
    len(tokens) and the result is the log-probability of each candidate id as the next token. Otherwise the
    result is the per-token log-probability of `tokens[n_context:]` (the continuation).
    """

    tokens: tuple[int, ...]
    n_context: int
    candidates: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.tokens or not 1 <= self.n_context <= len(self.tokens):
            raise ValueError(f"Request needs 1 <= n_context <= len(tokens); got {self.n_context}, {len(self.tokens)}")
        if self.candidates is not None and self.n_context != len(self.tokens):
            raise ValueError("a candidates Request scores the next token: n_context must equal len(tokens)")
        if self.candidates is None and self.n_context == len(self.tokens):
            raise ValueError("a continuation Request needs at least one continuation token")

    @property
    def first_scored(self) -> int:
        """Index of the first position whose output logits are needed."""
        return self.n_context - 1


@dataclass
class EngineStats:
    """Token accounting for benchmarks: what was forwarded vs the naive cost vs the unique-token floor."""

    forwarded: int = 0          # real (non-pad) tokens pushed through the model
    padded: int = 0             # pad tokens pushed through the model
    naive: int = 0              # sum of sequence lengths (cost without sharing)
    unique: int = 0             # distinct token-prefix nodes (cost floor with perfect sharing)
    scored_positions: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def unique_tokens(seqs: Sequence[Sequence[int]]) -> int:
    """Number of nodes in the token trie of `seqs` (sorted neighbours' common prefixes are shared)."""
    ordered = sorted(set(tuple(s) for s in seqs))
    return sum(len(s) for s in ordered) - sum(_lcp(a, b) for a, b in zip(ordered, ordered[1:]))


def lm_head(model: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """Logits from final hidden states exactly as the model's own forward computes them (incl. softcapping)."""
    logits = model.get_output_embeddings()(hidden)
    cfg = model.config
    cap = getattr(cfg, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    scale = getattr(cfg, "logit_scale", None)  # Cohere-style
    if isinstance(scale, (int, float)) and getattr(cfg, "model_type", "").startswith("cohere"):
        logits = logits * scale
    scaling = getattr(cfg, "logits_scaling", None)  # Granite-style
    if isinstance(scaling, (int, float)) and scaling != 1:
        logits = logits / scaling
    return logits


def _forward_hidden(lm: LM, ids: torch.Tensor, cache) -> torch.Tensor:
    out = lm.model.base_model(input_ids=ids, past_key_values=cache, use_cache=True)
    return out.last_hidden_state


def _expand(cache, batch: int):
    """A private copy of `cache` repeated `batch` times along the batch dimension."""
    c = copy.deepcopy(cache)
    if batch > 1:
        c.batch_repeat_interleave(batch)
    return c


class PrefixScorer:
    """Scores Requests with KV-prefix sharing. Create one per run and pass it around (no globals).

    Run-level prefixes (e.g. the encoded instruction + few-shot block) are given per `score` call as
    `shared_prefix`; their caches are kept in a small LRU so several few-shot blocks (one per subject under
    the `easiest` rule) are each encoded once. A request group that does not start with its `shared_prefix`
    is still scored correctly, just without run-level sharing.
    """

    def __init__(self, lm: LM, max_batch_tokens: int = 8192, max_batch_rows: int = 64, max_prefixes: int = 8,
                 min_saved_tokens: int = 8):
        from transformers import DynamicCache  # local: keeps the import cost inside scoring

        self.lm = lm
        self._cache_cls = DynamicCache
        self.max_batch_tokens, self.max_batch_rows, self.max_prefixes = max_batch_tokens, max_batch_rows, max_prefixes
        self.min_saved_tokens = min_saved_tokens
        self.stats = EngineStats()
        self._prefixes: dict[tuple[int, ...], object] = {}   # insertion-ordered LRU

    def _new_cache(self):
        return self._cache_cls(config=self.lm.model.config)

    @torch.inference_mode()
    def _prefix_cache(self, ids: tuple[int, ...]):
        """Cache of a run prefix, computed on first use and kept (LRU of `max_prefixes`)."""
        cache = self._prefixes.pop(ids, None)
        if cache is None:
            cache = self._new_cache()
            _forward_hidden(self.lm, torch.tensor([ids], device=self.lm.device), cache)
            self.stats.forwarded += len(ids)
            self.stats.unique += len(ids)
            while len(self._prefixes) >= self.max_prefixes:
                self._prefixes.pop(next(iter(self._prefixes)))
        self._prefixes[ids] = cache
        return cache

    def prefix_cache_for(self, ids: Sequence[int], shared_prefix: Sequence[int]):
        """A private copy of the cache of `shared_prefix` if `ids` extends it (for generation), else None.
        The caller accounts for the tokens it forwards past the prefix."""
        run = tuple(shared_prefix)
        if not run or len(ids) <= len(run) or tuple(ids[: len(run)]) != run:
            return None
        return _expand(self._prefix_cache(run), 1)

    @torch.inference_mode()
    def score(self, requests: Sequence[Request], shared_prefix: Sequence[int] = ()) -> list[np.ndarray]:
        """Per request: candidate log-probs (first-token) or per-token continuation log-probs, as float64 arrays.

        Call once per item with all of that item's requests (every shuffle and option) so the item prefix is
        shared across them. Identical requests are computed once.
        """
        if not requests:
            return []
        t0 = time.perf_counter()
        uniq: dict[tuple, int] = {}
        order = [uniq.setdefault((r.tokens, r.n_context, r.candidates), len(uniq)) for r in requests]
        reqs = [Request(*k) for k in uniq]
        run = tuple(shared_prefix)
        if run and not all(len(r.tokens) > len(run) and r.tokens[: len(run)] == run and r.first_scored >= len(run)
                           for r in reqs):
            run = ()
        results = self._score_unique(reqs, run)
        self.stats.naive += sum(len(r.tokens) for r in requests)
        self.stats.unique += unique_tokens([r.tokens[len(run):] for r in reqs])
        self.stats.seconds += time.perf_counter() - t0
        return [results[i] for i in order]

    def _score_unique(self, reqs: list[Request], run: tuple[int, ...]) -> list[np.ndarray]:
        device = self.lm.device
        # item prefix: common to all sequences, and ending before the first position whose logits we need
        plen = min(r.first_scored for r in reqs)
        first = reqs[0].tokens
        for r in reqs[1:]:
            plen = min(plen, _lcp(first, r.tokens))
        if run:
            cache, start = _expand(self._prefix_cache(run), 1), len(run)
        else:
            cache, start = self._new_cache(), 0
        if plen > start:
            _forward_hidden(self.lm, torch.tensor([first[start:plen]], device=device), cache)
            self.stats.forwarded += plen - start
        else:
            plen = start
        out: list[np.ndarray | None] = [None] * len(reqs)
        self._descend(reqs, list(range(len(reqs))), plen, cache, out)
        return out  # type: ignore[return-value]

    def _descend(self, reqs: list[Request], members: list[int], plen: int, cache, out: list) -> None:
        """Score `members`, which all share tokens[:plen] (held in `cache`), walking their token trie.

        Requests that continue with the same next token form a node: its common tokens (up to the first scored
        position) are encoded once on a copy of the cache and the node is scored recursively; this is how a
        loglik shuffle's prompt is shared by its options, and shuffles that start with the same option share it.
        A node is worth its extra forward call only if it saves `min_saved_tokens`; the rest are batched here.
        """
        children: dict[int, list[int]] = {}
        leaves: list[int] = []
        for i in members:
            r = reqs[i]
            (children.setdefault(r.tokens[plen], []) if r.first_scored > plen else leaves).append(i)
        device = self.lm.device
        for group in children.values():
            end = min(reqs[i].first_scored for i in group)
            head = reqs[group[0]].tokens
            for i in group[1:]:
                end = min(end, plen + _lcp(head[plen:end], reqs[i].tokens[plen:end]))
            if (len(group) - 1) * (end - plen) < self.min_saved_tokens:
                leaves += group
                continue
            node = _expand(cache, 1)
            _forward_hidden(self.lm, torch.tensor([head[plen:end]], device=device), node)
            self.stats.forwarded += end - plen
            self._descend(reqs, group, end, node, out)
        if leaves:
            self._score_batches(reqs, leaves, plen, cache, out)

    def _score_batches(self, reqs: list[Request], members: list[int], plen: int, cache, out: list) -> None:
        """Forward the members' suffixes (past `plen`) in right-padded batches, sorted by length."""
        order = sorted(members, key=lambda i: len(reqs[i].tokens))
        batch: list[int] = []
        for i in order + [None]:
            if i is not None:
                longest = len(reqs[i].tokens) - plen
                if not batch or (len(batch) + 1) * longest <= self.max_batch_tokens and len(batch) < self.max_batch_rows:
                    batch.append(i)
                    continue
            self._score_batch([reqs[j] for j in batch], batch, plen, cache, out)
            batch = [i] if i is not None else []

    def _score_batch(self, reqs: list[Request], idx: list[int], plen: int, cache, out: list) -> None:
        device = self.lm.device
        lens = [len(r.tokens) - plen for r in reqs]
        width = max(lens)
        pad = self.lm.tokenizer.pad_token_id or 0
        ids = torch.full((len(reqs), width), pad, dtype=torch.long)
        for row, r in enumerate(reqs):
            ids[row, : lens[row]] = torch.tensor(r.tokens[plen:])
        hidden = _forward_hidden(self.lm, ids.to(device), _expand(cache, len(reqs)))
        self.stats.forwarded += sum(lens)
        self.stats.padded += len(reqs) * width - sum(lens)
        # gather exactly the positions we score, then one LM-head call for the whole batch
        rows, cols, spans = [], [], []
        for row, r in enumerate(reqs):
            lo, hi = r.first_scored - plen, len(r.tokens) - 1 - plen
            if r.candidates is not None:
                hi = lo
            spans.append((len(rows), hi - lo + 1))
            rows.extend([row] * (hi - lo + 1))
            cols.extend(range(lo, hi + 1))
        h = hidden[torch.tensor(rows, device=device), torch.tensor(cols, device=device)]
        logp = lm_head(self.lm.model, h).float().log_softmax(-1)
        self.stats.scored_positions += len(rows)
        for (s, n), r, j in zip(spans, reqs, idx):
            block = logp[s: s + n]
            if r.candidates is not None:  # one position, several candidate next tokens
                picked = block[0, torch.tensor(r.candidates, device=device)]
            else:                         # one position per continuation token, its own target each
                targets = torch.tensor(r.tokens[r.n_context:], device=device)
                picked = block.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            out[j] = picked.double().cpu().numpy()


@torch.inference_mode()
def naive_scores(lm: LM, requests: Sequence[Request], full_logits: bool = True) -> list[np.ndarray]:
    """Reference computation: each sequence forwarded alone through the model's own forward, no cache.

    `full_logits=True` is the plain loop (logits at every position, as a generic evaluation loop computes);
    False asks the model for the scored positions only (`logits_to_keep`), same numbers, much less LM-head work.
    """
    out = []
    for r in requests:
        ids = torch.tensor([r.tokens], device=lm.device)
        keep = 0 if full_logits else len(r.tokens) - r.n_context + 1
        logits = lm.model(input_ids=ids, use_cache=False, logits_to_keep=keep).logits[0]
        logp = logits[-(len(r.tokens) - r.n_context + 1):].float().log_softmax(-1)  # positions n_context-1 .. end
        if r.candidates is not None:
            out.append(logp[-1, torch.tensor(r.candidates, device=lm.device)].double().cpu().numpy())
        else:
            tgt = torch.tensor(r.tokens[r.n_context:], device=lm.device)
            out.append(logp[:-1].gather(-1, tgt.unsqueeze(-1)).squeeze(-1).double().cpu().numpy())
    return out
