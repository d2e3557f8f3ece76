"""Test tiers and shared fixtures: a tiny tokenizer trained in-process, tiny random models (Gemma 3 with sliding-window
layers, and a plain Llama), and the real embedded Gemma-3-270M for the few tests marked slow."""
from __future__ import annotations

import contextlib
import subprocess

import pytest
import tiny_models
from fault_figures import Figures
from paths import REPO
from tiny_models import tiny_model

TIERS = ("slow", "notebooks", "browser", "server", "vllm", "faults", "gpu", "ray")


def pytest_collection_modifyitems(config, items):
    """Test tiers: nbval cells are `notebooks`; any test without a tier marker is `unit` (`make test-fast`)."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebooks)
        elif not any(item.get_closest_marker(t) for t in TIERS):
            item.add_marker(pytest.mark.unit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Add each test's setup, call and teardown time to its tier, the first of TIERS it is marked with (else unit);
    pytest_terminal_summary prints the sums."""
    report = yield
    spent = getattr(item.config, "_mcqa_tiers", None)
    if spent is not None:
        tier = next((t for t in TIERS if item.get_closest_marker(t)), "unit")
        seconds, tests = spent.get(tier, (0.0, 0))
        spent[tier] = (seconds + report.duration, tests + (report.when == "call"))
    return report


def pytest_terminal_summary(terminalreporter, config):
    """Where a run's time went, tier by tier (the sum of its tests' setup, call and teardown times)."""
    spent = getattr(config, "_mcqa_tiers", {})
    if spent:
        terminalreporter.write_sep("=", "time per tier (setup + call + teardown)")
        for tier, (seconds, tests) in sorted(spent.items(), key=lambda kv: -kv[1][0]):
            terminalreporter.write_line(f"{tier:<10} {tests:>6} tests {seconds:9.1f} s")


@pytest.fixture(scope="session")
def figures():
    """Where each fault test (marker `faults`) records what it measured; written to $MCQA_RELIABILITY at the end of
    the session when that is set (scripts/reliability_table.py), else only collected."""
    collected = Figures()
    yield collected
    collected.write()


def _worktree_state() -> str | None:
    """`git status` of the checkout (tracked changes and untracked files), None outside a git checkout."""
    try:
        done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, text=True,
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def pytest_sessionstart(session):
    session.config._mcqa_worktree = _worktree_state()
    session.config._mcqa_tiers = {}


def pytest_sessionfinish(session, exitstatus):
    """A test run never modifies a tracked file nor leaves files in the checkout: fail the run if it did."""
    before = getattr(session.config, "_mcqa_worktree", None)
    after = _worktree_state()
    if before is not None and after is not None and after != before:
        changed = sorted(set(after.splitlines()) ^ set(before.splitlines()))
        print("\nthe test run changed the checkout (tests must write to temporary folders only):\n  "
              + "\n  ".join(changed[:20]))
        session.exitstatus = 1


@pytest.fixture
def killed_at_call(monkeypatch):
    """`with killed_at_call(owner, "name", n): run(...)`: the n-th call of owner.name raises KeyboardInterrupt (a
    run killed mid-way), the block must end by that kill, and the real function is back afterwards."""
    @contextlib.contextmanager
    def killed(owner, name: str, n: int):
        real, calls = getattr(owner, name), {"n": 0}

        def dying(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == n:
                raise KeyboardInterrupt("killed")
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, dying)
        try:
            with pytest.raises(KeyboardInterrupt, match="killed"):
                yield
        finally:
            monkeypatch.setattr(owner, name, real)
    return killed


@pytest.fixture(scope="session")
def tiny_tokenizer():
    return tiny_models.tiny_tokenizer()


@pytest.fixture(scope="session", params=["gemma3", "llama"])
def tiny_lm(request, tiny_tokenizer):
    from mcqa_toolkit.backends.hf import wrap

    return wrap(tiny_model(request.param, tiny_tokenizer), tiny_tokenizer, name=f"tiny-{request.param}")


@pytest.fixture(scope="session")
def tiny_gemma(tiny_tokenizer):
    from mcqa_toolkit.backends.hf import wrap

    return wrap(tiny_model("gemma3", tiny_tokenizer), tiny_tokenizer, name="tiny-gemma3")


@pytest.fixture(scope="session")
def tiny_backend(tiny_gemma):
    """The tiny Gemma 3 behind the Backend protocol (what run() and the scorers take)."""
    from mcqa_toolkit.backends.hf import HFBackend

    return HFBackend(tiny_gemma)


@pytest.fixture(scope="session")
def gemma():
    """The real embedded Gemma-3-270M (first load dequantises ~50 s, then cached)."""
    from mcqa_toolkit.backends.hf import load_model

    return load_model("gemma-3-270m", device="cpu", dtype="float32")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_gemma):
    """The tiny Gemma 3 saved as a local model directory: any code path taking a model name can load it."""
    d = tmp_path_factory.mktemp("tiny-gemma3")
    tiny_gemma.model.save_pretrained(d)
    tiny_gemma.tokenizer.save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory):
    """A schema-exact synthetic results directory (see synthetic_results.write_synthetic_results), shared by the
    psychometrics, plot and analysis-notebook tests."""
    from synthetic_results import write_synthetic_results

    return write_synthetic_results(tmp_path_factory.mktemp("outputs"))


@pytest.fixture(scope="session")
def records(synthetic_dir):
    from mcqa_toolkit.records.results import load_results

    return load_results(synthetic_dir)
