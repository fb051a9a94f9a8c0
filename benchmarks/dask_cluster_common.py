"""What benchmarks/dask_cluster.py and its Numba side (dask_cluster_numba.py, another interpreter)
share: the cluster, the inputs (generated on the workers), the timed patterns and the checksums.
Imports neither jitkernel nor Numba."""
from __future__ import annotations

import contextlib
import statistics
import time
from typing import Any, Callable, Iterator

import numpy as np

W3_COLS = 1000


def workloads(xp: Any) -> dict[str, Callable]:
    """W1-W3 written once for `xp` = numpy (under jk.jit) or dask.array (NumPy blocks)."""
    def w1(x):
        return xp.sin(x) * xp.cos(x) + xp.sin(x) ** 2

    def w2(a, b, c):
        return xp.sum(xp.tanh(a * b + c))

    def w3(x):
        e = xp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return {"W1": w1, "W2": w2, "W3": w3}


@contextlib.contextmanager
def start_cluster(n_workers: int, memory_limit: str | None = None) -> Iterator[Any]:
    """A `LocalCluster` of `n_workers` processes, one thread each, on the loopback, and its client."""
    from distributed import Client, LocalCluster
    kwargs = {} if memory_limit is None else {"memory_limit": memory_limit}
    with LocalCluster(n_workers=n_workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address=None, protocol="tcp", **kwargs) as cluster, Client(cluster) as client:
        client.wait_for_workers(n_workers)
        yield client


def inputs(name: str, n: int, chunk: int) -> tuple:
    """Lazy float32 inputs in [0, 1) from Dask's generator (seeded): computing them generates
    every block on the worker that runs it; nothing comes from the client."""
    import dask.array as da
    if name == "W3":
        rows = n // W3_COLS
        return (da.random.default_rng(0).random((rows, W3_COLS), dtype=np.float32,
                                                chunks=(max(chunk // W3_COLS, 1), W3_COLS)),)
    count = 3 if name == "W2" else 1
    return tuple(da.random.default_rng(seed).random(n, dtype=np.float32, chunks=chunk) for seed in range(count))


def patterns(name: str) -> list[str]:
    """persist: the result computed into the workers' memory (`persist()` + `wait`); sum: a
    reduction of it to the client (`.sum().compute()`); W2 is a scalar already: `compute`."""
    return ["compute"] if name == "W2" else ["persist", "sum"]


def run_pattern(client: Any, pattern: str, f: Callable, xs: tuple) -> Any:
    from distributed import wait
    y = f(*xs)
    if pattern == "persist":
        y = client.persist(y)
        wait(y)
        return y
    if pattern == "sum":
        return y.sum().compute()
    return y.compute()


def checksums(client: Any, f: Callable, xs: tuple) -> list[float]:
    """sum(y) and sum(y**2 * position) in float64 (position: the flat index / size), untimed: the
    same numbers from every implementation mean the same values, to rounding."""
    import dask.array as da
    y = f(*xs).astype(np.float64)
    pos = da.arange(y.size, chunks=y.chunks[-1] if y.ndim == 1 else -1, dtype=np.float64) / max(y.size, 1)
    pos = pos.reshape(y.shape) if y.ndim > 1 else pos
    if y.ndim > 1:
        pos = pos.rechunk(y.chunks)
    return [float(v) for v in client.compute([y.sum(), (y * y * pos).sum()], sync=True)]


def measure(client: Any, name: str, n: int, chunk: int, impls: dict[str, Callable], repeat: int,
            only_sum: tuple[str, ...] = ()) -> dict:
    """{impl: {pattern: {"samples_s": [...], "median_s": m}, "checksums": [...]}}: inputs persisted
    on the workers first (untimed); each implementation run once per pattern untimed (compiles,
    Numba's JIT, the workers' imports), then `repeat` rounds, implementations round-robin (the
    first one rotating), so drifts of a shared machine hit all alike. The implementations in
    `only_sum` compute the sum themselves (a scalar): they run the `sum` pattern only, and their
    checksum is that sum."""
    from distributed import wait
    xs = client.persist(list(inputs(name, n, chunk)))
    wait(xs)
    mine = {impl: ["sum"] if impl in only_sum else patterns(name) for impl in impls}
    out: dict = {impl: {"checksums": [float(f(*xs).compute())] if impl in only_sum else checksums(client, f, xs)}
                 for impl, f in impls.items()}
    for impl, f in impls.items():
        for pattern in mine[impl]:
            del_ = run_pattern(client, pattern, f, xs)
            del del_
    order = list(impls)
    for r in range(repeat):
        for impl in order[r % len(order):] + order[:r % len(order)]:
            for pattern in mine[impl]:
                t0 = time.perf_counter()
                y = run_pattern(client, pattern, impls[impl], xs)
                out[impl].setdefault(pattern, {"samples_s": []})["samples_s"].append(time.perf_counter() - t0)
                del y
    for impl in impls:
        for pattern in mine[impl]:
            out[impl][pattern]["median_s"] = statistics.median(out[impl][pattern]["samples_s"])
    del xs
    return out
