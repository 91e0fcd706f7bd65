# Every target sets up .venv itself when it is missing or stale.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXAMPLE ?= cnat
# Each example is its own project (its own api/ package): checked and tested one at a time.
EXAMPLES := $(patsubst examples/%/main.py,%,$(wildcard examples/*/main.py))
PYTEST_ARGS ?=
# The main suite runs on three workers (pytest-xdist; at most four): its tests wait on servers
# and kubectl much of the time, so two cores keep three busy. PYTEST_WORKERS=0 runs it in this
# process.
PYTEST_WORKERS ?= 3

# Each example's own suite in its own directory (decision 11), a few at once: they mostly wait
# on their clusters. Each suite's output is printed whole when it ends.
EXAMPLE_TESTS = $(BIN)/python tools/run_examples.py --jobs 2 $(EXAMPLES) -- $(PYTEST_ARGS)

.PHONY: chromium test-console screenshots demo dist test test-suite test-examples test-existing test-existing-one test-existing-multinode lint typecheck bench dev clean venv explore

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kubeforge demo $(EXAMPLE)

# The sdist and the wheel in dist/, built by PyPA's `build` in an isolated environment (what
# `pip install dist/kubeforge-*.whl` installs; docs/tutorial.md).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools examples
	$(BIN)/ruff format --check src tests benchmarks tools examples

typecheck: $(STAMP)
	$(BIN)/mypy src
	for e in $(EXAMPLES); do (cd examples/$$e && ../../$(BIN)/mypy .) || exit 1; done

# The checks and the main suite at once (the suite's workers leave room for mypy), then the
# examples' suites, on clusters of their own and on running ones, at once.
test: $(STAMP)
	$(MAKE) --no-print-directory -j3 lint typecheck test-suite
	$(MAKE) --no-print-directory -j3 --output-sync=target \
		test-examples test-existing-one test-existing-multinode

test-suite: $(STAMP)
	$(BIN)/pytest -n $(PYTEST_WORKERS) --maxprocesses 4 $(PYTEST_ARGS)

# The examples' own suites, each on the test cluster it starts itself.
test-examples: $(STAMP)
	$(EXAMPLE_TESTS)

# The examples' suites again, against a running `kubeforge dev` as they would run against kind
# or a real cluster (KUBEFORGE_USE_EXISTING_CLUSTER=1; docs/testing.md): each cluster is
# started in the background and stopped afterwards, also when a suite fails. On one cluster
# the suites run one at a time: every example deploys its manager as the same ServiceAccount
# with RBAC of the same names, as `kubeforge init` scaffolds it, so two at once would
# overwrite each other's rights. The kvstore example has a cluster of its own, with three
# nodes and its store image run from its directory: its suite fails members over between
# nodes and checks the data they keep in their volumes.
MULTINODE_EXAMPLES := kvstore
MULTINODE_CLUSTER := --nodes 3 --image kvstore:0.1=examples/kvstore/store
EXISTING_SUITES := tools/run_examples.py --jobs 1
test-existing:
	$(MAKE) --no-print-directory -j2 --output-sync=target test-existing-one test-existing-multinode

test-existing-one: $(STAMP)
	$(BIN)/python tools/on_dev_cluster.py -- $(BIN)/python $(EXISTING_SUITES) \
		$(filter-out $(MULTINODE_EXAMPLES),$(EXAMPLES)) -- $(PYTEST_ARGS)

test-existing-multinode: $(STAMP)
	$(BIN)/python tools/on_dev_cluster.py $(MULTINODE_CLUSTER) -- $(BIN)/python $(EXISTING_SUITES) \
		$(MULTINODE_EXAMPLES) -- $(PYTEST_ARGS)

# Exploration (docs/testing.md, "Exploration"): every operator of the corpus explored, each
# buggy twin to be flagged and each correct twin clean; then the examples' suites explored,
# one example at a time (each exploration runs its own workers).
EXPLORED_EXAMPLES := cnat useless webserver customcluster watcher
explore: $(STAMP)
	$(BIN)/python tools/explore_corpus.py
	$(BIN)/python tools/run_examples.py --jobs 1 $(EXPLORED_EXAMPLES) -- --kubeforge-explore $(PYTEST_ARGS)

bench: $(STAMP)
	command -v wrk >/dev/null || apt-get install -y -q wrk
	$(BIN)/python benchmarks/apiserver.py
	$(BIN)/python benchmarks/runtime.py
	$(BIN)/python benchmarks/workqueue.py
	$(BIN)/python benchmarks/devcluster.py
	$(BIN)/python benchmarks/operators.py
	$(BIN)/python benchmarks/admission.py
	$(BIN)/python benchmarks/conversion.py
	$(BIN)/python benchmarks/sharding.py

# The console in a real browser (docs/devcluster.md, "Console"): Debian's Chromium, driven
# by Playwright from PyPI with the system browser (nothing downloads a browser). Installed
# here when missing; a run of a few tens of seconds, so kept out of `make test`.
CHROMIUM := /usr/bin/chromium
BROWSER_STAMP := $(VENV)/.browser

chromium:
	test -x $(CHROMIUM) || (apt-get update -q && apt-get install -y -q chromium)

$(BROWSER_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,browser]'
	touch $(BROWSER_STAMP)

test-console: chromium $(BROWSER_STAMP)
	$(BIN)/pytest -n 0 -m browser tests/e2e/test_console_browser.py $(PYTEST_ARGS)

# The console's two main screens in docs/devcluster.md, taken again.
screenshots: chromium $(BROWSER_STAMP)
	$(BIN)/python tools/console_screenshots.py

dev: $(STAMP)
	$(BIN)/kubeforge dev --data-dir .kubeforge/data

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist
