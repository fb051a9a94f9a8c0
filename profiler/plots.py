"""Profile plots drawn on bare matplotlib Figures (Agg canvas, never pyplot).

Imported lazily by `Report.plot`: importing matplotlib costs most of a second. Each plot is a
`ProfileFigure`, a `matplotlib.figure.Figure` whose `_repr_png_` renders it once with Agg, so a
notebook shows exactly one PNG per plot whether or not pyplot's inline backend is active.
"""
from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .report import format_bytes
from .stats import CallRecord

if TYPE_CHECKING:
    from .report import Report

MAX_FUNCTIONS = 6  # rows per figure; the busiest functions are kept
MAX_CALLS = 60  # bars per function in the breakdown
COLORS = {"trace": "#4c72b0", "optimize": "#8172b2", "fuse": "#937860", "codegen": "#da8bc3",
          "compile": "#dd8452", "first run": "#55a868", "warm run": "#8c8c8c", "recompile": "#c44e52"}


class ProfileFigure(Figure):
    """A Figure with its own Agg canvas that displays as a single PNG (`_repr_png_`)."""

    def __init__(self, kind: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        FigureCanvasAgg(self)
        self.kind = kind

    def to_png(self, dpi: int = 100) -> bytes:
        """The figure rendered to PNG bytes."""
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        return buf.getvalue()

    def _repr_png_(self) -> bytes:
        return self.to_png()

    def __repr__(self) -> str:
        w, h = self.get_size_inches()
        return f"<jitkernel profile plot {self.kind!r} ({w:.0f}x{h:.0f} in)>"


def _empty(kind: str, message: str) -> ProfileFigure:
    fig = ProfileFigure(kind, figsize=(8, 1.6))
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=11)
    return fig


def _busiest(report: Report, names: list[str]) -> list[str]:
    if len(names) <= MAX_FUNCTIONS:
        return names
    calls = {st.function: st.calls + st.compiles for st in report.functions}
    keep = set(sorted(names, key=lambda n: -calls.get(n, 0))[:MAX_FUNCTIONS])
    return [n for n in names if n in keep]


def _select_calls(calls: list[CallRecord]) -> tuple[list[int], list[CallRecord]]:
    """At most MAX_CALLS calls: every call that compiled, then the earliest warm ones."""
    if len(calls) <= MAX_CALLS:
        return list(range(len(calls))), calls
    keep = {i for i, c in enumerate(calls) if c.first}
    for i in range(len(calls)):
        if len(keep) >= MAX_CALLS:
            break
        keep.add(i)
    idx = sorted(keep)[:max(MAX_CALLS, 1)]
    return idx, [calls[i] for i in idx]


def breakdown(report: Report) -> ProfileFigure:
    """Stacked bars per call (log scale, ms): trace, compile, first run, warm run."""
    names = _busiest(report, [st.function for st in report.functions if st.calls])
    if not names:
        return _empty("breakdown", "no jitted calls recorded")
    fig = ProfileFigure("breakdown", figsize=(9, 1.0 + 2.3 * len(names)))
    axes = fig.subplots(len(names), 1, squeeze=False)[:, 0]
    for ax, name in zip(axes, names):
        all_calls = report.calls(name)
        idx, calls = _select_calls(all_calls)
        x = list(range(len(calls)))
        parts = {
            "trace": [c.trace * 1e3 for c in calls],
            "compile": [c.compile * 1e3 for c in calls],
            "first run": [c.run * 1e3 if c.first else 0.0 for c in calls],
            "warm run": [0.0 if c.first else c.run * 1e3 for c in calls],
        }
        bottom = [0.0] * len(calls)
        for label, values in parts.items():
            if any(values):
                ax.bar(x, values, bottom=bottom, color=COLORS[label], label=label, width=0.8)
                bottom = [b + v for b, v in zip(bottom, values)]
        for xi, c, top in zip(x, calls, bottom):
            if c.reasons:
                ax.annotate("recompile", (xi, top), textcoords="offset points", xytext=(0, 3), ha="center",
                            fontsize=7, color=COLORS["recompile"])
        ax.set_yscale("log")
        positive = [v for vs in parts.values() for v in vs if v > 0]
        if positive:
            ax.set_ylim(min(positive) / 2, max(bottom) * 4)
        ax.set_ylabel("ms")
        shown = "" if len(calls) == len(all_calls) else f" ({len(calls)} of {len(all_calls)} calls shown)"
        ax.set_title(f"{name}: time per call{shown}", fontsize=10, loc="left")
        ticks = x if len(x) <= 30 else x[::max(1, len(x) // 15)]
        ax.set_xticks(ticks, [str(idx[t] + 1) for t in ticks], fontsize=8)
        ax.set_xlabel("call", fontsize=8)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def timeline(report: Report) -> ProfileFigure:
    """Phases over time (ms since the profile started), one row per function, with a marker and
    the reasons at every recompilation."""
    names = _busiest(report, [st.function for st in report.functions])
    recs = [r for r in report.records() if r["function"] in names and r["phase"] != "cache"]
    if not recs:
        return _empty("timeline", "no jitted calls recorded")
    fig = ProfileFigure("timeline", figsize=(10, 1.4 + 0.9 * len(names)))
    ax = fig.add_subplot()
    row = {n: i for i, n in enumerate(names)}
    spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
    recompiles = []
    for r in recs:
        if r["phase"] == "recompile":
            recompiles.append(r)
            continue
        label = r["phase"] if r["phase"] != "run" else ("first run" if r["details"].get("first") else "warm run")
        spans.setdefault((r["function"], label), []).append((r["start"] * 1e3, r["duration"] * 1e3))
    labelled = set()
    for (fn, label), xs in spans.items():
        color = COLORS.get(label, "#333333")
        ax.broken_barh(xs, (row[fn] - 0.35, 0.7), facecolors=color, edgecolors=color, linewidth=0.6,
                       label=None if label in labelled else label)
        labelled.add(label)
    notes = []
    for k, r in enumerate(recompiles, 1):
        t = r["start"] * 1e3
        y = row[r["function"]]
        ax.plot([t, t], [y - 0.45, y + 0.45], color=COLORS["recompile"], linewidth=1.5,
                label=None if "recompile" in labelled else "recompile")
        labelled.add("recompile")
        ax.annotate(str(k), (t, y - 0.45), textcoords="offset points", xytext=(0, 2), ha="center",
                    va="bottom", fontsize=7, color=COLORS["recompile"], fontweight="bold")
        reasons = "; ".join(r["details"].get("reasons", [])) or "recompiled"
        notes.append(f"{k}. {r['function']}: {reasons if len(reasons) <= 110 else reasons[:107] + '...'}")
    if notes:
        shown = notes[:8] + ([f"... and {len(notes) - 8} more"] if len(notes) > 8 else [])
        ax.annotate("recompilations:\n" + "\n".join(shown), (0.0, 0.0), xycoords="axes fraction",
                    textcoords="offset points", xytext=(0, -34), va="top", ha="left", fontsize=7,
                    color=COLORS["recompile"])
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(len(names) - 0.4, -0.75)  # first function on top
    ax.set_xlabel("ms since the profile started")
    ax.set_title("jitkernel timeline", fontsize=10, loc="left")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def _op_name(op: Any) -> str:
    return str(op).split("->", 1)[0]


def fusion(report: Report) -> ProfileFigure:
    """Per function (its latest compile): the graph ops each kernel absorbed, and the bytes an
    op-by-op execution would move against the bytes the fused kernels move."""
    stats = [st for st in report.functions if st.groups]
    stats = [st for st in stats if st.function in _busiest(report, [s.function for s in stats])]
    if not stats:
        return _empty("fusion", "no fusion recorded (compile a function with the cpu backend)")
    heights = [max(1.6, 0.45 * len(st.groups) + 1.0) for st in stats]
    fig = ProfileFigure("fusion", figsize=(10, sum(heights) + 0.4))
    grid = fig.add_gridspec(len(stats), 2, width_ratios=[3.2, 1], height_ratios=heights)
    for i, st in enumerate(stats):
        ax = fig.add_subplot(grid[i, 0])
        groups = st.groups
        y = list(range(len(groups)))
        counts = [len(g.get("ops", [])) for g in groups]
        colors = [COLORS["compile"] if g.get("kind") == "library" else COLORS["trace"] for g in groups]
        ax.barh(y, counts, color=colors, height=0.6)
        for yi, g, n in zip(y, groups, counts):
            ops = ", ".join(_op_name(o) for o in g.get("ops", []))
            if len(ops) > 80:
                ops = ops[:77] + "..."
            ax.text(n + 0.1, yi, f" {ops}", va="center", fontsize=7)
        ax.set_yticks(y, [f"{g.get('kernel', '?')} ({g.get('kind', '?')})" for g in groups], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, max(counts + [1]) * 2.2)
        ax.set_xlabel("graph ops fused", fontsize=8)
        lib = f" + {st.library_calls} library call(s)" if st.library_calls else ""
        ax.set_title(f"{st.function}: {st.graph_ops} graph ops -> {st.kernels} kernel(s){lib}", fontsize=10, loc="left")
        bx = fig.add_subplot(grid[i, 1])
        values = [st.bytes_unfused or 0, st.bytes_fused or 0]
        bars = bx.bar(["op by op", "fused"], values, color=[COLORS["warm run"], COLORS["first run"]])
        for b, v in zip(bars, values):
            bx.annotate(format_bytes(v), (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=7)
        bx.set_ylim(0, max(values + [1]) * 1.25)
        bx.set_title("bytes moved", fontsize=9)
        bx.tick_params(labelsize=7)
        bx.set_yticks([])
    fig.tight_layout()
    return fig
