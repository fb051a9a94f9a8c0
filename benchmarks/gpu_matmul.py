"""matmul on the GPU: jitkernel's tiled kernel (backend="cuda") against CuPy (cuBLAS) and NumPy
at the issue's size, 4096^3 float32 (goal: >= 50% of CuPy's speed), plus float64.

    python -m benchmarks.gpu_matmul [--n 4096] [--repeat 10]

Prints one line per implementation: best time of `repeat` calls after a warm-up, and TFLOP/s
(2 n^3 flops). Needs a GPU with PyCUDA (and CuPy for its row); says what is missing otherwise.
Inputs are device arrays (no transfer in the timed calls); each call ends with
block_until_ready (CuPy: stream synchronize).
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def best(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    import jitkernel as jk
    from jitkernel.backends.cuda import missing_for_cuda
    missing = missing_for_cuda()
    if missing:
        print("no GPU run:", "; ".join(missing))
        return
    n = args.n
    flops = 2.0 * n ** 3
    for dt in (np.float32, np.float64):
        x = np.random.default_rng(0).standard_normal((n, n)).astype(dt)
        gpu = jk.devices("gpu")[0]
        dx = jk.device_put(x, gpu)
        f = jk.jit(lambda a, b: a @ b, backend="cuda")
        t = best(lambda: f(dx, dx).block_until_ready(), args.repeat)
        print(f"jitkernel  {np.dtype(dt).name:8s} n={n}: {t * 1e3:8.2f} ms  {flops / t / 1e12:6.1f} TFLOP/s")
        try:
            import cupy as cp
        except ImportError:
            print("cupy       not installed")
            continue
        cx = cp.asarray(x)

        def cupy_call():
            cx @ cx
            cp.cuda.Stream.null.synchronize()

        t = best(cupy_call, args.repeat)
        print(f"cupy       {np.dtype(dt).name:8s} n={n}: {t * 1e3:8.2f} ms  {flops / t / 1e12:6.1f} TFLOP/s")


if __name__ == "__main__":
    main()
