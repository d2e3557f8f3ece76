"""HELM import. HELM cannot be installed here (crfm-helm would replace the pinned torch), so these files are
written in HELM's documented format: the dataclasses of stanford-crfm/helm (ScenarioState, RequestState,
Instance, Reference, RequestResult, GeneratedOutput, Token; PerInstanceStats, Stat) as dataclasses.asdict
serialises them into scenario_state.json and per_instance_stats.json."""
import json

import pytest

from mcqa_toolkit.interop import import_run
from mcqa_toolkit.items import DatasetError, Item, ItemSet

ITEMS = ItemSet([Item("bio-1", "t", "e", "Which gas do plants take in?", ("O2", "CO2", "He"), 1, language="en"),
                 Item("bio-2", "t", "e", "Which organ pumps blood?", ("Heart", "Liver", "Lung"), 0, language="en")])


def _instance(iid, text, refs, key):
    return {"input": {"text": text}, "references": [{"output": {"text": r}, "tags": ["correct"] if i == key else []}
                                                    for i, r in enumerate(refs)], "split": "test", "id": iid}


def _write(folder, method, states, stats):
    folder.mkdir(parents=True)
    spec = {"method": method, "model": "openai/gpt2", "model_deployment": "huggingface/gpt2",
            "max_train_instances": 0}
    (folder / "scenario_state.json").write_text(json.dumps({"adapter_spec": spec, "request_states": states}))
    (folder / "per_instance_stats.json").write_text(json.dumps(stats))


def _stat(iid, em):
    return {"instance_id": iid, "train_trial_index": 0, "stats": [
        {"name": {"name": "exact_match", "split": "test"}, "count": 1, "sum": em, "sum_squared": em, "min": em,
         "max": em, "mean": em, "variance": 0.0, "stddev": 0.0}]}


def test_joint_multiple_choice(tmp_path):
    states = []
    for iid, text, refs, key, order, answer in (("id1", ITEMS[0].stem, ITEMS[0].options, 1, [2, 0, 1], "C"),
                                               ("id7", "Unknown question?", ("x", "y"), 0, [0, 1], "B")):
        mapping = {"ABC"[i]: refs[o] for i, o in enumerate(order)}
        states.append({"instance": _instance(iid, text, refs, key), "reference_index": None, "request_mode": None,
                       "train_trial_index": 0, "output_mapping": mapping,
                       "request": {"prompt": "...", "model": "openai/gpt2"}, "num_train_instances": 0,
                       "prompt_truncated": False, "num_conditioning_tokens": 0,
                       "result": {"success": True, "embedding": [], "completions": [{
                           "text": f" {answer}", "logprob": -0.3, "tokens": [
                               {"text": f" {answer}", "logprob": -0.3, "top_logprobs": {" A": -2.0, " B": -1.5,
                                                                                      " C": -0.3}}]}]}})
    _write(tmp_path / "run", "multiple_choice_joint", states, [_stat("id1", 1.0), _stat("id7", 0.0)])
    res = import_run("helm", tmp_path / "run", tmp_path / "out", items=ITEMS)
    rec = res.records.set_index("item_id")
    assert bool(rec.loc["bio-1", "correct"]) and list(rec.loc["bio-1", "permutation"]) == [2, 0, 1]
    assert rec.loc["bio-1", "option_scores"][1] == pytest.approx(-0.3)     # C showed our option 1 (CO2)
    assert len(res.unmatched) == 1 and res.unmatched.iloc[0]["reason"].endswith("no item with its id, year and "
                                                                                "number, or text")
    assert res.provenance["imported_from"]["tool"] == "helm" and res.provenance["model"]["model"] == "huggingface/gpt2"
    assert json.loads(rec.loc["bio-1", "extra"])["helm"] == {"exact_match": 1.0}


def test_separate_multiple_choice_scores_each_reference(tmp_path):
    states = []
    for r, lps in enumerate(([-5.0, -1.0], [-0.5], [-3.0, -3.0])):     # reference tokens after 2 prompt tokens
        states.append({"instance": _instance("id2", ITEMS[1].stem, ITEMS[1].options, 0), "reference_index": r,
                       "request_mode": "original", "train_trial_index": 0, "output_mapping": None,
                       "request": {"prompt": "..."}, "num_train_instances": 0, "prompt_truncated": False,
                       "num_conditioning_tokens": 2, "result": {"success": True, "completions": [{
                           "text": "", "logprob": -99.0, "tokens": [{"text": "p", "logprob": -9.0},
                                                                   {"text": "q", "logprob": -9.0}]
                           + [{"text": "t", "logprob": x} for x in lps]}]}})
    _write(tmp_path / "run", "multiple_choice_separate_original", states, [])
    rec = import_run("helm", tmp_path / "run", tmp_path / "out", items=ITEMS).records.iloc[0]
    assert list(rec["option_scores"]) == pytest.approx([-6.0, -0.5, -6.0])
    assert rec["choice"] == 1 and not rec["correct"] and rec["method"] == "loglik"


def test_generation_runs_are_refused_with_the_field(tmp_path):
    _write(tmp_path / "run", "generation", [], [])
    with pytest.raises(DatasetError, match="field 'method'.*only multiple-choice runs"):
        import_run("helm", tmp_path / "run", tmp_path / "out")
