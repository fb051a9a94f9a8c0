"""Per-worker profiles and faults of jitted functions over Dask arrays:
block records sent back by real workers (threaded scheduler, a real 2-process LocalCluster),
a worker killed mid-computation, a worker that cannot compile."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import profiler
from jitkernel import events
from jitkernel.distributed import profile as dprofile
from jitkernel.distributed import worker
from jitkernel.profiler.workers import retried_blocks, worker_rows

da = pytest.importorskip("dask.array")
import dask  # noqa: E402


def _task_functions(arr) -> set[str]:
    return {v[0].__name__ for v in dict(arr.__dask_graph__()).values()
            if isinstance(v, tuple) and v and callable(v[0]) and "run_block" in getattr(v[0], "__name__", "")}


@pytest.fixture
def no_subscribers():
    saved = list(events.SUBSCRIBERS)
    events.SUBSCRIBERS.clear()
    yield
    events.SUBSCRIBERS[:] = saved


def test_profiling_off_builds_the_plain_graph_and_on_the_recorded_one(no_subscribers):
    f = jk.jit(lambda x: np.sin(x) * 2)
    x = da.ones(10, chunks=4)
    assert _task_functions(f(x)) == {"run_block"}  # nothing recorded, nothing checked per task
    unsubscribe = events.subscribe(lambda e: None)
    try:
        assert _task_functions(f(x)) == {"recorded_run_block"}
    finally:
        unsubscribe()


def test_threaded_scheduler_publishes_one_block_event_per_block_task(no_subscribers):
    seen: list = []
    unsubscribe = events.subscribe(seen.append)
    try:
        f = jk.jit(lambda x: np.tanh(x) + 1.0)
        x = da.from_array(np.arange(11.0, dtype=np.float32), chunks=4)  # blocks of 4, 4, 3
        before = events.clock()
        with dask.config.set(scheduler="threads"):
            y = f(x).compute()
        after = events.clock()
    finally:
        unsubscribe()
    np.testing.assert_allclose(y, np.tanh(np.arange(11.0, dtype=np.float32)) + 1, rtol=1e-6)
    blocks = sorted((e for e in seen if isinstance(e, events.BlockEvent)), key=lambda e: e.block)
    assert [e.block for e in blocks] == ["<lambda>_block1[0]", "<lambda>_block1[1]", "<lambda>_block1[2]"]
    assert {e.function for e in blocks} == {"<lambda>"}
    assert [e.bytes_in for e in blocks] == [16, 16, 12] and [e.bytes_out for e in blocks] == [16, 16, 12]
    assert all(e.worker.startswith("thread ") and e.pid == os.getpid() for e in blocks)
    assert all(before <= e.start and e.start + e.duration <= after for e in blocks)  # the driver's clock
    compiled = [e for e in blocks if e.compile > 0]
    assert 1 <= len(compiled) <= 2 and all(e.compile <= e.duration for e in compiled)  # two block shapes


# -- a real LocalCluster (processes): the local_cluster fixture (conftest.py) ------------------
@pytest.fixture
def session():
    profiler.start()
    profiler.reset()
    yield profiler
    profiler.stop()  # later test modules must not run with a subscriber listening


def test_cluster_profile_has_one_track_per_worker_with_bytes_moved(local_cluster, session):
    client, _, _ = local_cluster
    f = jk.jit(lambda x: np.tanh(x) @ x.T)  # block (i, j) reads row blocks i and j: transfers
    xs = np.random.default_rng(0).random((400, 30))
    x = da.from_array(xs, chunks=(100, 30))
    begin = events.clock()
    y = client.compute(f(x)).result(timeout=120)
    end = events.clock()
    np.testing.assert_allclose(y, np.tanh(xs) @ xs.T, rtol=1e-10)
    report = profiler.report(f)
    blocks = [r for r in report.records() if r["phase"] == "block"]
    workers = set(client.scheduler_info()["workers"])
    assert blocks and {r["details"]["address"] for r in blocks} <= workers
    # the worker clocks are mapped onto this process's: every block inside the compute
    assert all(begin - report.snapshot.t0 <= r["start"] and r["start"] + r["duration"] <= end - report.snapshot.t0
               for r in blocks)
    rows = worker_rows(report.records())
    assert sum(row.blocks for row in rows) == len(blocks) == len({r["details"]["block"] for r in blocks})
    assert sum(row.bytes_out for row in rows) == sum(r["details"]["bytes_out"] for r in blocks) > 0
    transfers = [r for r in report.records() if r["phase"] == "worker transfer"]
    to_client = [t for t in transfers if t["details"]["destination"] == "client"]
    assert sum(t["details"]["nbytes"] for t in to_client) >= y.nbytes  # the result, gathered
    text = str(report)
    assert "per worker" in text and "-> client" in text
    for row in rows:
        assert f"<lambda> @ {row.worker}: {row.blocks} block(s)" in text
    fig = report.plot("timeline")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert {f"<lambda> @ {row.worker}" for row in rows} <= set(labels)
    # profiler.report pulls each record once
    assert len([r for r in profiler.report(f).records() if r["phase"] == "block"]) == len(blocks)


def test_cluster_profiling_off_records_nothing(local_cluster, no_subscribers):
    client, _, _ = local_cluster
    f = jk.jit(lambda x: np.cos(x) * 3)
    count = len(client.get_events(dprofile.TOPIC))
    x = da.from_array(np.arange(12.0), chunks=3)
    np.testing.assert_allclose(client.compute(f(x)).result(timeout=120), np.cos(np.arange(12.0)) * 3)
    assert len(client.get_events(dprofile.TOPIC)) == count


def _wait_for_block(client, function: str, timeout: float = 60.0) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        for _, record in client.get_events(dprofile.TOPIC):
            if dprofile.function_of(record["name"]) == function:
                return record
        time.sleep(0.02)
    raise AssertionError(f"no block of {function} finished within {timeout} s")


def test_worker_killed_mid_computation_reruns_blocks_identically(local_cluster, session):
    client, lc, _ = local_cluster
    workers_before = set(client.scheduler_info()["workers"])

    @jk.jit
    def heavy(x):
        for _ in range(8):  # 24-32 ms per block here (one thread): still running at the kill
            x = np.sin(x) * 0.9 + np.cos(x) * 0.1
        return x

    xs = np.linspace(0.0, 1.0, 16 * 200_000).reshape(16, -1)
    x = da.from_array(xs, chunks=(1, -1))
    y = client.persist(heavy(x))  # results stay on the worker that computed them
    first = _wait_for_block(client, "heavy")
    os.kill(first["pid"], signal.SIGKILL)  # that worker's process: its results are lost
    result = y.compute()
    expected = heavy(xs)
    np.testing.assert_array_equal(result, expected)  # the same compiled kernel: bit for bit
    recs = profiler.report(heavy).records()
    retried = retried_blocks(recs)
    assert (("heavy", first["block"])) in retried, retried
    workers_of_first = retried[("heavy", first["block"])]
    assert len(set(workers_of_first)) >= 2 and first["track"] in workers_of_first
    assert "ran on" in str(profiler.report(heavy))
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it
    assert set(client.scheduler_info()["workers"]) != workers_before


NO_LLVM = "import sys\nsys.modules['llvmlite'] = None  # this worker has no LLVM: import llvmlite fails\n"


def test_worker_that_cannot_compile_names_itself_and_the_client_keeps_working(local_cluster, tmp_path):
    client, _, _ = local_cluster
    preload = tmp_path / "no_llvm.py"
    preload.write_text(NO_LLVM)
    proc = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", client.scheduler.address,
                             "--nthreads", "1", "--no-nanny", "--name", "no-llvm", "--host", "127.0.0.1",
                             "--no-dashboard", "--preload", str(preload)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:
        client.wait_for_workers(3, timeout=60)
        (address,) = [a for a, w in client.scheduler_info()["workers"].items() if w.get("name") == "no-llvm"]
        f = jk.jit(lambda x: np.exp(x) - 1)
        x = da.from_array(np.arange(6.0), chunks=3)
        with pytest.raises(worker.WorkerCompileError) as info:
            client.compute(f(x), workers=[address], allow_other_workers=False).result(timeout=120)
        message = str(info.value)
        assert f"worker no-llvm {address} pid {proc.pid}" in message and "llvmlite" in message, message
        assert "could not compile block program <lambda>_block1" in message
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    deadline = time.time() + 30
    while address in client.scheduler_info()["workers"] and time.time() < deadline:
        time.sleep(0.1)
    assert address not in client.scheduler_info()["workers"]
    # the client keeps working: the same function on new blocks, and another function
    x2 = da.from_array(np.arange(8.0), chunks=3)
    np.testing.assert_allclose(client.compute(f(x2)).result(timeout=120), np.exp(np.arange(8.0)) - 1)
    g = jk.jit(lambda x: (x * 2).sum())
    assert float(client.compute(g(x2)).result(timeout=120)) == 56.0


def test_tree_combine_levels_are_recorded_as_the_functions_work(no_subscribers):
    seen: list = []
    unsubscribe = events.subscribe(seen.append)
    try:
        f = jk.jit(lambda x: np.abs(x).sum())
        x = da.from_array(np.arange(-20.0, 20.0), chunks=5)  # 8 partials, combined by Dask's tree
        with dask.config.set(scheduler="threads"):
            total = f(x).compute()
    finally:
        unsubscribe()
    assert float(total) == float(np.abs(np.arange(-20.0, 20.0)).sum())
    blocks = [e for e in seen if isinstance(e, events.BlockEvent)]
    combines = [e for e in blocks if e.program == "combine_reduce_sum"]
    assert len(blocks) - len(combines) == 8 and combines  # 8 block tasks, at least one combine level
    assert {(e.function, e.function_id) for e in blocks} == {("<lambda>", f.function_id)}
    assert sum(e.bytes_in for e in combines) >= 8 * 8  # the partials they read
    assert len({e.block for e in combines}) == len(combines)  # told apart: not taken for retries


def test_chrome_trace_has_a_thread_per_worker_track(tmp_path, session):
    f = jk.jit(lambda x: np.exp(x) * 0.5)
    x = da.from_array(np.arange(9.0), chunks=3)
    with dask.config.set(scheduler="threads", num_workers=2):
        f(x).compute()
    report = profiler.report(f)
    trace = __import__("json").loads(report.to_chrome_trace(tmp_path / "t.json").read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    tracks = {f"<lambda> @ {r['details']['worker']}" for r in report.records() if r["phase"] == "block"}
    assert tracks and tracks <= names
    blocks = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] == "block"]
    assert len(blocks) == 3 and all(e["args"]["worker"].startswith("thread ") for e in blocks)
