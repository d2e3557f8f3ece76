"""records.identity: one shape for every maker of run folders, hashed, lower-case; the fields that differ named;
and the identity older folders recorded (the committed sample runs of `mcqa run`, run() from Python, imports) read
into it, equal to what the same run computes today."""
from __future__ import annotations

import dataclasses
import json

import pytest
from paths import REPO

from mcqa_toolkit.records.identity import RunIdentity, files_hash, recorded_identity, shots_fingerprint
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import prepare

OLD_RUNS = REPO / "tests" / "fixtures" / "old_run_folders"
BASE = RunIdentity("hf:m", "demo", "f", "h")


def test_one_shape_hashed_and_round_tripped():
    full = RunIdentity("openai:x", "enem", "f", "h", shots="s", judges=["hf:j"], judge_combine="mean", source="z")
    assert full.judges == ("hf:j",) and RunIdentity.from_dict(json.loads(json.dumps(full.to_dict()))) == full
    assert all(k == k.lower() for k in full.to_dict())
    assert len(BASE.hash) == 16 and BASE.hash == RunIdentity("hf:m", "demo", "f", "h").hash
    changed = {f.name: dataclasses.replace(BASE, **{f.name: "other"}).hash for f in dataclasses.fields(BASE)
               if f.name not in ("judges", "judge_combine")}
    assert BASE.hash not in changed.values() and len(set(changed.values())) == len(changed)
    assert RunIdentity("hf:m", "demo", "f", "h", judge_combine="mean").judge_combine == ""  # no judges: no rule
    with pytest.raises(ValueError, match="run.json: not a run identity"):
        RunIdentity.from_dict({"model": "m", "colour": "red"}, "run.json")


def test_differences_name_each_field_once_and_skip_what_a_folder_never_recorded():
    other = dataclasses.replace(BASE, strategy_hash="h2", shots="s")
    assert BASE.differences(other) == ["strategy_hash 'h' (this run: 'h2')", "shots '' (this run: 's')"]
    old = dataclasses.replace(BASE, shots=None)
    assert old.differences(other) == ["strategy_hash 'h' (this run: 'h2')"]


def test_run_folders_of_an_older_mcqa_run_read_as_the_identity_their_job_has_today():
    """`mcqa run` at 674af41 wrote the job's notebook parameters in run.json (upper-case names; the run.json files of
    two sample runs it made are kept in tests/fixtures/old_run_folders): they read as the identity
    run.recipe.prepare computes for the same job now, so such folders stay complete (and would resume)."""
    for folder in ("gemma-3-270m__demo__pt__enem_1shot", "gemma-3-270m__demo__es__S5"):
        info = json.loads((OLD_RUNS / folder / "run.json").read_text())
        job = info["job"]
        recorded = recorded_identity(info)
        assert recorded.model == "hf:gemma-3-270m" and recorded.shots is None and recorded.judges == ()
        today = prepare(Job(job["MODEL"], job["DATASET"], job["DATASET_ARGS"], job["LANGUAGE"], job["STRATEGY"],
                            OLD_RUNS / folder, seed=job["SEED"])).identity
        assert recorded.differences(today) == []
        assert (today.shots == "") is folder.endswith("S5")  # enem_1shot shows shots, S5 none


def test_run_and_import_folders_of_before_read_into_the_same_shape():
    run_info = {"model": {"backend": "hf", "model": "m", "source": "/x/m.gguf"}, "dataset": "demo",
                "dataset_fingerprint": "f", "strategy_hash": "h", "judges": [{"judge": "j", "source": "/x/j"}],
                "judge_combine": "mean"}
    from_run = recorded_identity(run_info)
    assert from_run == RunIdentity("hf:m", "demo", "f", "h", shots=None, judges=None, judge_combine=None)
    assert from_run.differences(RunIdentity("hf:m", "demo", "f", "h", "s", ("hf:j",), "mean")) == []
    files = [{"name": "samples.jsonl", "sha256": "abc"}]
    imported = recorded_identity({"import": {"source": "lm-eval", "files": files, "dataset": "demo", "model": "p",
                                             "items_fingerprint": "f"}, "strategy_hash": "h"})
    assert imported == RunIdentity("lm-eval:p", "demo", "f", "h", shots="", source=files_hash(files))


def test_shots_fingerprint_is_the_examples_shown(tmp_path):
    from mcqa_toolkit.datasets import load
    from mcqa_toolkit.run import plan_shots, strategy

    items = load("demo", language="pt")
    _, zero = plan_shots(items, strategy("S1"))
    _, one = plan_shots(items, strategy("enem_1shot"))
    _, again = plan_shots(items, strategy("enem_1shot"))
    assert shots_fingerprint(zero) == "" and shots_fingerprint(one) == shots_fingerprint(again) != ""
    _, four = plan_shots(items, strategy("enem_4shot"))
    assert shots_fingerprint(four) != shots_fingerprint(one)
