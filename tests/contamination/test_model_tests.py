"""Model-level contamination tests (contamination.model_tests): the key-pull permutation test's null distribution
(its Monte Carlo p-value against the exact one from all permutations of a small exam; p-values of models that never
saw the keys, with position bias and knowledge of the answers, spread uniformly: false alarms at 5% within the
binomial 99.9% bounds), its power on a model pulled to the keys; Welch's test against the textbook formula; l_z
against irt called directly."""
import itertools

import numpy as np
import pandas as pd
import pytest
from contamination_runs import exam, letters_records
from scipy import stats

from mcqa_toolkit import irt
from mcqa_toolkit.contamination.model_tests import (
    dataset_inference,
    flag,
    key_pull_null,
    key_pull_test,
    person_fit_test,
)


def test_monte_carlo_p_value_matches_the_exact_permutation_distribution():
    rng = np.random.default_rng(5)
    P = rng.uniform(0.05, 0.4, size=(7, 4))
    keys = np.array([0, 1, 1, 2, 3, 3, 3])
    s = P[np.arange(7), keys].mean()
    exact = np.array([P[np.arange(7), list(p)].mean() for p in itertools.permutations(keys)])
    p_exact = np.mean(exact >= s - 1e-12)
    null = key_pull_null(P, keys, np.full(7, 4), 40000, np.random.default_rng(1))
    p_mc = np.mean(null >= s - 1e-12)
    assert abs(p_mc - p_exact) < 4 * np.sqrt(p_exact * (1 - p_exact) / 40000)
    assert null.mean() == pytest.approx(exact.mean(), abs=0.002)
    # keys are permuted only among items with the same number of options
    mixed = key_pull_null(P, keys, np.array([4, 4, 4, 5, 5, 5, 5]), 50, np.random.default_rng(2))
    assert mixed.shape == (50,)


def test_models_that_never_saw_the_keys_are_flagged_at_the_nominal_rate():
    p = []
    for k in range(120):
        items = exam(40, seed=1000 + k, irt=False)
        records = letters_records(items, pull=0.0, skill=1.5, shuffles=4, seed=k, bias=(0.0, 0.5, 0.9, 0.2, -0.3))
        p.append(float(key_pull_test(records, n_perm=199, seed=k)["p_value"].iloc[0]))
    p = np.array(p)
    assert (p < 0.05).sum() <= stats.binom.ppf(0.999, len(p), 0.05)
    assert stats.kstest(p, "uniform").pvalue > 0.001


def test_a_model_pulled_to_the_keys_is_flagged_and_the_table_says_what_was_tested():
    items = exam(60)
    pulled = letters_records(items, pull=1.0, shuffles=5)
    table = key_pull_test(pd.concat([pulled, letters_records(items, model="clean", shuffles=5)]), n_perm=999)
    row = table.set_index("model")
    assert list(table.columns) == ["model", "language", "n_items", "statistic", "null_mean", "p_value"]
    assert row.loc["m", "p_value"] == pytest.approx(1 / 1000) and row.loc["m", "n_items"] == 60
    assert row.loc["m", "statistic"] > row.loc["m", "null_mean"] and row.loc["clean", "p_value"] > 0.01
    assert list(flag(table, 0.01)["flagged"]) == [False, True]
    with pytest.raises(ValueError, match="n_perm"):
        key_pull_test(pulled, n_perm=0)
    with pytest.raises(ValueError, match="alpha"):
        flag(table, 1.0)


def test_dataset_inference_is_welchs_one_sided_test():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0.3, 1.0, 40), rng.normal(0.0, 2.0, 55)
    long = lambda v, model: pd.DataFrame({"model": model, "detector": "min_k_pp", "score": v})  # noqa: E731
    got = dataset_inference(pd.concat([long(x, "a"), long(x[:1], "b")]), pd.concat([long(y, "a"), long(y, "b")]),
                            "min_k_pp").set_index("model")
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    t = (x.mean() - y.mean()) / np.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    assert got.loc["a", "statistic"] == pytest.approx(t) and got.loc["a", "df"] == pytest.approx(df)
    assert got.loc["a", "p_value"] == pytest.approx(stats.t.sf(t, df))
    assert got.loc["a", "difference"] == pytest.approx(x.mean() - y.mean())
    assert np.isnan(got.loc["b", "p_value"]) and got.loc["b", "n_suspect"] == 1   # too few items: no test


def test_person_fit_test_is_the_mean_lz_of_the_shuffles():
    items = exam(30, seed=3)
    records = letters_records(items, skill=2.0, shuffles=4, seed=2)
    got = person_fit_test(records, items).iloc[0]
    order = sorted(it.parallel_id for it in items)
    u = records.pivot(index="shuffle", columns="parallel_id", values="correct").loc[:, order].to_numpy(float)
    a, b, c = (np.array([items[f"{p}-pt"].irt[j] for p in order]) for j in range(3))
    theta = irt.ability_eap(u, a, b, c, grid=irt.normal_grid(40)[0]).theta
    lz = irt.person_fit_lz(u, theta, a, b, c).mean()
    assert got["statistic"] == pytest.approx(lz) and got["p_value"] == pytest.approx(stats.norm.cdf(lz))
    assert got["n_shuffles"] == 4
