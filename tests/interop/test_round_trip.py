"""our -> tool -> our keeps every record (every question type), exports open with the tools' own readers, and
a file edited after export is refused. The sample runs in data/demo/results are the inputs."""
import json
import sys
from pathlib import Path

import pytest
from paths import REPO

from mcqa_toolkit.datasets import load
from mcqa_toolkit.interop import export_run, import_run
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.store import RunDir

RESULTS = REPO / "data" / "demo" / "results"
RUNS = [("gemma-3-270m__demo__pt__enem_1shot", "demo"), ("gemma-3-270m__demo__es__S5", "demo"),
        ("gemma-3-270m__demo__it__enem_1shot_cat", "demo"),
        ("gemma-3-270m__course_exam__en__course_generate", "course_exam")]
EEE_WHEEL = Path(sys.prefix) / "wheels" / "every_eval_ever-0.3.0-py3-none-any.whl"


@pytest.mark.parametrize("fmt", ["lm-eval", "inspect"])
@pytest.mark.parametrize("run,dataset", RUNS)
def test_round_trip_keeps_every_record(tmp_path, fmt, run, dataset):
    src = RESULTS / run
    path = export_run(fmt, src, tmp_path / "export", items=load(dataset))
    back = import_run(fmt, path, tmp_path / "back" / run)
    assert_same_records(RunDir(src).load(), back.records)
    assert back.provenance["imported_from"]["tool"] == {"lm-eval": "lm-eval", "inspect": "inspect_ai"}[fmt]
    assert back.run_dir.summary()["n_records"] == len(back.records)


def test_inspect_export_reads_back_with_read_eval_log(tmp_path):
    from inspect_ai.log import read_eval_log

    path = export_run("inspect", RESULTS / RUNS[0][0], tmp_path, items=load("demo"))
    log = read_eval_log(str(path))
    records = RunDir(RESULTS / RUNS[0][0]).load()
    assert log.status == "success" and len(log.samples) == len(records)
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(records["correct"].mean())
    s = log.samples[0]
    assert s.epoch == 1 and s.scores["choice"].answer in "ABCDE" and s.target in "ABCDE"
    # first_token records carry their letter log-probs as the output's log-probs
    assert s.output.choices[0].logprobs.content[0].top_logprobs


def test_edited_export_is_refused(tmp_path):
    path = export_run("lm-eval", RESULTS / RUNS[0][0], tmp_path / "e", items=load("demo"))
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["filtered_resps"][0][0] = "0.123"
    path.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"disagree with its mcqa payload .*; was it edited after export"):
        import_run("lm-eval", path, tmp_path / "back")


def test_reimport_is_a_no_op_and_another_source_is_refused(tmp_path):
    a = export_run("lm-eval", RESULTS / RUNS[0][0], tmp_path / "a", items=load("demo"))
    b = export_run("lm-eval", RESULTS / RUNS[1][0], tmp_path / "b", items=load("demo"))
    first = import_run("lm-eval", a, tmp_path / "run")
    again = import_run("lm-eval", a, tmp_path / "run")
    assert again.state.value == "complete"
    assert_same_records(first.records, again.records)
    with pytest.raises(ValueError, match="holds a different run"):
        import_run("lm-eval", b, tmp_path / "run")


def _eee_validator():
    """every-eval-ever's own validator. Its wheel asks Python >= 3.12 (this project supports 3.10+ and Debian 12
    has 3.11), so `make install` downloads the wheel from PyPI into <venv>/wheels instead of installing it, and
    its validator (pure Python: pydantic, which we have) is imported from there."""
    assert EEE_WHEEL.exists(), f"{EEE_WHEEL} missing: `make install` downloads every-eval-ever's wheel there"
    sys.path.insert(0, str(EEE_WHEEL))
    try:  # imported once; the wheel is not left on sys.path for the tests that follow
        from every_eval_ever.instance_level_types import InstanceLevelEvaluationLog
        from every_eval_ever.validator.validation_core import validate_instance_file
    finally:
        sys.path.remove(str(EEE_WHEEL))
    return InstanceLevelEvaluationLog, validate_instance_file


@pytest.mark.parametrize("run,dataset", RUNS)
def test_every_eval_ever_export_validates(tmp_path, run, dataset):
    model, validate = _eee_validator()
    path = export_run("eee", RESULTS / run, tmp_path, items=load(dataset))
    report = validate(path)
    assert report.valid, report.errors[:3]
    assert report.line_count == len(RunDir(RESULTS / run).load())
    rows = [model.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len({r.sample_id for r in rows}) == len(rows)


def test_eee_validator_rejects_a_broken_row(tmp_path):
    _, validate = _eee_validator()
    path = export_run("eee", RESULTS / RUNS[0][0], tmp_path, items=load("demo"))
    row = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    del row["evaluation"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert not validate(broken).valid


def test_every_tool_and_format_imports_its_reader_or_writer():
    from mcqa_toolkit.interop import EXPORTERS, IMPORTERS

    assert [f().__name__ for f in IMPORTERS.values()] == ["read_lm_eval", "read_inspect", "read_helm"]
    assert [f().__name__ for f in EXPORTERS.values()] == ["export_lm_eval", "export_inspect", "export_eee"]
    with pytest.raises(ValueError, match=r"unknown tool 'nope'; known: \['helm', 'inspect', 'lm-eval'\]"):
        import_run("nope", ".", ".")

