"""The test tiers of the whole suite, tests/ and notebooks/ alike (this file is loaded whatever the paths given to
pytest; tests/conftest.py holds the fixtures): every test gets its tier marker, the run ends with the time spent per
tier, and under pytest-xdist (`make test` runs two workers) a file's tests stay on one worker (nbval's cells share
one kernel; module fixtures are built once) and the Ray pool's tests on one (they share one Ray cluster)."""
from __future__ import annotations

import zlib
from pathlib import PurePosixPath

import pytest

TIERS = ("slow", "notebooks", "browser", "server", "vllm", "faults", "gpu", "ray")


RAY_TESTS = PurePosixPath("tests/run/pool")  # where the tests that start a Ray cluster (marker `ray`) live
ALONE_TESTS = RAY_TESTS  # where tests marked `alone` live: `make test` collects only this folder to run them


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Test tiers: nbval cells are `notebooks`; any test without a tier marker is `unit` (`make test-fast`). A Ray
    test outside RAY_TESTS is refused: under two workers it could start a second cluster beside the first; an `alone`
    test outside ALONE_TESTS too: `make test`'s second pytest, which runs them, collects that folder only
    (tests/run/conftest.py marks the tests using the Ray cluster `alone` before this runs)."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebooks)
        elif not any(item.get_closest_marker(t) for t in TIERS):
            item.add_marker(pytest.mark.unit)
        item.user_properties.append(("tier", next((t for t in TIERS if item.get_closest_marker(t)), "unit")))
        if item.get_closest_marker("ray") and scope(item.nodeid) != str(RAY_TESTS):
            raise pytest.UsageError(f"{item.nodeid}: tests marked `ray` live in {RAY_TESTS}/ (one worker, one cluster)")
        if item.get_closest_marker("alone") and scope(item.nodeid) != str(ALONE_TESTS):  # ALONE_TESTS is a scope
            raise pytest.UsageError(f"{item.nodeid}: tests marked `alone` live in {ALONE_TESTS}/ (make test runs them "
                                    "from there)")


# files whose tests share no fixture worth building once, cut into this many slices that workers take apart (the
# support sweep: ~200 families, 514 s on one worker in a fresh-clone make test on a 2-core AMD EPYC)
SLICED = {"tests/backends/hf/test_support_sweep.py": 4}


def scope(nodeid: str) -> str:
    """The unit of work one xdist worker takes whole: the test's file (a slice of it for SLICED's, by a checksum of
    the test's id, so the same slice every run), or the Ray pool's folder."""
    path = PurePosixPath(nodeid.split("::", 1)[0])
    if RAY_TESTS in path.parents:
        return str(RAY_TESTS)
    if str(path) in SLICED:
        return f"{path}::slice{zlib.crc32(nodeid.encode()) % SLICED[str(path)]}"
    return str(path)


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling with `scope` as the scope (its own `--dist loadgroup` cannot regroup a test
    since pytest 9 builds node ids itself)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

    return ByScope(config, log)


def pytest_runtest_logreport(report):
    """Add each test's setup, call and teardown time to its tier, the first of TIERS it is marked with (else unit);
    pytest_terminal_summary prints the sums. Reports reach this hook in the process that prints (pytest-xdist's
    controller too), so the sums cover every worker."""
    for spent, key in ((_TIERS_SPENT, dict(report.user_properties).get("tier", "unit")),
                       (_SCOPES_SPENT, scope(report.nodeid))):
        seconds, tests = spent.get(key, (0.0, 0))
        spent[key] = (seconds + report.duration, tests + (report.when == "call"))


_TIERS_SPENT: dict[str, tuple[float, int]] = {}
_SCOPES_SPENT: dict[str, tuple[float, int]] = {}  # per unit of work a worker takes whole (`scope`)
SLOWEST_SCOPES = 20


def pytest_terminal_summary(terminalreporter, config):
    """Where a run's time went, tier by tier and in the SLOWEST_SCOPES slowest files (the Ray pool's folder counted
    as one, as a worker takes it): sums of the tests' setup, call and teardown times; with several workers the sums
    add up the workers' time, so together they exceed the wall time."""
    if _TIERS_SPENT:
        terminalreporter.write_sep("=", "time per tier (setup + call + teardown)")
        for tier, (seconds, tests) in sorted(_TIERS_SPENT.items(), key=lambda kv: -kv[1][0]):
            terminalreporter.write_line(f"{tier:<10} {tests:>6} tests {seconds:9.1f} s")
    if len(_SCOPES_SPENT) > 1:
        terminalreporter.write_sep("=", f"slowest {SLOWEST_SCOPES} files (setup + call + teardown)")
        for name, (seconds, tests) in sorted(_SCOPES_SPENT.items(), key=lambda kv: -kv[1][0])[:SLOWEST_SCOPES]:
            terminalreporter.write_line(f"{seconds:9.1f} s {tests:>5} tests  {name}")
