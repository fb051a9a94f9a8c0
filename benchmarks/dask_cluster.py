"""W1-W3 on a 2-worker dask.distributed LocalCluster: dask.array with NumPy blocks, map_blocks of
Numba functions and jk.jit on the Dask arrays; scaling from 1 to 2 workers; an out-of-core input.

    .venv/bin/python -m benchmarks.dask_cluster --peer-python /work/venv-peers/bin/python
    .venv/bin/python -m benchmarks.dask_cluster --quick            # small sizes (the smoke test)
    .venv/bin/python -m benchmarks.dask_cluster --skip-scaling --skip-ooc --repeat 3
    .venv/bin/python -m benchmarks.dask_cluster --skip-table --skip-scaling --skip-ooc --overhead-blocks 1000

What is timed (benchmarks/dask_cluster_common.py): the inputs are generated on the workers
(`da.random.default_rng(seed).random(..., dtype=float32)`) and persisted there first, untimed.
Then, per implementation, the realistic patterns of a cluster: `persist` (the result computed
into the workers' memory: `client.persist(f(x))` + `wait`) and `sum` (a reduction of the result
to the client: `f(x).sum().compute()`; W2 is a scalar: `compute`). Nothing large is gathered to
the client. Each implementation runs every pattern once untimed (compiles), then `--repeat`
rounds round-robin; medians and the ratio dask.array / implementation (> 1: faster than
dask.array). Results are compared by two float64 checksums (sum(y), sum(y^2 * position)).

Numba runs in the peer interpreter (`--peer-python`, a venv with numba and distributed; it pins
its own llvmlite) with its own cluster of the same shape, after the other two: its rows are in
the same table, measured minutes apart (the load average is printed before each part).

Scaling: jk.jit W1 reduced (`f(x).sum()`) on `--scaling-n` float32 elements (default 1e9)
generated and persisted on 1 worker, then on 2 workers (one thread each), median of repeats.
Out-of-core: 2 workers with `--ooc-limit` (1 GiB) memory each, a `--ooc-gib` (3 GiB) input
generated lazily (never persisted), reduced by one jk function; the workers' and nannies' logs
are searched for memory warnings (pausing, spilling, restarts, MemoryError).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import numpy as np

from .dask_cluster_common import inputs, measure, patterns, start_cluster, workloads

SUM_INSIDE = "jk.jit+sum"  # jk.jit(lambda x: np.sum(w(x))): the sum fused into the jitted program
QUICK = {"n": 1_000_000, "chunk": 250_000, "scaling_n": 4_000_000, "ooc_gib": 0.05}
# A log line is a memory problem when it is a warning or error about memory, or names one of
# the worker memory manager's actions (the INFO line at start-up stating the limit is not).
MEMORY_WORDS = ("memory", "spill", "pausing", "paused", "restart", "memoryerror", "terminat", "killed")
LEVELS = (" - WARNING - ", " - ERROR - ", " - CRITICAL - ")


def memory_problem(line: str) -> bool:
    low = line.lower()
    return any(level in line for level in LEVELS) and any(w in low for w in MEMORY_WORDS) \
        or any(w in low for w in ("pausing worker", "spilling", "restarting worker", "memoryerror"))


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def _jk():
    import jitkernel as jk
    return jk


def cluster_table(args: argparse.Namespace) -> dict:
    import dask.array as da
    jk = _jk()
    names = args.workloads.split(",")
    sizes = {name: args.n for name in names}
    print(f"== W1-W3 on 2 workers x 1 thread, {load()}", flush=True)
    results: dict = {}
    with start_cluster(2) as client:
        for name in names:
            impls = {"dask.array": workloads(da)[name], "jk.jit": jk.jit(workloads(np)[name])}
            if "sum" in patterns(name):  # how a jk user writes the reduction: inside the jitted function
                impls[SUM_INSIDE] = jk.jit(_sum_of(workloads(np)[name]))
            results[name] = measure(client, name, sizes[name], args.chunk, impls, args.repeat, only_sum=(SUM_INSIDE,))
            print(f"   {name} done, {load()}", flush=True)
        results["_worker_stats"] = client.run(_worker_stats)
    peer = run_peer(args, sizes)
    for name in names:
        results[name]["numba"] = peer.get("results", {}).get(name, {"skipped": peer.get("error", "no result")})
    results["_numba_version"] = peer.get("version")
    return results


def _sum_of(f):
    return lambda *xs: np.sum(f(*xs))


def _worker_stats() -> dict:
    from jitkernel.distributed import worker
    return worker.stats()


def run_peer(args: argparse.Namespace, sizes: dict) -> dict:
    if not args.peer_python:
        return {"error": "no --peer-python (an interpreter with numba and distributed)"}
    print(f"== Numba (peer {args.peer_python}), {load()}", flush=True)
    config = {"workloads": sizes, "chunk": args.chunk, "repeat": args.repeat, "workers": 2}
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dask_cluster_numba.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        proc = subprocess.run([args.peer_python, script, json.dumps(config)], capture_output=True, text=True,
                              env=env, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"peer failed: {e}"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": f"peer exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] or '?'}"}
    return json.loads(lines[-1])


def print_table(results: dict, n: int, chunk: int) -> list[str]:
    """The table; returns the problems (checksums that disagree with dask.array's)."""
    problems = []
    print(f"\n{'workload':9} {'pattern':8} {'impl':11} {'median':>10} {'dask.array/impl':>16}  checksum vs dask.array")
    for name in [k for k in results if not k.startswith("_")]:
        base = results[name]["dask.array"]
        for pattern in patterns(name):
            for impl in ("dask.array", "numba", "jk.jit", SUM_INSIDE):
                r = results[name].get(impl, {})
                if impl == SUM_INSIDE and (pattern != "sum" or not r):
                    continue
                if "skipped" in r or pattern not in r:
                    print(f"{name:9} {pattern:8} {impl:11} {'skipped':>10}  {r.get('skipped', '')}")
                    continue
                rel = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(r["checksums"], base["checksums"]))
                if rel > 1e-4 and pattern == [k for k in patterns(name) if k in r][0]:  # once per implementation
                    problems.append(f"{name} {impl}: checksums {r['checksums']} vs {base['checksums']}")
                ratio = base[pattern]["median_s"] / r[pattern]["median_s"]
                print(f"{name:9} {pattern:8} {impl:11} {r[pattern]['median_s'] * 1e3:8.1f} ms {ratio:15.2f}x  "
                      f"{rel:.1e}{'  MISMATCH' if rel > 1e-4 else ''}")
    print(f"(float32, n = {n:.0e} elements per input (W3: rows of 1000), chunks of {chunk:.0e} elements)")
    return problems


def scaling(args: argparse.Namespace) -> dict:
    jk = _jk()
    # The sum inside the jitted function: W1 followed by Dask's .sum() writes and reads the 4 GB
    # result, and two workers doing that share the memory bandwidth (measured: 0.9x).
    f = jk.jit(_sum_of(workloads(np)["W1"]))
    out: dict = {}
    for workers in (1, 2):
        print(f"== scaling: W1 n={args.scaling_n:.0e} on {workers} worker(s), {load()}", flush=True)
        with start_cluster(workers) as client:
            r = measure(client, "W1", args.scaling_n, args.scaling_chunk, {SUM_INSIDE: f}, args.scaling_repeat,
                        only_sum=(SUM_INSIDE,))[SUM_INSIDE]["sum"]
            out[workers] = {"median_s": r["median_s"], "samples_s": r["samples_s"], "load": load()}
    out["speedup"] = out[1]["median_s"] / out[2]["median_s"]
    print(f"scaling W1 summed inside jk.jit, n={args.scaling_n:.0e}, chunks {args.scaling_chunk:.0e}: 1 worker "
          f"{out[1]['median_s']:.2f} s, 2 workers {out[2]['median_s']:.2f} s, speedup {out['speedup']:.2f}x "
          f"(goal >= 1.6x)")
    return out


def per_block_overhead(args: argparse.Namespace) -> dict:
    """W1 on `--overhead-blocks` blocks of 1,000 elements (`persist`): the time per block is the
    per-task cost of the cluster plus ours, the kernels' share being a few microseconds."""
    import dask.array as da
    jk = _jk()
    blocks = args.overhead_blocks
    print(f"== per-block overhead: W1 on {blocks} blocks of 1000 elements, 2 workers, {load()}", flush=True)
    with start_cluster(2) as client:
        impls = {"dask.array": workloads(da)["W1"], "jk.jit": jk.jit(workloads(np)["W1"])}
        r = measure(client, "W1", blocks * 1000, 1000, impls, args.repeat)
    out = {impl: r[impl]["persist"]["median_s"] / blocks * 1e6 for impl in impls}
    print("per-block overhead (persist): " + ", ".join(f"{k} {v:.0f} us" for k, v in out.items()))
    return out


def out_of_core(args: argparse.Namespace) -> dict:
    jk = _jk()
    f = jk.jit(lambda x: np.sum(np.sin(x) * np.cos(x) + np.sin(x) ** 2, dtype=np.float64))
    n = int(args.ooc_gib * 2**30 / 4)
    print(f"== out-of-core: {args.ooc_gib} GiB input (n={n:.3e} float32) on 2 workers limited to "
          f"{args.ooc_limit}, {load()}", flush=True)
    with start_cluster(2, memory_limit=args.ooc_limit) as client:
        before = set(client.scheduler_info()["workers"])
        (x,) = inputs("W1", n, args.chunk)
        t0 = time.perf_counter()
        total = float(f(x).compute())
        seconds = time.perf_counter() - t0
        after = set(client.scheduler_info()["workers"])
        logs = {**client.get_worker_logs(), **{f"nanny {k}": v for k, v in client.get_worker_logs(nanny=True).items()}}
    lines = [f"{who}: {msg}" for who, entries in logs.items() for _, msg in entries
             if memory_problem(msg)]
    expected = n * ((1 - np.cos(2.0)) / 4  # n E[sin x cos x + sin^2 x], x ~ U[0, 1)
                     + (0.5 - np.sin(2.0) / 4))
    ok = before == after and not lines and abs(total - expected) / expected < 1e-3
    print(f"out-of-core: {seconds:.1f} s, sum {total:.6e} (expected about {expected:.6e}), workers "
          f"{'unchanged' if before == after else 'CHANGED (a worker died)'}, memory messages in the logs: "
          f"{len(lines)}{': ' + '; '.join(lines[:5]) if lines else ''} -> {'ok' if ok else 'PROBLEM'}")
    return {"seconds": seconds, "sum": total, "expected": expected, "memory_log_lines": lines,
            "workers_unchanged": before == after, "ok": ok, "gib": args.ooc_gib, "limit": args.ooc_limit}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (the smoke test); not out of core")
    p.add_argument("--n", type=float, default=1e8, help="elements per input of W1-W3 (W3: rows of 1000)")
    p.add_argument("--chunk", type=float, default=4e6, help="elements per block")
    p.add_argument("--workloads", default="W1,W2,W3")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--peer-python", default=os.environ.get("JITKERNEL_PEER_PYTHON"))
    p.add_argument("--skip-table", action="store_true")
    p.add_argument("--skip-scaling", action="store_true")
    p.add_argument("--scaling-n", type=float, default=1e9)
    p.add_argument("--scaling-chunk", type=float, default=2e7)
    p.add_argument("--scaling-repeat", type=int, default=3)
    p.add_argument("--skip-ooc", action="store_true")
    p.add_argument("--ooc-gib", type=float, default=3.0)
    p.add_argument("--ooc-limit", default="1GiB")
    p.add_argument("--overhead-blocks", type=int, default=0, help="also time W1 on this many tiny blocks")
    p.add_argument("--json", help="write every sample and the settings here")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.chunk, args.scaling_n, args.ooc_gib = QUICK["n"], QUICK["chunk"], QUICK["scaling_n"], QUICK["ooc_gib"]
        args.scaling_chunk = args.chunk
        args.repeat, args.scaling_repeat = min(args.repeat, 2), min(args.scaling_repeat, 2)
    args.n, args.chunk, args.scaling_n, args.scaling_chunk = (int(v) for v in (args.n, args.chunk, args.scaling_n,
                                                                               args.scaling_chunk))
    import dask
    import distributed
    jk = _jk()
    print(f"dask {dask.__version__}, distributed {distributed.__version__}, numpy {np.__version__}, jitkernel "
          f"{jk.__version__}, {os.cpu_count()} CPUs, {load()}{', QUICK' if args.quick else ''}")
    record: dict = {"args": vars(args), "start": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    problems: list[str] = []
    if not args.skip_table:
        record["table"] = cluster_table(args)
        problems += print_table(record["table"], args.n, args.chunk)
    if not args.skip_scaling:
        record["scaling"] = scaling(args)
    if args.overhead_blocks:
        record["per_block_overhead_us"] = per_block_overhead(args)
    if not args.skip_ooc:
        record["out_of_core"] = out_of_core(args)
        if not record["out_of_core"]["ok"]:
            problems.append("out-of-core run: " + json.dumps(record["out_of_core"])[:300])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(record, fh, indent=1, default=str)
    print(f"{len(problems)} problems" + "".join(f"\n  {p}" for p in problems))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
