"""Module-level jitted functions for tests/test_jitted_pickle.py: importable by name in worker
processes (multiprocessing's spawn, Dask's processes scheduler), so they pickle by reference."""
from __future__ import annotations

import os

import numpy as np

import jitkernel as jk


@jk.jit
def sin_plus_one(x):
    return np.sin(x) + 1


@jk.jit(static_argnums=1, backend="interpret")
def power_sum(x, n):
    return (x ** n).sum()


class Kernels:
    @jk.jit
    def doubled(x):
        return x * 2


def call_in_worker(f_and_x):
    """(pid of the worker, f(x)): what a pool task sends back."""
    f, x = f_and_x
    return os.getpid(), f(x)


def closure(offset):
    """A jitted function with no module-level name: pickled by value."""
    @jk.jit
    def shifted(x):
        return x + offset
    return shifted
