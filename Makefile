# Set-up and the two jobs the README names. Everything installs into .venv from pyproject.toml;
# the set-up reruns when a C source changes (the native recorders, the what-if replay: pip builds them with the system compiler).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup browser demo test lint bench clean

$(STAMP): pyproject.toml setup.py tracers/charm/_recorder.c tracers/torch/_hooks.c paradise/whatif/_replay.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[charm,torch,dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/paradise demo

# The report's browser test opens report.html in Debian's chromium (headless); CI runs as root.
browser:
	command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

# JOBS=N runs the suite on N pytest-xdist workers; tests/conftest.py groups each file (and the
# hostile corpus, and the timing-sensitive tests) onto one worker, which needs --dist loadgroup.
# --durations=20 lists the slowest tests near the end of the log, where CI's record shows it.
JOBS ?= 0
XDIST := $(if $(filter-out 0,$(JOBS)),-n $(JOBS) --dist loadgroup,)

test: setup browser
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=20 $(XDIST) tests

lint: setup
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
