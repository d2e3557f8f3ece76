"""Population psychometrics: response matrices across runs, bank calibration with its small-population warning,
item fit, and the leave-one-model-out CAT against random items."""
import warnings

import numpy as np
import pytest
from builders import records

from mcqa_toolkit import irt
from mcqa_toolkit.measure.population import (
    SmallPopulationWarning,
    bank_fit,
    bank_items,
    calibrate_bank,
    leave_one_model_out,
    lomo_summary,
    population_responses,
)


def test_population_responses_majority_and_first():
    rows = [{"item_id": "q1", "model": "m1", "shuffle": s, "choice": c} for s, c in enumerate([0, 1, 0])]
    rows += [{"item_id": "q1", "model": "m2", "shuffle": s, "choice": c} for s, c in enumerate([1, 1, 0])]
    rows += [{"item_id": "q2", "model": "m1", "shuffle": 0, "choice": 1}]
    f = records(rows)
    persons, items, u = population_responses(f)
    assert list(persons["model"]) == ["m1", "m2"] and items == ["q1", "q2"]
    np.testing.assert_array_equal(u, [[1, 0], [0, np.nan]])     # m1 right 2/3 on q1, m2 1/3; m2 never took q2
    _, _, first = population_responses(f, rule="first")
    np.testing.assert_array_equal(first, [[1, 0], [0, np.nan]])


def _population(n, seed=0, n_items=40):
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.8, 2.0, n_items), rng.normal(0, 1, n_items)
    theta = rng.normal(0, 1, n)
    return irt.simulate_3pl(theta, a, b, None, rng).astype(float), a, b, theta


def test_small_population_warns_and_unidentified_items_are_dropped():
    u, *_ = _population(20)
    u[:, 0] = 1.0                                              # everybody right: not identified
    with pytest.warns(SmallPopulationWarning) as caught:
        cal, kept = calibrate_bank(u, "2pl")
    text = " | ".join(str(w.message) for w in caught)
    assert "20 persons calibrate a 2PL bank" in text and "about 200" in text
    assert "1 of 40 items left out" in text and 0 not in kept and kept.size == 39
    with pytest.warns(SmallPopulationWarning, match="about 1000"):
        calibrate_bank(_population(300)[0], "3pl", max_iter=50)


def test_large_population_recovers_parameters_without_warning():
    """Recovery on seeded simulated data (girth's style): 2,000 persons, atol 0.25 on b, 0.3 on a."""
    u, a, b, theta = _population(2000, seed=4, n_items=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallPopulationWarning)
        cal, kept = calibrate_bank(u, "2pl", a_prior=None)
    np.testing.assert_allclose(cal.b, b, atol=0.25)
    np.testing.assert_allclose(cal.a, a, atol=0.3)
    fit = bank_fit(u, cal)
    assert list(fit.columns) == ["a", "b", "c", "p_correct", "outfit", "infit", "n"] and (fit["n"] == 2000).all()
    # at the true thetas and parameters the mean squares have expectation 1 (tolerance: 2,000 persons)
    true_fit = irt.item_fit(u, theta, a, b)
    np.testing.assert_allclose(true_fit.outfit, 1.0, atol=0.2)
    np.testing.assert_allclose(true_fit.infit, 1.0, atol=0.1)
    assert true_fit.outfit.mean() == pytest.approx(1.0, abs=0.05)


def test_leave_one_model_out_cat_beats_random_when_long_enough():
    """30 models x 40 items: at 20 items the CAT's theta is closer to the full bank's than random items' are
    (seeded; the numbers for the note come from notebooks/item_bank)."""
    u, *_ = _population(30, seed=2)
    u[:, :2] = [[1, 0]] * 15 + [[0, 1]] * 15     # two items half right in every fold: the bank keeps them
    keep = (u.sum(axis=0) > 1) & (u.sum(axis=0) < 29)
    u = u[:, keep]                                 # no item that leaving one model out could make unidentified
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallPopulationWarning)
        per = leave_one_model_out(u, [5, 20, u.shape[1]], n_random=10)
    s = lomo_summary(per).set_index(["length", "order"])
    assert s.loc[(20, "cat"), "mae_theta"] < s.loc[(20, "random"), "mae_theta"]
    # the whole bank in any order is the full test: no error
    assert s.loc[(u.shape[1], "cat"), "mae_theta"] == pytest.approx(0, abs=1e-9)
    assert s.loc[(u.shape[1], "random"), "mae_theta"] == pytest.approx(0, abs=1e-9)
    assert set(s["persons"]) == {30}
    with pytest.raises(ValueError, match="needs complete responses"):
        leave_one_model_out(np.where(np.eye(30, u.shape[1]) == 1, np.nan, u), [5])


def test_bank_items_carry_the_calibrated_parameters():
    from mcqa_toolkit.datasets import load

    items = load("demo", language="pt")
    u, *_ = _population(40, seed=5, n_items=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallPopulationWarning)
        cal, kept = calibrate_bank(u)
    ids = [items.ids[k] for k in kept]
    bank = bank_items(items, ids, cal)
    assert bank.ids == [i for i in items.ids if i in ids]
    assert bank[ids[0]].irt == pytest.approx((cal.a[0], cal.b[0], 0.0))
    with pytest.raises(ValueError, match="item ids for a calibration"):
        bank_items(items, ids[:-1], cal)
