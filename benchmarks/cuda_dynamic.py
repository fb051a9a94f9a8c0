"""A new size of a shape-generic program on the CUDA emulator: the first call of a size that
compiles (render + g++) against one that reuses the template's module (trace, fuse, render, no
compiler run), and the host-driven while loop's cost per iteration on the emulator.

    JITKERNEL_CACHE_DIR=$(mktemp -d) python -m benchmarks.cuda_dynamic
"""
from __future__ import annotations

import time

import numpy as np

import jitkernel as jk
from jitkernel import lax


def program(x, m):
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return np.sin(x[1:]) * 2 + x[:-1], x.mean() - m.sum(axis=0), e / e.sum(axis=1, keepdims=True)


def first_call(f, n: int) -> float:
    x, m = np.ones(n), np.ones((4, n))
    t0 = time.perf_counter()
    f(x, m)
    return time.perf_counter() - t0


def main() -> None:
    f = jk.jit(program, backend="cuda-emulator")
    compiled = [first_call(f, n) for n in (100, 101)]  # the second makes n dynamic (a compile)
    reused = [first_call(f, n) for n in range(102, 112)]
    print(f"first call, compiling: {compiled[0] * 1e3:.0f} ms (size 100), {compiled[1] * 1e3:.0f} ms (size 101, generic)")
    print(f"first call of a new size, reusing the module: median {np.median(reused) * 1e3:.1f} ms over 10 sizes")
    w = jk.jit(lambda c: lax.while_loop(lambda v: v[0] < 1e6, lambda v: v * 2.0, c), backend="cuda-emulator")
    x = np.ones(8)
    w(x)
    t0 = time.perf_counter()
    w(x)
    print(f"while loop, 20 iterations: {(time.perf_counter() - t0) / 20 * 1e6:.0f} us per iteration on the emulator")


if __name__ == "__main__":
    main()
