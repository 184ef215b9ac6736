# Quickstart: `make run` serves on 127.0.0.1:8090; `make test` runs the whole suite.
# Both create .venv and install the project into it when needed, at the exact versions
# of requirements.lock (ADR-0044).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements.lock
# The extras the standalone service and its tests need (`all` names them too, but it
# refers to the project itself, which a lock cannot hold).
EXTRAS := --extra postgres --extra report --extra cli --extra test

# The suite on every core, at most 4 (ADR-0155): each test has its own data directory,
# port and PostgreSQL database; a module's tests stay on one worker. PYTEST_PARALLEL=
# (empty) runs it in one process.
PYTEST_PARALLEL ?= -n auto --maxprocesses 4 --dist loadfile

.PHONY: run test bench soak install lock tarifs dist clean

install: $(STAMP)

# Every package from the lock, hashes checked; then the project itself, editable, with
# no dependency resolution and no build isolation: nothing outside the lock is fetched
# (setuptools and wheel, the build's own requirements, are in it).
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Resolve pyproject.toml's ranges again into $(LOCK), keeping every pin that still fits.
# After a dependency change in pyproject.toml; `make lock LOCK_ARGS=--upgrade` moves every
# package to its newest release in range (`--upgrade-package NAME` one of them).
lock: $(STAMP)
	$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	    --all-build-deps $(EXTRAS) --no-emit-index-url --no-emit-find-links \
	    $(LOCK_ARGS) --output-file $(LOCK) pyproject.toml

# Regenerate domain/tarifs_v2.py from the installed genai-prices catalogue (ADR-0071);
# `make test` fails while the checked-in table differs from what this writes.
tarifs: $(STAMP)
	$(BIN)/python -m scripts.tarifs

# The sdist and the wheel in dist/, the wheel built from the unpacked sdist: nothing of
# this tree's build/ or *.egg-info can ship. Built with the lock's setuptools and wheel
# (--no-isolation: nothing is fetched; ADR-0092). A checkout whose miam_economies/ links
# are plain files (git's core.symlinks=false) fails here, saying so (setup.py).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist .

run: $(STAMP)
	$(BIN)/miam-economies serve

test: $(STAMP)
	$(BIN)/ruff check miam_economies domain projections api tests bench scripts setup.py
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_PARALLEL)

# Benchmarks are never timed tests: they print figures as ratios against a reference.
bench: $(STAMP)
	$(BIN)/python -m bench.run

# The reliability suites, longer: 40 kill -9 rounds, 500 schemathesis cases per route.
soak: $(STAMP)
	MIAM_KILL_ROUNDS=40 MIAM_SCHEMATHESIS_EXAMPLES=500 $(BIN)/python -m pytest tests/reliability

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
