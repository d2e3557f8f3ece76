"""The Backend seam: a new backend is one class implementing the protocol, and run() and the scorers need
nothing else. Shown with a backend that answers from a lookup table (no model at all); plus the capability
check that refuses a strategy before any request, and load_backend's errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from lookup_backend import LookupBackend

from mcqa_toolkit.backends import Backend, Capabilities, CapabilityError, load_backend
from mcqa_toolkit.backends.base import MultiItemBackend, PooledBackend, RenewableBackend, items_per_call, usage_delta
from mcqa_toolkit.datasets import load
from mcqa_toolkit.run import Strategy, run, strategy
from mcqa_toolkit.scoring.methods import check_method


@pytest.fixture(scope="module")
def items():
    return load("demo", language="pt").filter(subject="biology")


@pytest.fixture(scope="module")
def table(items):
    """Each item's key gets the best score for even items, option (key + 1) for odd ones."""
    out = {}
    for k, it in enumerate(items):
        best = it.answer if k % 2 == 0 else (it.answer + 1) % it.n_options
        out[it.item_id] = [math.log(0.7) if o == best else math.log(0.3 / (it.n_options - 1))
                           for o in range(it.n_options)]
    return out


def test_lookup_backend_is_a_backend(table):
    assert isinstance(LookupBackend(table), Backend)
    assert load_backend(LookupBackend(table)).name == "lookup"  # a built backend passes through


@pytest.mark.parametrize("st", [Strategy.first_token(shuffles=3, style="enem"), Strategy.loglik("sum", shuffles=2),
                                Strategy.loglik("pmi", shuffles=2), Strategy.generate(shuffles=2, style="enade")],
                         ids=["first_token", "loglik", "pmi", "generate"])
def test_run_with_a_new_backend_gives_the_table_choices(items, table, st, tmp_path):
    backend = LookupBackend(table)
    df = run(items, backend, st, tmp_path / "r", progress=False)
    want = {it.item_id: int(np.argmax(table[it.item_id])) for it in items}
    assert len(df) == len(items) * st.shuffles
    assert (df["choice"] == df["item_id"].map(want)).all()
    assert df.groupby("item_id")["correct"].first().mean() == pytest.approx(
        np.mean([want[i] == it.answer for i, it in zip(want, items, strict=True)]))
    assert (df["n_forwarded_tokens"] > 0).all()


def test_strategy_the_backend_cannot_serve_fails_before_any_request(items, table, tmp_path):
    generate_only = LookupBackend(table, Capabilities(generate=True, chat=True))
    with pytest.raises(CapabilityError, match=r"^backend 'lookup' cannot score first_token: it exposes no "
                                              r"next-token log-probabilities; use method='generate'$"):
        run(items, generate_only, Strategy.first_token(), tmp_path / "a", progress=False)
    with pytest.raises(CapabilityError, match="cannot score cloze: .*no echo"):
        run(items, generate_only, strategy("S5"), tmp_path / "b", progress=False)
    no_chat = LookupBackend(table)
    with pytest.raises(CapabilityError, match="cannot render chat prompts"):
        run(items, no_chat, strategy("uned"), tmp_path / "c", progress=False)
    assert generate_only.calls == no_chat.calls == 0 and not (tmp_path / "a").exists()
    check_method(generate_only, "generate")  # what it can do passes
    with pytest.raises(ValueError, match="unknown method"):
        check_method(generate_only, "telepathy")


def test_every_backend_kind_imports_its_factory():
    from mcqa_toolkit.backends import REGISTRY

    for kind, factory in REGISTRY.items():
        load = factory()
        assert load.__name__ == "load" and load.__module__.startswith(f"mcqa_toolkit.backends.{kind}"), kind


def test_load_backend_errors():
    with pytest.raises(ValueError, match="unknown backend 'carrier-pigeon'"):
        load_backend({"backend": "carrier-pigeon", "model": "x"})
    with pytest.raises(ValueError, match="needs a 'model'"):
        load_backend({"backend": "hf"})


def test_the_declared_optional_parts_are_protocols_read_by_isinstance(table):
    """items_per_call only from a MultiItemBackend (a bad value counts as 1), renew only from a RenewableBackend,
    and a plain backend is neither, nor a PooledBackend; usage_delta is what the counters grew by."""
    plain = LookupBackend(table)
    assert items_per_call(plain) == 1 and not isinstance(plain, (MultiItemBackend, RenewableBackend, PooledBackend))
    plain.items_per_call = 4
    assert isinstance(plain, MultiItemBackend) and items_per_call(plain) == 4
    for bad in (0, True, 2.5):
        plain.items_per_call = bad
        assert items_per_call(plain) == 1
    assert not isinstance(plain, PooledBackend)           # several items per call is not a pool
    plain.renew = lambda: plain
    assert isinstance(plain, RenewableBackend)
    assert usage_delta({"forwarded_tokens": 10, "requests": 1}, {"forwarded_tokens": 25, "requests": 1,
                                                                   "model": "x"}) == {"forwarded_tokens": 15,
                                                                                      "requests": 0}
