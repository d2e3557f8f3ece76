"""Regenerate the committed sample runs in data/demo/results with today's code and run-folder layout.

    python scripts/make_sample_results.py

params/sample_results.yaml (the whole demo exam in four languages: the ENEM paper's 1-shot letter protocol, its
adaptive twin, zero-shot cloze) and params/sample_course_exam.yaml (the demo course exam, judged by the model itself)
run with `mcqa run` into a new temporary folder; the finished run folders then replace data/demo/results whole, so
no file of an older layout is left behind. Machine paths in what is committed (the executed notebooks' parameters,
the model's file in the provenance) are written as placeholders: the temporary folder as data/demo/results (where
the folders now live), the checkout as REPO, the home folder as HOME. The analysis notebooks read these runs by
default; refresh their committed headline cells afterwards (scripts/refresh_notebooks.py), and say in CHANGELOG.md
what changed in the records (scripts/compare_records.py old new).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "data" / "demo" / "results"
PARAMS = ("sample_results", "sample_course_exam")
TEXT_FILES = (".json", ".ipynb", ".jsonl")


def placeholders(text: str, results: Path) -> str:
    """`text` with the temporary results folder, the checkout and the home folder written as placeholders."""
    for prefix, name in ((str(results), "data/demo/results"), (str(REPO), "REPO"), (os.path.expanduser("~"), "HOME")):
        text = text.replace(prefix, name)
    return text


def run_grid(name: str, results: Path, work: Path) -> None:
    """`mcqa run` of params/<name>.yaml with its output_dir pointed at `results`."""
    params = yaml.safe_load((REPO / "params" / f"{name}.yaml").read_text())
    params["output_dir"] = str(results)
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    subprocess.run([sys.executable, "-m", "mcqa_toolkit.cli", "run", str(path)], cwd=REPO, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sample_results_") as tmp:
        work = Path(tmp)
        results = work / "results"
        for name in PARAMS:
            run_grid(name, results, work)
        for path in results.rglob("*"):
            if path.is_file() and path.suffix in TEXT_FILES:
                path.write_text(placeholders(path.read_text(encoding="utf-8"), results), encoding="utf-8")
        shutil.rmtree(results / "_report", ignore_errors=True)
        shutil.rmtree(TARGET, ignore_errors=True)
        shutil.copytree(results, TARGET, ignore=shutil.ignore_patterns("records.jsonl", "*.lock", ".*"))
    print(f"sample runs written to {TARGET.relative_to(REPO)}: {sorted(p.name for p in TARGET.iterdir())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
