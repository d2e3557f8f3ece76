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
    assert labels == ["clean model", "1 exposure", "3 exposures", "split s0", "split s1"]
    with pytest.raises(ValueError, match="curves"):
        plots.detector_roc(curves.drop(columns="split"))


def test_flags_false_alarms_and_the_auc_table():
    models = {"s0-x3": {"exposures": 3, "recipe": {"seed": 0}, "train_loss": [1.0, 0.5, 0.2]}}
    tests = pd.DataFrame({"model": ["clean", "s0-x3", "s0-x3", "s0-x3", "clean"], "test": "key_pull",
                          "exam": ["pt2021", "pt2021", "en2021", "pt2019", "pt2019"],
                          "p_value": [0.5, 0.001, 0.002, 0.004, None]})
    flags = contamination.flag_tests(tests, models, 0.01)
    assert list(flags["exam_status"]) == ["unseen", "saw", "translation", "unseen", "unseen"]
    assert list(flags["flagged"]) == [False, True, True, True, False]
    rates = contamination.flag_summary(flags).set_index("kind")
    assert rates.loc["detection", "rate"] == 1.0 and rates.loc["detection", "exposures"] == 3
    assert rates.loc["false alarm", "n"] == 2 and rates.loc["false alarm", "flagged"] == 1   # missing p: not tested
    summary = pd.DataFrame({"exam": "pt2021", "language": "pt", "detector": ["min_k", "min_k", "key_pull", "key_pull"],
                            "exposures": [0, 3, 0, 3], "auc": [0.62, 0.9, 0.5, 0.95]})
    table = contamination.auc_table(summary, "pt2021")
    assert list(table.values.index) == ["Min-K% prob", "key pull"] and list(table.values.columns) == ["clean",
                                                                                                       "3 exposures"]
    latex = table.to_latex()
    assert r"\textbf{0.95}" in latex and r"\textbf{0.62}" not in latex    # the clean column is not ranked
    assert contamination.model_table(models)["exposures"].tolist() == [0, 3]


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
    assert set(gains["exposures"]) == {1, 3}
    di = v.tests[v.tests["test"].str.startswith("dataset_inference")]
    assert di["p_value"].isna().all() and (di["n_control"] == 0).all()   # no control exam: nothing compared
    rates = contamination.flag_summary(contamination.flag_tests(v.tests, v.models, 0.01)).set_index(["test", "kind"])
    assert not any(t.startswith("dataset_inference") for t, _ in rates.index)
    assert rates.loc[("key_pull", "false alarm"), "n"] == 1                # the clean model on pt2021
