# Two commands do all set-up: `make demo` and `make test` (each creates .venv and installs if needed).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-full test test-fast test-faults reliability install chromium bench clean-outputs lab screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# llama-cpp-python (the `server` extra, a real OpenAI-compatible server for the backend tests) is built from
# source: portable (no -march=native) and without the parts we do not use, which keeps the build short.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF

# torch is pinned exactly and installed first so that nothing pulls a CUDA build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/pip install --quiet -e ".[test,server,lab]"
	$(BIN)/python -m ipykernel install --prefix $(VENV) --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the browser tests (tests/test_browser.py drives it with Playwright; Playwright's own
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

# numpy's BLAS threads only slow the small IRT matrix products down when torch shares the 2 cores
test: $(STAMP) chromium
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q

# unit tier only: no real model, no notebook kernels (target under 90 s)
test-fast: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -m unit

# the fault suite alone (tests/faults: kills, full disks, 429 storms, damaged files, fuzzed inputs, memory; part of
# `make test`), and docs/reliability.md rewritten from its output (scripts/reliability_table.py)
test-faults: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -m faults tests/faults

reliability: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python scripts/reliability_table.py

# refresh the committed browser screenshots in figures/inspector/ (a test run writes them to a temporary folder)
screenshots: $(STAMP) chromium
	MCQA_SCREENSHOTS=$(CURDIR)/figures/inspector $(BIN)/python -m pytest -q tests/report/test_browser.py

bench: $(STAMP)
	$(BIN)/python benchmarks/irt_throughput.py
	$(BIN)/python benchmarks/scoring_throughput.py

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

clean-outputs:
	rm -rf outputs/* figures/* latex/*
