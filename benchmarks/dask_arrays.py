"""jk.jit over Dask arrays against dask.array with NumPy blocks, same chunks, threaded scheduler.

    .venv/bin/python -m benchmarks.dask_arrays                 # W1-like at 1e7 and 1e8 float32
    .venv/bin/python -m benchmarks.dask_arrays --sizes 1e7 --chunk 1e6 --repeat 5

Per workload and size: the input is generated once and persisted in memory (not timed); each
implementation is called once untimed (jitkernel: trace, partition, compile per block shape),
checked against the other, then timed `--repeat` times round-robin, `f(x).compute()` each, and
the median reported with the ratio dask.array / jitkernel (> 1: jitkernel faster). W1: sin(x) *
cos(x) + sin(x)**2 (elementwise); W2: sum(tanh(a * b + c)) (a full reduction, tree combine);
W3: softmax over rows (rows unchunked: a row kernel per block).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def workloads(xp):
    def w1(x):
        return xp.sin(x) * xp.cos(x) + xp.sin(x) ** 2

    def w2(a, b, c):
        return xp.sum(xp.tanh(a * b + c))

    def w3(x):
        e = xp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return {"W1": w1, "W2": w2, "W3": w3}


def inputs(name: str, n: int, chunk: int, da):
    rs = da.random.RandomState(0)
    if name == "W3":
        cols = 1000
        rows = n // cols
        return (rs.random_sample((rows, cols), chunks=(max(chunk // cols, 1), cols)).astype(np.float32),)
    count = 3 if name == "W2" else 1
    return tuple(rs.random_sample(n, chunks=chunk).astype(np.float32) for _ in range(count))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1e7,1e8")
    p.add_argument("--chunk", default="1e6", help="elements per block (W3: rows of 1000 of that many elements)")
    p.add_argument("--workloads", default="W1,W2,W3")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    import dask
    import dask.array as da
    import jitkernel as jk
    with dask.config.set(scheduler="threads"):
        return _run(args, dask, da, jk)


def _run(args: argparse.Namespace, dask, da, jk) -> int:
    print(f"dask {dask.__version__}, numpy {np.__version__}, jitkernel {jk.__version__}, threaded scheduler, "
          f"chunk {int(float(args.chunk))} elements, median of {args.repeat}")
    for name in args.workloads.split(","):
        for n in [int(float(s)) for s in args.sizes.split(",")]:
            xs = dask.persist(*inputs(name, n, int(float(args.chunk)), da))
            impls = {"dask.array": workloads(da)[name], "jitkernel": jk.jit(workloads(np)[name])}
            ref = None
            for impl, f in impls.items():
                out = f(*xs).compute()
                if ref is None:
                    ref = out
                elif not np.allclose(out, ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max()))):
                    print(f"{name} n={n:.0e}: MISMATCH {impl}")
                    return 1
            times: dict[str, list[float]] = {k: [] for k in impls}
            for _ in range(args.repeat):
                for impl, f in impls.items():
                    t0 = time.perf_counter()
                    f(*xs).compute()
                    times[impl].append(time.perf_counter() - t0)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{name} n={n:.0e} blocks={xs[0].numblocks}: dask.array {med['dask.array'] * 1e3:8.1f} ms, "
                  f"jitkernel {med['jitkernel'] * 1e3:8.1f} ms, ratio {med['dask.array'] / med['jitkernel']:.2f}x")
            del xs
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
