"""The engine's tree calls through one compiled model body (the engine's `fused=True`).

Why: eager PyTorch runs every operator of a layer as its own kernel: Gemma-3-270M's fp32 tree call on an ENEM item
launches ~2,600 of them (benchmarks/profile_scoring.py), each reading and writing its whole tensor, and on a GPU
each costs host time whatever its size. `torch.compile` (inductor) fuses the element-wise work between the matrix
products (norms, rotary, activations, residuals, the casts and copies) into a few generated kernels.

How: the model's own body is compiled as it is (transformers' code, dynamic shapes), with the two things inductor
must not look into made opaque operators that it calls as they are:
- the engine's tree attention's two parts (tree.py), `mcqa::tree_attention`: the call's plan (cached keys, row
  groups, masks) is a Python object built per call, so the operator takes the layer's query / key / value and its
  index, and reads the plan of the running call (`_RUNNING`, set by `tree_call`); the compiled graph does not change
  with the plan. The parts' merge by their log-sum-exps (tree.merge) is element-wise work, traced and fused;
- oneDNN's linear on a CPU (kernels.py: `mcqa::onednn_linear` while compiling).
Exactness: the fused kernels compute the same operations in another order of float rounding (the engine's 1e-4
equality holds: tests/backends/hf/test_fused.py), and the self-check (selfcheck.py) judges the fused path like any
other, its option in the verdict's key.

Cost: the first tree call of a process traces and compiles the body (Gemma-3-270M on two CPU cores: 16 s, 5-6 s from
the cache below; benchmarks/fused_body.py --startup; a call of one row and one of several rows are two graphs);
inductor keeps the compiled code in its on-disk cache (TORCHINDUCTOR_CACHE_DIR, by default the system's temp folder,
keyed by the graph, dtype, device and inductor's settings), so a later process traces again but compiles nothing.
`EngineStats.compile_seconds` holds the time of calls that compiled. Tree calls only: the item prefixes' calls (on a
cache object) stay eager.
"""
from __future__ import annotations

import contextlib
import functools
import time
import types
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch.profiler import record_function

from mcqa_toolkit.backends.hf.masks import text_config
from mcqa_toolkit.backends.hf.tree import TreeNotUsed, merge, tree_implementation, tree_parts

FUSED_IMPLEMENTATION = "mcqa_tree_fused"

_RUNNING: list[tuple[Any, dict[int, Any]]] = []  # (plan, latent-attention modules by layer) of the running calls
_COMPILED: dict[type[torch.nn.Module], Any] = {}  # decoder layer class -> its compiled forward


@torch.library.custom_op("mcqa::tree_attention", mutates_args=())
def tree_op(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, layer: int, scale: float
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """tree.tree_parts of layer `layer` on the running call's plan: the two parts' (out (rows, width, heads, dim),
    lse (rows, width, heads)), each a tensor of its own in that layout (what the compiler is told to expect)."""
    plan, latent = _RUNNING[-1]
    module = latent.get(layer) or types.SimpleNamespace(layer_idx=layer)
    out_a, lse_a, out_b, lse_b = tree_parts(module, query, key, value, plan, scale)
    return out_a.contiguous(), lse_a.contiguous(), out_b.contiguous(), lse_b.contiguous()


@tree_op.register_fake
def _(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, layer: int, scale: float
      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    rows, heads, width, dim = query.shape
    out = (query.new_empty(rows, width, heads, dim), query.new_empty(rows, width, heads, dtype=torch.float32))
    return out + (query.new_empty(rows, width, heads, dim), query.new_empty(rows, width, heads, dtype=torch.float32))


def fused_attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask: Any,
                    scaling: float | None = None, dropout: float = 0.0, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """The attention function of a fused tree call (AttentionInterface signature), traced by the compiler: the
    layer's index is an input of the graph (`allow_unspec_int_on_nn_module`), so every layer of a class runs one
    compiled graph; the two parts' merge (tree.merge) is traced too, so it fuses with the layer's other work."""
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    return merge(*tree_op(query, key, value, module.layer_idx, float(scale))), None


def _latent_modules(body: torch.nn.Module) -> dict[int, Any]:
    """The attention modules that cache compressed latents (`expand_kv`), by layer: the tree attention's cached part
    expands them; every other attention needs only its layer index."""
    return {int(getattr(m, "layer_idx")): m for m in body.modules()  # noqa: B009 - typed as Tensor | Module
            if hasattr(m, "expand_kv") and hasattr(m, "layer_idx")}


def _layers(body: torch.nn.Module) -> list[torch.nn.Module]:
    """The body's decoder layers: its first list of modules that each hold a module with a `layer_idx` (an
    attention layer's, or its own)."""
    for m in body.modules():
        if isinstance(m, torch.nn.ModuleList) and len(m) and \
                all(any(hasattr(x, "layer_idx") for x in layer.modules()) for layer in m):
            return list(m)
    raise Unfusable(f"no list of decoder layers in {type(body).__name__}")


class Unfusable(RuntimeError):
    """A model body whose decoder layers the fused path cannot find."""


def _compiled_forward(cls: type[torch.nn.Module]) -> Any:
    """The compiled forward of decoder layer class `cls` (dynamic shapes), made once. Its code object is its own:
    the compiler keeps compiled graphs, and counts recompilations against its limit, per code object, and many
    classes share one forward (transformers' gradient-checkpointing wrapper). With dynamic shapes its kernels run
    on the calling thread count (OpenMP's, which torch sets; compute.pinned pins it per engine)."""
    fn = _COMPILED.get(cls)
    if fn is None:
        def forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            return cls.forward(self, *args, **kwargs)

        forward.__code__ = forward.__code__.replace(co_name=f"fused_{cls.__name__}")
        fn = _COMPILED[cls] = torch.compile(forward, dynamic=True)
    return fn


@contextlib.contextmanager
def fused_layers(body: torch.nn.Module, plan: Any) -> Iterator[None]:
    """Each decoder layer of `body` runs its class's compiled forward (made once per class, dynamic shapes) on
    `plan`, the running call's, for the block. The layers' own forward is back afterwards."""
    from transformers import AttentionInterface

    AttentionInterface.register(FUSED_IMPLEMENTATION, fused_attention)
    layers = _layers(body)
    _RUNNING.append((plan, _latent_modules(body)))
    try:
        for layer in layers:
            layer.forward = functools.partial(_compiled_forward(type(layer)), layer)
        yield
    finally:
        _RUNNING.pop()
        for layer in layers:
            layer.__dict__.pop("forward", None)


def tree_call(engine: Any, ids: torch.Tensor, positions: torch.Tensor, plan: Any) -> torch.Tensor:
    """Final hidden states of one packed-rows call with tree attention (counted in `engine.stats.calls`), through
    the compiled body when `engine.fused`, else the eager one: no cache object (each layer's new keys go to the
    tree attention with the plan), a 4D placeholder mask that transformers passes through unread. Raises
    TreeNotUsed where not every layer computed the tree attention."""
    stats = engine.stats
    stats.calls += 1
    placeholder = torch.ones((1, 1, 1, 1), dtype=torch.bool, device=ids.device)
    t0 = time.perf_counter()
    out = _fused_call(engine, ids, positions, placeholder, plan) if engine.fused else None
    if out is None:
        with record_function("mcqa::body"), tree_implementation(engine.lm.model):
            out = engine.lm.body(input_ids=ids, position_ids=positions, attention_mask=placeholder,
                                 use_cache=False, mcqa_tree=plan).last_hidden_state
    stats.body_seconds += time.perf_counter() - t0
    if plan.calls != len(plan.groups):
        raise TreeNotUsed(f"{plan.calls} of the model's {len(plan.groups)} layers computed the engine's tree "
                          "attention; the others attend their own way (attention='masks' scores this model)")
    return out


def _fused_call(engine: Any, ids: torch.Tensor, positions: torch.Tensor, placeholder: torch.Tensor, plan: Any
                ) -> torch.Tensor | None:
    """`tree_call`'s body through the compiled layers; None (and `engine.fused` off, with a warning) where the
    body's decoder layers cannot be found, or the compiler reached its recompilation limit for a layer class (it
    would run the layers uncompiled without saying so): the call is then made eagerly."""
    from torch._dynamo.exc import FailOnRecompileLimitHit

    config = text_config(engine.lm.model)
    before, compiled = config._attn_implementation, _compile_seconds()
    config._attn_implementation = FUSED_IMPLEMENTATION
    try:
        with record_function("mcqa::body"), fused_layers(engine.lm.body, plan), \
                torch._dynamo.config.patch(fail_on_recompile_limit_hit=True, allow_unspec_int_on_nn_module=True):
            out = engine.lm.body(input_ids=ids, position_ids=positions, attention_mask=placeholder,
                                 use_cache=False).last_hidden_state
        engine.stats.fused_calls += 1
        return out
    except (FailOnRecompileLimitHit, Unfusable) as e:
        warnings.warn(f"fused: {e}; this engine's tree calls run uncompiled from now", stacklevel=3)
        engine.fused, plan.calls = False, 0
        return None
    finally:
        config._attn_implementation = before
        engine.stats.compile_seconds += _compile_seconds() - compiled


def _compile_seconds() -> float:
    """The compiler's own total of compile time in this process (torch._dynamo's metric: tracing and inductor)."""
    from torch._dynamo.utils import compilation_time_metrics

    return float(sum(compilation_time_metrics.get("_compile.compile_inner", [])))
