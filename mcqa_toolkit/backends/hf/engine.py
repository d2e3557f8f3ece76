"""KV-prefix sharing engine: score many token sequences that share prefixes, forwarding each prefix once.

Three levels of sharing, matching how exam prompts are built:
1. the run prefix (instruction + few-shot block) is encoded once and its KV cache reused for every item;
2. the item prefix (longest common token prefix of all of an item's sequences: the stem, and for loglik the
   whole prompt) is encoded once per item on top of (1);
3. below that, the token trie of the item's sequences (shuffles sharing their first options, a shuffle's prompt
   shared by its options) is forwarded node by node exactly once: trie nodes are packed depth-first into rows
   (packing.py), each node attending to its item's cache and its ancestors at its true position, through dense
   masks for the model's own attention (masks.py) or tree attention (tree.py), on a shared view of the cache.
`score_block` takes several items at once (parts.py: each item's distinct requests; block.py): their item
prefixes go through the model in one call and their trie rows fill each further call up to a token budget
(`max_batch_tokens` slots, `max_batch_rows` rows). Few, large calls matter: on CPU every call streams all weights
once; on a GPU every call launches a few thousand kernels, which cost more host time than a small call's GPU work.
On a GPU nothing inside a block waits for the device but the final read of the scores: the host plans and launches
each call while the device computes the one before. Budgets, attention and linear kernel (oneDNN on CPU,
kernels.py) depend on the device (`BUDGETS`, budget.py; on CUDA sized to the free memory). Attention
implementations that take no custom mask (flash-attention, flex) get one right-padded row per sequence instead, one
item per block. Logits are computed only at scored positions, in one LM-head pass per block (heads.py).
`naive_scores` is the reference: one full forward per sequence with full logits; tests assert both agree to 1e-4
in fp32.
"""
from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.profiler import record_function

from mcqa_toolkit.backends.hf import compute
from mcqa_toolkit.backends.hf.block import score_parts
from mcqa_toolkit.backends.hf.budget import ATTENTION, BUDGETS, ROW_TOKENS, Budget, device_budget
from mcqa_toolkit.backends.hf.fused import tree_call
from mcqa_toolkit.backends.hf.heads import lm_head, request_logprobs
from mcqa_toolkit.backends.hf.kernels import LINEAR, onednn_available, onednn_linear, onednn_linears
from mcqa_toolkit.backends.hf.loading import LM
from mcqa_toolkit.backends.hf.masks import attention_kernels, group_names, layer_groups, text_config, upload
from mcqa_toolkit.backends.hf.packing import unique_tokens
from mcqa_toolkit.backends.hf.parts import Part, chunks, make_part
from mcqa_toolkit.backends.hf.plain import naive_scores, plain_scores, sequential_scores, takes
from mcqa_toolkit.backends.hf.request import EngineStats, Request
from mcqa_toolkit.backends.hf.static import StaticRows

__all__ = ["Budget", "BUDGETS", "device_budget", "EngineStats", "PrefixScorer", "Request", "lm_head", "naive_scores",
           "request_logprobs"]


class PrefixScorer:
    """Scores Requests with KV-prefix sharing. Create one per run and pass it around (no globals).

    Run-level prefixes (e.g. the encoded instruction + few-shot block) are given per item as `shared_prefix`;
    their caches are kept in a small LRU so several few-shot blocks (one per subject under the `easiest` rule) are
    each encoded once. An item whose requests do not start with its `shared_prefix` is still scored correctly,
    just without run-level sharing.

    Options (None: the device's `BUDGETS`, budget.py): `max_batch_tokens` / `max_batch_rows` bound one forward
    call (rows x width, rows) and `items_per_call` is how many items a caller should bring per `score_block`;
    `attention` how packed rows attend ("tree": tree.py, each query against what it can see; "masks": dense 4D
    masks for the model's own sdpa / eager attention); `linear` the kernel of the model's linear layers and of the
    engine's own products ("onednn" on a CPU: kernels.py; "torch"); `head_vocab` the vocabulary slice of the LM
    head's log-sum-exp (None: the whole vocabulary at once); `row_tokens` the width packed trie rows are filled to
    (packing.py; None: ROW_TOKENS of the attention: with dense masks 256 was fastest of 48-512 on the ENEM
    workload on CPU, fewer repeated ancestors than 128, less masked attention than 384+; with tree attention a
    row costs its ancestors, not its width, and 4,096 (about one row per item) was fastest of 256-100,000);
    `head_rows` the number of positions per LM-head call (bounds the (positions x vocabulary) logits tensor);
    `pack=False` forces the unpacked layout (one right-padded row per sequence, one item per block) that any
    attention implementation supports; `graphs=True` runs the packed rows' calls on bucketed static shapes,
    captured as CUDA graphs on CUDA (static.py; elsewhere the same static calls run eagerly; dense masks only);
    `threads` the torch threads every scoring call computes with (None: the process's when the engine is made),
    which with IEEE fp32 products is pinned for each call (compute.py: what ran before in the process never
    changes the numbers); `fused=True` runs the tree calls through one compiled model body (fused.py: fewer, fused
    kernels; the first call of a process compiles); `check` the self-check on the model before anything is scored
    (selfcheck.py: a path that is not exact on this model is refused, with a warning, for the next one down to the
    plain forward; its verdict is in `settings()`). On a GPU, `max_batch_tokens` and `items_per_call` also bound
    memory: while a layer runs, each row of a call holds its own copy of its item's cached keys/values; a block
    keeps its items' caches.
    """

    def __init__(self, lm: LM, max_batch_tokens: int | None = None, max_batch_rows: int | None = None,
                 max_prefixes: int = 8, row_tokens: int | None = None, head_rows: int | None = None, pack: bool = True,
                 items_per_call: int | None = None, graphs: bool = False, attention: str | None = None,
                 linear: str | None = None, head_vocab: int | None = None, threads: int | None = None,
                 check: bool = True, fused: bool = False):
        from transformers import DynamicCache  # local: keeps the import cost inside scoring

        budget = device_budget(lm.device, lm.model)
        self.budget = budget
        self.lm = lm
        self._cache_cls = DynamicCache
        self.max_batch_tokens = max_batch_tokens or budget.max_batch_tokens
        self.max_batch_rows = max_batch_rows or budget.max_batch_rows
        self.items_per_call = items_per_call or budget.items_per_call
        self.attention = attention or budget.attention
        if self.attention not in ATTENTION:
            raise ValueError(f"attention {self.attention!r}: expected one of {', '.join(ATTENTION)}")
        self.linear = linear or budget.linear
        if self.linear not in LINEAR:
            raise ValueError(f"linear {self.linear!r}: expected one of {', '.join(LINEAR)}")
        self.head_vocab, self.fused = head_vocab, fused
        self.threads = threads or torch.get_num_threads()
        self.head_rows = head_rows or budget.head_rows
        self.max_prefixes, self.row_tokens, self.pack = max_prefixes, row_tokens, pack
        self.stats = EngineStats()
        self._prefixes: dict[tuple[int, ...], object] = {}   # insertion-ordered LRU
        self._masks_ok: bool | None = None
        self.static = StaticRows(self) if graphs else None
        self.plain = self.sequential = False
        # the model body's cache argument: `cache` where its forward takes it (transformers 5.24+, every state-space
        # and hybrid family), else `past_key_values`
        self._cache_arg = "cache" if takes(lm.body.forward, "cache") else "past_key_values"
        self.verdict = None
        if check:
            from mcqa_toolkit.backends.hf import selfcheck

            self.verdict = selfcheck.verdict(self)
            self.take(self.verdict.path)

    @property
    def path(self) -> str:
        """How the engine scores: "tree" (packed rows, tree attention), "masks" (packed rows under dense masks),
        "unpacked" (one right-padded row per sequence on the shared caches), "sequential" (each sequence on a copy
        of the run prefix's cache) or "plain" (no sharing); plain.py has the last two."""
        if self.plain or self.sequential:
            return "plain" if self.plain else "sequential"
        return "tree" if self.tree else "masks" if self.packed else "unpacked"

    @property
    def prefix_cache(self) -> bool:
        """Whether generation starts from the run prefix's cache (not on the plain path: nothing is shared)."""
        return not self.plain

    def take(self, path: str) -> None:
        """Score with `path` (one the self-check kept)."""
        if path not in ("tree", "masks", "unpacked", "sequential", "plain"):
            raise ValueError(f"engine path {path!r}")
        self.plain, self.sequential = path == "plain", path == "sequential"
        self.pack = self.pack and path in ("tree", "masks")
        if path == "masks":
            self.attention = "masks"
        if path != "masks":  # static shapes run dense masks only
            self.static = None

    def path_options(self) -> dict[str, Any]:
        """The options that make another engine of this one's budget and kernels (the self-check's candidates)."""
        return {"max_batch_tokens": self.max_batch_tokens, "max_batch_rows": self.max_batch_rows,
                "max_prefixes": self.max_prefixes, "row_tokens": self.row_tokens, "head_rows": self.head_rows,
                "pack": self.pack, "items_per_call": self.items_per_call, "graphs": self.static is not None,
                "attention": self.attention, "linear": self.linear, "head_vocab": self.head_vocab,
                "threads": self.threads, "fused": self.fused}

    def settings(self) -> dict[str, Any]:
        """The budget and kernels in use, and how the budget was chosen (a run's provenance records them)."""
        return {"items_per_call": self.items_per_call, "max_batch_tokens": self.max_batch_tokens,
                "max_batch_rows": self.max_batch_rows, "head_rows": self.head_rows, "attention": self.attention,
                "linear": self.linear, "row_tokens": self.row_tokens or ROW_TOKENS["tree" if self.tree else "masks"],
                "graphs": self.static is not None, "fused": self.fused and self.tree, "budget": self.budget.source,
                "attn_implementation": getattr(text_config(self.lm.model), "_attn_implementation", None),
                "path": self.path, "check": self.verdict.to_dict() if self.verdict else {"source": "off"},
                **compute.describe(self.threads, self.lm.device, self.dtype)}

    def pinned(self) -> contextlib.AbstractContextManager:
        """The compute state of the engine's calls (compute.pinned: its threads, IEEE fp32 products)."""
        return compute.pinned(self.threads, self.lm.device, self.dtype)

    def new_cache(self) -> Any:
        return self._cache_cls(config=self.lm.model.config)

    @property
    def dtype(self) -> torch.dtype:
        """The compute dtype (eager attention's additive masks are in it)."""
        return self.lm.model.get_input_embeddings().weight.dtype  # type: ignore[return-value]  # torch types .weight of a Module loosely

    @property
    def packed(self) -> bool:
        """Whether rows are packed under masks of ours (the model's attention takes them, and `pack` is on)."""
        if self._masks_ok is None:
            self._masks_ok = layer_groups(self.lm.model, self.new_cache()) is not None
        return self.pack and self._masks_ok

    def kernels(self) -> contextlib.AbstractContextManager:
        """The context of the engine's model calls: the model's linear layers through oneDNN when `linear` is
        "onednn" and the device and dtype allow it (kernels.py), else the model as it is."""
        if self.linear == "onednn" and onednn_available(self.lm.device, self.dtype):
            return onednn_linears(self.lm.model)
        return contextlib.nullcontext()

    @property
    def linear_fn(self) -> Any:
        """The matrix product x W^T (+ b) of the engine's own products (LM head slices, tree attention)."""
        if self.linear == "onednn" and onednn_available(self.lm.device, self.dtype):
            return onednn_linear
        return torch.nn.functional.linear

    @property
    def tree(self) -> bool:
        """Whether packed rows' calls use tree attention (tree.py): asked for, rows packed, not on static shapes
        (`graphs`: dense masks), and no attention feature it does not compute (logit soft-capping)."""
        return self.attention == "tree" and self.packed and self.static is None and \
            getattr(text_config(self.lm.model), "attn_logit_softcapping", None) is None

    def groups(self, n_layers: int) -> list[str | None]:
        """The layer group of each of the model's `n_layers` layers (masks.group_names)."""
        return group_names(self.lm.model, n_layers)

    def forward_tree(self, ids: torch.Tensor, positions: torch.Tensor, plan: Any) -> torch.Tensor:
        """Final hidden states of one packed-rows call with tree attention (fused.tree_call)."""
        return tree_call(self, ids, positions, plan)

    def forward(self, ids: torch.Tensor, cache: Any, **kwargs: Any) -> torch.Tensor:
        """Final hidden states of one forward call of the model body on `cache` (counted in `stats.calls`)."""
        self.stats.calls += 1
        t0 = time.perf_counter()
        with record_function("mcqa::body"), attention_kernels(ids.device):
            out = self.lm.body(input_ids=ids, use_cache=True, **{self._cache_arg: cache},
                                           **kwargs).last_hidden_state
        self.stats.body_seconds += time.perf_counter() - t0
        return out

    @torch.inference_mode()
    def _prefix_cache(self, ids: tuple[int, ...]) -> Any:
        """Cache of a run prefix, computed on first use and kept (LRU of `max_prefixes`). Never modified."""
        cache = self._prefixes.pop(ids, None)
        if cache is None:
            cache = self.new_cache()
            self.forward(upload([np.array([ids])], self.lm.device)[0], cache)
            self.stats.forwarded += len(ids)
            self.stats.unique += len(ids)
            while len(self._prefixes) >= self.max_prefixes:
                self._prefixes.pop(next(iter(self._prefixes)))
        self._prefixes[ids] = cache
        return cache

    def prefix_cache_for(self, ids: Sequence[int], shared_prefix: Sequence[int], checked: bool = True) -> Any:
        """A private copy of the cache of `shared_prefix` if `ids` extends it (for generation) and generation from it
        is exact on this model (gencheck.cached_generation, unless `checked` is False), else None. The caller
        accounts for the tokens it forwards past the prefix."""
        run = tuple(shared_prefix)
        if not self.prefix_cache or not run or len(ids) <= len(run) or tuple(ids[: len(run)]) != run:
            return None
        if checked:
            from mcqa_toolkit.backends.hf.gencheck import cached_generation

            if not cached_generation(self):
                return None
        with self.pinned():
            return copy.deepcopy(self._prefix_cache(run))

    def score(self, requests: Sequence[Request], shared_prefix: Sequence[int] = ()) -> list[np.ndarray]:
        """Per request: candidate log-probs (first-token) or per-token continuation log-probs, as float64 arrays,
        for the requests of one item (every shuffle and option, so the item prefix is shared across them).
        Identical requests are computed once."""
        return self.score_block([(requests, shared_prefix)])[0]

    @torch.inference_mode()
    def score_block(self, items: Sequence[tuple[Sequence[Request], Sequence[int]]]) -> list[list[np.ndarray]]:
        """`score` for several items at once, each given as (requests, shared_prefix): per item, its results.

        Items on the same run prefix share forward calls (block.py), up to the budgets; the result of a block
        depends only on the block (never on what was scored before), so the same block gives the same numbers.
        """
        with self.pinned(), self.kernels():
            return self._score_block(items)

    def _score_block(self, items: Sequence[tuple[Sequence[Request], Sequence[int]]]) -> list[list[np.ndarray]]:
        t0 = time.perf_counter()
        parts = [make_part(requests, shared_prefix) for requests, shared_prefix in items]
        results: list[list[np.ndarray]] = [[] for _ in parts]
        if self.plain:
            for i, part in enumerate(parts):
                results[i] = plain_scores(self.lm, part.reqs)
                self.stats.forwarded += sum(len(r.tokens) for r in part.reqs)
            parts = [Part(p.reqs, p.order, ()) for p in parts]  # nothing shared: every token is forwarded
        elif self.sequential:
            for i, part in enumerate(parts):
                results[i] = sequential_scores(self, part.reqs, part.run)
        for chunk in ([] if self.plain or self.sequential else
                      chunks(parts, self.packed, self.max_batch_tokens, self.max_batch_rows)):
            for i, values in zip(chunk, score_parts(self, [parts[i] for i in chunk]), strict=True):
                results[i] = values
        for (requests, _), part in zip(items, parts, strict=True):
            self.stats.naive += sum(len(r.tokens) for r in requests)
            self.stats.unique += unique_tokens([r.tokens[len(part.run): r.needed] for r in part.reqs])
            self.stats.items += 1
        self.stats.seconds += time.perf_counter() - t0
        return [[values[k] for k in part.order] for values, part in zip(results, parts, strict=True)]
