"""measure.abilities: response matrices, abilities, DI, heatmap shares, information, regions.

Checked against direct calls of the pure irt and measure functions on the same arrays, on a synthetic
but schema-exact results directory (`write_synthetic_results`, also used by the plot and notebook tests).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from synthetic_results import ANNULLED, SHUFFLES

from mcqa_toolkit import irt, measure
from mcqa_toolkit.datasets.demo import load_demo, load_population
from mcqa_toolkit.report import as_headline


@pytest.fixture(scope="module")
def items():
    return load_demo()


def _params(items, keys):
    p = measure.item_parameters(items).loc[keys]
    return p["a"].to_numpy(), p["b"].to_numpy(), p["c"].to_numpy()


def test_synthetic_results_are_schema_exact(records):
    from mcqa_toolkit.records.columns import COLUMNS

    assert list(records.columns[:len(COLUMNS)]) == list(COLUMNS)
    assert len(records) == 2 * 2 * 3 * (66 + 62)
    assert set(records.loc[records.parallel_id == ANNULLED, "answer"]) == {-1}


def test_response_matrix_shapes_annulled_and_values(records):
    persons, keys, u = measure.response_matrix(records)
    assert list(persons.columns) == list(measure.PERSON_BY) and len(persons) == 2 * 2 * 2 * SHUFFLES
    assert ANNULLED not in keys and len(keys) == 65 and u.shape == (24, 65)
    shot_rows = (persons["strategy"] == "enem_4shot").to_numpy()
    assert (np.isnan(u[shot_rows]).sum(axis=1) == 4).all() and not np.isnan(u[~shot_rows]).any()
    r = records[(records.answer >= 0)].sample(50, random_state=0)
    for _, rec in r.iterrows():
        i = persons.index[(persons[list(measure.PERSON_BY)] == rec[list(measure.PERSON_BY)].to_numpy()).all(axis=1)][0]
        assert u[i, keys.index(rec.parallel_id)] == float(rec.correct)


def test_response_matrix_rejects_ambiguous_persons_and_all_annulled(records):
    with pytest.raises(ValueError, match="add the column"):
        measure.response_matrix(records, by=("model", "strategy", "language"))
    with pytest.raises(ValueError, match="annulled"):
        measure.response_matrix(records.assign(answer=-1))


def test_model_abilities_equal_direct_irt_calls(records, items):
    ab = measure.model_abilities(records, items)
    persons, keys, u = measure.response_matrix(records)
    a, b, c = _params(items, keys)
    est = irt.ability_eap(u, a, b, c)
    np.testing.assert_allclose(ab["theta"], est.theta)
    np.testing.assert_allclose(ab["psd"], est.psd)
    np.testing.assert_allclose(ab["lz"], irt.person_fit_lz(u, est.theta, a, b, c))
    np.testing.assert_allclose(ab["accuracy"], np.nanmean(u, axis=1))
    assert ab.attrs["n_items_dropped"] == 0 and set(ab["n_items"]) == {65, 61}
    assert ab.groupby("model")["theta"].mean()["model-a"] > ab.groupby("model")["theta"].mean()["model-b"] + 0.8
    fine = measure.model_abilities(records, items, grid=np.linspace(-5, 5, 101))
    np.testing.assert_allclose(fine["theta"], irt.ability_eap(u, a, b, c, grid=np.linspace(-5, 5, 101)).theta)


def test_model_abilities_drops_items_without_irt_and_adds_percentile(records, items):
    bare = {"demo-bio-01", "demo-che-02"}
    partial = type(items)([it.with_(irt=None) if it.parallel_id in bare else it for it in items])
    human = load_population().theta
    ab = measure.model_abilities(records, partial, human_theta=human)
    assert ab.attrs["n_items_dropped"] == 2 and sorted(ab.attrs["items_without_irt"]) == sorted(bare)
    assert set(ab["n_items"]) == {63, 59}
    np.testing.assert_allclose(ab["percentile"], irt.percentile_of(ab["theta"], human))


def test_human_abilities_vectorised_and_equal_direct(items, monkeypatch):
    """One EAP pass over the whole population (its speed is benchmarks/irt_throughput.py's), equal to the direct
    computation."""
    pop = load_population()
    passes, eap = [], irt.ability_eap
    monkeypatch.setattr(irt, "ability_eap", lambda u, *a, **kw: passes.append(np.shape(u)) or eap(u, *a, **kw))
    h = measure.human_abilities(pop, items)
    monkeypatch.undo()
    assert len(h) == 20_000 and [rows for rows, _ in passes] == [20_000]  # every person in one call
    a, b, c = _params(items, list(pop.item_ids))
    est = irt.ability_eap(pop.responses, a, b, c)
    np.testing.assert_allclose(h["theta"], est.theta)
    np.testing.assert_allclose(h["lz"], irt.person_fit_lz(pop.responses, est.theta, a, b, c))
    assert np.corrcoef(h["theta"], h["theta_true"])[0, 1] > 0.9


def test_item_discrimination_models_and_humans(records, items):
    ab = measure.model_abilities(records, items)
    di = measure.item_discrimination(records, ab, group="models")
    persons, keys, u = measure.response_matrix(records)
    np.testing.assert_allclose(di["di"], irt.discrimination_index(u, ab["theta"]), equal_nan=True)
    assert list(di.columns) == ["group", "parallel_id", "di", "p_correct", "n_persons"]
    pop = load_population()
    h = measure.item_discrimination(pop, measure.human_abilities(pop, items))
    np.testing.assert_allclose(h["di"],
                               irt.discrimination_index(pop.responses, measure.human_abilities(pop, items).theta))
    same = measure.item_discrimination((persons, keys, u), ab["theta"].to_numpy())
    np.testing.assert_allclose(same["di"], di["di"], equal_nan=True)


def test_share_correct_is_share_of_shuffles_with_difficulty(records, items):
    s = measure.share_correct(records, items)
    one = records[(records.model == "model-a") & (records.strategy == "S1") & (records.language == "pt")
                  & (records.item_id == "demo-phy-03-pt")]
    row = s[(s.model == "model-a") & (s.strategy == "S1") & (s.language == "pt") & (s.item_id == "demo-phy-03-pt")]
    assert row["share_correct"].item() == pytest.approx(one["correct"].mean())
    assert row["b"].item() == pytest.approx(items["demo-phy-03-pt"].irt[1])
    assert ANNULLED not in set(s["parallel_id"])


def test_information_curve_equals_test_information(items):
    curve = measure.information_curve(items, grid=np.linspace(-3, 3, 7))
    a, b, c = _params(items, sorted({it.parallel_id for it in items}))
    np.testing.assert_allclose(curve["information"], irt.test_information(np.linspace(-3, 3, 7), a, b, c))
    np.testing.assert_allclose(curve["se"], 1 / np.sqrt(curve["information"]))


def test_central_region_hull_and_box():
    rng = np.random.default_rng(1)
    ab = pd.DataFrame({"model": "m", "strategy": "s", "language": "en", "theta": rng.normal(size=200),
                       "accuracy": rng.uniform(size=200)})
    one = pd.DataFrame({"model": "n", "strategy": "s", "language": "en", "theta": [0.3], "accuracy": [0.5]})
    reg = measure.central_region(pd.concat([ab, one]), q=0.9)
    hull = reg[reg.model == "m"]
    assert (hull["method"] == "hull").all() and len(hull) >= 3
    lo, hi = np.quantile(ab[["theta", "accuracy"]], [0.05, 0.95], axis=0)
    assert ((hull[["theta", "accuracy"]] >= lo - 1e-12) & (hull[["theta", "accuracy"]] <= hi + 1e-12)).all().all()
    box = reg[reg.model == "n"]
    assert (box["method"] == "box").all() and len(box) == 4 and set(box["theta"]) == {0.3}


def test_theta_ci_spread_and_mean():
    ab = pd.DataFrame({"model": "m", "strategy": "s", "language": "en", "theta": np.arange(11.0)})
    spread = measure.theta_ci(ab).iloc[0]
    assert spread[["ci_low", "ci_high"]].tolist() == pytest.approx(np.quantile(np.arange(11.0), [0.025, 0.975]))
    mean = measure.theta_ci(ab, kind="mean").iloc[0]
    half = 2.2281388519649385 * np.std(np.arange(11.0), ddof=1) / np.sqrt(11)
    assert mean[["ci_low", "ci_high"]].tolist() == pytest.approx([5 - half, 5 + half])
    assert measure.theta_ci(ab.iloc[:1]).iloc[0]["note"] == "one shuffle: no interval"


def test_gap_correlations_report_instead_of_failing(records):
    scores = measure.kappa(records, by=("model", "strategy", "language"), n_boot=0)
    gaps = measure.language_gap(scores, by=("model", "strategy"))
    pooled = measure.gap_correlations(gaps)
    assert pooled["n"].item() == 4 and np.isfinite(pooled["pearson_r"].item())
    per = measure.gap_correlations(gaps, by=("strategy", "language"))
    assert per["pearson_r"].isna().all() and per["note"].str.contains("at least 3").all()
    assert json.dumps(pooled.iloc[0].to_dict(), default=float)


def test_discrimination_frame_splits_models_and_repeats_humans(records, items):
    ab = measure.model_abilities(records, items)
    pop = load_population()
    humans = measure.human_abilities(pop, items)
    di = measure.discrimination_frame(records, ab, pop, humans)
    assert list(di.columns[:2]) == ["strategy", "group"]
    s1 = records[records.strategy == "S1"]
    direct = measure.item_discrimination(s1, ab[ab.strategy == "S1"])
    got = di[(di.strategy == "S1") & (di.group == "models")]
    np.testing.assert_allclose(got["di"], direct["di"], equal_nan=True)
    h = di[di.group == "humans"]
    assert len(h) == 2 * 66 and (h.groupby("parallel_id")["di"].nunique() == 1).all()
    single = records[(records.strategy == "S1") & (records.model == "model-a") & (records.language == "en")
                     & (records.shuffle == 0)]
    with pytest.raises(ValueError, match="2 or more persons"):
        measure.discrimination_frame(single, measure.model_abilities(single, items))
    only_humans = measure.discrimination_frame(single, measure.model_abilities(single, items), pop, humans)
    assert set(only_humans["group"]) == {"humans"} and set(only_humans["strategy"]) == {"S1"}


def test_as_headline_is_json_ready():
    frame = pd.DataFrame({"model": ["m", "m"], "strategy": ["s", "t"], "language": ["en", "en"],
                          "x": [0.123456, np.nan]})
    assert as_headline(frame, value="x") == {"m / s / en": 0.1235, "m / t / en": None}
    assert as_headline(pd.Series([1e-12], index=["a"]), digits=None) == {"a": 1e-12}
    assert json.loads(json.dumps(as_headline(frame, value="x"))) == {"m / s / en": 0.1235, "m / t / en": None}


def test_di_attribute_tests_match_direct_chi2(records, items):
    ab = measure.model_abilities(records, items)
    di = measure.discrimination_frame(records, ab)
    got = measure.di_attribute_tests(di, items)
    assert set(got["strategy"]) == set(records["strategy"]) and len(got) == 3 * records["strategy"].nunique()
    # direct: one strategy's model DI joined with attributes of the first translation of each question
    strat = sorted(records["strategy"].unique())[0]
    part = di[(di["group"] == "models") & (di["strategy"] == strat)]
    first = {}
    for it in items:
        first.setdefault(it.parallel_id, it)
    attrs = measure.item_attributes(type(items)(first.values())).assign(parallel_id=list(first))
    direct = measure.attribute_chi2(part.merge(attrs.drop(columns="item_id"), on="parallel_id"))
    mine = got[got["strategy"] == strat].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine.drop(columns="strategy"), direct, check_dtype=False)


def test_has_discrimination_needs_two_persons_or_humans():
    from mcqa_toolkit.measure import has_discrimination

    one = pd.DataFrame({"strategy": ["S1"], "theta": [0.1]})
    two = pd.DataFrame({"strategy": ["S1", "S1"], "theta": [0.1, 0.2]})
    assert not has_discrimination(one) and has_discrimination(two) and has_discrimination(one, population=object())
