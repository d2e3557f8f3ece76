"""The contamination validation's raw results from the audits of models whose training is known: every detector's
item scores, the accuracies by exposure, the model-level tests (key pull, person fit, dataset inference of a suspect
exam against a control exam) and the probe's exact matches. studies/contamination_validation.py --collect writes
them to results/studies/contamination; report.contamination reads them back for notebooks/contamination_validation and
docs/contamination.md.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from mcqa_toolkit.contamination.detectors import contamination_scores
from mcqa_toolkit.contamination.model_tests import dataset_inference, key_pull_test, person_fit_test
from mcqa_toolkit.contamination.roc import accuracy_by_exposure
from mcqa_toolkit.items import ItemSet

__all__ = ["validation_results", "inference_tests", "add_results"]


def validation_results(audits: Mapping[tuple[str, str], Any], items: Mapping[str, ItemSet], labels: pd.DataFrame,
                       controls: Mapping[str, str], reference: str = "clean", n_perm: int = 9999,
                       detectors: tuple[str, ...] = ("min_k_pp", "min_k", "zlib", "reference"),
                       references: Mapping[str, pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """The raw results' frames (scores, accuracy, tests, probe) from the audits: {(model, exam): an object with
    familiarity, probe and records (contamination.audit.Audit; None where not measured)}; `items` per exam;
    `controls`: suspect exam -> control exam of the dataset-inference tests (`inference_tests`); `reference`: the
    model whose familiarity is the reference ratio's (on the same exam), or `references`: its familiarity per exam
    (when that model's audit is not among `audits`)."""
    scores, accuracy, tests, probes = [], [], [], []
    for (_, exam), a in audits.items():
        ref = (references or {}).get(exam)
        if ref is None and (reference, exam) in audits:
            ref = audits[(reference, exam)].familiarity
        s = contamination_scores(a.familiarity, a.probe, a.records, items[exam], reference=ref)
        scores.append(s.assign(exam=exam))
        if a.probe is not None:
            probes.append(a.probe[["model", "item_id", "parallel_id", "hidden", "exact", "rouge_l"]].assign(exam=exam))
        if a.records is not None:
            if a.records["parallel_id"].isin(labels["parallel_id"]).any():   # an exam with exposed items
                accuracy.append(accuracy_by_exposure(a.records, labels).assign(exam=exam))
            tests.append(key_pull_test(a.records, n_perm).assign(exam=exam, test="key_pull"))
            tests.append(person_fit_test(a.records, items[exam]).assign(exam=exam, test="person_fit"))
    scores = pd.concat(scores, ignore_index=True)
    if controls:
        tests.append(inference_tests(scores, controls, detectors))
    probe_columns = ["model", "item_id", "parallel_id", "hidden", "exact", "rouge_l", "exam"]
    return {"scores": scores, "accuracy": _concat(accuracy, ["model", "language", "order", "exposed", "exam"]),
            "tests": _concat(tests, ["model", "p_value", "exam", "test"]), "probe": _concat(probes, probe_columns)}


def inference_tests(scores: pd.DataFrame, controls: Mapping[str, str], detectors: tuple[str, ...]) -> pd.DataFrame:
    """Dataset inference of every model with scores on both exams, per suspect exam -> control exam of `controls`
    and detector: the rows of `dataset_inference` with exam (the suspect), test (dataset_inference_<detector>)
    and control."""
    out = []
    for suspect, control in controls.items():
        for detector in detectors:
            di = dataset_inference(scores[scores["exam"] == suspect], scores[scores["exam"] == control], detector)
            out.append(di.assign(exam=suspect, test=f"dataset_inference_{detector}", control=control))
    return pd.concat(out, ignore_index=True)


def add_results(old: Mapping[str, pd.DataFrame], new: Mapping[str, pd.DataFrame], controls: Mapping[str, str],
                detectors: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    """Committed raw results (`old`) with `new` ones (validation_results of audits `old` lacks) under them: old
    rows first and unchanged, then the new rows; the dataset-inference tests over all the scores, those `old` holds
    kept as they are (ValueError when computing them again gives another p-value) and the others added."""
    frames = {f: pd.concat([x for x in (old.get(f), new.get(f)) if x is not None and len(x)], ignore_index=True)
              for f in ("scores", "accuracy", "probe", "tests")}
    tests, inference = frames["tests"], inference_tests(frames["scores"], controls, detectors)
    key = ["model", "exam", "test"]
    there = (inference.merge(tests[key].drop_duplicates(), on=key, how="left", indicator=True)["_merge"]
             == "both").to_numpy()
    again = inference[there].merge(tests, on=key, suffixes=("", "_committed"))
    if not (again["p_value"].fillna(-1) == again["p_value_committed"].fillna(-1)).all():
        raise ValueError("dataset inference on the committed scores differs from the committed tests")
    frames["tests"] = pd.concat([tests, inference[~there]], ignore_index=True)
    return frames


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """The frames one under the other; none (a partial validation: e.g. no probe was run): an empty frame with
    the columns the report reads."""
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
