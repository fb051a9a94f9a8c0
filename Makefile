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

# JupyterLab is the optional `notebook` extra. The `test` extra includes it (tests/test_browser.py runs the
# quickstart in JupyterLab in Chromium), so after `make test` or `make demo` this installs nothing new.
$(BIN)/.installed-notebook: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[notebook]'
	touch $@

lab: $(BIN)/.installed-notebook
	$(BIN)/jitkernel lab

clean:
	rm -rf $(VENV)

# The GPU check (docs/gpu.md, "The GPU check"). Here, before any GPU time: `make gpu-wheels` builds the
# PyCUDA wheels into .whl/ (or copy ../shared/wheels/cp312 there) and `make gpu-prepare` compiles the
# cubins into .gpu-cache/; carry both folders. On the GPU machine (plain python3, no venv, no registry):
# `make gpu-check` installs .whl/ offline, runs tiers 0-4 within GPU_BUDGET seconds, prints the table last.
GPU_PYTHON ?= python3
GPU_BUDGET ?= 480

.PHONY: gpu-wheels gpu-prepare gpu-check

gpu-wheels:
	$(GPU_PYTHON) scripts/build_pycuda_wheels.py --out .whl

gpu-prepare: $(BIN)/.installed
	$(BIN)/python scripts/gpu_check.py --tiers 0 --no-install --cache-dir .gpu-cache --budget 1200 --tier-budget 0=1200

gpu-check:
	$(GPU_PYTHON) scripts/gpu_check.py --budget $(GPU_BUDGET)
