# Quickstart: `make run` serves on 127.0.0.1:8090; `make test` runs the whole suite.
# Both create .venv and install the project into it when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench soak install clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/miam-economies serve

test: $(STAMP)
	$(BIN)/ruff check miam_economies domain projections api tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

# Benchmarks are never timed tests: they print figures as ratios against a reference.
bench: $(STAMP)
	$(BIN)/python -m bench.run

# The reliability suites, longer: 40 kill -9 rounds, 500 schemathesis cases per route.
soak: $(STAMP)
	MIAM_KILL_ROUNDS=40 MIAM_SCHEMATHESIS_EXAMPLES=500 $(BIN)/python -m pytest tests/reliability

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
