"""`mcqa run`: params expansion, papermill execution per combination, resume, failure reporting."""
import json

import pandas as pd
import pytest
import yaml

from paths import REPO

from mcqa_toolkit import cli
from mcqa_toolkit.cli import main
from mcqa_toolkit.resources import notebooks_dir
from mcqa_toolkit.run import grid, jobs
from mcqa_toolkit.records.results import load_results


def _params(tmp_path, model_dir, strategies, **extra):
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "out"), "models": [str(model_dir)],
                                 "datasets": [{"name": "demo"}], "languages": ["pt", "en"],
                                 "strategies": strategies, "limit": 2, "min_k": True, **extra}))
    return p


def test_expand_and_validation(tmp_path):
    params = {"models": ["m"], "datasets": ["demo", {"name": "enem", "label": "e23", "args": {"path": "x"}}],
              "languages": ["pt"], "strategies": ["S1", {"base": "S4", "shuffles": 3}], "output_dir": "o"}
    js = jobs.expand(params, base_dir=tmp_path)
    assert [j.run_dir.name for j in js] == ["m__demo__pt__S1", "m__demo__pt__S4", "m__e23__pt__S1", "m__e23__pt__S4"]
    assert js[1].parameters()["STRATEGY"] == {"base": "S4", "shuffles": 3}
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [m]\ndatasets: [demo]\nstrategies: [S1]\nshufles: 3\n")
    with pytest.raises(ValueError, match="unknown key"):
        jobs.load_params(bad)
    with pytest.raises(ValueError, match="same run folder"):
        jobs.expand({**params, "datasets": ["demo", "demo"]})


@pytest.mark.notebooks
def test_run_resume_and_failures(tmp_path, tiny_model_dir, capsys):
    p = _params(tmp_path, tiny_model_dir, [{"base": "enem_1shot", "shuffles": 2}, "S9_does_not_exist"])
    failed = grid.run_params(p, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path)
    out = capsys.readouterr().out
    assert failed == 2 and out.count("cannot start") == 2 and "unknown strategy 'S9_does_not_exist'" in out
    assert "FAILED" not in out and not list((tmp_path / "out").glob("*S9*"))   # refused before any folder
    runs = sorted((tmp_path / "out").glob("*__enem_1shot"))
    assert len(runs) == 2
    for run in runs:  # one executed notebook + results + summary per combination
        assert (run / "run_model.ipynb").exists() and (run / "records.parquet").exists()
        summary = json.loads((run / "summary.json").read_text())
        records = pd.read_parquet(run / "records.parquet")
        assert summary["n_records"] == len(records) == 4 and summary["accuracy"] == pytest.approx(
            records.groupby("item_id")["correct"].mean().mean())
        assert len(pd.read_parquet(run / "min_k.parquet")) == 2
    mtimes = [(r / "records.parquet").stat().st_mtime for r in runs]
    p2 = _params(tmp_path, tiny_model_dir, [{"base": "enem_1shot", "shuffles": 2}])
    assert grid.run_params(p2, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path) == 0
    assert "2 already complete, 0 to run" in capsys.readouterr().out
    assert [(r / "records.parquet").stat().st_mtime for r in runs] == mtimes
    assert set(load_results(tmp_path / "out")["language"]) == {"pt", "en"}


def test_cli_bad_params_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "typo.yaml"
    bad.write_text("models: [m]\ndatasets: [demo]\nstrategies: [S1]\nlanguges: [pt]\n")
    assert cli.main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcqa: error: ") and "unknown key(s) ['languges']" in err and "Traceback" not in err
    assert cli.main(["run", str(tmp_path / "missing.yaml")]) == 2
    capsys.readouterr()
    for body, message in (("models: [m]\ndatasets: [demo]\nstrategies: [S1]\nlanguages: pt\n",
                           "'languages' must be a list of language codes, got 'pt'"),  # was read as ['p', 't']
                          ("models: [m]\ndatasets: [demo]\nstrategies: [S1]\nlimit: 0\n", "'limit' must be a positive"),
                          ("models: [m]\n  datasets: [demo]\n",
                           "not valid YAML: did not find expected key at line 2, column 3"),
                          (b"models: [m\xff]\n", "not UTF-8 text (byte 10")):
        bad.write_bytes(body if isinstance(body, bytes) else body.encode())
        assert cli.main(["run", str(bad), "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"mcqa: error: {bad}: ") and message in err, err


def test_shipped_params_files_expand(tmp_path):
    """Every params file we ship is valid and expands; API model entries become backend options (no key in them)."""
    from mcqa_toolkit.resources import resource_dir

    files = sorted(resource_dir("params").glob("*.yaml"))
    assert len(files) >= 10
    for f in files:
        js = jobs.expand(jobs.load_params(f), base_dir=tmp_path)
        assert js, f.name
        for j in js:
            assert "api_key" not in j.backend_options and j.parameters()["BACKEND"] == j.backend_options
    vllm = jobs.expand(jobs.load_params(resource_dir("params") / "vllm.yaml"), base_dir=tmp_path)[0]
    assert vllm.backend_options["backend"] == "openai" and len(vllm.backend_options["base_url"]) == 2
    assert vllm.run_dir.name.startswith("gemma-3-27b-pt__enem2023__pt__")


def test_course_exam_params_expand_with_judges_and_every_question_type(tmp_path):
    from mcqa_toolkit.resources import params_file

    params = jobs.load_params(params_file("course_exam"))
    js = jobs.expand({**params, "datasets": [{"name": "course_exam", "args": {"path": "data/demo/course_exam"}}]},
                     base_dir=tmp_path)
    assert [j.run_dir.name for j in js] == ["gemma-3-270m__course_exam__en__course_generate",
                                            "gemma-3-270m__course_exam__en__course_json"]
    job = js[0]
    assert job.dataset_args["path"] == str(tmp_path / "data/demo/course_exam")  # relative to where mcqa run runs
    assert job.parameters()["JUDGES"] == ["gemma-3-270m"] and job.parameters()["JUDGE_COMBINE"] == "mean"
    items = jobs.load_items("course_exam", {}, "en")  # every question type is administered, none filtered out
    assert {it.answer_type for it in items} == {"single", "multi", "truefalse", "short"} and len(items) == 10
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [m]\ndatasets: [course_exam]\nstrategies: [S1]\njudge_combine: median\n")
    with pytest.raises(ValueError, match="judge_combine must be one of"):
        jobs.expand(jobs.load_params(bad))
    bad.write_text("models: [m]\ndatasets: [course_exam]\nstrategies: [S1]\njudges: gemma\n")
    with pytest.raises(ValueError, match="bad.yaml: 'judges' must be a list of judge models, got 'gemma'"):
        jobs.expand(jobs.load_params(bad))
    assert cli.main(["run", str(bad)]) == 2  # `mcqa: error: <file>: judges must be ...`


def test_import_and_export_commands(tmp_path, capsys):
    """`mcqa export` writes a run as an lm-eval samples file; `mcqa import` reads it back against the demo loader,
    saying what matched; bad input is one clear line."""
    src = REPO / "data" / "demo" / "results" / "gemma-3-270m__demo__pt__enem_1shot"
    assert main(["export", "lm-eval", str(src), "--out", str(tmp_path / "x"), "--dataset", "demo"]) == 0
    assert "wrote" in capsys.readouterr().out
    samples = next((tmp_path / "x").glob("samples_*.jsonl"))
    out = tmp_path / "outputs" / "gemma__demo__lm-eval"
    assert main(["import", "lm-eval", str(samples), "--out", str(out), "--dataset", "demo",
                 "--dataset-args", '{"language": "pt"}']) == 0
    said = capsys.readouterr().out
    assert "300 records of 60 items from lm-eval" in said and "unmatched: 0" in said
    assert (out / "records.parquet").exists() and (out / "items.jsonl").exists()
    assert main(["export", "eee", str(out), "--out", str(tmp_path / "eee")]) == 0   # items.jsonl: no loader needed
    assert main(["import", "lm-eval", str(samples), "--out", str(out), "--dataset-args", "{"]) == 2
    assert "--dataset-args needs --dataset" in capsys.readouterr().err
    assert main(["import", "helm", str(tmp_path / "nothing"), "--out", str(tmp_path / "h")]) == 2
    assert "nothing: no such file or folder" in capsys.readouterr().err
