"""What recording a block costs on a dask.distributed worker (docs/distributed.md, "Per-worker
profiles"): `profile.recorded_run_block` against `worker.run_block` on the same tiny block, called
in a loop inside each worker of a 2-process LocalCluster (so the scheduler's own per-task cost
is not in the difference), and the same graph of many tiny blocks computed with profiling off and on.

    python -m benchmarks.dask_profile_overhead [--calls 2000] [--blocks 400]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np


def _per_call(bp_and_block: tuple, calls: int) -> dict[str, float]:
    """Inside a worker: median of 5 loops of `calls` calls, seconds per call, each function."""
    from jitkernel.distributed import profile, worker
    bp, block = bp_and_block
    worker.run_block(bp, block)  # compiled once
    out = {}
    for name, fn in (("run_block", lambda: worker.run_block(bp, block)),
                     ("recorded_run_block", lambda: profile.recorded_run_block("b[0]", bp, block))):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - t0) / calls)
        out[name] = statistics.median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--blocks", type=int, default=400)
    args = parser.parse_args()
    os.environ["JITKERNEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="jk-bench-cache-")
    import dask.array as da
    import distributed
    import jitkernel as jk
    from jitkernel import profiler
    from jitkernel import events
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address=None, protocol="tcp")
    client = distributed.Client(cluster)
    try:
        f = jk.jit(lambda x: np.sin(x) + 1.0)
        x = da.from_array(np.arange(8.0 * args.blocks), chunks=8)
        graph = dict(f(x).__dask_graph__())
        bp = next(v for v in graph.values() if type(v).__name__ == "BlockProgram")
        per_call = client.run(_per_call, (bp, np.arange(8.0)), args.calls)
        for w, r in per_call.items():
            print(f"{w}: run_block {r['run_block'] * 1e6:.1f} us, recorded_run_block {r['recorded_run_block'] * 1e6:.1f} us, "
                  f"recording {(r['recorded_run_block'] - r['run_block']) * 1e6:.1f} us per block")
        x = x.persist()
        for label, on in (("off", False), ("on", True), ("off", False), ("on", True)):
            saved = list(events.SUBSCRIBERS)
            if on:
                profiler.start()
            else:
                events.SUBSCRIBERS.clear()
            times = []
            for _ in range(5):
                y = f(x)
                t0 = time.perf_counter()
                client.compute(y).result()
                times.append(time.perf_counter() - t0)
            events.SUBSCRIBERS[:] = saved
            med = statistics.median(times)
            print(f"graph of {args.blocks} blocks, profiling {label}: median {med * 1e3:.1f} ms "
                  f"({med / args.blocks * 1e6:.0f} us per block task, scheduler included)")
        t0 = time.perf_counter()
        n = profiler.report(f)
        print(f"profiler.report pulled and drew {len(n.records())} records in {(time.perf_counter() - t0) * 1e3:.0f} ms")
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
