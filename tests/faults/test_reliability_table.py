"""docs/reliability.md is results/tests/reliability.json rendered (scripts/reliability_table.py), and that JSON is
what the fault suite measured: the committed page must equal the committed JSON rendered, character for character, so a
figure typed or left over in the page fails here. Cheap checks (no fault is injected, the suite is not re-run):
they run in the `unit` tier, outside the `faults` run that rewrites both files."""
from __future__ import annotations

import copy
import importlib.util
import json

import pytest
from fault_figures import ENV, FAULTS, Figures, leaves, merged
from paths import REPO

DOC, DATA = REPO / "docs" / "reliability.md", REPO / "results" / "tests" / "reliability.json"


def _script():
    spec = importlib.util.spec_from_file_location("reliability_table", REPO / "scripts" / "reliability_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _changed(data, path, value):
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def test_the_committed_page_is_the_committed_figures_rendered():
    assert DOC.read_text() == _script().render(json.loads(DATA.read_text())), \
        "docs/reliability.md is not results/tests/reliability.json rendered: run `make reliability` (or --render)"


def test_every_committed_figure_reaches_the_page():
    """Any one number (or date, commit) of the JSON changed changes the page: the check above compares them all."""
    render, data = _script().render, json.loads(DATA.read_text())
    page = render(data)
    found = list(leaves(data))
    assert len(found) > 3 * len(FAULTS)
    for path, value in found:
        other = value + 1000 if isinstance(value, (int, float)) and not isinstance(value, bool) else f"x{value}"
        assert render(_changed(data, path, other)) != page, path


def test_every_fault_has_its_row_and_its_test_exists():
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| ") and " | `tests/" in line]
    assert len(rows) == len(FAULTS)
    for fault, row in zip(FAULTS.values(), rows, strict=True):
        assert row.startswith(f"| {fault.fault} | {fault.guarantee} | `{fault.test}` | ")
        module, test = fault.test.split("::")
        assert (REPO / module).exists() and f"def {test}(" in (REPO / module).read_text()


def test_the_page_is_rendered_from_the_figures():
    figures = {key: [{"cases": 1}] for key in FAULTS}
    figures["kill_points"] = [{"kill_points": 40, "events_per_run": 9}]
    figures["fuzz_loaders"] = [{"formats": 1, "fuzzed_inputs": 200}, {"formats": 1, "fuzzed_inputs": 200}]
    figures["memory"] = [{"peak_rss_mb": 420, "items": 14042}]
    load = {"start": 0.5, "peak": 1.5, "end": 1.0, "every": 5.0}
    suite = {"seconds": 123.4, "cores": 2, "date": "2026-11-25", "commit": "abc1234", "load_average": load}
    page = _script().render({"figures": figures, "suite": suite})
    assert "kill points survived: 40, fuzzed inputs: 400, peak RSS of the MMLU-sized run: 420 MB (VmHWM" in page
    assert "formats 2; fuzzed inputs 400" in page
    assert "took 123 s on 2 cores, run on 2026-11-25 at commit abc1234" in page
    assert "load average 0.5 at its start, at most 1.5 during it (sampled every 5 s)" in page
    assert "shared with other work" not in page
    busy = _script().render({"figures": figures, "suite": {**suite, "load_average": {**load, "peak": 3.5}}})
    assert "shared with other work" in busy
    assert merged([{"peak_rss_mb": 3, "n": 1}, {"peak_rss_mb": 2, "n": 2}]) == {"peak_rss_mb": 3, "n": 3}
    with pytest.raises(SystemExit, match="no figures for"):
        _script().render({"figures": {}, "suite": suite})
    with pytest.raises(SystemExit, match="unknown faults \\['gone'\\]"):
        _script().render({"figures": {**figures, "gone": [{"cases": 1}]}, "suite": suite})


def test_the_figures_are_never_written_into_the_checkout(monkeypatch, tmp_path):
    collected = Figures()
    collected.add("memory", peak_rss_mb=1)
    monkeypatch.setenv(ENV, str(DATA))
    with pytest.raises(ValueError, match="inside the checkout"):
        collected.write()
    monkeypatch.setenv(ENV, str(tmp_path / "figures.json"))
    assert json.loads(collected.write().read_text()) == {"memory": [{"peak_rss_mb": 1}]}
