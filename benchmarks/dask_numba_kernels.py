"""W1-W3 as `map_blocks` of `numba.njit` block functions (the Numba side of
benchmarks/dask_cluster.py; imported only in an interpreter that has Numba, on its workers too).
Loops as a Numba user writes them, single-threaded (one Dask thread per worker), no fastmath;
W2 accumulates each block's sum in float64 (the usual Numba idiom), Dask sums the partials."""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=False)
def w1_block(x):
    out = np.empty_like(x)
    for i in range(x.size):
        s = np.sin(x[i])
        out[i] = s * np.cos(x[i]) + s * s
    return out


@numba.njit(cache=False)
def w2_block(a, b, c):
    acc = 0.0
    for i in range(a.size):
        acc += np.tanh(a[i] * b[i] + c[i])
    return np.array([acc], dtype=np.float32)


@numba.njit(cache=False)
def w3_block(x):
    out = np.empty_like(x)
    for r in range(x.shape[0]):
        m = x[r, 0]
        for j in range(1, x.shape[1]):
            m = max(m, x[r, j])
        s = np.float32(0.0)
        for j in range(x.shape[1]):
            e = np.exp(x[r, j] - m)
            out[r, j] = e
            s += e
        for j in range(x.shape[1]):
            out[r, j] /= s
    return out


def w1(x):
    return x.map_blocks(w1_block, dtype=np.float32)


def w2(a, b, c):
    import dask.array as da
    partials = da.map_blocks(w2_block, a, b, c, chunks=((1,) * a.numblocks[0],), dtype=np.float32)
    return partials.sum()


def w3(x):
    return x.map_blocks(w3_block, dtype=np.float32)


IMPLS = {"W1": w1, "W2": w2, "W3": w3}
