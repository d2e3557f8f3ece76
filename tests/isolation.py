"""Tests isolated from each other: the process state a test may not leave changed, and the check that fails the test
that changed it (the hooks at the end, which tests/conftest.py takes: around every test's setup, call and teardown,
its fixtures' included, an error at its teardown naming what it left changed).

Why: the suite shares one process per xdist worker, so a test that leaves torch computing with another number of
threads, an attention function patched, an environment variable set (which every later subprocess and Ray node
inherits) or a shared model fixture modified changes what later tests compute, and which tests run later depends on
the workers' scheduling. `process_state` reads each part cheaply (torch and transformers only once imported; a shared
model only for a test that uses it); `changes` names what differs."""
from __future__ import annotations

import os
import resource
import signal
import sys
import weakref
from typing import Any

import pytest

# the environment variables a library's first import sets for the whole process, by its design (not a test's)
SET_BY_IMPORTS = {"RAY_CLIENT_MODE": "ray._private.client_mode_hook, when ray is imported",
                  "HF_XET_HIGH_PERFORMANCE": "lm_eval/__init__.py, when lm_eval is imported",
                  "TORCHINDUCTOR_CACHE_DIR": "torch._inductor's cache_dir(), whenever inductor looks its cache up",
                  "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR": "torch._inductor.codecache, when it first loads the "
                                                             "C++ glue of compiled code (the fused body)",
                  "KMP_DUPLICATE_LIB_OK": "threadpoolctl and scikit-learn (os.environ.setdefault), when imported"}
# state a session fixture holds while it is alive (key -> the fixture), released when it is torn down
HELD: dict[str, str] = {}
HELD_KEY = "held by session fixtures"

_MODELS: list[tuple[str, weakref.ref[Any]]] = []  # (fixture, its model) of the shared model fixtures
# set by pytest itself around each phase of a test, not by the test
PYTEST_OWN = {"PYTEST_CURRENT_TEST"}


def shared_model(fixture: str, lm: Any) -> Any:
    """Register a session fixture's model (an `LM`) so that a test using that fixture is checked for changing it."""
    _MODELS.append((fixture, weakref.ref(lm)))
    return lm


def hold(key: str, fixture: str) -> None:
    """State `key` (as process_state names it) belongs to session fixture `fixture` until `release`: not checked."""
    HELD[key] = fixture


def release(key: str) -> None:
    HELD.pop(key, None)


def _torch_state(torch: Any) -> dict[str, Any]:
    probe = torch.tensor([1e-40], dtype=torch.float32)  # a denormal: 0 once flush-denormal mode is on
    state = {"torch.threads": torch.get_num_threads(), "torch.default_dtype": str(torch.get_default_dtype()),
             "torch.grad_enabled": torch.is_grad_enabled(),
             "torch.inference_mode": torch.is_inference_mode_enabled(),
             "torch.deterministic": (torch.are_deterministic_algorithms_enabled(),
                                     torch.is_deterministic_algorithms_warn_only_enabled()),
             "torch.fp32_precision": tuple(getattr(b, "fp32_precision", None) for b in (
                 torch.backends, torch.backends.mkldnn, torch.backends.mkldnn.matmul, torch.backends.mkldnn.conv,
                 torch.backends.cuda.matmul, torch.backends.cudnn)),
             "torch.mkldnn.enabled": torch.backends.mkldnn.enabled,
             "torch.flush_denormal": bool((probe * 1.0).item() == 0.0),
             "torch.anomaly": torch.is_anomaly_enabled()}
    for name, owner, attr in (("torch.nn.Linear.forward", torch.nn.Linear, "forward"),
                              ("F.linear", torch.nn.functional, "linear"),
                              ("F.scaled_dot_product_attention", torch.nn.functional, "scaled_dot_product_attention"),
                              ("torch.matmul", torch, "matmul")):
        state[name] = id(getattr(owner, attr))
    return state


def _transformers_state() -> dict[str, Any]:
    state: dict[str, Any] = {}
    try:
        from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    except ImportError:  # an older or partial transformers: nothing of it is checked
        return state
    for key, fn in ALL_ATTENTION_FUNCTIONS._global_mapping.items():
        state[f"attention:{key}"] = id(fn)
    for cls in (DynamicLayer, DynamicSlidingWindowLayer):
        state[f"{cls.__name__}.update"] = id(cls.__dict__.get("update"))
    return state


def model_state(lm: Any) -> dict[str, Any]:
    """What a test could change of a shared model (an `LM`): its configuration (the attention implementation
    included), generation configuration, mode, routed modules (an instance `forward`), dtype, a checksum of its
    weights, and its tokenizer's settings."""
    import torch

    model, tok = lm.model, lm.tokenizer
    with torch.no_grad():  # fp32 sums: the same bits for the same weights at the same thread count (also checked)
        sums = [float(p.float().sum()) for p in model.parameters()]
    return {"attn_implementation": getattr(model.config, "_attn_implementation", None), "training": model.training,
            "instance_forwards": sorted(n for n, m in model.named_modules() if "forward" in m.__dict__),
            "requires_grad": sum(p.requires_grad for p in model.parameters()),
            "dtypes": sorted({str(p.dtype) for p in model.parameters()}), "weights": sums,
            "config": model.config.to_json_string(use_diff=False),
            "generation_config": str(getattr(model, "generation_config", None)),
            "tokenizer": (tok.padding_side, tok.truncation_side, tok.pad_token_id, tok.model_max_length,
                          tok.chat_template)}


def process_state(fixtures: Any = ()) -> dict[str, Any]:
    """The parts of the process's state that change what later tests compute (see the module docstring); the
    shared models of the fixtures named in `fixtures` (a test's fixture closure)."""
    umask = os.umask(0)
    os.umask(umask)
    state: dict[str, Any] = {f"env:{k}": v for k, v in os.environ.items()
                             if k not in SET_BY_IMPORTS.keys() | PYTEST_OWN}
    state.update({"cwd": os.getcwd(), "umask": umask, "sys.path": frozenset(sys.path), HELD_KEY: frozenset(HELD)})
    for name in ("RLIMIT_FSIZE", "RLIMIT_AS", "RLIMIT_NOFILE"):
        state[name] = resource.getrlimit(getattr(resource, name))
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD):
        state[f"signal:{sig.name}"] = _handler(signal.getsignal(sig))
    state["itimer"] = signal.getitimer(signal.ITIMER_REAL)[0] > 0
    if "numpy" in sys.modules:
        state["numpy.errstate"] = tuple(sorted(sys.modules["numpy"].geterr().items()))
    if "torch" in sys.modules:
        state.update(_torch_state(sys.modules["torch"]))
    if "transformers" in sys.modules:
        state.update(_transformers_state())
    for n, (fixture, ref) in enumerate(_MODELS):
        lm = ref()
        if lm is not None and fixture in fixtures:
            state.update({f"model:{fixture}[{n}].{k}": v for k, v in model_state(lm).items()})
    return state


def _handler(h: Any) -> Any:
    return h if isinstance(h, int) or h is None else f"{getattr(h, '__module__', '')}.{getattr(h, '__qualname__', h)}"


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What `after` changed of `before`, one line each: a value changed or removed, or an entry added where it is a
    leak (an environment variable, a folder on sys.path other than a library's own under site-packages); state that
    appeared only because a library was first imported during the test (an attention function registered under a
    new name, transformers' own on first use among them), that a live session fixture holds (HELD), or a shared
    model that was torn down, is not a change."""
    out = []
    held = before.get(HELD_KEY, frozenset()) | after.get(HELD_KEY, frozenset())  # while held, or released since
    added = [p for p in after.get("sys.path", ()) - before.get("sys.path", frozenset()) if "site-packages" not in p]
    removed = sorted(before.get("sys.path", frozenset()) - after.get("sys.path", frozenset()))
    out += [f"sys.path: {p} added" for p in sorted(added)] + [f"sys.path: {p} removed" for p in removed]
    for key, value in before.items():
        if key in ("sys.path", HELD_KEY) or key in held:
            continue
        if key not in after:
            if key.startswith("model:"):  # the fixture's model was torn down (a parametrized fixture's next value)
                continue
            out.append(f"{key}: removed (was {_short(value)})")
        elif after[key] != value:
            out.append(f"{key}: {_short(value)} -> {_short(after[key])}")
    for key in after.keys() - before.keys() - held:
        if key.startswith("env:"):
            out.append(f"{key}: added ({_short(after[key])})")
    return sorted(out)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


_BEFORE = "_mcqa_state_before"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    """The process state before the test and its fixtures (isolation.py), for the check after its teardown."""
    setattr(item, _BEFORE, process_state(getattr(item, "fixturenames", ())))
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """Fail the test (an error at teardown) that left the process state changed once its fixtures are torn down:
    a later test on the same worker would compute in another state (isolation.py)."""
    result = yield
    before = getattr(item, _BEFORE, None)
    if before is not None:
        changed = changes(before, process_state(getattr(item, "fixturenames", ())))
        if changed:
            raise AssertionError("the test left the process state changed (tests/isolation.py):\n  "
                                 + "\n  ".join(changed))
    return result
