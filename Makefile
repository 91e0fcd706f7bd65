# Every target sets up .venv itself when it is missing or stale.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXAMPLE ?= apiserver
PYTEST_ARGS ?=

.PHONY: demo test lint typecheck unit bench dev clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kubeforge demo $(EXAMPLE)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy src

test: lint typecheck
	$(BIN)/pytest $(PYTEST_ARGS)

bench: $(STAMP)
	command -v wrk >/dev/null || apt-get install -y -q wrk
	$(BIN)/python benchmarks/apiserver.py
	$(BIN)/python benchmarks/runtime.py
	$(BIN)/python benchmarks/workqueue.py

dev: $(STAMP)
	$(BIN)/kubeforge apiserver --port 6443 --kubeconfig .kubeforge/kubeconfig

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
