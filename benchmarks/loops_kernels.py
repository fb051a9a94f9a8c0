"""The loop workloads of benchmarks/loops.py, written as NumPy programs are written (in-place
updates, Python loops, slices). Imports NumPy only: the Numba peer (another virtualenv, its own
llvmlite) runs these same functions under `numba.njit`, and NumPy runs them as they are."""
from __future__ import annotations

import numpy as np


def jacobi_2d(A, B, T):
    """PolyBench jacobi-2d: T time steps of a 5-point stencil, ping-ponging A and B in place."""
    for t in range(T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


def trisolve(L, b):
    """Forward substitution L x = b (L lower triangular), row by row with slices."""
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


def cholesky(A):
    """Cholesky-Banachiewicz, column by column with slices: A = L L^T."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - np.dot(L[j, :j], L[j, :j]))
        L[j + 1:, j] = (A[j + 1:, j] - np.dot(L[j + 1:, :j], L[j, :j])) / L[j, j]
    return L


def lcs(a, b):
    """Longest common subsequence length: a nested loop with an `if` on array values."""
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), np.int64)
    for i in range(n):
        for j in range(m):
            if a[i] == b[j]:
                D[i + 1, j + 1] = D[i, j] + 1
            else:
                D[i + 1, j + 1] = max(D[i, j + 1], D[i + 1, j])
    return D[n, m]


def make_inputs(name: str, size: int, seed: int = 0) -> tuple:
    """Arguments of workload `name` at problem size `size` (fresh arrays on every call)."""
    rng = np.random.default_rng(seed)
    if name == "jacobi_2d":
        n, T = size
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        return ((i * (j + 2) + 2.0) / n, (i * (j + 3) + 3.0) / n, T)
    if name == "trisolve":
        L = np.tril(rng.uniform(-1, 1, (size, size))) + size * np.eye(size)
        return (L, rng.uniform(-1, 1, size))
    if name == "cholesky":
        M = rng.uniform(-1, 1, (size, size))
        return (M @ M.T + size * np.eye(size),)
    if name == "lcs":
        return (rng.integers(0, 4, size), rng.integers(0, 4, size))
    raise KeyError(name)


# -- the same workloads with explicit scalar loops: the form a Numba user writes for speed -----

def jacobi_2d_loops(A, B, T):
    n = A.shape[0]
    for t in range(T):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])
    return A, B


def trisolve_loops(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def cholesky_loops(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    return L


# Which as-written workload each loop form computes (same inputs, same result).
LOOP_FORMS = {"jacobi_2d_loops": "jacobi_2d", "trisolve_loops": "trisolve", "cholesky_loops": "cholesky"}
