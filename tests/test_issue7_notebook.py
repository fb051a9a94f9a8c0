"""Issue 7, notebook side: how the notebooks are opened (item 18), the profiler telling failed
traces and redefined functions apart (item 21), the demo's fused-function timing (item 24)."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


# -- item 18: opening the notebooks -------------------------------------------------------------
def test_python_dash_m_jitkernel_is_the_command_line():
    done = _run("-m", "jitkernel", "--help")
    assert done.returncode == 0, done.stderr
    for command in ("demo", "install-kernel", "lab"):
        assert command in done.stdout
    assert _run("-m", "jitkernel", "install-kernel", "--help").returncode == 0


@pytest.mark.skipif(importlib.util.find_spec("jupyterlab") is not None,
                    reason="JupyterLab is installed here: `jitkernel lab` would open it")
def test_lab_without_jupyterlab_says_how_to_install_it():
    done = _run("-m", "jitkernel", "lab", timeout=60)
    assert done.returncode == 2
    assert "JupyterLab is not installed" in done.stderr
    assert "pip install -e '.[notebook]'" in done.stderr and "make lab" in done.stderr
    assert "jitkernel install-kernel --user" in done.stderr


def test_lab_starts_jupyterlab_on_the_notebooks_with_the_arguments_given(tmp_path):
    # JupyterLab is an optional extra, not installed for the tests: a stand-in `jupyterlab`
    # package that prints the command line it got shows what `jitkernel lab` starts.
    stub = tmp_path / "jupyterlab"
    stub.mkdir()
    (stub / "__init__.py").write_text("")
    (stub / "__main__.py").write_text("import json, sys\nprint('JUPYTERLAB', json.dumps(sys.argv[1:]))\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    done = subprocess.run([sys.executable, "-m", "jitkernel", "lab", "--no-browser", "--port", "8899"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    argv = __import__("json").loads(done.stdout.split("JUPYTERLAB", 1)[1])
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []  # tests/test_lab_command.py
    assert argv == [f"--ServerApp.root_dir={ROOT / 'notebooks'}", *as_root, "--no-browser", "--port", "8899"]
    assert "kernel: jitkernel" in done.stdout
    wrong = _run("-m", "jitkernel", "demo", "--no-browser")
    assert wrong.returncode == 2 and "unrecognized arguments: --no-browser" in wrong.stderr


def test_notebook_extra_is_optional_and_not_part_of_test():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(r.startswith("jupyterlab") for r in extras["notebook"])
    assert not any("jupyter" in r for r in extras["test"])


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_installs_the_extra_and_make_test_does_not(tmp_path):
    # The recipes as a fresh clone runs them: a virtual environment that does not exist yet (in
    # .venv, `make -n lab` printed no install once `make lab` had run there).
    fresh = [f"VENV={tmp_path / 'venv'}"]
    lab = subprocess.run(["make", "-n", "lab", *fresh], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert lab.returncode == 0, lab.stderr
    assert "-e '.[notebook]'" in lab.stdout and re.search(r"\bjitkernel lab\b", lab.stdout)
    test = subprocess.run(["make", "-n", "test", *fresh], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert test.returncode == 0 and "-e '.[test]'" in test.stdout and "notebook" not in test.stdout


def test_readme_says_how_to_open_the_notebooks():
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "pip install -e '.[notebook]'" in readme
    assert ".venv/bin/jitkernel" in readme and "python -m jitkernel" in readme
    assert "jitkernel install-kernel --user" in readme


def test_nothing_advertises_a_gpu_backend_that_does_not_exist():
    """The GPU backend the description and the `gpu` extra name exists (backend "cuda", through
    PyCUDA), and the README says it has not run on a real GPU until a GPU run is recorded."""
    from jitkernel.backends import backend_names
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    if "cuda" in project["description"].lower():
        assert "cuda" in backend_names()  # known; needs PyCUDA + a GPU
    assert project.get("optional-dependencies", {}).get("gpu", ["pycuda"])[0].startswith("pycuda")
    readme = (ROOT / "README.md").read_text()
    assert "accelerators" not in readme.lower()
    if "not yet measured on a GPU" in (ROOT / "docs" / "gpu.md").read_text():
        assert "has not yet run on a real GPU" in readme


# -- item 25: what the docs say matches what the code does ---------------------------------------
def _doc(name: str) -> str:
    return (ROOT / "docs" / name).read_text()


def test_default_thread_count_is_the_usable_cpus_as_architecture_md_says():
    env = {k: v for k, v in os.environ.items() if k != "JITKERNEL_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", "import os, jitkernel as jk; "
                           "print(jk.config.threads, len(os.sched_getaffinity(0)))"],
                          capture_output=True, text=True, timeout=60, env=env)
    threads, usable = done.stdout.split()
    assert threads == usable, done.stderr
    doc = " ".join(_doc("architecture.md").split())
    assert "The default is 1" not in doc
    assert "The default is the number of CPUs this process may use (`os.sched_getaffinity`)" in doc


def test_a_shape_generic_reuse_is_neither_a_hit_nor_a_compile_in_code_and_docs():
    import numpy as np

    import jitkernel as jk
    from jitkernel.profiler.collector import Collector
    from jitkernel.profiler.report import Report

    f = jk.jit(lambda x: (x * 2.0).sum(axis=1))
    c = Collector()
    c.start()
    try:
        for n in (4, 5, 6):  # 5 makes dimension 0 dynamic; 6 reuses that machine code
            f(np.ones((n, 3)))
    finally:
        c.stop()
    st = Report(c.snapshot())["<lambda>"]
    assert (st.compiles, st.shape_generic, st.cache_hits, st.recompiles) == (2, 1, 0, 1)
    recompilation = " ".join(_doc("recompilation.md").split())
    assert "the profiler shows it as a cache hit" not in recompilation
    assert "neither a cache hit" in recompilation and "`shape-generic` column" in recompilation
    profiling = " ".join(_doc("profiling.md").split())
    assert "| shape-generic | memory-cache misses that ran on the existing machine code" in profiling


def test_performance_md_names_the_machine_of_its_numbers():
    # Every processor performance.md names is the machine of some raw result it cites (the
    # "machine:" line the harness writes into benchmarks/results/*.txt), never another one.
    machines = []
    for raw in sorted((ROOT / "benchmarks" / "results").glob("run-*.txt")):
        machines += [line for line in raw.read_text().splitlines() if line.startswith("machine:")]
    doc = _doc("performance.md")
    assert "reference table" not in doc
    assert machines
    for word in ("Intel", "Xeon", "AMD", "EPYC", "Ryzen"):
        if word in doc:
            assert any(word in m for m in machines), f"performance.md names {word}; raw results ran on: {machines}"
    assert any(w in doc for m in machines for w in ("Xeon", "EPYC", "Ryzen") if w in m)


def test_warm_calls_stay_on_the_fast_path_while_profiling_as_profiling_md_says():
    import numpy as np

    import jitkernel as jk
    from jitkernel import events

    f = jk.jit(lambda x: x + 1.0)
    x = np.zeros(4)
    f(x)
    slow_path = []
    original = f._lookup
    f._lookup = lambda *a: slow_path.append(a) or original(*a)
    seen = []
    unsubscribe = events.subscribe(seen.append)
    try:
        f(x)
        f(x)
    finally:
        unsubscribe()
    assert slow_path == []
    assert [type(e).__name__ for e in seen] == ["CacheEvent", "RunEvent"] * 2
    assert all(e.function_id == f.function_id for e in seen)
    assert "leaves its warm-call fast path" not in _doc("profiling.md")
