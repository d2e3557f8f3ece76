"""measure.adaptive: CAT length per SE target (against single-examinee CATs and an EAP recomputed on every
prefix), CAT vs full-test theta, agreement statistics, the anchor curve, and on model runs the pairing of an
adaptive run with its full-form run and the per-shuffle CAT-vs-full frame (against loops over the records).

`write_adaptive_results` writes schema-exact adaptive runs and their full-form partners with the record
factory (also used by tests/report/test_analysis_notebooks.py): a 3PL examinee per model answers every item of each
shuffle in the full run, and a post-hoc CAT (irt.cat_start / cat_next / cat_update, as run.adaptive does)
takes its answers from those, except that one answer in ten comes out differently (a model is not perfectly
consistent between two runs).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from lookup_backend import LookupBackend
from scipy import stats as sps
from synthetic_results import CAT, FULL, MODELS, N_EVALUATED, write_adaptive_results

from mcqa_toolkit import irt
from mcqa_toolkit.datasets.demo import load_demo, load_population
from mcqa_toolkit.irt.cat import CatConfig, cat_next, cat_start, cat_update
from mcqa_toolkit.measure import adaptive as A
from mcqa_toolkit.records.results import load_results
from mcqa_toolkit.run import run, strategy


@pytest.fixture(scope="module")
def population():
    return load_population()


@pytest.fixture(scope="module")
def sample(population):
    return A.population_sample(population, load_demo(), 300, seed=3)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return load_results(write_adaptive_results(tmp_path_factory.mktemp("adaptive")))


def test_population_sample_aligns_items_and_takes_a_permutation_prefix(population):
    items = load_demo("it")
    bank, u, theta = A.population_sample(population, items, 50, seed=3)
    rows = np.random.default_rng(3).permutation(len(population.theta))[:50]
    np.testing.assert_array_equal(u, np.asarray(population.responses)[rows])
    np.testing.assert_array_equal(theta, np.asarray(population.theta)[rows])
    by_pid = {it.parallel_id: it.irt for it in items}
    np.testing.assert_array_equal(np.column_stack([bank.a, bank.b, bank.c]),
                                  [by_pid[p] for p in population.item_ids])
    _, u10, _ = A.population_sample(population, items, 10, seed=3)
    np.testing.assert_array_equal(u10, u[:10])


def _prefix_psd(bank, u_row, order):
    """Posterior SD after each prefix of `order`, by a fresh EAP on the answered items (NaN = not given)."""
    x = np.full((len(order), bank.n_items), np.nan)
    for t in range(len(order)):
        x[t, order[:t + 1]] = u_row[order[:t + 1]]
    return irt.ability_eap(x, bank.a, bank.b, bank.c, grid=np.linspace(-6, 6, 61)).psd


def test_length_curve_against_single_examinee_cats_and_prefix_eaps(sample):
    bank, u, _ = sample
    u = u[:40]
    curve = A.cat_length_curve(bank, u, [0.35, 0.5], max_items=15, seed=4).set_index(["se_target", "order"])
    for target in (0.35, 0.5):
        config = CatConfig(se_target=target, max_items=15)
        lengths, psds = [], []
        for row in u:      # the single-examinee API, one person at a time
            state = cat_start(bank, config)
            while not state.done:
                j = cat_next(state)
                state = cat_update(state, j, int(row[j]))
            lengths.append(len(state.items))
            psds.append(state.psd)
        got = curve.loc[(target, "adaptive")]
        assert got["mean_length"] == pytest.approx(np.mean(lengths), abs=1e-12)
        assert got["median_length"] == np.median(lengths)
        assert got["share_reached"] == pytest.approx(np.mean(np.array(psds) <= target))
        # random order: the same stopping rule on an order that is not the CAT's
        sim = irt.cat_simulate(bank, u, CatConfig(se_target=target, max_items=15, randomesque=bank.n_items), 4)
        assert len({int(i) for i in sim.items[:, 0]}) > 5         # the CAT gives everybody the same first item
        for j in range(len(u)):
            order = sim.items[j, :sim.length[j]]
            psd = _prefix_psd(bank, u[j], order)
            stop = np.flatnonzero(psd <= target)
            assert sim.length[j] == (stop[0] + 1 if stop.size else 15)
            assert sim.psd[j] == pytest.approx(psd[-1], abs=1e-10)
        got = curve.loc[(target, "random")]
        assert got["mean_length"] == pytest.approx(sim.length.mean()) and got["n_persons"] == 40
        assert got["share_reached"] == pytest.approx((sim.psd <= target).mean())
    assert curve.loc[(0.5, "random"), "mean_length"] > curve.loc[(0.5, "adaptive"), "mean_length"] + 2


def test_cat_vs_full_against_a_hand_made_eap(sample):
    bank, u, theta_true = sample
    config = CatConfig(se_target=0.4, max_items=12)
    frame = A.cat_vs_full(bank, u, config, seed=0, theta_true=theta_true)
    points = np.linspace(-6, 6, 61)
    p = irt.irf(points, bank.a, bank.b, bank.c)                         # (G, J)
    log_like = u @ np.log(p).T + (1 - u) @ np.log1p(-p).T               # (n, G)
    post = np.exp(log_like - log_like.max(axis=1, keepdims=True)) * np.exp(-points ** 2 / 2)
    post /= post.sum(axis=1, keepdims=True)
    mean = post @ points
    np.testing.assert_allclose(frame["theta_full"], mean, atol=1e-10)
    np.testing.assert_allclose(frame["psd_full"], np.sqrt(post @ points ** 2 - mean ** 2), atol=1e-8)
    np.testing.assert_array_equal(frame["theta_true"], theta_true)
    for j in (0, 7, 123):
        state = cat_start(bank, config)
        while not state.done:
            i = cat_next(state)
            state = cat_update(state, i, int(u[j, i]))
        row = frame.iloc[j]
        assert (row["length"], row["stop"]) == (len(state.items), state.stop)
        assert row["theta_cat"] == pytest.approx(state.theta, abs=1e-12)
        assert row["psd_cat"] == pytest.approx(state.psd, abs=1e-12)


def test_agreement_against_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    y = x + rng.normal(0.2, 0.3, size=50)
    s = A.agreement(x, y)
    assert s["correlation"] == pytest.approx(sps.pearsonr(x, y)[0])
    assert s["bias"] == pytest.approx(np.mean(y) - np.mean(x))
    assert s["rmse"] == pytest.approx(np.sqrt(np.mean([(b - a) ** 2 for a, b in zip(x, y, strict=True)])))
    assert s["mae"] == pytest.approx(np.mean(np.abs(y - x))) and s["n"] == 50
    assert np.isnan(A.agreement([0.1, 0.2], [0.3, 0.1])["correlation"])
    with pytest.raises(ValueError, match="one length"):
        A.agreement([1, 2, 3], [1, 2])


def test_anchor_curve_is_the_evaluation_summarised_by_k(sample):
    _, u, _ = sample
    u = u[:40].astype(float)
    curve = A.anchor_curve(u, [4, 8], folds=4, model="2pl", seed=2, a_prior=(0.0, 0.5))
    ev = irt.anchor_evaluate(u, [4, 8], model="2pl", groups=[i % 4 for i in range(40)], seed=2, a_prior=(0.0, 0.5))
    f = ev.to_frame()
    for (k, sel), g in f.groupby(["k", "selection"]):
        row = curve[(curve["k"] == k) & (curve["selection"] == sel)].iloc[0]
        assert row["mae_theta"] == pytest.approx(np.mean(np.abs(g["theta"] - g["theta_full"])))
        assert row["mae_gpirt"] == pytest.approx(np.mean(np.abs(g["gpirt"] - g["accuracy"])))
        assert len(g) == 40
    assert len(curve) == 2 * 3 and set(curve["selection"]) == {"nearest", "informative", "random"}


def test_pairing_follows_the_full_form_hash_not_the_names(results):
    pairs = A.pair_adaptive_runs(results)
    assert list(pairs["run_id"]) == ["model-a__demo__en__enem_4shot_cat", "model-a__demo__pt__enem_4shot_cat",
                                     "model-b__demo__en__enem_4shot_cat"]
    assert list(pairs["full_run_id"]) == ["model-a__demo__en__enem_4shot", None, "model-b__demo__en__enem_4shot"]
    assert set(pairs["full_form_hash"]) == {FULL.hash} and FULL.hash == CAT.with_(adaptive=None).hash
    renamed = results.assign(strategy=results["strategy"].replace("enem_4shot", "letters_full"))
    assert list(A.pair_adaptive_runs(renamed)["full_strategy"]) == ["letters_full", None, "letters_full"]
    other = results["run_id"] == "model-a__demo__en__enem_4shot"       # e.g. a different number of shots
    moved = A.pair_adaptive_runs(results.assign(strategy_hash=results["strategy_hash"].where(~other, "f" * 12)))
    assert list(moved["full_run_id"].isna()) == [True, True, False]
    assert A.pair_adaptive_runs(results[results["strategy"] == "enem_4shot"]).empty


def test_model_cat_vs_full_against_loops_over_the_records(results):
    items = load_demo()
    frame = A.model_cat_vs_full(results, items)
    assert len(frame) == 2 * FULL.shuffles and set(frame["model"]) == set(MODELS)
    points = np.linspace(-6, 6, 61)
    for row in frame.itertuples():
        cat = results[(results["run_id"] == f"{row.model}__demo__en__enem_4shot_cat")
                      & (results["shuffle"] == row.shuffle)]
        full = results[(results["run_id"] == f"{row.model}__demo__en__enem_4shot")
                       & (results["shuffle"] == row.shuffle)]
        info = [json.loads(e)["cat"] for e in cat["extra"]]
        last = max(info, key=lambda c: c["position"])
        assert ((row.items_cat, row.stop, row.theta_cat, row.se_cat)
                == (len(cat), last["stop"], last["theta"], last["se"]))
        assert row.items_full == len(full) == N_EVALUATED
        assert row.tokens_cat == sum(int(t) for t in cat["n_forwarded_tokens"])
        assert row.tokens_full == sum(int(t) for t in full["n_forwarded_tokens"])
        assert row.prompt_tokens_full == 300 * len(full)
        params = np.array([next(it.irt for it in items if it.parallel_id == p) for p in full["parallel_id"]])
        est = irt.ability_eap(full["correct"].to_numpy(float)[None], *params.T, grid=points)
        assert row.theta_full == pytest.approx(est.theta[0], abs=1e-12)
        assert row.psd_full == pytest.approx(est.psd[0], abs=1e-12)
        by_item = dict(zip(full["item_id"], full["choice"], strict=True))
        assert row.same_choice == pytest.approx(np.mean([by_item[i] == c
                                                         for i, c in zip(cat["item_id"], cat["choice"], strict=True)]))
    assert 0.7 < frame["same_choice"].mean() < 1.0
    assert (np.abs(frame["theta_cat"] - frame["theta_full"]) < 3 * frame["se_cat"]).all()


def test_adaptive_savings_sum_the_shuffles(results):
    frame = A.model_cat_vs_full(results, load_demo())
    sav = A.adaptive_savings(frame).set_index("model")
    for model, g in frame.groupby("model"):
        row = sav.loc[model]
        assert row["shuffles"] == 3 and row["items_full"] == 3 * N_EVALUATED
        assert row["items_saved_pct"] == pytest.approx(100 * (1 - g["items_cat"].sum() / (3 * N_EVALUATED)))
        assert row["tokens_saved_pct"] == pytest.approx(100 - 100 * g["tokens_cat"].sum() / g["tokens_full"].sum())
        d = g["theta_cat"] - g["theta_full"]
        assert row["theta_rmse"] == pytest.approx(float(np.sqrt((d ** 2).mean())))
        assert row["theta_correlation"] == pytest.approx(sps.pearsonr(g["theta_full"], g["theta_cat"])[0])


def test_a_real_adaptive_run_pairs_with_its_full_form_run(tmp_path):
    """Through run(): a deterministic backend answers the CAT's items exactly as in the full run."""
    items = load_demo("en")
    rng = np.random.default_rng(1)
    table = {it.item_id: list(np.log(rng.dirichlet(np.ones(it.n_options)))) for it in items}
    full = strategy("enem_4shot", shuffles=2)
    cat = full.with_(name="enem_4shot_cat", adaptive={"se_target": 0.5, "max_items": 6})
    for s in (full, cat):
        run(items, LookupBackend(table), s, tmp_path / f"lookup__demo__en__{s.name}", dataset="demo", limit=20,
            progress=False)
    records = load_results(tmp_path)
    pairs = A.pair_adaptive_runs(records)
    assert list(pairs["full_strategy"]) == ["enem_4shot"] and pairs["full_form_hash"][0] == full.hash
    frame = A.model_cat_vs_full(records, items, pairs)
    assert list(frame["shuffle"]) == [0, 1] and (frame["same_choice"] == 1.0).all()
    assert (frame["items_full"] == 20).all() and (frame["items_cat"] <= 6).all()
