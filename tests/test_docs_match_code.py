"""What the docs say matches what the code does (threads, shape-generic reuse, the machine of the
performance numbers, warm calls while profiling)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent


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
