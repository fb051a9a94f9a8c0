"""Measure what profiling costs a warm call: `python -m jitkernel.profiler.overhead`.

Times a tiny jitted function (`x + 1` on 4 float64 values, cpu backend) per call with nobody
subscribed (the engine then builds no events), with a no-op subscriber (the cost of the engine
building and publishing its events), with the session collector, and with the collector plus
any `extra` subscribers; then the subscribers alone, called directly with the two events a warm
call publishes. Reports the best of several repeats.
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np

import jitkernel as jk
from jitkernel import events

from .collector import Collector

Handler = Callable[[events.Event], None]


def _per_call(f: Callable, x: np.ndarray, calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            f(x)
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def measure(calls: int = 20_000, repeats: int = 7, backend: str = "cpu",
            extra: dict[str, Handler] | None = None) -> dict[str, float]:
    """Seconds per warm call: `none`, `noop`, `collector`, `collector+<name>` for each extra
    subscriber, and per warm call's two events `handler: collector`, `handler: <name>`."""
    extra = extra or {}
    f = jk.jit(lambda x: x + 1.0, backend=backend)
    x = np.zeros(4)
    f(x)
    saved = list(events.SUBSCRIBERS)
    events.SUBSCRIBERS.clear()
    collector = Collector()
    try:
        out = {"none": _per_call(f, x, calls, repeats)}
        unsubscribe = events.subscribe(lambda e: None)
        out["noop"] = _per_call(f, x, calls, repeats)
        unsubscribe()
        collector.start()
        out["collector"] = _per_call(f, x, calls, repeats)
        for name, handler in extra.items():
            unsubscribe = events.subscribe(handler)
            out[f"collector+{name}"] = _per_call(f, x, calls, repeats)
            unsubscribe()
        collector.stop()
    finally:
        events.SUBSCRIBERS[:] = saved
    hit = events.CacheEvent("f", 0.0, 0.0, True, "memory", "x: float64[4]")
    run = events.RunEvent("f", 0.0, 1e-6, False, "cpu")
    for name, handler in {"collector": Collector()._on_event, **extra}.items():
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(calls):
                handler(hit)
                handler(run)
            best = min(best, (time.perf_counter() - t0) / calls)
        out[f"handler: {name}"] = best
    return out


def report(results: dict[str, float]) -> str:
    """The results as text lines (µs per call, and the difference to `none`)."""
    base = results["none"]
    lines = []
    for k, v in results.items():
        extra = "" if k == "none" or k.startswith("handler") else f"  (+{(v - base) * 1e6:.2f} µs)"
        lines.append(f"{k:<28}{v * 1e6:8.2f} µs/call{extra}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jitkernel.profiler.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    print(report(measure(args.calls, args.repeats)))


if __name__ == "__main__":
    main()
