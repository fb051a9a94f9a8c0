"""`jk.benchmark(f, *args)`: a jitted (or transformed) function timed the way results can be
trusted and reproduced, against its eager baseline: the same Python function run as plain
NumPy. The record it returns is what `%jit_bench` shows and what `profiler.bench_plot` draws.

- Warm-up first (the first call, with its compile, is timed on its own), then `repeat`
  repetitions of `number` calls each; medians, not means (shared, noisy machines).
- Asynchronous work is waited for inside the timed region: results with `block_until_ready`
  (device arrays) and Dask collections (computed) are synchronised per call.
- The baseline runs on its own copies of the arguments (a function that writes its arguments
  must not change the caller's data or the other side's input); the largest absolute and
  relative differences between the two results are recorded, so a toolchain or setting that
  changes the numbers is seen next to the speed.
- The record names what reproduces it: jitkernel, NumPy, llvmlite, Python and (when loaded)
  Dask versions, the CPU, the backend, the thread count, the argument shapes and dtypes.

>>> import numpy as np, jitkernel as jk
>>> rec = jk.benchmark(jk.jit(lambda x: np.sin(x) * 2), np.ones(1000), repeat=3)
>>> rec.max_abs_difference
0.0
>>> sorted(rec.to_dict())[:3]
['args', 'backend', 'compiled']
"""
from __future__ import annotations

import copy
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .tree import tree_flatten
from .api import Jitted, jit
from . import events
from ._version import __version__
from .config import config
from .transforms.core import Transformed

_MIN_REPEAT_SECONDS = 0.02  # a repetition lasts at least this long (number of calls calibrated)


@dataclass
class Timing:
    """Seconds per call of each repetition."""

    per_call: list[float]
    number: int

    @property
    def median(self) -> float:
        return statistics.median(self.per_call)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.per_call), max(self.per_call)


@dataclass
class BenchmarkRecord:
    """One benchmark: the compiled function, its eager baseline, and how to reproduce it."""

    name: str
    backend: str
    args: list[str]
    first_call: float  # seconds of the first call (trace + compile + run, or a cached run)
    compiled: Timing
    eager: Timing | None
    max_abs_difference: float | None
    max_rel_difference: float | None
    environment: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    first_call_cached: bool = False  # the signature was compiled before: the first call only ran

    @property
    def speedup(self) -> float | None:
        """Eager median / compiled median (> 1: the compiled function is faster)."""
        if self.eager is None or self.compiled.median == 0:
            return None
        return self.eager.median / self.compiled.median

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["compiled"]["median"] = self.compiled.median
        if self.eager is not None:
            d["eager"]["median"] = self.eager.median
        d["speedup"] = self.speedup
        return d

    def save(self, path: str | os.PathLike) -> Path:
        """Write the record as JSON (`%jit_bench --save`)."""
        p = Path(path)
        p.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        return p

    def rows(self) -> list[tuple[str, str]]:
        def ms(s: float) -> str:
            return f"{s * 1e3:.4g} ms" if s >= 1e-4 else f"{s * 1e6:.4g} us"
        lo, hi = self.compiled.spread
        rows = [("function", self.name), ("backend", self.backend), ("arguments", ", ".join(self.args) or "-"),
                ("first call", f"cached (compiled before for these arguments): {ms(self.first_call)}")
                if self.first_call_cached else ("first call (trace + compile + run)", ms(self.first_call)),
                ("compiled, median", f"{ms(self.compiled.median)}  (min {ms(lo)}, max {ms(hi)}, "
                                     f"{len(self.compiled.per_call)} x {self.compiled.number} calls)")]
        if self.eager is not None:
            lo, hi = self.eager.spread
            rows.append(("eager NumPy, median", f"{ms(self.eager.median)}  (min {ms(lo)}, max {ms(hi)}, "
                                                f"{len(self.eager.per_call)} x {self.eager.number} calls)"))
            rows.append(("speedup (eager / compiled)", f"{self.speedup:.3g}x"))
            rows.append(("largest difference", f"abs {self.max_abs_difference:.3g}, rel {self.max_rel_difference:.3g}"))
        if self.note:
            rows.append(("note", self.note))
        env = self.environment
        rows.append(("versions", ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items())))
        rows.append(("machine", f"{env.get('cpu', '?')}, {env.get('threads', '?')} threads"))
        return rows

    def __str__(self) -> str:
        rows = self.rows()
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        import html
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                       f"{html.escape(v)}</td></tr>" for k, v in self.rows())
        return f"<table class='jitkernel-bench'>{body}</table>"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(backend: str) -> dict[str, Any]:
    """Versions and machine facts that reproduce a measurement."""
    import llvmlite
    versions = {"jitkernel": __version__, "numpy": np.__version__, "llvmlite": llvmlite.__version__,
                "python": platform.python_version()}
    for module in ("dask", "distributed", "pycuda"):
        if module in sys.modules:
            versions[module] = getattr(sys.modules[module], "__version__", "?")
    return {"versions": versions, "cpu": _cpu_name(), "machine": platform.machine(), "platform": platform.platform(),
            "threads": config.threads, "backend": backend}


def _describe(leaf: Any) -> str:
    """An argument's dtype and shape, with its layout where it has one: a Dask array's chunks,
    a ShardedArray's sharding, a device array's device."""
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
        text = f"{np.dtype(leaf.dtype)}{list(leaf.shape)}"
        chunks = getattr(leaf, "chunks", None)
        if chunks is not None:
            text += f" (dask, chunks {tuple(c[0] if c else 0 for c in chunks)})"
        sharding = getattr(leaf, "sharding", None)
        if sharding is not None:
            text += f" ({sharding!r})"
        elif getattr(leaf, "device", None) is not None and not isinstance(leaf, np.ndarray):
            text += f" (on {leaf.device!r})"
        return text
    return type(leaf).__name__


def _synchronise(result: Any) -> Any:
    """Wait for asynchronous work: device arrays, Dask collections."""
    leaves = tree_flatten(result)[0]
    lazy = [leaf for leaf in leaves if hasattr(leaf, "__dask_graph__")]
    if lazy:
        import dask
        dask.compute(*lazy)
    for leaf in leaves:
        ready = getattr(leaf, "block_until_ready", None)
        if callable(ready):
            ready()
    return result


def _concrete(result: Any) -> list[np.ndarray]:
    out = []
    for leaf in tree_flatten(result)[0]:
        if hasattr(leaf, "__dask_graph__"):
            leaf = leaf.compute()
        out.append(np.asarray(leaf))
    return out


def _time(call: Callable[[], Any], repeat: int, number: int | None) -> Timing:
    if number is None:
        t0 = time.perf_counter()
        _synchronise(call())
        once = time.perf_counter() - t0
        number = max(1, min(10_000, math.ceil(_MIN_REPEAT_SECONDS / max(once, 1e-9))))
    per_call = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            _synchronise(call())
        per_call.append((time.perf_counter() - t0) / number)
    return Timing(per_call, number)


def _differences(a: list[np.ndarray], b: list[np.ndarray]) -> tuple[float, float]:
    worst_abs = worst_rel = 0.0
    if len(a) != len(b):
        raise ValueError(f"the compiled function returned {len(a)} arrays, the eager baseline {len(b)}")
    for x, y in zip(a, b):
        if x.shape != y.shape:
            raise ValueError(f"the compiled function returned shape {x.shape}, the eager baseline {y.shape}")
        if x.size == 0:
            continue
        if x.dtype.kind in "biu" and y.dtype.kind in "biu":
            d = np.abs(x.astype(np.int64) - y.astype(np.int64)).astype(np.float64)
        else:
            d = np.abs(x.astype(np.complex128) - y.astype(np.complex128))
        both_nan = np.isnan(x.astype(np.complex128)) & np.isnan(y.astype(np.complex128)) if x.dtype.kind in "fc" else False
        d = np.where(both_nan, 0.0, d)
        scale = np.abs(y.astype(np.complex128))
        worst_abs = max(worst_abs, float(np.nanmax(np.where(np.isnan(d), np.inf, d))))
        rel = np.where(scale > 0, d / np.where(scale > 0, scale, 1), np.where(d > 0, np.inf, 0.0))
        worst_rel = max(worst_rel, float(np.max(rel)))
    return worst_abs, worst_rel


def benchmark(f: Callable[..., Any], *args: Any, repeat: int = 7, number: int | None = None,
              baseline: Callable[..., Any] | str | None = "numpy", **kwargs: Any) -> BenchmarkRecord:
    """Time `f(*args, **kwargs)` compiled against its eager baseline (see the module docstring).

    `f` is a jitted function, a transformed one (`jk.grad(loss)`: no eager baseline unless one
    is given), or a plain Python function (compiled here with `jk.jit`). `baseline="numpy"` runs
    the function's own Python code on NumPy; a callable is used as the baseline; None skips it.
    """
    note = ""
    if isinstance(f, Jitted):
        compiled, python = f, f.fun
    elif isinstance(f, Transformed):
        compiled, python = f, None
        if baseline == "numpy":
            note = f"{f.__name__} is a transformation: it has no plain NumPy form (pass baseline=... to compare)"
    else:
        compiled, python = jit(f), f
    eager = python if baseline == "numpy" else (baseline if callable(baseline) else None)
    backend = getattr(compiled, "backend", None) or config.default_backend
    mine = copy.deepcopy((args, kwargs))
    first, first_call, cached = _first_call(compiled, mine)
    timing = _time(lambda: compiled(*mine[0], **mine[1]), repeat, number)
    eager_timing = max_abs = max_rel = None
    if eager is not None:
        theirs = copy.deepcopy((args, kwargs))
        expected = eager(*theirs[0], **theirs[1])
        max_abs, max_rel = _differences(_concrete(first), _concrete(expected))
        eager_timing = _time(lambda: eager(*theirs[0], **theirs[1]), repeat, number)
    leaves = tree_flatten((args, kwargs))[0]
    return BenchmarkRecord(getattr(compiled, "__name__", "function"), backend, [_describe(l) for l in leaves],
                           first_call, timing, eager_timing, max_abs, max_rel, environment(backend), note,
                           first_call_cached=cached)


def _first_call(compiled: Callable[..., Any], arguments: tuple[tuple, dict]) -> tuple[Any, float, bool]:
    """(result, seconds, cached) of the first call: `cached` when it compiled nothing (every
    memory-cache lookup it made hit: the signature was compiled before the benchmark)."""
    lookups: list[bool] = []

    def listen(e: events.Event) -> None:
        if type(e) is events.CacheEvent and e.level == "memory":
            lookups.append(e.hit)
    unsubscribe = events.subscribe(listen)
    try:
        t0 = time.perf_counter()
        first = _synchronise(compiled(*arguments[0], **arguments[1]))
        seconds = time.perf_counter() - t0
    finally:
        unsubscribe()
    return first, seconds, bool(lookups) and all(lookups)
