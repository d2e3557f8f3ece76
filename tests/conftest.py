"""Shared fixtures (the tiers, and their groups for pytest-xdist, are in the checkout's conftest.py): a tiny
tokenizer trained in-process, tiny random models (Gemma 3 with sliding-window layers, and a plain Llama), and the
real embedded Gemma-3-270M for the few tests marked slow."""
from __future__ import annotations

import contextlib
import subprocess

import isolation
import pytest
import tiny_models
from fault_figures import Figures
from isolation import pytest_runtest_setup, pytest_runtest_teardown  # noqa: F401 - the isolation check's hooks
from paths import REPO
from tiny_models import tiny_model


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

    return isolation.shared_model("tiny_lm", wrap(tiny_model(request.param, tiny_tokenizer), tiny_tokenizer,
                                                  name=f"tiny-{request.param}"))


@pytest.fixture(scope="session")
def tiny_gemma(tiny_tokenizer):
    from mcqa_toolkit.backends.hf import wrap

    return isolation.shared_model("tiny_gemma", wrap(tiny_model("gemma3", tiny_tokenizer), tiny_tokenizer,
                                                     name="tiny-gemma3"))


@pytest.fixture(scope="session")
def tiny_backend(tiny_gemma):
    """The tiny Gemma 3 behind the Backend protocol (what run() and the scorers take)."""
    from mcqa_toolkit.backends.hf import HFBackend

    return HFBackend(tiny_gemma)


@pytest.fixture(scope="session")
def gemma():
    """The real embedded Gemma-3-270M (first load dequantises ~50 s, then cached)."""
    from mcqa_toolkit.backends.hf import load_model

    return isolation.shared_model("gemma", load_model("gemma-3-270m", device="cpu", dtype="float32"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_gemma):
    """The tiny Gemma 3 saved as a local model directory: any code path taking a model name can load it."""
    d = tmp_path_factory.mktemp("tiny-gemma3")
    config = tiny_gemma.model.config
    before = dict(vars(config))
    tiny_gemma.model.save_pretrained(d)
    vars(config).update(before)  # save_pretrained writes its architectures and dtype into the shared model's config
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
