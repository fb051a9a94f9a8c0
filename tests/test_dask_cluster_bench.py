"""benchmarks/dask_cluster.py and the one-thread rule of Dask block tasks.

The smoke test runs the benchmark's --quick mode on real LocalClusters (loopback, temporary
compile cache) without the Numba peer; no timing is asserted (timings on a shared machine mean
nothing), only that every part ran and every result was verified."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_cluster_benchmark_runs_and_verifies(tmp_path):
    pytest.importorskip("distributed")
    out_json = tmp_path / "cluster.json"
    env = {k: v for k, v in os.environ.items() if k != "JITKERNEL_PEER_PYTHON"}
    env["JITKERNEL_CACHE_DIR"] = str(tmp_path / "jkcache")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.dask_cluster", "--quick", "--repeat", "1",
                           "--json", str(out_json)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    out = proc.stdout
    assert proc.returncode == 0, f"stdout:\n{out}\nstderr:\n{proc.stderr[-3000:]}"
    assert "0 problems" in out and "MISMATCH" not in out
    for row in ("W1        persist  jk.jit", "W1        sum      dask.array", "W2        compute  jk.jit",
                "W3        persist  dask.array", "W3        sum      jk.jit+sum"):
        assert row in out, row
    assert any(line.startswith("W3        sum      numba") and "skipped" in line for line in out.splitlines())
    doc = json.loads(out_json.read_text())
    table = doc["table"]
    for name in ("W1", "W2", "W3"):
        for impl in ("dask.array", "jk.jit"):
            assert np.allclose(table[name][impl]["checksums"], table[name]["dask.array"]["checksums"], rtol=1e-4)
    assert table["W2"]["jk.jit"]["compute"]["median_s"] > 0
    for name in ("W1", "W3"):  # the sum inside the jitted function: sum(y) of the others
        assert np.isclose(table[name]["jk.jit+sum"]["checksums"][0], table[name]["dask.array"]["checksums"][0],
                          rtol=1e-4)
        assert "persist" not in table[name]["jk.jit+sum"]
    # the workers compiled a handful of block programs, not one per block
    for stats in table["_worker_stats"].values():
        assert 0 < stats["compiles"] <= 12 and stats["blocks"] > stats["compiles"]
    assert set(doc["scaling"]) >= {"1", "2", "speedup"}
    ooc = doc["out_of_core"]
    assert ooc["ok"] and ooc["workers_unchanged"] and ooc["memory_log_lines"] == []
    assert abs(ooc["sum"] - ooc["expected"]) / ooc["expected"] < 1e-3


def test_memory_problem_lines():
    from benchmarks.dask_cluster import memory_problem
    assert not memory_problem("2026-12-01 19:34:15,946 - distributed.worker - INFO -   Memory:   1.00 GiB")
    assert memory_problem("distributed.worker.memory - WARNING - Worker is at 85% memory usage. Pausing worker.")
    assert memory_problem("distributed.worker.memory - WARNING - Unmanaged memory use is high.")
    assert memory_problem("distributed.nanny.memory - WARNING - Worker exceeded 95% memory budget. Restarting worker")
    assert not memory_problem("distributed.worker - WARNING - Compute Failed")


def test_a_checksum_that_differs_is_a_problem(capsys):
    from benchmarks.dask_cluster import print_table
    ok = {"checksums": [10.0, 3.0], "persist": {"median_s": 1.0}, "sum": {"median_s": 1.0}}
    wrong = {"checksums": [10.0, 3.1], "persist": {"median_s": 0.5}, "sum": {"median_s": 0.5}}
    problems = print_table({"W1": {"dask.array": ok, "jk.jit": wrong, "numba": {"skipped": "no peer"}}}, 10, 5)
    assert len(problems) == 1 and "W1 jk.jit" in problems[0]
    assert "MISMATCH" in capsys.readouterr().out


def test_block_tasks_run_their_kernels_on_one_thread(monkeypatch):
    """A jk call of a large array splits its kernel over config.threads; the same kernel as a
    Dask block task runs on the task's thread only (Dask runs the blocks in parallel)."""
    da = pytest.importorskip("dask.array")
    import jitkernel as jk
    from jitkernel.backends.cpu import runtime
    from jitkernel.distributed import worker

    monkeypatch.setattr(jk.config, "threads", 2)
    pools: list[int] = []
    real_pool = runtime._worker_pool

    def spy(workers):
        pools.append(workers)
        return real_pool(workers)
    monkeypatch.setattr(runtime, "_worker_pool", spy)
    f = jk.jit(lambda x: np.sin(x) * np.cos(x) + np.sin(x) ** 2)
    n = 1 << 21
    x = np.linspace(0, 1, n, dtype=np.float32)
    expected = np.sin(x) * np.cos(x) + np.sin(x) ** 2
    np.testing.assert_allclose(f(x), expected, rtol=1e-5, atol=1e-6)
    assert pools, "a plain call of this size splits its kernel (else this test checks nothing)"
    pools.clear()
    y = f(da.from_array(x, chunks=n // 2)).compute(scheduler="sync")
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    assert worker.stats()["blocks"] >= 2
    assert pools == [], "a block task's kernel used the thread pool"
    assert getattr(runtime.thread_cap, "threads", None) is None  # restored after each task
    f(x)
    assert pools, "the cap outlived the block tasks"
