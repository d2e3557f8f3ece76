"""KV-prefix sharing engine: score many token sequences that share prefixes, forwarding each prefix once.

Three levels of sharing, matching how exam prompts are built:
1. the run prefix (instruction + few-shot block) is encoded once and its KV cache reused for every item;
2. the item prefix (longest common token prefix of all of an item's sequences: the stem, and for
   loglik the whole prompt) is encoded once per item on top of (1);
3. below that, the token trie of the item's sequences (shuffles sharing their first options, a shuffle's
   prompt shared by its options) is forwarded node by node exactly once: trie nodes are packed depth-first
   into rows, each node attending to the cache and its ancestors through an explicit mask at its true
   position (packing.py, masks.py), and the rows go through the model in as few forward calls as the batch
   limits allow, on a shared (not copied) view of the item cache.
Few, large forward calls matter on CPU: every call streams all weights once, and a call with a handful of
tokens is bound by that, not by arithmetic. Attention implementations that take no custom mask (flash-
attention, flex) get one right-padded row per sequence instead, which causal attention handles unmasked.
Logits are computed only at scored positions, in one LM-head pass per `score` call: Gemma 3's head (262k
outputs) costs more per position than the transformer body. `naive_scores` is the reference: one full forward
per sequence with full logits; tests assert both agree to 1e-4 in fp32.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch.profiler import record_function

from mcqa_toolkit.backends.hf.loading import LM
from mcqa_toolkit.backends.hf.masks import attention_kernels, batch_inputs, layer_groups, shared_cache, tree_masks
from mcqa_toolkit.backends.hf.packing import lcp, plan_batches, plan_chains, plan_rows, unique_tokens


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
    calls: int = 0              # forward calls of the model body (each streams every weight once)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


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


def _forward_hidden(lm: LM, ids: torch.Tensor, cache, stats: EngineStats, **kwargs) -> torch.Tensor:
    stats.calls += 1
    with record_function("mcqa::body"), attention_kernels(ids.device):
        return lm.model.base_model(input_ids=ids, past_key_values=cache, use_cache=True, **kwargs).last_hidden_state


def _needed(r: Request) -> int:
    """Tokens of `r` that must be forwarded: up to its last scored position (a continuation's last token
    is only a target, never an input)."""
    return len(r.tokens) if r.candidates is not None else len(r.tokens) - 1


def _n_scored(r: Request) -> int:
    return 1 if r.candidates is not None else len(r.tokens) - r.n_context


class PrefixScorer:
    """Scores Requests with KV-prefix sharing. Create one per run and pass it around (no globals).

    Run-level prefixes (e.g. the encoded instruction + few-shot block) are given per `score` call as
    `shared_prefix`; their caches are kept in a small LRU so several few-shot blocks (one per subject under
    the `easiest` rule) are each encoded once. A request group that does not start with its `shared_prefix`
    is still scored correctly, just without run-level sharing.

    Options: `max_batch_tokens` / `max_batch_rows` bound one forward call (rows x width, rows);
    `row_tokens` is the width packed trie rows are filled to (see packing.py; 256 was fastest of 48-512 on the
    realistic ENEM workload with Gemma-3-270M on CPU: fewer repeated ancestors than 128, less masked attention
    than 384+); `head_rows` the number of positions per LM-head call (bounds the (positions x vocabulary)
    logits tensor); `pack=False` forces the unpacked layout (one right-padded row per sequence) that any
    attention implementation supports. On a GPU, `max_batch_tokens` also bounds memory: each row of a call
    holds its own copy of the cached keys/values while the call runs (the cache update concatenates them).
    """

    def __init__(self, lm: LM, max_batch_tokens: int = 8192, max_batch_rows: int = 64, max_prefixes: int = 8,
                 row_tokens: int = 256, head_rows: int = 256, pack: bool = True):
        from transformers import DynamicCache  # local: keeps the import cost inside scoring

        self.lm = lm
        self._cache_cls = DynamicCache
        self.max_batch_tokens, self.max_batch_rows, self.max_prefixes = max_batch_tokens, max_batch_rows, max_prefixes
        self.row_tokens, self.head_rows, self.pack = row_tokens, head_rows, pack
        self.stats = EngineStats()
        self._prefixes: dict[tuple[int, ...], object] = {}   # insertion-ordered LRU

    def _new_cache(self):
        return self._cache_cls(config=self.lm.model.config)

    @torch.inference_mode()
    def _prefix_cache(self, ids: tuple[int, ...]):
        """Cache of a run prefix, computed on first use and kept (LRU of `max_prefixes`). Never modified."""
        cache = self._prefixes.pop(ids, None)
        if cache is None:
            cache = self._new_cache()
            _forward_hidden(self.lm, torch.tensor([ids], device=self.lm.device), cache, self.stats)
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
        return copy.deepcopy(self._prefix_cache(run))

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
        self.stats.unique += unique_tokens([r.tokens[len(run): _needed(r)] for r in reqs])
        self.stats.seconds += time.perf_counter() - t0
        return [results[i] for i in order]

    def _score_unique(self, reqs: list[Request], run: tuple[int, ...]) -> list[np.ndarray]:
        """Item prefix once on the run cache, then every trie row in as few forward calls as the limits allow,
        then one LM-head pass over the scored positions of all of them."""
        # item prefix: common to all sequences, and ending before the first position whose logits we need
        plen = min(r.first_scored for r in reqs)
        first = reqs[0].tokens
        for r in reqs[1:]:
            plen = min(plen, lcp(first, r.tokens))
        cache = self._prefix_cache(run) if run else None
        with record_function("mcqa::cache"):
            cache = shared_cache(cache, 1) if run else self._new_cache()
        if plen > len(run):
            _forward_hidden(self.lm, torch.tensor([first[len(run):plen]], device=self.lm.device), cache, self.stats)
            self.stats.forwarded += plen - len(run)
        else:
            plen = len(run)
        seqs = [r.tokens[plen: _needed(r)] for r in reqs]
        groups = layer_groups(self.lm.model, cache) if self.pack else None
        with record_function("mcqa::plan"):
            rows = plan_rows(seqs, self.row_tokens) if groups is not None else plan_chains(seqs)
            batches = plan_batches(rows, self.max_batch_tokens, self.max_batch_rows)
        hidden, where = [], {}          # scored hidden states; (batch, row, col) -> index into them
        scored: list[list[int]] = [[] for _ in reqs]
        for b, batch in enumerate(batches):
            keys = []  # this batch's scored (row, col), each once (options sharing a context share its position)
            for i, row in enumerate(batch):
                for k, path in row.paths.items():
                    for col in path[len(path) - _n_scored(reqs[k]):]:
                        if (b, i, col) not in where:
                            where[b, i, col] = len(where)
                            keys.append((i, col))
                        scored[k].append(where[b, i, col])
            out = self._forward_rows(batch, cache, plen, groups)
            index = torch.tensor(keys, device=out.device).T
            hidden.append(out[index[0], index[1]])
        with record_function("mcqa::head"):
            return self._head(reqs, scored, torch.cat(hidden))

    def _forward_rows(self, rows: list, cache, plen: int, groups) -> torch.Tensor:
        """Hidden states (rows, width, hidden) of one batch of rows on a shared view of `cache`."""
        pad = self.lm.tokenizer.pad_token_id or 0
        with record_function("mcqa::masks"):
            ids, positions, depth, end = batch_inputs(rows, plen, pad, self.lm.device)
            extra = {}
            if groups is not None:
                impl = self.lm.model.config._attn_implementation
                dtype = self.lm.model.get_input_embeddings().weight.dtype  # compute dtype (eager's additive masks)
                extra = {"attention_mask": tree_masks(groups, depth, end, impl, dtype), "position_ids": positions}
        with record_function("mcqa::cache"):
            view = shared_cache(cache, len(rows))
        hidden = _forward_hidden(self.lm, ids, view, self.stats, **extra)
        real = sum(r.width for r in rows)
        self.stats.forwarded += real
        self.stats.padded += ids.numel() - real
        return hidden

    def _head(self, reqs: list[Request], scored: list[list[int]], hidden: torch.Tensor) -> list[np.ndarray]:
        """Log-probs of every request's targets: logits - logsumexp(logits) at its scored positions, computed
        `head_rows` positions at a time (Gemma 3's LM head has 262k outputs per position). Logits are indexed on
        their own device (a model split over devices may run its head on another device than its last layer)."""
        device = hidden.device
        at, target, spans = [], [], []
        for r, pos in zip(reqs, scored):
            if r.candidates is not None:  # one position, several candidate next tokens
                at += pos * len(r.candidates)
                target += r.candidates
            else:                         # one position per continuation token, its own target each
                at += pos
                target += r.tokens[r.n_context:]
            spans.append(len(at))
        at_t = torch.tensor(at, device=device)
        target_t = torch.tensor(target, device=device)
        picked = torch.empty(len(at), dtype=torch.float32, device=device)
        lse = torch.empty(len(hidden), dtype=torch.float32, device=device)
        for lo in range(0, len(hidden), self.head_rows):
            hi = min(lo + self.head_rows, len(hidden))
            logits = lm_head(self.lm.model, hidden[lo:hi]).float()
            lse[lo:hi] = logits.logsumexp(-1)
            sel = ((at_t >= lo) & (at_t < hi)).nonzero().squeeze(-1)
            picked[sel] = logits[(at_t[sel] - lo).to(logits.device), target_t[sel].to(logits.device)].to(device)
        self.stats.scored_positions += len(hidden)
        values = (picked - lse[at_t]).cpu().double().numpy()  # float64 on the host (MPS has no float64)
        return np.split(values, spans[:-1])


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
        out.append(request_logprobs(r, logits[-(len(r.tokens) - r.n_context + 1):]))
    return out


def request_logprobs(r: Request, logits: torch.Tensor) -> np.ndarray:
    """A request's result from the full logits at its positions n_context-1 .. end (fp32 log-softmax)."""
    logp = logits.float().log_softmax(-1)
    if r.candidates is not None:
        return logp[-1, torch.tensor(r.candidates, device=logp.device)].double().cpu().numpy()
    tgt = torch.tensor(r.tokens[r.n_context:], device=logp.device)
    return logp[:-1].gather(-1, tgt.unsqueeze(-1)).squeeze(-1).double().cpu().numpy()
