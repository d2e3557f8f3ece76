"""The contamination validation's report (report.contamination, plots.detector_roc) on raw results of simulated
audits (tests/contamination_runs.write_validation): the ROC figure passes the house checks; flags, false alarms and
the AUC table's rules on hand-made frames; missing raw results are named; a partial validation (one exam, no
probe, no control) is reported as far as it goes."""
import pandas as pd
import pytest
from contamination_runs import write_validation
from figure_checks import _check_figure

from mcqa_toolkit.contamination import accuracy_gain, detector_auc, roc_curves
from mcqa_toolkit.report import contamination, plots


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    return write_validation(tmp_path_factory.mktemp("validation"))


def test_roc_figure_has_a_panel_per_detector(validation):
    v = contamination.load_validation(validation)
    curves = contamination.with_models(roc_curves(v.scores, v.labels, by=("model", "exam", "language",
                                                                                  "detector")), v.models)
    fig = plots.detector_roc(curves[curves["exam"] == "pt2021"])
    _check_figure(fig, 7)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["clean model", "1 exposure", "3 exposures", "controls (2)", "split s0", "split s1"]
    with pytest.raises(ValueError, match="curves"):
        plots.detector_roc(curves.drop(columns="split"))


def test_flags_false_alarms_and_the_auc_table():
    models = {"s0-x3": {"exposures": 3, "recipe": {"seed": 0}, "train_loss": [1.0, 0.5, 0.2]},
              "c0-x3": {"kind": "control", "exposures": 3, "recipe": {"seed": 0}, "train_loss": [1.0, 0.9, 0.8]}}
    tests = pd.DataFrame({"model": ["clean", "s0-x3", "s0-x3", "s0-x3", "clean", "c0-x3", "c0-x3"],
                          "test": "key_pull", "exam": ["pt2021", "pt2021", "en2021", "pt2019", "pt2019", "pt2021",
                                                       "pt2019"],
                          "p_value": [0.5, 0.001, 0.002, 0.004, None, 0.003, 0.2]})
    flags = contamination.flag_tests(tests, models, 0.01)
    assert list(flags["exam_status"]) == ["unseen", "saw", "translation", "unseen", "unseen", "unseen", "unseen"]
    assert list(flags["flagged"]) == [False, True, True, True, False, True, False]
    assert list(flags["clean_model"]) == [True, False, False, False, False, True, False]
    rates = contamination.flag_summary(flags).set_index("kind")
    assert rates.loc["detection", "rate"] == 1.0 and rates.loc["detection", "exposures"] == 3
    assert rates.loc["false alarm", "n"] == 4 and rates.loc["false alarm", "flagged"] == 2   # missing p: not tested
    assert rates.loc["clean models", ["n", "n_controls", "flagged"]].tolist() == [2, 1, 1]   # on pt2021 only
    summary = pd.DataFrame({"exam": "pt2021", "language": "pt", "detector": ["min_k"] * 3 + ["key_pull"] * 3,
                            "kind": ["clean", "contaminated", "control"] * 2, "exposures": [0, 3, 3] * 2,
                            "auc": [0.62, 0.9, 0.97, 0.5, 0.95, 0.4]})
    table = contamination.auc_table(summary, "pt2021")
    assert list(table.values.index) == ["Min-K% prob", "key pull"]
    assert list(table.values.columns) == ["clean", "3 exposures", "controls (3 exposures)"]
    latex = table.to_latex()
    assert r"\textbf{0.95}" in latex and r"\textbf{0.62}" not in latex    # the clean column is not ranked
    assert r"\textbf{0.97}" not in latex                                  # nor are the controls
    assert contamination.model_table(models)["exposures"].tolist() == [0, 3, 3]
    assert contamination.model_table(models)["kind"].tolist() == ["clean", "contaminated", "control"]


def test_models_audited_counts_the_models_behind_each_figure():
    models = {"s0-x3": {"exposures": 3, "recipe": {"seed": 0}, "train_loss": [0.2]},
              "s1-x3": {"exposures": 3, "recipe": {"seed": 1}, "train_loss": [0.2]},
              "s0-x10": {"exposures": 10, "recipe": {"seed": 0}, "train_loss": [0.1]},
              "c0-x3": {"kind": "control", "exposures": 3, "recipe": {"seed": 0}, "train_loss": [0.8]},
              "c1-x3": {"kind": "control", "exposures": 3, "recipe": {"seed": 1}, "train_loss": [0.8]}}
    audited = {"pt2021": ["clean", "s0-x3", "s1-x3", "s0-x10", "c0-x3"], "pt2019": ["clean", "s0-x3", "c1-x3"]}
    scores = pd.DataFrame([{"model": m, "exam": exam, "item_id": i, "detector": d, "score": 0.0}
                           for exam, ms in audited.items() for m in ms for i in ("q1", "q2")
                           for d in ("min_k", "zlib")])
    assert contamination.models_audited(scores, models, "pt2021") == {"clean / 0": 1, "contaminated / 3": 2,
                                                                      "contaminated / 10": 1, "control / 3": 1}
    assert contamination.models_audited(scores, models, "pt2019") == {"clean / 0": 1, "contaminated / 3": 1,
                                                                      "control / 3": 1}
    assert contamination.models_audited(scores, models, "en2021") == {}


def test_missing_raw_results_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="scores.parquet"):
        contamination.load_validation(tmp_path)


def test_a_partial_validation_reports_what_it_measured(tmp_path):
    v = contamination.load_validation(write_validation(tmp_path, partial=True))
    assert set(v.scores["exam"]) == {"pt2021"} and v.probe.empty and "probe" not in set(v.scores["detector"])
    summary = contamination.auc_summary(detector_auc(v.scores, v.labels, by=("model", "exam", "language",
                                                                                     "detector")), v.models)
    assert contamination.auc_table(summary, "pt2021").values.shape[0] == summary["detector"].nunique()
    assert contamination.probe_rates(v.probe, v.labels, v.models).empty
    gains = contamination.gain_summary(accuracy_gain(v.accuracy, "clean"), v.models)
    assert set(gains["exposures"]) == {1, 3} and set(gains["kind"]) == {"contaminated", "control"}
    di = v.tests[v.tests["test"].str.startswith("dataset_inference")]
    assert di["p_value"].isna().all() and (di["n_control"] == 0).all()   # no control exam: nothing compared
    rates = contamination.flag_summary(contamination.flag_tests(v.tests, v.models, 0.01)).set_index(["test", "kind"])
    assert not any(t.startswith("dataset_inference") for t, _ in rates.index)
    assert rates.loc[("key_pull", "false alarm"), "n"] == 3                # the clean model and controls, pt2021
    assert rates.loc[("key_pull", "clean models"), "n_controls"] == 2


def test_the_false_alarm_bound_is_clopper_pearson():
    """The one-sided 95% upper bound of a rate seen as k of n, against two independent forms of the exact
    (Clopper-Pearson) bound: 1 - 0.05^(1/n) for k = 0 (the 'rule of three' is its approximation, 3/n), the Beta
    distribution's 95% quantile with k + 1 and n - k for 0 < k < n; 1 when every model was flagged. Tolerance 1e-9."""
    from scipy.stats import beta

    for n in (1, 3, 6, 10, 40):
        assert contamination.rate_upper_bound(0, n) == pytest.approx(1 - 0.05 ** (1 / n), abs=1e-9)
        for k in range(1, n):
            assert contamination.rate_upper_bound(k, n) == pytest.approx(beta.ppf(0.95, k + 1, n - k), abs=1e-9)
        assert contamination.rate_upper_bound(n, n) == 1.0
    assert contamination.rate_upper_bound(0, 6) == pytest.approx(0.393, abs=1e-3)
