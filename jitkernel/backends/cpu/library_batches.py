"""Library steps split across the worker threads: stacks of matrices, and large products.

**Stacks.** NumPy's linalg computes a stack of matrices (`np.linalg.solve(A, b)` with `A` of
shape (T, M, M)) one matrix after the other, one LAPACK call each, on one thread (OpenBLAS's own
threads do not split such small calls, and `OPENBLAS_NUM_THREADS=1` pins them anyway). The
matrices are independent and NumPy's linalg loops release the GIL, so the CPU runtime gives
each worker thread a contiguous part of the stack: the same LAPACK call per matrix, the same
results bit for bit. Stacks come from user code (`np.linalg.inv(stack)`) and from loops whose
trips each solve a system no other trip feeds (passes/trip_maps.py).

A stack is split when the first operand is one (at least three axes, the complex packing
aside), it holds two or more matrices, the work is worth a thread (`MIN_WORK`, about
M**3 * T) and LAPACK may be called from two threads at once (not a sequential OpenBLAS build,
blas_threads.py); every operand with the stack's number of axes and its length is split with it, the
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

**Products.** When the BLAS runs on one thread (blas_threads.py: `OPENBLAS_NUM_THREADS=1`, a
Dask worker's limit), a large `dot_general` is split into panels, one per worker thread, each
NumPy's matmul into its part of the result (matmul releases the GIL): a stack of products by
its leading batch axis, else the result's rows (`A @ B` with `A`'s rows split) or, for a wide
thin result (`x @ W` with few rows), its columns. `x @ x.T` (one buffer and its transpose),
which NumPy hands to BLAS's SYRK at half a GEMM's work, is cut into blocks of `x`'s rows
instead: each diagonal block a SYRK, each block above it a GEMM also written to its mirror,
the blocks dealt to the threads by their work (with two: the two SYRKs on one, the GEMM on the
other). Every element is still BLAS's dot product over the whole contracted axis; the panels'
own blocking may round differently in the last bit, the same difference NumPy's own result
shows between one and two OpenBLAS threads (about 1e-16 relative). A BLAS with threads of its
own, an unknown BLAS, or a thread capped to one (Dask's block tasks) runs the product whole.

>>> matmul = split_products(lambda: 2, lambda n: pool, lambda: 1, min_work=0)
>>> a, b = np.arange(12.0).reshape(4, 3), np.arange(6.0).reshape(3, 2)
>>> bool(np.array_equal(matmul(a, b), a @ b))
True
"""
from __future__ import annotations

import math
from concurrent.futures import Executor
from typing import Any, Callable

import numpy as np

from ...ir.library_prims import STACKED_LINALG
from .blas_threads import concurrent_calls_safe

# About M**3 * T: below this a stack runs on the calling thread (a thread's start and wake-up
# cost tens of microseconds; a 16x16 solve a few).
MIN_WORK = 1 << 17

# A product is split from about 0.3 ms of single-thread work (measured here, OpenBLAS 0.3.31,
# AVX2): multiply-adds times the item size from 2**27 (a float64 300x300x300 product: 0.66 ms
# whole, 0.46 ms in two; 200x200x200: 0.19 ms either way, 128**3: 0.06 ms whole, 0.11 ms
# split), and a matrix-vector product, bound by memory, from a 16 MiB matrix (2000x2000
# float64: 1.07 ms whole, 0.66 ms in two).
MIN_PRODUCT_WORK = 1 << 27
MIN_THIN_BYTES = 1 << 24
THIN = 8  # a result with at most this many rows or columns is a matrix-vector product's


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
        if n <= 1 or m ** 3 * count < MIN_WORK or not concurrent_calls_safe():
            return impl(*arrays, **kw)
        stack_axes = axes(first, 0)
        split = [isinstance(a, np.ndarray) and axes(a, k) == stack_axes and a.shape[0] == count
                 for k, a in enumerate(arrays)]
        bounds = [count * t // n for t in range(n + 1)]
        parts = [[a[lo:hi] if s else a for a, s in zip(arrays, split)] for lo, hi in zip(bounds, bounds[1:])]
        results = run_parts(pool(n - 1), impl, parts, kw)
        if results is None:
            return impl(*arrays, **kw)  # NumPy's own error, for the first failing matrix
        return [np.concatenate([r[j] for r in results]) for j in range(len(results[0]))]
    return run


def split_products(threads: Callable[[], int], pool: Callable[[int], Executor] | None,
                   blas_threads: Callable[[], int | None], min_work: int = MIN_PRODUCT_WORK,
                   min_thin_bytes: int = MIN_THIN_BYTES) -> Callable[..., np.ndarray]:
    """`np.matmul(a, b, out=None)` for the (batch..., m, k) @ (batch..., k, n) operands of
    dot_general_numpy, split into panels across `threads()` threads when `blas_threads()` is 1."""
    def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        parts, cut = _product_parts(a, b, threads, blas_threads, min_work, min_thin_bytes) if pool else (1, "")
        if parts <= 1:
            return np.matmul(a, b, out=out)
        if out is None:
            out = np.empty(a.shape[:-1] + b.shape[-1:], a.dtype)
        extent = {"batch": a.shape[0], "rows": a.shape[-2], "columns": b.shape[-1], "gram": a.shape[-2]}[cut]
        bounds = [extent * t // parts for t in range(parts + 1)]
        if cut == "gram":
            if run_parts(pool(parts - 1), _gram_blocks, _gram_tasks(a, out, bounds), {}) is None:
                np.matmul(a, b, out=out)
            return out
        panels = []
        for lo, hi in zip(bounds, bounds[1:]):
            if cut == "batch":
                panels.append((a[lo:hi], b[lo:hi], out[lo:hi]))
            elif cut == "rows":
                panels.append((a[..., lo:hi, :], b, out[..., lo:hi, :]))
            else:
                panels.append((a, b[..., lo:hi], out[..., lo:hi]))
        if run_parts(pool(parts - 1), _matmul_into, panels, {}) is None:
            np.matmul(a, b, out=out)  # NumPy's own error, if any
        return out
    return matmul


def _product_parts(a: np.ndarray, b: np.ndarray, threads: Callable[[], int],
                   blas_threads: Callable[[], int | None], min_work: int, min_thin_bytes: int) -> tuple[int, str]:
    """Into how many panels a product is worth splitting (1: run it whole), and along what:
    "batch" (the leading batch axis), "rows" or "columns" (of the result), or "gram" (`x @ x.T`
    in blocks of `x`'s rows)."""
    if a.dtype != b.dtype or a.dtype.hasobject or a.ndim < 2 or a.shape[:-2] != b.shape[:-2]:
        return 1, ""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    count = math.prod(a.shape[:-2])
    if min(m, n) <= THIN:
        if count * max(m, n) * k * a.dtype.itemsize < min_thin_bytes:
            return 1, ""
    elif count * m * k * n * a.dtype.itemsize < min_work:
        return 1, ""
    if a.ndim > 2 and a.shape[0] >= 2:
        cut, extent = "batch", a.shape[0]
    elif _gram(a, b):
        cut, extent = "gram", m
    else:
        cut, extent = ("rows", m) if m >= n else ("columns", n)
    parts = min(threads(), extent)
    if parts <= 1 or blas_threads() != 1:
        return 1, ""
    return parts, cut


def _gram(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether `a @ b` is `x @ x.T` (one buffer, `b` the transpose of `a`), which NumPy's matmul
    hands to BLAS's SYRK (half a GEMM's work: the result is symmetric)."""
    return (a.ndim == 2 and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape[::-1] and a.strides == b.strides[::-1])


def _gram_tasks(x: np.ndarray, out: np.ndarray, bounds: list[int]) -> list[tuple[list, np.ndarray]]:
    """`x @ x.T` by blocks of `x`'s rows, as one task list per thread: a diagonal block is a
    SYRK of its rows (NumPy's matmul again), an off-diagonal one a GEMM of two blocks, twice the
    work, written with its transpose; each thread gets the blocks of about equal work (greedy,
    largest first; with two threads one does the two diagonal blocks, the other the GEMM)."""
    parts = len(bounds) - 1
    blocks = [(i, j) for i in range(parts) for j in range(i, parts)]
    blocks.sort(key=lambda ij: ij[0] == ij[1])  # the GEMMs first
    loads, tasks = [0] * parts, [[] for _ in range(parts)]
    for i, j in blocks:
        t = loads.index(min(loads))
        loads[t] += 1 if i == j else 2
        tasks[t].append((bounds[i], bounds[i + 1], bounds[j], bounds[j + 1]))
    return [(todo, x, out) for todo in tasks]


def _gram_blocks(todo: list, x: np.ndarray, out: np.ndarray) -> None:
    for lo, hi, lo2, hi2 in todo:
        rows, cols = x[lo:hi], x[lo2:hi2]
        np.matmul(rows, cols.T, out=out[lo:hi, lo2:hi2])
        if lo != lo2:
            out[lo2:hi2, lo:hi] = out[lo:hi, lo2:hi2].T


def _matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    np.matmul(a, b, out=out)


def run_parts(executor: Executor, fn: Callable[..., Any], parts: list, kw: dict) -> list | None:
    """`fn(*part, **kw)` for every part, the first on this thread and the others on `executor`;
    their results in order, or None when one raised an Exception (the caller runs the whole
    call again on this thread for its own error; the other parts have finished by then). A
    worker that is still running after an interrupt holds its part's arrays (views of the
    result), so a reused buffer is not handed out again before it is done."""
    futures = [executor.submit(fn, *part, **kw) for part in parts[1:]]
    try:
        return [fn(*parts[0], **kw)] + [f.result() for f in futures]
    except Exception:
        for f in futures:
            f.cancel()
        for f in futures:
            if not f.cancelled():
                f.exception()  # let the running parts finish before the whole call reruns
        return None
