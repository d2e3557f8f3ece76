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
