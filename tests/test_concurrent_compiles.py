"""Threads: one function recompiled from several threads at once."""
from __future__ import annotations

import math
import sys
import threading
import warnings

import numpy as np

import jitkernel as jk
from helpers import assert_matches_numpy as assert_same


def test_concurrent_recompiles_from_eight_threads():
    """Eight threads, one function, many shapes (sizes 1 specialised, others dynamic), ranks and
    dtypes, with evictions: no exception, every result right. (Before the lock: 1-3 of 320 calls
    raised `dictionary keys changed during iteration` or KeyError.)"""
    def fn(x):
        return (x * 2 + 1).sum(axis=-1)
    f = jk.jit(fn, disk_cache=False)
    dtypes = [np.float32, np.float64, np.int32, np.int64, np.int16, np.uint8]
    errors: list = []
    start = threading.Barrier(8)

    def worker(seed):
        rng = np.random.default_rng(seed)
        start.wait()
        for _ in range(40):
            shape = tuple(int(s) for s in rng.integers(1, 30, size=rng.integers(1, 4)))
            x = (np.arange(math.prod(shape)) % 7).astype(dtypes[rng.integers(len(dtypes))]).reshape(shape)
            try:
                assert_same(f(x), fn(x))
            except BaseException as e:  # noqa: BLE001 - every failure is reported
                errors.append(f"{shape} {x.dtype}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, inside the cache's bookkeeping too
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", jk.CacheLimitWarning)
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
