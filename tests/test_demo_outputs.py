"""The README's first command as CI runs it (.ci/run: `make demo` on a clean checkout, then `make test` with
MCQA_DEMO_CHECK=1): the demo wrote its results page, figures and LaTeX tables where the README says, every run of
params/demo.yaml is complete, each report notebook wrote its headline, and nothing tracked changed nor appeared
outside the ignored output folders. Skipped unless MCQA_DEMO_CHECK is set: a developer's `make test` does not run
the demo first."""
from __future__ import annotations

import os
import subprocess

import pytest
from paths import REPO

from mcqa_toolkit.cli import REPORT_NOTEBOOKS
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run.jobs import expand, load_params

pytestmark = pytest.mark.skipif(not os.environ.get("MCQA_DEMO_CHECK"), reason="set by .ci/run after `make demo`")


def test_the_demo_wrote_its_page_figures_and_tables():
    assert (REPO / "outputs" / "demo" / "report.html").stat().st_size > 100_000   # figures embedded
    assert len(list((REPO / "figures" / "demo").glob("*.png"))) >= 10
    assert len(list((REPO / "latex" / "demo").glob("*.tex"))) >= 5
    for name in REPORT_NOTEBOOKS:
        assert (REPO / "latex" / "demo" / f"{name.removesuffix('.ipynb')}_headline.json").exists(), name


def test_every_demo_run_is_complete():
    params = load_params(REPO / "params" / "demo.yaml")
    runs = [RunDir(job.run_dir) for job in expand(params, REPO)]
    unfinished = [r.name for r in runs if not (r.is_complete() and r.summary_file.exists())]
    assert runs and not unfinished


def test_the_demo_changed_nothing_tracked_and_left_nothing_outside_its_folders():
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, text=True,
                            capture_output=True, check=True).stdout
    assert status == ""
