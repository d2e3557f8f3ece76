"""The embedded demo exam and its simulated human population."""
import numpy as np
import pytest

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.demo import load_population, simulate_population
from mcqa_toolkit.irt import proportion_correct


def test_demo_exam_shape():
    items = load("demo")
    assert len(items) == 66 * 4
    summary = items.summary()
    assert summary.loc["total", "total"] == 264 and len(summary.index) - 1 >= 6
    par = items.by_parallel_id()
    assert all(set(v) == {"pt", "es", "it", "en"} for v in par.values())
    for group in par.values():  # translations agree on key, option count and parameters
        assert len({(it.answer, it.n_options, it.irt) for it in group.values()}) == 1
    a, b, c = np.array([it.irt for it in items]).T
    assert (0.5 <= a).all() and (a <= 3).all() and (-2 <= b).all() and (b <= 3).all()
    assert (0.05 <= c).all() and (c <= 0.3).all()
    with pytest.raises(ValueError, match="not in the demo exam"):
        load("demo", language="fr")


def test_population_is_reproducible_and_matches_the_3pl():
    pop = load_population()
    assert pop.responses.shape == (20_000, 66) and abs(pop.theta.mean()) < 0.03
    again = simulate_population(load("demo", language="en"))
    assert np.array_equal(again.responses, pop.responses)
    np.testing.assert_allclose(again.theta, pop.theta, atol=1e-6)  # stored as float32
    # observed proportion correct vs the model's marginal expectation E[P(theta)], theta ~ N(0,1)
    items = {it.parallel_id: it.irt for it in load("demo", language="en")}
    a, b, c = np.array([items[p] for p in pop.item_ids]).T
    z = np.random.default_rng(0).standard_normal(200_000)[:, None]
    expected = (c + (1 - c) / (1 + np.exp(-a * (z - b)))).mean(axis=0)
    np.testing.assert_allclose(proportion_correct(pop.responses.astype(float)), expected, atol=0.015)


def test_per_subject_keeps_the_first_questions_of_every_subject():
    short = load("demo", language="pt", per_subject=2)
    assert len(short) == 12 and short.summary().loc["total", "total"] == 12
    assert {it.item_id for it in short if it.subject == "biology"} == {"demo-bio-01-pt", "demo-bio-02-pt"}
    assert len(load("demo", per_subject=11)) == 264  # every question
    with pytest.raises(ValueError, match="per_subject"):
        load("demo", per_subject=0)


def test_simulate_population_needs_irt_parameters():
    items = load("demo", language="en")
    without = type(items)([it.with_(irt=None) if k == 3 else it for k, it in enumerate(items)])
    with pytest.raises(ValueError, match="no 3PL parameters"):
        simulate_population(without)
