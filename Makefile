# Two commands do all set-up: `make demo` and `make test` (each creates .venv and installs if needed).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast install bench clean-outputs lab

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned exactly and installed first so that nothing pulls a CUDA build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[test]"
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
