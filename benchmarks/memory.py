"""Native memory over many compiled functions: RSS after `malloc_trim(0)`.

    .venv/bin/python -m benchmarks.memory                    # 2,000 dropped functions
    .venv/bin/python -m benchmarks.memory --count 500 --mode evict

Modes:
  dropped  each step jits a new function (`x * k + i` with its own constant, so LLVM really
           compiles it), calls it once and drops it;
  evict    one jitted function called with `--count` different static values, so its cache
           (jk.config max_cache_entries) evicts the oldest entries as it goes.

The disk cache is off (every step is a full LLVM compile) and JITKERNEL_CACHE_DIR points at a
temporary directory anyway. The first `--warmup` steps are not counted: LLVM's one-time set-up
and the allocator's first arenas. Prints one JSON line: RSS before and after (MiB), the growth and
the growth per function (KiB). Exit status 1 when `--limit-mib` is given and the growth exceeds it.
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as `python benchmarks/memory.py`: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rss_mib() -> float:
    """Resident set size after returning the allocator's free memory to the system."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def step_dropped(jk, np, i: int) -> None:
    f = jk.jit(lambda x: x * 3.0 + float(i), disk_cache=False)
    r = f(np.ones(8))
    assert r[0] == 3.0 + i


def make_evict(jk, np):
    f = jk.jit(lambda x, k: x * 3.0 + k, static_argnums=1, disk_cache=False)
    x = np.ones(8)

    def step(jk_, np_, i: int) -> None:
        assert f(x, float(i))[0] == 3.0 + i
    return step


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=2000, help="functions (or evicting recompilations) measured")
    ap.add_argument("--warmup", type=int, default=100, help="steps before the first measurement")
    ap.add_argument("--mode", choices=["dropped", "evict"], default="dropped")
    ap.add_argument("--limit-mib", type=float, default=None, help="fail when the growth exceeds this")
    args = ap.parse_args(argv)
    os.environ.setdefault("JITKERNEL_CACHE_DIR", tempfile.mkdtemp(prefix="jk-memory-"))
    import warnings

    import numpy as np

    import jitkernel as jk
    warnings.simplefilter("ignore", jk.api.CacheLimitWarning) if hasattr(jk, "api") else None
    step = step_dropped if args.mode == "dropped" else make_evict(jk, np)
    for i in range(args.warmup):
        step(jk, np, i)
    before = rss_mib()
    t0 = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.count):
        step(jk, np, i)
    seconds = time.perf_counter() - t0
    after = rss_mib()
    growth = after - before
    print(json.dumps({"mode": args.mode, "count": args.count, "rss_before_mib": round(before, 1),
                      "rss_after_mib": round(after, 1), "growth_mib": round(growth, 2),
                      "growth_per_function_kib": round(growth * 1024 / args.count, 1),
                      "seconds": round(seconds, 1)}))
    return 1 if args.limit_mib is not None and growth > args.limit_mib else 0


if __name__ == "__main__":
    sys.exit(main())
