"""The picture of a `jk.benchmark` record: per-call time of every repetition, compiled and
eager side by side on one log axis, with the medians and the speedup written on it."""
from __future__ import annotations

from typing import Any

from .plots import ProfileFigure


def bench_plot(record: Any) -> ProfileFigure:
    """A figure (displays as one PNG) of a `jitkernel.BenchmarkRecord`.

    >>> import numpy as np, jitkernel as jk, jitkernel.profiler as profiler
    >>> rec = jk.benchmark(jk.jit(lambda x: x + 1), np.ones(10), repeat=3)
    >>> profiler.bench_plot(rec).kind
    'bench'
    """
    sides = [("compiled", record.compiled, "#4c72b0")]
    if record.eager is not None:
        sides.append(("eager NumPy", record.eager, "#8c8c8c"))
    fig = ProfileFigure("bench", figsize=(8, 1.2 + 0.6 * len(sides)))
    ax = fig.add_subplot()
    for row, (label, timing, color) in enumerate(sides):
        ms = [t * 1e3 for t in timing.per_call]
        ax.scatter(ms, [row] * len(ms), color=color, alpha=0.6, s=18, zorder=3)
        median = timing.median * 1e3
        ax.plot([median, median], [row - 0.3, row + 0.3], color=color, linewidth=2.5, zorder=4)
        ax.annotate(f"median {median:.4g} ms", (median, row + 0.32), fontsize=8, ha="center", va="bottom")
    ax.set_yticks(range(len(sides)), [s[0] for s in sides])
    ax.set_ylim(-0.6, len(sides) - 0.2)
    ax.set_xscale("log")
    ax.set_xlabel("milliseconds per call (each dot: one repetition)")
    title = f"{record.name} ({record.backend})"
    if record.speedup is not None:
        title += f": {record.speedup:.3g}x the eager baseline, largest difference {record.max_abs_difference:.2g}"
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.3)
    return fig
