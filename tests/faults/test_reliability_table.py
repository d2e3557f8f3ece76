"""docs/reliability.md is the fault suite's own output (scripts/reliability_table.py): every fault of the suite
has its row there, with its test, and the page is rendered from figures, never typed."""
from __future__ import annotations

import importlib.util

import pytest
from fault_figures import FAULTS, merged
from paths import REPO

pytestmark = pytest.mark.faults


def _script():
    spec = importlib.util.spec_from_file_location("reliability_table", REPO / "scripts" / "reliability_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_table_lists_every_fault_and_its_test():
    doc = (REPO / "docs" / "reliability.md").read_text()
    assert doc.startswith(_script().HEADER)
    rows = [line for line in doc.splitlines() if line.startswith("| ") and "`tests/faults/" in line]
    assert len(rows) == len(FAULTS)
    for fault, row in zip(FAULTS.values(), rows):
        assert row.startswith(f"| {fault.fault} | {fault.guarantee} | `{fault.test}` | ")
        module, test = fault.test.split("::")
        assert (REPO / module).exists() and f"def {test}(" in (REPO / module).read_text()


def test_the_table_is_rendered_from_the_figures():
    figures = {key: [{"cases": 1}] for key in FAULTS}
    figures["kill_points"] = [{"kill_points": 40, "events_per_run": 9}]
    figures["fuzz_loaders"] = [{"formats": 1, "fuzzed_inputs": 200}, {"formats": 1, "fuzzed_inputs": 200}]
    figures["memory"] = [{"peak_rss_mb": 420, "items": 14042}]
    page = _script().render(figures, 123.4)
    assert "kill points survived: 40, fuzzed inputs: 400, peak RSS of the MMLU-sized run: 420 MB" in page
    assert "formats 2; fuzzed inputs 400" in page and "took 123 s" in page
    assert merged([{"peak_rss_mb": 3, "n": 1}, {"peak_rss_mb": 2, "n": 2}]) == {"peak_rss_mb": 3, "n": 3}
    with pytest.raises(SystemExit, match="no figures for"):
        _script().render({}, 1.0)
