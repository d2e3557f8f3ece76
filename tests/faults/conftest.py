"""Fixtures of the fault suite (marker `faults`): the reference lookup run every kill/resume case is compared with,
and child processes that can be killed for real (faults_children). The figures collector (`figures`) is in
tests/conftest.py: the Ray pool's fault tests (tests/run/pool/test_driver.py) record theirs too."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory):
    """An uninterrupted lookup run (faults_children.lookup_job), in a child process like every run it is
    compared with: (run folder, records, summary, Min-K% table)."""
    import pandas as pd
    from faults_children import in_child, run_lookup

    from mcqa_toolkit.records.store import RunDir

    out = tmp_path_factory.mktemp("reference") / "run"
    result = in_child(run_lookup, str(out))
    assert result.exitcode == 0 and result.value == ("ok", None), result
    rd = RunDir(out)
    summary = {k: v for k, v in rd.summary().items() if k != "params"}
    return rd, rd.load(), summary, pd.read_parquet(rd.min_k_file)
