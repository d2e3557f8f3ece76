"""Memory under load: an MMLU-sized run (14,042 items x 4 options, log-likelihoods, lookup-table backend) in a
fresh process stays under 1.5 GB peak RSS: records stream to disk block by block (tests/faults/memory_run.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

pytestmark = pytest.mark.faults
ITEMS = 14_042     # MMLU's test split
LIMIT_MB = 1536    # 1.5 GB


def test_mmlu_sized_run_stays_under_the_memory_bound(tmp_path, figures):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("memory_run.py")), str(tmp_path), str(ITEMS)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["items"] == got["records"] == got["jsonl_lines"] == ITEMS
    assert got["peak_rss_mb"] < LIMIT_MB, got
    figures.add("memory", items=ITEMS, options=4, peak_rss_mb=round(got["peak_rss_mb"]),
                peak_run_seconds=round(got["seconds"], 1))
