"""run.preflight: every combination of a params file is checked without a model before any work; `mcqa run`
(and --dry-run) refuse those that cannot start with one line each, before any kernel or run folder, and exit 2
when none can start. (Before: --dry-run listed "would run gemma-3-270m__demo__xx__enem_9shot" and the real run
failed inside the notebook, leaving a folder behind.)"""
import dataclasses

import yaml

from mcqa_toolkit import cli
from mcqa_toolkit.run.jobs import Job, expand
from mcqa_toolkit.run.preflight import preflight
from mcqa_toolkit.run.recipe import prepare


def _job(tmp_path, **kw):
    fields = dict(model="m", dataset="demo", dataset_args={"per_subject": 2}, language="pt", strategy="S5",
                  run_dir=tmp_path / "r")
    return Job(**{**fields, **kw})


def test_each_reason_is_one_line(tmp_path):
    jobs = [_job(tmp_path),
            _job(tmp_path, strategy="enem_9shot"),
            _job(tmp_path, language="xx"),
            _job(tmp_path, dataset="medicina", dataset_args={"path": str(tmp_path / "missing.jsonl")}),
            _job(tmp_path, strategy={"base": "enem_4shot", "shots": 9}),
            _job(tmp_path, strategy="enem_1shot", shot_pool={"name": "demo", "args": {"language": "pt"}},
                 language="en")]
    ok, refused, _ = preflight(jobs)
    assert ok == [jobs[0]]
    reasons = dict((j.strategy if isinstance(j.strategy, str) else "9 shots", why) for j, why in refused)
    assert "unknown strategy 'enem_9shot'" in reasons["enem_9shot"]
    assert "language 'xx' not in the demo exam" in [why for j, why in refused if j.language == "xx"][0]
    assert "missing.jsonl" in [why for j, why in refused if j.dataset == "medicina"][0]
    assert "rule 'easiest' with k=9 needs 9 subjects" in reasons["9 shots"]
    assert "shot_pool:" in reasons["enem_1shot"]
    assert all("\n" not in why for _, why in refused)


def test_each_dataset_is_loaded_once(tmp_path, monkeypatch):
    from mcqa_toolkit.run import preflight as module

    calls = []
    real = module.load_items
    monkeypatch.setattr(module, "load_items", lambda *a: calls.append(a) or real(*a))
    jobs = [_job(tmp_path, strategy=s) for s in ("S1", "S5", "enem_1shot")]
    ok, refused, identities = preflight(jobs)
    assert len(ok) == 3 and not refused and len(calls) == 1
    assert identities == {j.run_dir.name: prepare(j).identity for j in jobs}   # the run's own identity


def test_a_shot_pool_from_an_earlier_exam_plans(tmp_path):
    """A params file names a shot pool (datasets[].shot_pool): relative paths resolve like the dataset's."""
    params = {"models": ["m"], "datasets": [{"name": "demo", "args": {"per_subject": 2},
                                             "shot_pool": {"name": "demo", "args": {"per_subject": 1}}}],
              "languages": ["pt"], "strategies": ["enem_4shot"], "output_dir": "o"}
    (job,) = expand(params, base_dir=tmp_path)
    assert job.shot_pool == {"name": "demo", "args": {"per_subject": 1}}
    ok, refused, identities = preflight([job])
    assert ok == [job] and not refused
    own = prepare(dataclasses.replace(job, shot_pool=None)).identity   # shots from the exam itself
    assert identities[job.run_dir.name].shots not in ("", own.shots)   # the identity says where the shots came from


def test_cli_refuses_before_any_folder_and_exits_2_when_none_can_start(tmp_path, capsys):
    p = tmp_path / "p.yaml"
    out = tmp_path / "out"
    p.write_text(yaml.safe_dump({"output_dir": str(out), "models": ["gemma-3-270m"],
                                 "datasets": [{"name": "demo", "args": {"per_subject": 2}}],
                                 "languages": ["xx", "pt"], "strategies": ["enem_9shot", "S5"]}))
    assert cli.main(["run", str(p), "--dry-run"]) == 1
    text = capsys.readouterr().out
    assert text.count("  cannot start ") == 3 and "would run gemma-3-270m__demo__pt__S5" in text
    assert "would run gemma-3-270m__demo__xx" not in text and not out.exists()
    p.write_text(yaml.safe_dump({"output_dir": str(out), "models": ["gemma-3-270m"], "datasets": ["demo"],
                                 "languages": ["xx"], "strategies": ["enem_9shot"]}))
    assert cli.main(["run", str(p)]) == 2
    captured = capsys.readouterr()
    assert "cannot start gemma-3-270m__demo__xx__enem_9shot" in captured.out
    assert "none of its 1 combinations can start" in captured.err and not out.exists()
