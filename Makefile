# Two commands for a newcomer: `make run` and `make test`. Everything else is plumbing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HTTP_PORT ?= 8000
# Test workers (pytest-xdist): most tests wait on subprocesses, sockets, QEMU or Chromium,
# so four overlap well on two cores (the suite: 10:12 on two, 9:16 on three, 8:51 on four).
# Whole files go to one worker, so each module's fixtures (a Chromium, a built profile) are
# made once.
# TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 4

.PHONY: run test lint format sysdeps bench firmware clean

$(BIN)/python:
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || bash scripts/install-sysdeps.sh python
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Stamp files re-install only when the project metadata changes.
$(VENV)/.run-stamp: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.test-stamp: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

# `make run PORT='sim://?proto=qs'` starts on the simulated QP target instead.
run: $(VENV)/.run-stamp
	$(BIN)/mcuprof serve --http-port $(HTTP_PORT) $(if $(PORT),--port '$(PORT)')

sysdeps:
	bash scripts/install-sysdeps.sh

# The suite starts hundreds of Python processes (servers, CLI commands, ELF readers): its
# bytecode is written once, even where PYTHONDONTWRITEBYTECODE is set, rather than compiled
# again by each of them.
test: $(VENV)/.test-stamp sysdeps
	$(BIN)/ruff check backend tests bench
	$(BIN)/ruff format --check backend tests bench
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: $(VENV)/.test-stamp
	$(BIN)/ruff check backend tests bench
	$(BIN)/ruff format --check backend tests bench

format: $(VENV)/.test-stamp
	$(BIN)/ruff format backend tests bench
	$(BIN)/ruff check --fix backend tests bench

bench: $(VENV)/.test-stamp
	$(BIN)/python bench/decode.py

firmware:
	$(MAKE) -C firmware

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache .hypothesis
