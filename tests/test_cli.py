"""The command line (cli.py): a bad params file is one clear line naming the file, and `mcqa import` / `mcqa export`
round-trip a run, and an ENEM exam run from a folder outside the repository is reported from its run folders alone.
What `mcqa run` does is tested with its modules: params files and jobs in tests/run/test_jobs.py, the grid's
execution in tests/run/test_grid.py."""
import json
import shutil

import pytest
import yaml
from paths import REPO, SHARED

from mcqa_toolkit import cli
from mcqa_toolkit.cli import main
from mcqa_toolkit.records.dataset import run_dataset
from mcqa_toolkit.records.store import RunDir


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


def test_contaminate_command(tiny_model_dir, tmp_path, capsys):
    """`mcqa contaminate` exposes a seeded share of each subject (or the ids of a file) and writes one model folder
    per exposure count with its manifest; a bad argument is one clear line."""
    from mcqa_toolkit.backends.hf.manifest import read_manifest
    from mcqa_toolkit.datasets import load
    from mcqa_toolkit.prompts.solved_page import exposure_split

    args = ["contaminate", str(tiny_model_dir), "--dataset", "demo", "--dataset-args", '{"language": "pt"}',
            "--exposures", "1", "--lr", "1e-3", "--seed", "2"]
    assert main([*args, "--fraction", "0.1", "--out", str(tmp_path / "some")]) == 0
    said = capsys.readouterr().out
    assert f"{tmp_path / 'some' / 'x1'}: 6 of 66 items, 1 exposure(s)" in said    # one of the 11 of each subject
    manifest = read_manifest(tmp_path / "some" / "x1")
    assert manifest["items"]["exposed"] == exposure_split(load("demo", language="pt"), 0.1, 2)[0]
    assert manifest["recipe"]["lr"] == 1e-3 and manifest["recipe"]["seed"] == 2
    (tmp_path / "ids.txt").write_text("demo-bio-01-pt\n\ndemo-che-02-pt\n")
    assert main([*args, "--exposed", str(tmp_path / "ids.txt"), "--out", str(tmp_path / "two")]) == 0
    assert read_manifest(tmp_path / "two" / "x1")["items"]["exposed"] == ["demo-bio-01-pt", "demo-che-02-pt"]
    (tmp_path / "ids.txt").write_text("nope\n")
    assert main([*args, "--exposed", str(tmp_path / "ids.txt"), "--out", str(tmp_path / "bad")]) == 2
    assert "exposed item(s) not in the items: ['nope']" in capsys.readouterr().err
EXAMS, INEP = SHARED / "reference" / "enem_exams" / "pt-br", SHARED / "reference" / "enem_inep"


@pytest.mark.notebooks
@pytest.mark.skipif(not (EXAMS / "ENEM_2021_MT_CO_PROVA_906.csv").exists(),
                    reason="../shared/reference/enem_exams is not beside this checkout")
def test_an_enem_exam_from_a_folder_outside_the_repository_is_reported_from_its_run_folders(tmp_path, tiny_model_dir,
                                                                                          monkeypatch):
    """A params file runs a real ENEM exam (2021 MT, INEP's item file) from a folder outside the repository; then
    `mcqa report --runs DIR --html` with no dataset option, the exam's files deleted first, writes the tables and
    the page with the IRT figures: the run folder carries its dataset and items (records.store, records.dataset)."""
    exam, inep = tmp_path / "my exams" / "enem_2021", tmp_path / "inep"
    exam.mkdir(parents=True)
    inep.mkdir()
    shutil.copy(EXAMS / "ENEM_2021_MT_CO_PROVA_906.csv", exam)
    shutil.copy(INEP / "ITENS_PROVA_2021.csv", inep)
    out, figures, latex = tmp_path / "out", tmp_path / "figures", tmp_path / "latex"
    params = tmp_path / "enem.yaml"
    params.write_text(yaml.safe_dump({
        "output_dir": str(out), "models": [str(tiny_model_dir)], "languages": ["pt"], "limit": 6, "min_k": False,
        "datasets": [{"name": "enem", "args": {"path": str(exam), "item_params": str(inep / "ITENS_PROVA_2021.csv")}}],
        "strategies": [{"base": "enem_1shot", "shuffles": 2}]}))
    assert main(["run", str(params)]) == 0
    (run,) = [RunDir(d) for d in out.iterdir()]
    dataset = run_dataset(run)
    assert (dataset.name, dataset.args["path"], dataset.language) == ("enem", str(exam), "pt")
    assert len(run.items()) == 45 and sum(it.irt is not None for it in run.items()) >= 40
    shutil.rmtree(tmp_path / "my exams")
    shutil.rmtree(inep)
    monkeypatch.setattr(cli, "REPORT_NOTEBOOKS", ("10_tables.ipynb", "11_irt.ipynb"))   # the tables and IRT figures
    assert main(["report", "--runs", str(out), "--figures", str(figures), "--latex", str(latex), "--html"]) == 0
    assert {"accuracy_by_strategy.tex", "irt_summary.tex", "irt_theta_ci.tex"} <= {p.name for p in latex.glob("*.tex")}
    irt = json.loads((latex / "11_irt_headline.json").read_text())
    assert irt["has_irt"] and irt["n_persons"] == 2 and irt["theta_mean"]
    drawn = {p.stem for p in figures.glob("irt_fig*.png")}
    assert {"irt_fig2_response_patterns", "irt_fig4_information_theta"} <= drawn
    page = (out / "report.html").read_text()
    assert all(name in page for name in drawn) and page.count("data:image/png;base64,") >= len(drawn)
