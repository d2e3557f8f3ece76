"""The command line (cli.py): a bad params file is one clear line naming the file, and `mcqa import` / `mcqa export`
round-trip a run. What `mcqa run` does is tested with its modules: params files and jobs in tests/run/test_jobs.py,
the grid's execution in tests/run/test_grid.py."""
from paths import REPO

from mcqa_toolkit import cli
from mcqa_toolkit.cli import main


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
