# The two quick-start commands of the README are `make demo` and `make test`.
# Each sets up .venv on first use from the hashed lock requirements/dev.txt (scripts/bootstrap; no torch:
# the embedding model runs on ONNX Runtime).
PY ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="tests/bot -x"`.
PYTEST_ARGS ?=
JUNIT ?= test-artifacts/junit.xml

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test ci-test lowest lock lint typecheck check clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements/dev.txt scripts/bootstrap
	PY=$(PY) VENV=$(VENV) ./scripts/bootstrap
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/arcs demo

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# CI's test run: the suite, then the skip budget (a skip CI does not expect fails; .ci/allowed-skips.txt).
ci-test: $(STAMP)
	mkdir -p $(dir $(JUNIT))
	$(BIN)/python -m pytest --junitxml=$(JUNIT) $(PYTEST_ARGS)
	$(BIN)/python scripts/check-skips $(JUNIT)

# The suite at the lowest versions pyproject allows (requirements/lowest.txt), in .lowest-venv.
lowest:
	PY=$(PY) ./scripts/lowest $(PYTEST_ARGS)

# Re-resolve the locks in requirements/ from pyproject.toml (after changing a dependency).
lock:
	./scripts/lock

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/import-graph --check
	$(BIN)/deptry .
	$(BIN)/python scripts/lint-workflows $(BIN)/zizmor

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

clean:
	rm -rf $(VENV) .lowest-venv .lock-venv .mypy_cache .ruff_cache .pytest_cache
