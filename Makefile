# Hermes Stack: `make run` starts the stack, `make test` runs the suite. Both create .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run test lint compose-test test-sqlite test-postgres bench install migrate clean

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	@PYTHONWARNINGS=ignore $(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	@touch $@

# Test pins on top of the runtime ones; the Docker image never installs these.
$(TEST_STAMP): $(STAMP) requirements-test.txt
	@$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements-test.txt
	@touch $@

install: $(STAMP)

run: $(STAMP)
	@exec $(BIN)/hstack run

migrate: $(STAMP)
	@$(BIN)/hstack migrate

test: lint
	@$(BIN)/python -m tests.run_all

lint: $(TEST_STAMP)
	@$(BIN)/ruff check --output-format concise .

# The stack under Docker Compose on SQLite and on Postgres (tests/e2e/test_compose_stack.py), plus the
# compose file's own checks. Needs docker and a compose v2 plugin; .ci/run installs both.
compose-test: $(TEST_STAMP)
	@HSTACK_COMPOSE_TEST=1 $(BIN)/python -m pytest -p no:cacheprovider --durations=5 -s --basetemp=$${TMPDIR:-/tmp}/hstack-compose-test \
		tests/test_compose.py tests/e2e/test_compose_stack.py

test-sqlite: $(TEST_STAMP)
	@$(BIN)/python -m pytest

test-postgres: $(TEST_STAMP)
	@TEST_DATABASE=postgres $(BIN)/python -m pytest -m "not sqlite_only and not once"

bench: $(TEST_STAMP)
	@$(BIN)/python -m bench.turns
	@$(BIN)/python -m bench.recovery
	@$(BIN)/python -m bench.burst
	@$(BIN)/python -m bench.memory
	@$(BIN)/python -m bench.scanner
	@$(BIN)/python -m bench.recall
	@$(BIN)/python -m bench.locomo
	@$(BIN)/python -m bench.search
	@$(BIN)/python -m bench.user_scope
	@$(BIN)/python -m bench.sandbox
	@$(BIN)/python -m bench.mcp
	@$(BIN)/python -m bench.approval
	@$(BIN)/python -m bench.compression
	@$(BIN)/python -m bench.fairness
	@$(BIN)/python -m bench.noisy_neighbour
	@$(BIN)/python -m bench.textmatch
	@$(BIN)/python -m bench.gateway
	@$(BIN)/python -m bench.cache
	@$(BIN)/python -m bench.cron
	@$(BIN)/python -m bench.delegate
	@$(BIN)/python -m bench.evolve
	@$(BIN)/python -m bench.consolidation
	@TEST_DATABASE=postgres $(BIN)/python -m bench.consolidation

clean:
	rm -rf $(VENV) .pytest_cache
