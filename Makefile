# The README's two commands are `make demo` and `make test`; every target sets itself up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
EXAMPLE_PLUGINS := examples/plugins/secsched-example-plugins
DEVTOOLS := devtools

.PHONY: all setup binaries test lint demo bench chaos soak clean conformance fuzz images

all: test

# A virtualenv with the package and its pinned dependencies, the dev tooling (devtools/: the local
# cluster, the demo, the image builder; a package of its own, so the runtime wheel holds none of it)
# and the example plugin package (the tests run it end to end); redone when a pyproject changes.
$(STAMP): pyproject.toml $(DEVTOOLS)/pyproject.toml $(EXAMPLE_PLUGINS)/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (found " + sys.version.split()[0] + "); set PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet -e '$(DEVTOOLS)[demo]'
	$(BIN)/pip install --quiet -e $(EXAMPLE_PLUGINS)
	@touch $@

setup: $(STAMP)

# etcd, kube-apiserver, kube-controller-manager, kubectl, KWOK, the upstream scheduler and the
# conformance harness: built once from the Go module proxy into ~/.cache/secondary-scheduler.
binaries: setup
	$(BIN)/secsched cluster build

lint: setup
	$(BIN)/ruff check src $(DEVTOOLS) tests bench examples
	$(BIN)/ruff format --check src $(DEVTOOLS) tests bench examples
	$(BIN)/mypy

# The scheduler and operator images as OCI archives in out/images (no container engine needed;
# root, for mmdebstrap and chroot). The Debian + dependencies base is cached in
# ~/.cache/secondary-scheduler/images-*, so a rebuild adds only the project layer: the runtime
# wheel alone (the builder lives in devtools/, which no image holds).
images: setup
	$(BIN)/python -m secsched_devtools.cluster.images $(IMAGES_ARGS)

test: lint binaries images
	$(BIN)/pytest

# Ours against upstream kube-scheduler's own code on thousands of random cases (`make test`
# runs a few hundred); `make conformance CONFORMANCE_SEED=5` draws another set.
CONFORMANCE_CASES ?= 3000
CONFORMANCE_SEED  ?= 1234
conformance: setup binaries
	CONFORMANCE_CASES=$(CONFORMANCE_CASES) CONFORMANCE_SEED=$(CONFORMANCE_SEED) $(BIN)/pytest -q tests/conformance

demo: binaries
	$(BIN)/secsched demo $(DEMO_ARGS)

bench: binaries
	$(BIN)/python -m bench $(BENCH_ARGS)

# Faults during a burst, ours then upstream's: docs/reliability.md's Chaos section.
chaos: binaries
	$(BIN)/python -m bench.chaos $(CHAOS_ARGS)

# An hour of churn against ours, sampled for growth: docs/reliability.md's Soak section.
# `make soak SOAK_ARGS="--duration 5m"` for a shorter run (it writes the section too; under 48
# minutes the caches' 12-minute warm-up is in the RSS fit, so only the hour judges RSS).
soak: binaries
	$(BIN)/python -m bench.soak --docs $(SOAK_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

# The CLI fuzz test at length: FUZZ_EXAMPLES mutated inputs per target (make test runs 120 of each).
FUZZ_EXAMPLES ?= 1000
fuzz: setup
	SECSCHED_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -p no:cacheprovider -s tests/unit/fuzz
