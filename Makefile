# hr: the two commands are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint types pytest install browser clean test-real-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall only when pyproject.toml changed.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hr demo

lint: $(STAMP)
	$(BIN)/ruff check .

types: $(STAMP)
	$(BIN)/mypy hr_core flows tasks hr_cli

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
