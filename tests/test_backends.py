"""The Backend seam: a new backend is one class implementing the protocol, and run() and the scorers need
nothing else. Shown with a backend that answers from a lookup table (no model at all); plus the capability
check that refuses a strategy before any request, and load_backend's errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mcqa_toolkit.backends import (Backend, Capabilities, CapabilityError, ContinuationLogprobs, Generation,
                                   LetterLogprobs, check_capabilities, load_backend)
from mcqa_toolkit.datasets import load
from mcqa_toolkit.run import Strategy, run, strategy


class LookupBackend:
    """Scores from a table: item_id -> log-prob of each ORIGINAL option. Letters are scored in shown order,
    option texts by their table value, and generation answers "Resposta: <letter of the best option>"."""

    def __init__(self, table: dict[str, list[float]], capabilities: Capabilities | None = None):
        self.name = "lookup"
        self.table = table
        self.capabilities = capabilities or Capabilities(next_token_logprobs=True, continuation_logprobs=True,
                                                         generate=True)
        self.calls = 0

    def provenance(self):
        return {"backend": "lookup", "source": "table"}

    def usage(self):
        return {"forwarded_tokens": 10 * self.calls}

    def letter_logprobs(self, prompts):
        self.calls += 1
        return [LetterLogprobs(np.array([self.table[p.item_id][o] for o in p.permutation]), 7) for p in prompts]

    def loglikelihoods(self, requests):
        self.calls += 1
        out = []
        for r in requests:
            if isinstance(r.context, str):  # neutral context (pmi) or Min-K%: a flat prior
                out.append(ContinuationLogprobs(np.array([-1.0]), r.continuation, 1))
                continue
            k = r.context.continuations.index(r.continuation)
            value = self.table[r.context.item_id][r.context.permutation[k]]
            out.append(ContinuationLogprobs(np.array([value, 0.0]), r.continuation, 5))
        return out

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, stop=(), seeds=None):
        self.calls += 1
        out = []
        for p in prompts:
            best = int(np.argmax([self.table[p.item_id][o] for o in p.permutation]))
            out.append(Generation(f"Resposta: {p.letters[best]}", 7, 3, "stop"))
        return out


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
        np.mean([want[i] == it.answer for i, it in zip(want, items)]))
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
    check_capabilities(generate_only, "generate")  # what it can do passes
    with pytest.raises(ValueError, match="unknown method"):
        check_capabilities(generate_only, "telepathy")


def test_load_backend_errors():
    with pytest.raises(ValueError, match="unknown backend 'carrier-pigeon'"):
        load_backend({"backend": "carrier-pigeon", "model": "x"})
    with pytest.raises(ValueError, match="needs a 'model'"):
        load_backend({"backend": "hf"})
