# The commands of the README. Each builds the virtual environment on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test setup lab clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

setup: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/jitkernel demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q

# JupyterLab is an optional extra (`notebook`): only `make lab` installs it, never `make test`.
$(BIN)/.installed-notebook: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[notebook]'
	touch $@

lab: $(BIN)/.installed-notebook
	$(BIN)/jitkernel lab

clean:
	rm -rf $(VENV)
