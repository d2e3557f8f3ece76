"""Adaptive administration through run(): one CAT per shuffle with the items' human 3PL parameters, stopping
by its rule, records showing order / theta / SE, resume mid-CAT, and the summary's cost against the full
test. The model is a lookup-table backend (tests/lookup_backend.py) whose right answers follow the 3PL at a
fixed ability, so the CAT has a real person to measure."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from lookup_backend import LookupBackend

import mcqa_toolkit.run.runner as runner_mod
from mcqa_toolkit import irt
from mcqa_toolkit.datasets import load
from mcqa_toolkit.measure import summarize_run
from mcqa_toolkit.run import Strategy, run

VOLATILE = ["seconds", "n_forwarded_tokens", "run_id"]
THETA = 0.8


@pytest.fixture(scope="module")
def items():
    return load("demo", language="en")


@pytest.fixture(scope="module")
def table(items):
    """Key preferred where a 3PL person at THETA answers right (a seeded draw per item), else a distractor."""
    rng = np.random.default_rng(5)
    out = {}
    for it in items:
        a, b, c = it.irt
        right = rng.random() < float(irt.irf(THETA, [a], [b], [c])[0])
        best = it.answer if right else (it.answer + 1) % it.n_options
        out[it.item_id] = [math.log(0.8) if o == best else math.log(0.2 / (it.n_options - 1))
                           for o in range(it.n_options)]
    return out


def cat_frame(df):
    cat = df["extra"].map(lambda e: json.loads(e)["cat"])
    return df.assign(position=[c["position"] for c in cat], theta_cat=[c["theta"] for c in cat],
                     se=[c["se"] for c in cat], stop=[c["stop"] for c in cat])


def test_cat_stops_by_rule_and_records_its_path(items, table, tmp_path):
    st = Strategy.first_token(shuffles=2, style="enem", adaptive={"se_target": 0.45, "max_items": 25})
    df = cat_frame(run(items, LookupBackend(table), st, tmp_path / "cat", progress=False))
    for _, g in df.sort_values("position").groupby("shuffle"):
        assert g["position"].tolist() == list(range(1, len(g) + 1)) and len(g) < len(items)
        final = g.iloc[-1]
        assert final["stop"] in ("se", "max_items") and (final["se"] <= 0.45 or len(g) == 25)
        assert (g["stop"].iloc[:-1] == "").all() and g["item_id"].is_unique
        # theta after each answer is the EAP of the answers so far (irt.ability_eap on the same grid)
        params = np.array([items[i].irt for i in g["item_id"]])
        u = np.tril(np.ones((len(g), len(g))))[:, :] * g["correct"].to_numpy(float)
        u[np.triu_indices(len(g), 1)] = np.nan
        eap = irt.ability_eap(u, *params.T, grid=np.linspace(-6, 6, 61))
        np.testing.assert_allclose(g["theta_cat"], eap.theta, atol=1e-9)
    # the CAT's final theta agrees with the full test's EAP (every item, same answers) within 2 SE
    full_u = np.array([[float(int(np.argmax(table[it.item_id])) == it.answer) for it in items]])
    full = irt.ability_eap(full_u, *np.array([it.irt for it in items]).T, grid=np.linspace(-6, 6, 61))
    last = df.sort_values("position").groupby("shuffle").tail(1)
    assert (np.abs(last["theta_cat"] - full.theta[0]) <= 2 * last["se"]).all()
    s = summarize_run(df)["adaptive"]
    assert s["items_full_test"] == len(items) and s["items_per_shuffle_mean"] == len(df) / 2
    assert s["items_saved_pct"] == pytest.approx(100 * (1 - len(df) / (2 * len(items))))
    assert s["tokens_forwarded"] == df["n_forwarded_tokens"].sum() and sum(s["stop_reasons"].values()) == 2


def test_cat_resumes_mid_test(items, table, tmp_path, killed_at_call):
    st = Strategy.first_token(shuffles=2, style="enem", adaptive={"se_target": 0.4, "max_items": 12})
    full = run(items, LookupBackend(table), st, tmp_path / "full", progress=False)
    with killed_at_call(runner_mod, "ask_letters", 9):  # in the middle of the first shuffle's CAT
        run(items, LookupBackend(table), st, tmp_path / "killed", progress=False)
    backend = LookupBackend(table)
    resumed = run(items, backend, st, tmp_path / "killed", progress=False)
    assert resumed.drop(columns=VOLATILE).equals(full.drop(columns=VOLATILE))
    assert backend.calls == len(full) - 8  # only the items not yet answered were asked


def test_adaptive_needs_irt_parameters(table, tmp_path):
    items = load("demo", language="en").filter(subject="biology")
    bare = items.__class__([it.with_(irt=None) if k == 2 else it for k, it in enumerate(items)], items.name)
    with pytest.raises(ValueError, match=r"needs IRT parameters .* 1 lack them"):
        run(bare, LookupBackend(table), Strategy.first_token(adaptive={"max_items": 3}), tmp_path, progress=False)
    with pytest.raises(ValueError, match="unknown setting"):
        Strategy.first_token(adaptive={"se": 0.3})
