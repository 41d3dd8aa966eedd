# The README's two commands are `make demo` and `make test`; every target sets itself up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: all setup binaries test lint demo bench clean

all: test

# A virtualenv with the package and its pinned dependencies; redone when pyproject changes.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (found " + sys.version.split()[0] + "); set PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

setup: $(STAMP)

# etcd, kube-apiserver, kube-controller-manager, kubectl, KWOK and the upstream scheduler:
# built once from the Go module proxy into ~/.cache/secondary-scheduler, reused after that.
binaries: setup
	$(BIN)/secsched cluster build

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: lint binaries
	$(BIN)/pytest

demo: binaries
	$(BIN)/secsched demo $(DEMO_ARGS)

bench: binaries
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
