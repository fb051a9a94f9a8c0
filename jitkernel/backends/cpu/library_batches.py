"""Library steps on stacks of matrices, split across the worker threads.

NumPy's linalg computes a stack of matrices (`np.linalg.solve(A, b)` with `A` of shape
(T, M, M)) one matrix after the other, one LAPACK call each, on one thread (OpenBLAS's own
threads do not split such small calls, and `OPENBLAS_NUM_THREADS=1` pins them anyway). The
matrices are independent and NumPy's linalg loops release the GIL, so the CPU runtime gives
each worker thread a contiguous part of the stack: the same LAPACK call per matrix, the same
results bit for bit. Stacks come from user code (`np.linalg.inv(stack)`) and from loops whose
trips each solve a system no other trip feeds (passes/trip_maps.py).

A stack is split when the first operand is one (at least three axes, the complex packing
aside), it holds two or more matrices and the work is worth a thread (`MIN_WORK`, about
M**3 * T); every operand with the stack's number of axes and its length is split with it, the
others (a right-hand side shared by every matrix) are passed whole. A part that raises
(LinAlgError: a singular matrix) makes the whole stack run again on this thread, so the error
is NumPy's own, for the first failing matrix.

>>> import numpy as np
>>> from jitkernel.ir import primitives
>>> from concurrent.futures import ThreadPoolExecutor
>>> pool = ThreadPoolExecutor(1)
>>> run = split_stacks("linalg_inv", {}, primitives.get("linalg_inv").impl, lambda: 2, lambda n: pool)
>>> a = np.stack([np.eye(40) * (k + 1) for k in range(8)])
>>> bool(np.array_equal(run(a)[0], np.linalg.inv(a)))
True
"""
from __future__ import annotations

from concurrent.futures import Executor
from typing import Any, Callable

import numpy as np

from ...ir.library_prims import STACKED_LINALG

# About M**3 * T: below this a stack runs on the calling thread (a thread's start and wake-up
# cost tens of microseconds; a 16x16 solve a few).
MIN_WORK = 1 << 17


def split_stacks(prim: str, params: dict[str, Any], impl: Callable[..., list], threads: Callable[[], int],
                 pool: Callable[[int], Executor] | None) -> Callable[..., list]:
    """`impl` of library step `prim`, splitting stacks of matrices across `threads()` threads
    (`pool(n)`: an executor with at least n threads; None: no pool, one thread)."""
    inner, packed = prim, ()
    if prim == "complex_library":
        inner, packed = params.get("prim"), tuple(params.get("in_layout", ()))
    if inner not in STACKED_LINALG or pool is None:
        return impl

    def axes(a: np.ndarray, k: int) -> int:
        return a.ndim - (1 if k < len(packed) and packed[k] else 0)

    def run(*arrays: np.ndarray, **kw: Any) -> list:
        first = arrays[0] if arrays else None
        if first is None or axes(first, 0) < 3:
            return impl(*arrays, **kw)
        count, m = first.shape[0], first.shape[axes(first, 0) - 1]
        n = min(threads(), count)
        if n <= 1 or m ** 3 * count < MIN_WORK:
            return impl(*arrays, **kw)
        stack_axes = axes(first, 0)
        split = [isinstance(a, np.ndarray) and axes(a, k) == stack_axes and a.shape[0] == count
                 for k, a in enumerate(arrays)]
        bounds = [count * t // n for t in range(n + 1)]
        parts = [[a[lo:hi] if s else a for a, s in zip(arrays, split)] for lo, hi in zip(bounds, bounds[1:])]
        executor = pool(n - 1)
        futures = [executor.submit(impl, *part, **kw) for part in parts[1:]]
        try:
            results = [impl(*parts[0], **kw)] + [f.result() for f in futures]
        except Exception:
            for f in futures:
                f.cancel()
            return impl(*arrays, **kw)  # NumPy's own error, for the first failing matrix
        return [np.concatenate([r[j] for r in results]) for j in range(len(results[0]))]
    return run
