# Set-up and the two jobs the README names. Everything installs into .venv from pyproject.toml.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[charm,torch,dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/paradise demo

test: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider tests

lint: setup
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
