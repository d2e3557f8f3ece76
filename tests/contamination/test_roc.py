"""Detector validation numbers (contamination.roc): ROC AUC and the ROC curve against scikit-learn (ties
included), Hanley & McNeil's standard error against DeLong's (written again here) and the spread of simulated AUCs
(within 15%), AUC tables with label keys, accuracy by exposure against a plain pandas computation, and the gain over
the clean model."""
import numpy as np
import pandas as pd
import pytest
from contamination_runs import exam, letters_records
from sklearn.metrics import roc_auc_score, roc_curve

from mcqa_toolkit.contamination.roc import (
    accuracy_by_exposure,
    accuracy_gain,
    auc_se,
    detector_auc,
    roc_auc,
    roc_curves,
    roc_points,
)


def test_auc_and_curve_equal_scikit_learn_with_ties():
    rng = np.random.default_rng(0)
    y = rng.random(80) < 0.4
    s = np.round(rng.normal(size=80) + y, 1)          # rounded: many ties
    assert roc_auc(s, y) == pytest.approx(roc_auc_score(y, s))
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    pts = roc_points(s, y)
    np.testing.assert_allclose(pts["fpr"], fpr)
    np.testing.assert_allclose(pts["tpr"], tpr)
    with_nan = np.r_[s, np.nan]
    assert roc_auc(with_nan, np.r_[y, True]) == pytest.approx(roc_auc_score(y, s))
    assert np.isnan(roc_auc(s, np.zeros(80, bool)))


def _delong_se(s, y):
    pos, neg = s[y], s[~y]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return np.sqrt(v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg))


def test_hanley_mcneil_se_is_close_to_delong_and_to_the_spread_of_simulated_aucs():
    rng = np.random.default_rng(1)
    aucs, ses, delongs = [], [], []
    for _ in range(400):
        y = np.r_[np.ones(90, bool), np.zeros(90, bool)]
        s = rng.normal(size=180) + 1.2 * y
        a = roc_auc(s, y)
        aucs.append(a)
        ses.append(auc_se(a, 90, 90))
        delongs.append(_delong_se(s, y))
    assert np.mean(ses) == pytest.approx(np.mean(delongs), rel=0.15)
    assert np.mean(ses) == pytest.approx(np.std(aucs), rel=0.15)
    assert np.isnan(auc_se(float("nan"), 3, 3))


def _scores_and_labels():
    items = [f"p{k}" for k in range(20)]
    exposed = {f"p{k}" for k in range(0, 20, 2)}
    scores = pd.DataFrame([{"model": m, "language": "pt", "item_id": f"{i}-pt", "parallel_id": i, "detector": d,
                            "score": (1.0 if i in exposed and m == "hot" else 0.0) + k / 100}
                           for m in ("hot", "clean") for d in ("min_k", "probe") for k, i in enumerate(items)])
    labels = pd.concat([pd.DataFrame({"model": m, "parallel_id": items, "exposed": [i in exposed for i in items],
                                      "split": "s0"}) for m in ("hot", "clean")])
    return scores, labels


def test_auc_table_and_curves_group_by_the_label_keys():
    scores, labels = _scores_and_labels()
    table = detector_auc(scores, labels).set_index(["model", "detector"])
    assert list(detector_auc(scores, labels).columns) == ["model", "language", "detector", "split", "n_exposed",
                                                          "n_held_out", "auc", "se", "lo", "hi"]
    assert table.loc[("hot", "min_k"), "auc"] == 1.0 and table.loc[("hot", "min_k"), "n_exposed"] == 10
    assert table.loc[("clean", "probe"), "auc"] == pytest.approx(0.45)    # 45 of 100 pairs: even k > odd k
    curves = roc_curves(scores, labels)
    assert set(curves["split"]) == {"s0"} and curves.groupby(["model", "detector"]).size().min() == 21
    with pytest.raises(ValueError, match="no scored item has a label"):
        detector_auc(scores, labels.assign(model="other"))


def test_accuracy_by_exposure_and_gain_equal_pandas():
    items = exam(20)
    saw = {f"p{k}-pt" for k in range(10)}
    records = pd.concat([letters_records(items, model="hot", pull=3.0, saw=saw, shuffles=4),
                         letters_records(items, model="clean", shuffles=4)])
    labels = pd.concat([pd.DataFrame({"model": m, "parallel_id": [f"p{k}" for k in range(20)],
                                      "exposed": [k < 10 for k in range(20)]}) for m in ("hot", "clean")])
    acc = accuracy_by_exposure(records, labels).set_index(["model", "exposed", "order"])
    r = records.assign(exposed=records["item_id"].isin(saw), order=np.where(records["shuffle"] == 0, "original",
                                                                             "shuffled"))
    want = r.groupby(["model", "exposed", "order"])["correct"].mean()
    np.testing.assert_allclose(acc["accuracy"], want.loc[acc.index])
    assert (acc["n_items"] == 10).all()
    assert acc.loc[("hot", True, "original"), "accuracy"] == 1.0    # the pull to the published letter: right there
    gain = accuracy_gain(acc.reset_index(), "clean").set_index(["exposed", "order"])
    assert set(accuracy_gain(acc.reset_index(), "clean")["model"]) == {"hot"}
    assert gain.loc[(True, "original"), "gain"] == pytest.approx(1.0 - acc.loc[("clean", True, "original"),
                                                                                "accuracy"])
    with pytest.raises(ValueError, match="clean model 'x'"):
        accuracy_gain(acc.reset_index(), "x")
