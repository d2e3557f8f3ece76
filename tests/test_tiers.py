"""The checkout's conftest.py: the unit one xdist worker takes whole, each test's tier, and where tests marked `ray`
and `alone` may live (make test runs the `alone` ones by collecting their folder only, so one elsewhere would never
run)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

_spec = importlib.util.spec_from_file_location("checkout_conftest", REPO / "conftest.py")
tiers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiers)


class Item:
    """What pytest_collection_modifyitems reads of a collected test."""

    def __init__(self, nodeid: str, *markers: str):
        self.nodeid, self.path = nodeid, Path(nodeid.split("::")[0])
        self.markers, self.user_properties = set(markers), []

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None

    def add_marker(self, mark) -> None:
        self.markers.add(mark.name)


def test_a_file_is_one_scope_and_the_ray_folder_is_one():
    assert tiers.scope("tests/run/test_grid.py::test_a[x-1]") == "tests/run/test_grid.py"
    assert tiers.scope("notebooks/11_irt.ipynb::Cell 3") == "notebooks/11_irt.ipynb"
    assert tiers.scope("tests/run/pool/test_driver.py::t") == tiers.scope("tests/run/pool/test_remote.py::t") \
        == "tests/run/pool"
    assert tiers.scope("tests/run/pooled/test_x.py::t") == "tests/run/pooled/test_x.py"


def test_a_sliced_file_is_cut_into_its_slices_the_same_way_every_run():
    path, n = next(iter(tiers.SLICED.items()))
    ids = [f"{path}::test_every_family[{name}]" for name in ("llama", "gemma3", "falcon", "mamba", "gpt2", "qwen3",
                                                             "phi3", "olmo2", "bloom", "opt", "xglm", "mistral")]
    slices = [tiers.scope(i) for i in ids]
    assert set(slices) <= {f"{path}::slice{k}" for k in range(n)} and len(set(slices)) > 1
    # a checksum, not Python's salted hash: each xdist worker computes the scopes and they must agree
    code = ("import importlib.util, json, sys; s = importlib.util.spec_from_file_location('c', sys.argv[1]); "
            "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
            "print(json.dumps([m.scope(i) for i in sys.argv[2:]]))")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, str(REPO / "conftest.py"), *ids], check=True, text=True,
                             capture_output=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        assert json.loads(out) == slices


def test_a_test_using_the_ray_cluster_is_alone_before_the_checkout_checks_where_alone_tests_live(monkeypatch):
    """tests/run/conftest.py marks it (its hook runs first: the checkout's, registered earlier, then finds an
    `alone` test inside ALONE_TESTS and lets it be)."""
    spec = importlib.util.spec_from_file_location("run_conftest", REPO / "tests/run/conftest.py")
    run = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "run_conftest", run)  # its dataclasses look their module up there
    spec.loader.exec_module(run)
    hook = run.pytest_collection_modifyitems
    assert hook.pytest_impl["tryfirst"]
    item = Item("tests/run/pool/test_driver.py::t", "ray")
    item.fixturenames = ("ray_cluster", "tmp_path")
    other = Item("tests/run/pool/test_driver.py::u", "ray")
    other.fixturenames = ("tmp_path",)
    hook(None, [item, other, Item("notebooks/11_irt.ipynb::Cell 0")])
    tiers.pytest_collection_modifyitems(None, [item, other])
    assert "alone" in item.markers and "alone" not in other.markers


def test_each_test_gets_its_first_tier_or_unit():
    items = [Item("notebooks/11_irt.ipynb::Cell 0"), Item("tests/test_x.py::a"), Item("tests/test_x.py::b", "slow"),
             Item("tests/run/pool/test_driver.py::c", "ray", "faults")]
    tiers.pytest_collection_modifyitems(None, items)
    assert [dict(i.user_properties)["tier"] for i in items] == ["notebooks", "unit", "slow", "faults"]


@pytest.mark.parametrize("marker,nodeid,allowed", [
    ("ray", "tests/run/pool/test_driver.py::t", True), ("ray", "tests/run/test_grid.py::t", False),
    ("alone", "tests/run/pool/test_driver.py::t", True), ("alone", "tests/backends/test_vllm_server.py::t", False),
    ("alone", "tests/run/pooled/test_x.py::t", False)])
def test_ray_and_alone_tests_live_where_make_test_runs_them(marker, nodeid, allowed):
    items = [Item(nodeid, marker)]
    if allowed:
        tiers.pytest_collection_modifyitems(None, items)
    else:
        with pytest.raises(pytest.UsageError, match=f"tests marked `{marker}` live in tests/run/pool/"):
            tiers.pytest_collection_modifyitems(None, items)


class Report:
    def __init__(self, nodeid: str, when: str, duration: float, tier: str):
        self.nodeid, self.when, self.duration, self.user_properties = nodeid, when, duration, [("tier", tier)]


class Terminal:
    def __init__(self):
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(f"== {title}")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_the_summary_sums_each_tier_and_each_file_over_setup_call_and_teardown(monkeypatch):
    monkeypatch.setattr(tiers, "_TIERS_SPENT", {})
    monkeypatch.setattr(tiers, "_SCOPES_SPENT", {})
    for nodeid, tier, times in [("tests/a.py::t1", "unit", (0.5, 1.0, 0.25)), ("tests/a.py::t2", "unit", (0, 2.0, 0)),
                                ("tests/run/pool/test_x.py::t", "ray", (3.0, 4.0, 1.0)),
                                ("tests/run/pool/test_y.py::t", "ray", (0, 1.0, 0))]:
        for when, seconds in zip(("setup", "call", "teardown"), times, strict=True):
            tiers.pytest_runtest_logreport(Report(nodeid, when, seconds, tier))
    term = Terminal()
    tiers.pytest_terminal_summary(term, None)
    assert term.lines == ["== time per tier (setup + call + teardown)", "ray             2 tests       9.0 s",
                          "unit            2 tests       3.8 s", "== slowest 20 files (setup + call + teardown)",
                          "      9.0 s     2 tests  tests/run/pool", "      3.8 s     2 tests  tests/a.py"]
