# hr: the two commands are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint types pytest install browser clean test-real-model lock

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The installed set is the tested set: every install takes the versions pinned in
# constraints.txt (the lock the suite passed with; tests/test_lock.py checks the venv
# against it). Reinstall when pyproject.toml or the lock changed; `make lock` refreshes it.
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

# Refresh the lock from pyproject.toml's ranges (valid for Python 3.11 and later), then
# `make test` installs it and checks it.
lock: | $(BIN)/python
	$(BIN)/python -m pip install --quiet 'uv>=0.5'
	$(BIN)/uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 \
	  --quiet -o constraints.txt

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hr demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

types: $(STAMP)
	$(BIN)/mypy hr_core hr_server flows tasks hr_cli

# The report's browser test opens it in Debian's chromium: install it when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; }

pytest: $(STAMP) browser
	$(BIN)/python -m pytest

test: lint types pytest

# End-to-end tests against a real model server (tests_real_model/, not part of `make test`):
# llama.cpp's llama-server and SmolLM2-135M-Instruct, downloaded and built once into
# ~/.cache/hr/real-model/ by scripts/real_model.sh (the first build: 9-15 min on 2 cores).
test-real-model: $(STAMP)
	PYTHON=$(BIN)/python scripts/real_model.sh
	$(BIN)/python -m pytest tests_real_model

clean:
	rm -rf $(VENV) results .pytest_cache .mypy_cache .ruff_cache
