"""The validation's raw results from audits (contamination.validation.validation_results) against the detectors and
tests called directly on simulated audits: every audit's scores (the reference ratio against the clean model on the
same exam), key pull and person fit per model x exam, dataset inference of the suspect exam against its control,
accuracies only where items are labelled, empty frames with the report's columns where nothing was measured, and new
results added to committed ones without rewriting a row."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from contamination_runs import exam, familiarity_frame, letters_records

from mcqa_toolkit.contamination.detectors import contamination_scores
from mcqa_toolkit.contamination.model_tests import dataset_inference, key_pull_test, person_fit_test
from mcqa_toolkit.contamination.validation import add_results, validation_results


@pytest.fixture(scope="module")
def simulated():
    rng = np.random.default_rng(4)
    exams = {"pt2021": exam(20, seed=1), "pt2019": exam(20, seed=2)}
    exams["pt2019"] = exams["pt2019"].__class__([it.with_(item_id=f"q{k}-pt", parallel_id=f"q{k}")
                                                 for k, it in enumerate(exams["pt2019"])])
    seen = set(exams["pt2021"].ids[:10])
    audits = {}
    for model, signal in (("clean", 0.0), ("s0-x3", 2.0)):
        for name, items in exams.items():
            hot = seen if name == "pt2021" else set()
            probe = pd.DataFrame({"model": model, "language": "pt", "item_id": items.ids,
                                  "parallel_id": [it.parallel_id for it in items], "hidden": 1, "exact": False,
                                  "rouge_l": 0.5, "probe_logprob": rng.normal(-3, 1, len(items))})
            audits[(model, name)] = SimpleNamespace(
                records=letters_records(items, model=model, pull=signal, saw=hot, shuffles=4, seed=len(audits)),
                familiarity=familiarity_frame(items, model, hot, signal, rng),
                probe=probe if name == "pt2021" else None)
    labels = pd.concat([pd.DataFrame({"model": m, "parallel_id": [it.parallel_id for it in exams["pt2021"]],
                                      "split": "s0", "exposed": [it.item_id in seen for it in exams["pt2021"]]})
                        for m in ("clean", "s0-x3")], ignore_index=True)   # the clean model under the split
    return audits, exams, labels


def test_results_equal_the_detectors_and_tests_called_directly(simulated):
    audits, exams, labels = simulated
    got = validation_results(audits, exams, labels, {"pt2021": "pt2019"}, n_perm=99)
    for (model, name), a in audits.items():
        want = contamination_scores(a.familiarity, a.probe, a.records, exams[name],
                                    reference=audits[("clean", name)].familiarity)
        mine = got["scores"][(got["scores"]["model"] == model) & (got["scores"]["exam"] == name)]
        pd.testing.assert_frame_equal(mine.drop(columns="exam").reset_index(drop=True), want)
        t = got["tests"][(got["tests"]["model"] == model) & (got["tests"]["exam"] == name)].set_index("test")
        assert t.loc["key_pull", "p_value"] == key_pull_test(a.records, 99)["p_value"].iloc[0]
        assert t.loc["person_fit", "p_value"] == person_fit_test(a.records, exams[name])["p_value"].iloc[0]
    s = got["scores"]
    for detector in ("min_k", "min_k_pp", "reference"):
        want = dataset_inference(s[s["exam"] == "pt2021"], s[s["exam"] == "pt2019"], detector)
        t = got["tests"][got["tests"]["test"] == f"dataset_inference_{detector}"]
        assert (t["control"] == "pt2019").all() and (t["exam"] == "pt2021").all()
        np.testing.assert_array_equal(t["p_value"].to_numpy(), want["p_value"].to_numpy())
    di = got["tests"][got["tests"]["test"] == "dataset_inference_min_k"].set_index("model")["p_value"]
    assert di["s0-x3"] < 0.01 < di["clean"]                       # the simulated signal is found, and only there
    assert set(got["accuracy"]["exam"]) == {"pt2021"}             # the control exam has no labelled item
    assert set(got["probe"]["exam"]) == {"pt2021"} and len(got["probe"]) == 2 * 20


def test_nothing_measured_gives_empty_frames_with_the_report_columns(simulated):
    audits, exams, labels = simulated
    only_text = {k: SimpleNamespace(records=None, familiarity=a.familiarity, probe=None) for k, a in audits.items()}
    got = validation_results(only_text, exams, labels, {}, n_perm=9)
    assert got["accuracy"].empty and list(got["accuracy"].columns) == ["model", "language", "order", "exposed", "exam"]
    assert got["tests"].empty and {"model", "p_value", "exam", "test"} <= set(got["tests"].columns)
    assert got["probe"].empty and set(got["scores"]["detector"]) == {"min_k", "min_k_pp", "zlib", "reference"}


def test_add_results_keeps_the_committed_rows_and_adds_the_new_models_tests(simulated):
    audits, exams, labels = simulated
    refs = {exam: audits[("clean", exam)].familiarity for exam in exams}
    old = validation_results({k: a for k, a in audits.items() if k[0] == "clean"}, exams, labels,
                             {"pt2021": "pt2019"}, n_perm=99, references=refs)
    new = validation_results({k: a for k, a in audits.items() if k[0] != "clean"}, exams, labels, {}, n_perm=99,
                             references=refs)
    got = add_results(old, new, {"pt2021": "pt2019"}, ("min_k", "zlib"))
    for name in ("scores", "accuracy", "probe", "tests"):
        pd.testing.assert_frame_equal(got[name].iloc[:len(old[name])], old[name], check_dtype=False)
    di = got["tests"][got["tests"]["test"].str.startswith("dataset_inference")]
    assert sorted(zip(di["model"], di["test"], strict=True)) == sorted(
        [("clean", f"dataset_inference_{d}") for d in ("min_k", "min_k_pp", "zlib", "reference")]   # committed
        + [("s0-x3", "dataset_inference_min_k"), ("s0-x3", "dataset_inference_zlib")])               # added
    whole = validation_results(audits, exams, labels, {"pt2021": "pt2019"}, n_perm=99,
                               detectors=("min_k", "zlib"), references=refs)["tests"]
    mine = di[di["model"] == "s0-x3"].set_index("test")["p_value"]
    assert mine.to_dict() == whole[whole["model"] == "s0-x3"].dropna(subset=["control"]).set_index("test")[
        "p_value"].to_dict()
    tampered = {**old, "tests": old["tests"].assign(p_value=old["tests"]["p_value"] * 0.5)}
    with pytest.raises(ValueError, match="differs from the committed tests"):
        add_results(tampered, new, {"pt2021": "pt2019"}, ("min_k",))
