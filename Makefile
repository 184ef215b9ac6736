# Quickstart: `make run` serves on 127.0.0.1:8090; `make test` runs the whole suite.
# Both create .venv and install the project into it when needed, at exact versions
# (ADR-0044): `make run` the service's from requirements-run.lock, `make test` (and every
# other target) the service's and its test tools' from requirements.lock (ADR-0160).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One stamp per lock: the full install is a superset of the runtime one, at the same
# versions, so either order of `make run` and `make test` in one .venv works.
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
LOCK := requirements.lock
RUN_LOCK := requirements-run.lock
# The extras the standalone service needs (`all` names them too, but it refers to the
# project itself, which a lock cannot hold), then its tests'.
RUN_EXTRAS := --extra postgres --extra report --extra cli
EXTRAS := $(RUN_EXTRAS) --extra test
# Before a .venv is made: pyproject.toml's requires-python, said in one line (an older
# python3 would otherwise fail later, inside pip, on a package of the lock).
NEW_VENV = test -x $(BIN)/python || { $(PYTHON) -c 'import sys; sys.exit(sys.version_info \
    < (3, 11) and "miam-economies needs Python >= 3.11; $(PYTHON) is " + sys.version.split()[0] \
    + ": run make PYTHON=python3.11 (or newer)")' && $(PYTHON) -m venv $(VENV); }
COMPILE = $(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
    --all-build-deps --no-emit-index-url --no-emit-find-links

# The suite on every core, at most 4 (ADR-0155): each test has its own data directory,
# port and PostgreSQL database; a module's tests stay on one worker. PYTEST_PARALLEL=
# (empty) runs it in one process.
PYTEST_PARALLEL ?= -n auto --maxprocesses 4 --dist loadfile

.PHONY: run test bench soak install lock tarifs dist clean

install: $(STAMP)

# Every package from the lock, hashes checked; then the project itself, editable, with
# no dependency resolution and no build isolation: nothing outside the lock is fetched
# (setuptools and wheel, the build's own requirements, are in both locks).
$(STAMP): pyproject.toml $(LOCK)
	$(NEW_VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The service alone, for `make run`: no test tool (a third of the packages, a tenth of
# the size). In a .venv that already has the full install, pip finds everything there.
# --no-compile: the server imports a fraction of what pip would byte-compile up front
# (a third of this install's time); Python compiles what it imports, once.
$(RUN_STAMP): pyproject.toml $(RUN_LOCK)
	$(NEW_VENV)
	$(BIN)/python -m pip install --quiet --no-compile --require-hashes -r $(RUN_LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(RUN_STAMP)

# Resolve pyproject.toml's ranges again into $(LOCK), keeping every pin that still fits,
# then the service's extras alone into $(RUN_LOCK), constrained by $(LOCK) so that both
# pin each shared package at one version (tests/unit/test_lock.py checks it; --upgrade:
# $(RUN_LOCK)'s earlier pins play no part, $(LOCK) alone decides). After a dependency
# change in pyproject.toml; `make lock LOCK_ARGS=--upgrade` moves every package to its
# newest release in range (`--upgrade-package NAME` one of them).
lock: $(STAMP)
	$(COMPILE) $(EXTRAS) $(LOCK_ARGS) --output-file $(LOCK) pyproject.toml
	$(COMPILE) $(RUN_EXTRAS) --upgrade --constraint $(LOCK) --output-file $(RUN_LOCK) \
	    pyproject.toml

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

run: $(RUN_STAMP)
	$(BIN)/miam-economies serve

# Without a PostgreSQL server at MIAM_TEST_POSTGRES's default address (and that variable
# unset), the suite starts a throwaway one for the run and stops it after (ADR-0160).
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
