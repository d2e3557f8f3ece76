"""Adaptive testing (irt.cat_sim): the summary against a direct computation, recovery on the demo exam's
synthetic 3PL population against a random order of the same length, and the random baseline by hand."""
import numpy as np
import pytest
from scipy.stats import pearsonr
from test_cat import GRID, demo_bank

from mcqa_toolkit import irt

pytestmark = pytest.mark.filterwarnings("error")  # a numerical warning in the CAT is a failure


@pytest.fixture(scope="module")
def demo():
    return demo_bank()


def test_summary_matches_direct_computation(demo):
    bank, _ = demo
    rng = np.random.default_rng(7)
    theta = rng.normal(size=500)
    sim = irt.cat_simulate(bank, irt.simulate_3pl(theta, bank.a, bank.b, bank.c, rng), irt.CatConfig(max_items=20))
    s = irt.cat_summary(sim, theta)
    final = np.array([sim.theta_path[j, sim.length[j] - 1] for j in range(500)])
    assert s.correlation == pytest.approx(pearsonr(final, theta)[0], abs=1e-12)
    assert s.bias == pytest.approx(np.mean(final - theta), abs=1e-12)
    assert s.rmse == pytest.approx(np.sqrt(np.mean((final - theta) ** 2)), abs=1e-12)
    seen = np.zeros(bank.n_items)
    for j in range(500):
        for i in sim.items[j, :sim.length[j]]:
            seen[i] += 1
    np.testing.assert_array_equal(s.exposure, seen / 500)
    assert s.se_reached == pytest.approx(np.mean(sim.psd <= 0.3)) and s.median_length == np.median(sim.length)
    assert s.summary()["max_exposure"] == seen.max() / 500 and len(s.to_frame()) == bank.n_items
    long = sim.to_frame()
    assert len(long) == sim.length.sum() and long.groupby("person")["position"].max().tolist() == sim.length.tolist()


def test_cat_recovery_on_demo_population(demo):
    """CAT at SE <= 0.3 (cap: the whole 66-item bank) vs the full-test EAP of the stored population."""
    bank, pop = demo
    u, n = pop.responses[:5000], 5000
    full = irt.ability_eap(u, bank.a, bank.b, bank.c, grid=GRID[0], prior=GRID[1])
    sim = irt.cat_simulate(bank, u, irt.CatConfig(se_target=0.3), seed=1)
    cat = irt.cat_summary(sim, full.theta)
    # measured: mean length 47.5, r 0.994, bias ~0.000, RMSE 0.104 (all 20,000: 47.6, 0.994, -0.0005, 0.104)
    assert 40 < cat.mean_length < 55 and cat.correlation > 0.99
    assert abs(cat.bias) < 0.02 and cat.rmse < 0.13
    assert (sim.psd[sim.stop == "se"] <= 0.3).all()
    base = irt.cat_random_baseline(bank, u, sim.length, irt.CatConfig(), seed=2)
    diff = base.theta - full.theta
    rmse_random, r_random = np.sqrt(np.mean(diff ** 2)), pearsonr(base.theta, full.theta)[0]
    # measured: random order at equal length r 0.980, RMSE 0.19: clearly worse than the CAT
    assert rmse_random > 1.5 * cat.rmse and r_random < cat.correlation
    capped = irt.cat_summary(irt.cat_simulate(bank, u, irt.CatConfig(se_target=0.3, max_items=30)), full.theta)
    base30 = irt.cat_random_baseline(bank, u, np.full(n, 30), seed=3)
    assert capped.rmse < np.sqrt(np.mean((base30.theta - full.theta) ** 2)) - 0.05
    assert capped.max_length == 30 and capped.correlation > 0.97


def test_random_baseline_administers_the_requested_lengths(demo):
    bank, pop = demo
    u = pop.responses[:50]
    whole = irt.cat_random_baseline(bank, u, np.full(50, bank.n_items))
    full = irt.ability_eap(u, bank.a, bank.b, bank.c, grid=GRID[0], prior=GRID[1])
    np.testing.assert_array_equal(whole.theta, full.theta)
    lengths = np.arange(1, 51)
    short = irt.cat_random_baseline(bank, u, lengths, seed=1)
    keys = np.random.default_rng(1).random(u.shape)                # the documented draw, redone by hand
    for j in range(50):
        row = np.full(bank.n_items, np.nan)
        keep = np.argsort(keys[j])[:lengths[j]]
        row[keep] = u[j, keep]
        ref = irt.ability_eap(row, bank.a, bank.b, bank.c, grid=GRID[0], prior=GRID[1])
        assert short.theta[j] == pytest.approx(ref.theta[0], abs=1e-12)
