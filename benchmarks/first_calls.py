"""First calls of small NumPy exercise-style functions with Python loops and `if`s (a sieve,
Collatz lengths, bubble and selection sorts, Pascal's triangle, a Newton iteration, a histogram,
a determinant by elimination, a game-of-life step...):
how long the first call takes (trace + compile + run, with an empty compile cache), how long a
warm call takes, and whether autograph made each Python loop one loop ("native": machine code;
"Python-driven": one compiled loop whose body steps the CPU backend calls from Python, because
the body holds a library step such as a selection or a run-time check) or unrolled it.

    .venv/bin/python -m benchmarks.first_calls            # the table
    .venv/bin/python -m benchmarks.first_calls --json out.json

Each function runs in a fresh interpreter with its own empty `JITKERNEL_CACHE_DIR`, so every
first call pays for LLVM's set-up and every compilation, as a user's first call in a new
session does (importing jitkernel is not counted). Every result is checked against NumPy.
The goal: every first call at most 1 s.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


# ----------------------------------------------------------------------------- the functions

def sieve(n):
    is_prime = np.ones(n + 1, dtype=bool)
    is_prime[:2] = False
    for i in range(2, int(n ** 0.5) + 1):
        if is_prime[i]:
            is_prime[i * i::i] = False
    return np.nonzero(is_prime)[0]


def collatz_lengths(n):
    out = np.zeros(n, dtype=np.int64)
    for k in range(1, n + 1):
        x = k
        steps = 0
        while x != 1:
            if x % 2 == 0:
                x = x // 2
            else:
                x = 3 * x + 1
            steps += 1
        out[k - 1] = steps
    return out


def running_max(a):
    out = np.empty_like(a)
    m = a[0]
    for i in range(len(a)):
        if a[i] > m:
            m = a[i]
        out[i] = m
    return out


def bubble_sort(a):
    a = a.copy()
    n = len(a)
    for i in range(n):
        for j in range(n - i - 1):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
    return a


def selection_sort(a):
    a = a.copy()
    for i in range(len(a)):
        j = i + np.argmin(a[i:])
        a[i], a[j] = a[j], a[i]
    return a


def weighted_dot(a, b):
    total = 0.0
    for i, (x, y) in enumerate(zip(a, b)):
        total += (i + 1) * x * y
    return total


def prefix_sums(a):
    out = np.zeros_like(a)
    total = 0.0
    for i in range(len(a)):
        total += a[i]
        out[i] = total
    return out


def pascal_rows(n):
    rows = np.zeros((n, n), dtype=np.int64)
    rows[0, 0] = 1
    for i in range(1, n):
        rows[i, 0] = 1
        rows[i, 1:i + 1] = rows[i - 1, :i] + rows[i - 1, 1:i + 1]
    return rows


def newton_sqrt(x):
    y = np.ones_like(x)
    while np.max(np.abs(y * y - x)) > 1e-10:
        y = 0.5 * (y + x / y)
    return y


def matrix_power(A, k):
    R = np.eye(A.shape[0])
    for _ in range(k):
        R = R @ A
    return R


def moving_average(a, w):
    out = np.empty(len(a) - w + 1)
    for i in range(len(out)):
        out[i] = a[i:i + w].mean()
    return out


def histogram(a, bins):
    counts = np.zeros(bins, dtype=np.int64)
    lo, hi = a.min(), a.max()
    for x in a:
        k = int((x - lo) / (hi - lo) * bins)
        if k == bins:
            k = bins - 1
        counts[k] += 1
    return counts


def determinant(A):
    A = A.copy()
    det = 1.0
    for k in range(A.shape[0]):
        p = np.argmax(np.abs(A[k:, k])) + k
        if A[p, k] == 0:
            return 0.0
        if p != k:
            A[[k, p]] = A[[p, k]]
            det = -det
        det *= A[k, k]
        A[k + 1:] -= np.outer(A[k + 1:, k] / A[k, k], A[k])
    return det


def life_step(G):
    n, m = G.shape
    new = G.copy()
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            s = G[i - 1:i + 2, j - 1:j + 2].sum() - G[i, j]
            if G[i, j] == 1 and (s < 2 or s > 3):
                new[i, j] = 0
            elif G[i, j] == 0 and s == 3:
                new[i, j] = 1
    return new


def _inputs() -> dict[str, tuple[Callable, tuple, dict]]:
    rng = np.random.default_rng(0)
    spd = rng.random((8, 8)) / 8
    return {
        "sieve": (sieve, (10000,), {"static_argnums": 0}),
        "collatz_lengths": (collatz_lengths, (1000,), {"static_argnums": 0}),
        "running_max": (running_max, (rng.standard_normal(1000),), {}),
        "bubble_sort": (bubble_sort, (rng.standard_normal(200),), {}),
        "selection_sort": (selection_sort, (rng.standard_normal(200),), {}),
        "weighted_dot": (weighted_dot, (rng.standard_normal(1000), rng.standard_normal(1000)), {}),
        "prefix_sums": (prefix_sums, (rng.standard_normal(1000),), {}),
        "pascal_rows": (pascal_rows, (30,), {"static_argnums": 0}),
        "newton_sqrt": (newton_sqrt, (rng.random(1000) * 100 + 1,), {}),
        "matrix_power": (matrix_power, (spd, 20), {}),
        "moving_average": (moving_average, (rng.standard_normal(1000), 7), {"static_argnums": 1}),
        "histogram": (histogram, (rng.standard_normal(1000), 10), {"static_argnums": 1}),
        "determinant": (determinant, (rng.random((12, 12)),), {}),
        "life_step": (life_step, ((rng.random((32, 32)) < 0.3).astype(np.int64),), {}),
    }


# ----------------------------------------------------------------------------- one function


def _measure(name: str, warm_calls: int) -> dict[str, Any]:
    import jitkernel as jk
    from jitkernel.autograph import runtime

    unrolled: list[int] = []
    python_for = runtime._python_for

    def counting_python_for(r: Any, *args: Any, **kwargs: Any) -> Any:
        if len(r) > runtime.UNROLL_LIMIT:  # (short static loops are unrolled on purpose)
            unrolled.append(len(r))
        return python_for(r, *args, **kwargs)
    runtime._python_for = counting_python_for
    from jitkernel.trace.tracer import Tracer
    tracer_iter = Tracer.__iter__

    def counting_iter(self: Any) -> Any:  # Python iterating a traced array: one body per element
        if self.ndim and self.shape[0] > runtime.UNROLL_LIMIT:
            unrolled.append(self.shape[0])
        return tracer_iter(self)
    Tracer.__iter__ = counting_iter

    fn, args, kwargs = _inputs()[name]
    expected = fn(*(np.copy(a) if isinstance(a, np.ndarray) else a for a in args))
    f = jk.jit(fn, **kwargs)
    t0 = time.perf_counter()
    got = f(*args)
    first = time.perf_counter() - t0
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-9)
    warm = []
    for _ in range(warm_calls):
        t0 = time.perf_counter()
        f(*args)
        warm.append(time.perf_counter() - t0)
    kernels = str(f.lower(*args))  # a loop the CPU backend drives from Python is a library step there
    driven = re.findall(r"library k\d+_(?:fori_loop|while_loop)", kernels)
    loops = ("unrolled " + "+".join(str(n) for n in unrolled) if unrolled
             else f"Python-driven ({len(driven)})" if driven else "native")
    return {"function": name, "first_s": first, "warm_s": float(np.median(warm)), "loops": loops}


def _run_isolated(name: str, warm_calls: int) -> dict[str, Any]:
    env = dict(os.environ, JITKERNEL_CACHE_DIR=tempfile.mkdtemp(prefix="jk-first-calls-"))
    cmd = [sys.executable, "-m", "benchmarks.first_calls", "--one", name, "--warm", str(warm_calls)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return {"function": name, "first_s": float("nan"), "warm_s": float("nan"),
                "loops": "error: " + (done.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--one", help="measure one function in this process (prints a JSON line)")
    parser.add_argument("--only", nargs="*", help="the functions to measure (default: all)")
    parser.add_argument("--warm", type=int, default=5, help="warm calls per function (median reported)")
    parser.add_argument("--json", help="also write the rows to this file")
    a = parser.parse_args()
    if a.one:
        print(json.dumps(_measure(a.one, a.warm)))
        return
    rows = [_run_isolated(name, a.warm) for name in (a.only or list(_inputs()))]
    print(f"{'function':<18} {'first call':>11} {'warm call':>11}  loops")
    for r in rows:
        print(f"{r['function']:<18} {r['first_s']:>9.3f} s {r['warm_s'] * 1e3:>8.3f} ms  {r['loops']}")
    slow = [r["function"] for r in rows if not r["first_s"] <= 1.0]
    print("every first call <= 1 s" if not slow else f"first calls over 1 s: {', '.join(slow)}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
