# The commands of the README. Each builds the virtual environment on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test setup lab clean tpu-check

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

# On the TPU machine (docs/tpu.md): JAX, jaxlib and libtpu are already on PYTHONPATH and the only
# package index is the machine's own; the project's other dependencies go into .tpu-deps, added at
# the end of PYTHONPATH. Runs tests/tpu on the chip, then the benchmark against JAX (JSON lines to
# benchmarks/results/tpu-check.jsonl, the table last).
TPU_INDEX ?= file:///opt/pypi/simple
tpu-check:
	python3 -m pip install --quiet --target .tpu-deps --index-url $(TPU_INDEX) \
		llvmlite ipython ipykernel matplotlib nbclient nbformat hypothesis pytest
	PYTHONPATH="$$PYTHONPATH:$(CURDIR)/.tpu-deps:$(CURDIR)" timeout 1500 python3 scripts/tpu_check.py $(TPU_CHECK_ARGS)
