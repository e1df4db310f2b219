# The two quick-start commands of the README are `make demo` and `make test`.
# Each sets up .venv on first use (no torch: the embedding model runs on ONNX Runtime).
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test lint typecheck check clean

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/bootstrap
	PY=$(PY) VENV=$(VENV) ./scripts/bootstrap
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/arcs demo

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/import-graph --check

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
