"""Item-level contamination detectors (measure.contamination_items) against hand computations: the text scores on a
small table, key_pull against a record-by-record loop written again here, fit_residual against irt's EAP and 3PL
called directly, and the long frame that gathers them."""
import numpy as np
import pandas as pd
import pytest
from contamination_runs import exam, letters_records

from mcqa_toolkit import irt
from mcqa_toolkit.measure.contamination_items import (DETECTORS, contamination_scores, fit_residual, key_pull,
                                                      min_k_pp_score, min_k_score, reference_score, zlib_score)

FAM = pd.DataFrame({"model": "m", "language": "pt", "item_id": ["a", "b"], "parallel_id": ["a", "b"],
                    "n_tokens": [10, 20], "n_bytes": [40, 100], "zlib_bytes": [30, 50], "loglik_sum": [-20.0, -10.0],
                    "min_k_prob": [5.0, 3.0], "min_k_pp": [-1.0, 0.5]})


def test_text_scores_by_hand():
    assert list(min_k_score(FAM)) == [-5.0, -3.0] and list(min_k_pp_score(FAM)) == [-1.0, 0.5]
    assert list(zlib_score(FAM)) == pytest.approx([-2.0 / 30, -0.5 / 50])
    ref = FAM.assign(model="base", loglik_sum=[-40.0, -5.0])
    assert list(reference_score(FAM, ref)) == pytest.approx([-20 / 40 + 40 / 40, -10 / 100 + 5 / 100])
    assert reference_score(ref, ref).isna().all()          # the reference against itself compares nothing
    with pytest.raises(ValueError, match="one model"):
        reference_score(FAM, pd.concat([ref, FAM]))


def _key_pull_loop(records):
    """Record by record: the probability on each letter where it shows a wrong option (original order left out)."""
    sums = {}
    for r in records.itertuples():
        if list(r.permutation) == sorted(r.permutation) or r.answer < 0:
            continue
        for letter, option in enumerate(r.permutation):
            if option != r.answer:
                sums.setdefault((r.item_id, letter), []).append(r.option_probs[option])
    P = {key: np.mean(v) for key, v in sums.items()}
    keys = records.drop_duplicates("item_id").set_index("item_id")["answer"]
    p_key = {i: P.get((i, k), np.nan) for i, k in keys.items()}
    letter_mean = {L: np.nanmean([P.get((i, L), np.nan) for i in keys.index]) for L in range(5)}
    return {i: (p_key[i], p_key[i] - letter_mean[keys[i]]) for i in keys.index}


def test_key_pull_equals_a_record_by_record_loop_and_finds_the_pulled_items():
    items = exam(30)
    saw = {it.item_id for it in list(items)[:15]}
    records = letters_records(items, pull=2.0, saw=saw, shuffles=6)
    frame = key_pull(records)
    assert list(frame.columns) == ["model", "language", "item_id", "parallel_id", "answer", "n_options", "p_key",
                                   "key_pull"]
    got = frame.set_index("item_id")
    want = _key_pull_loop(records)
    for item_id, (p_key, pull) in want.items():
        assert got.loc[item_id, "p_key"] == pytest.approx(p_key) and got.loc[item_id, "key_pull"] == pytest.approx(pull)
    assert got.loc[list(saw), "key_pull"].min() > got.drop(index=list(saw))["key_pull"].max()


def test_fit_residual_equals_irt_called_directly():
    items = exam(25, seed=2)
    records = letters_records(items, skill=2.0, shuffles=4, seed=1)
    got = fit_residual(records, items).set_index("parallel_id")
    order = sorted(it.parallel_id for it in items)
    u = records.pivot(index="shuffle", columns="parallel_id", values="correct").loc[:, order].to_numpy(float)
    a, b, c = (np.array([items[f"{p}-pt"].irt[j] for p in order]) for j in range(3))
    theta = irt.ability_eap(u, a, b, c, grid=irt.normal_grid(40)[0]).theta
    expected = irt.irf(theta, a, b, c).mean(axis=0)
    np.testing.assert_allclose(got.loc[order, "expected"], expected, atol=1e-9)
    np.testing.assert_allclose(got.loc[order, "fit_residual"], u.mean(axis=0) - expected, atol=1e-9)


def test_contamination_scores_gathers_every_detector_the_tables_allow():
    items = exam(10)
    records = letters_records(items, shuffles=3)
    fam = pd.DataFrame({"model": "m", "language": "pt", "item_id": items.ids, "parallel_id": [i.parallel_id
                        for i in items], "n_tokens": 10, "n_bytes": 40, "zlib_bytes": 30, "loglik_sum": -20.0,
                        "min_k_prob": 5.0, "min_k_pp": -1.0})
    probe = fam[["model", "language", "item_id", "parallel_id"]].assign(probe_logprob=-2.0)
    long = contamination_scores(fam, probe, records, items, reference=fam.assign(model="base"))
    assert set(long["detector"]) == set(DETECTORS)
    assert list(long.columns) == ["model", "language", "item_id", "parallel_id", "detector", "score"]
    assert (long.groupby("detector").size() == 10).all()
    only_text = contamination_scores(fam)
    assert set(only_text["detector"]) == {"min_k", "min_k_pp", "zlib"}
    with pytest.raises(ValueError, match="at least one table"):
        contamination_scores()
    two = pd.concat([records, letters_records(items, shuffles=3, strategy="other").assign(shuffle=lambda d:
                                                                                              d["shuffle"] + 3)])
    with pytest.raises(ValueError, match="one strategy"):
        key_pull(two.assign(answer=np.where(two["strategy"] == "other", (two["answer"] + 1) % 5, two["answer"])))
