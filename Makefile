# Every target sets up .venv itself when it is missing or stale.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXAMPLE ?= cnat
# Each example is its own project (its own api/ package): checked and tested one at a time.
EXAMPLES := $(patsubst examples/%/main.py,%,$(wildcard examples/*/main.py))
PYTEST_ARGS ?=
# The main suite runs on one worker per core (at most four; pytest-xdist): its tests wait on
# servers and kubectl much of the time. PYTEST_WORKERS=0 runs it in this process.
PYTEST_WORKERS ?= auto

# Each example's own suite in its own directory (decision 11), a few at once: they mostly wait
# on their clusters. Each suite's output is printed whole when it ends.
EXAMPLE_TESTS = $(BIN)/python tools/run_examples.py $(EXAMPLES) -- $(PYTEST_ARGS)

.PHONY: demo test test-existing lint typecheck bench dev clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kubeforge demo $(EXAMPLE)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools examples
	$(BIN)/ruff format --check src tests benchmarks tools examples

typecheck: $(STAMP)
	$(BIN)/mypy src
	for e in $(EXAMPLES); do (cd examples/$$e && ../../$(BIN)/mypy .) || exit 1; done

test: lint typecheck
	$(BIN)/pytest -n $(PYTEST_WORKERS) --maxprocesses 4 $(PYTEST_ARGS)
	$(EXAMPLE_TESTS)
	$(MAKE) --no-print-directory test-existing

# The examples' suites again, all against one `kubeforge dev` as they would run against kind
# or a real cluster (KUBEFORGE_USE_EXISTING_CLUSTER=1; docs/testing.md): the cluster is
# started in the background and stopped afterwards, also when a suite fails. Three nodes and
# the kvstore example's store image run from its directory: its suite fails members over
# between nodes and checks the data they keep in their volumes. One suite at a time: every
# example deploys its manager as the same ServiceAccount with RBAC of the same names, as
# `kubeforge init` scaffolds it, so two at once would overwrite each other's rights.
EXISTING_CLUSTER := --nodes 3 --image kvstore:0.1=examples/kvstore/store
test-existing: $(STAMP)
	$(BIN)/python tools/on_dev_cluster.py $(EXISTING_CLUSTER) -- \
		$(BIN)/python tools/run_examples.py --jobs 1 $(EXAMPLES) -- $(PYTEST_ARGS)

bench: $(STAMP)
	command -v wrk >/dev/null || apt-get install -y -q wrk
	$(BIN)/python benchmarks/apiserver.py
	$(BIN)/python benchmarks/runtime.py
	$(BIN)/python benchmarks/workqueue.py
	$(BIN)/python benchmarks/devcluster.py
	$(BIN)/python benchmarks/operators.py
	$(BIN)/python benchmarks/admission.py
	$(BIN)/python benchmarks/conversion.py

dev: $(STAMP)
	$(BIN)/kubeforge dev --data-dir .kubeforge/data

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
