# Two commands do all set-up: `make demo` and `make test` (each creates .venv and installs if needed).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast install bench clean-outputs lab

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# llama-cpp-python (the `server` extra, a real OpenAI-compatible server for the backend tests) is built from
# source: portable (no -march=native) and without the parts we do not use, which keeps the build short.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF

# torch is pinned exactly and installed first so that nothing pulls a CUDA build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/pip install --quiet -e ".[test,server]"
	$(BIN)/python -m ipykernel install --prefix $(VENV) --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/mcqa demo

# numpy's BLAS threads only slow the small IRT matrix products down when torch shares the 2 cores
test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q

# unit tier only: no real model, no notebook kernels (target under 90 s)
test-fast: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -m unit

bench: $(STAMP)
	$(BIN)/python benchmarks/irt_throughput.py
	$(BIN)/python benchmarks/scoring_throughput.py

lab: $(STAMP)
	$(BIN)/pip install --quiet -e ".[lab]"
	$(BIN)/jupyter lab notebooks/

clean-outputs:
	rm -rf outputs/* figures/* latex/*
