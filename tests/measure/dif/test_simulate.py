"""Simulated DIF persons: seeded and reproducible, the truth as injected, one set of questions per language, and
Mantel-Haenszel finds the injected shifts of 1 logit (class C) while the others stay mostly A."""
import numpy as np
import pytest

from mcqa_toolkit.datasets.demo import load_demo
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure import mantel_haenszel, simulate_dif_persons
from mcqa_toolkit.measure.abilities import item_parameters


@pytest.fixture(scope="module")
def items():
    return load_demo()


def test_persons_truth_and_seed(items):
    sim = simulate_dif_persons(items, "en", ["pt", "es"], n_per_group=50, seed=3)
    p = sim.persons
    assert p.responses.shape == (150, 66) and list(p.responses.columns) == list(item_parameters(items).index)
    assert p.group.value_counts().to_dict() == {"en": 50, "pt": 50, "es": 50} and set(p.block) == {"simulated"}
    assert sim.truth.groupby("language")["injected"].sum().to_dict() == {"es": 4, "pt": 4}
    assert sorted(sim.truth.loc[sim.truth["language"] == "pt", "b_shift"][lambda s: s != 0]) == [-1.0, -0.5, 0.5, 1.0]
    injected = sim.truth[sim.truth["injected"]].groupby("language")["parallel_id"].apply(set)
    assert injected["pt"] != injected["es"]                       # each language its own questions
    again = simulate_dif_persons(items, "en", ["pt", "es"], n_per_group=50, seed=3)
    assert again.persons.responses.equals(p.responses) and again.truth.equals(sim.truth)
    assert not simulate_dif_persons(items, "en", ["pt", "es"], n_per_group=50, seed=4).persons.responses.equals(
        p.responses)


def test_mantel_haenszel_finds_the_injected_dif(items):
    sim = simulate_dif_persons(items, "en", ["pt"], n_per_group=800, seed=1)
    res = mantel_haenszel(sim.persons.responses, sim.persons.group, "pt", "en")
    t = res.table.merge(sim.truth.rename(columns={"parallel_id": "item_id"}), on="item_id")
    big = t[t["b_shift"].abs() == 1.0]
    assert (big["ets_class"] == "C").all()
    assert (np.sign(big["delta_mh"]) == -np.sign(big["b_shift"])).all()      # harder for pt: delta < 0
    assert (t.loc[~t["injected"], "ets_class"] == "A").mean() > 0.9


def test_bad_arguments(items):
    with pytest.raises(ValueError, match="exclude the reference"):
        simulate_dif_persons(items, "en", ["en"])
    with pytest.raises(ValueError, match="only 66 have IRT"):
        simulate_dif_persons(items, "en", ["pt"], dif=70)
    with pytest.raises(ValueError, match="no item .* has IRT parameters"):
        simulate_dif_persons(ItemSet([it.with_(irt=None) for it in items]), "en", ["pt"])
