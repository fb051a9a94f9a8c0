"""Profile plots drawn on bare matplotlib Figures (Agg canvas, never pyplot).

Imported lazily by `Report.plot`: importing matplotlib costs most of a second. Each plot is a
`ProfileFigure`, a `matplotlib.figure.Figure` whose `_repr_png_` renders it once with Agg, so a
notebook shows exactly one PNG per plot whether or not pyplot's inline backend is active.
"""
from __future__ import annotations

import io
import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from jitkernel.startup import STARTUP as STARTUP_ROW  # the start-up's own timeline row

from .report import format_bytes
from .stats import CallRecord
from .workers import track, worker_notes

if TYPE_CHECKING:
    from .report import Report

MAX_FUNCTIONS = 6  # subplots per figure (breakdown, fusion); the busiest functions are kept
MAX_TIMELINE_ROWS = 14  # rows of the timeline
MAX_CALLS = 60  # bars per function in the breakdown
MAX_NOTES = 24  # recompilation / failure notes listed under the timeline
NOTE_WIDTH = 140  # characters per line of a note (recompilation reasons: wrapped, never cut)
FAILURE_WIDTH = 120  # a failure's message is cut to one line of this many characters (whole in the table)
COLORS = {"trace": "#4c72b0", "optimize": "#8172b2", "fuse": "#937860", "codegen": "#da8bc3",
          "compile": "#dd8452", "first run": "#55a868", "warm run": "#8c8c8c", "recompile": "#c44e52",
          "failed": "#000000", "block": "#64b5cd", "block compile": "#dd8452", "kernels": "#2a9d8f",
          "transfers": "#e9c46a", "kernel": "#2a9d8f", "transfer": "#e9c46a",
          "worker transfer": "#ccb974", "start-up": "#b0b0b0", "shape-generic": "#17becf",
          "debug nans": "#9b2226"}



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


def _busiest(report: Report, names: list[str], limit: int = MAX_FUNCTIONS) -> tuple[list[str], int]:
    """At most `limit` of `names` (the busiest, in their order) and how many were left out."""
    if len(names) <= limit:
        return names, 0
    work = {st.function: st.calls + st.compiles + st.shape_generic + st.failed for st in report.functions}
    keep = set(sorted(names, key=lambda n: -work.get(n, 0))[:limit])
    return [n for n in names if n in keep], len(names) - limit


def _hidden_note(hidden: int) -> str:
    return "" if not hidden else f" ({hidden} more function{'s' if hidden > 1 else ''} not shown; the busiest are)"


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


BREAKDOWN_PHASES = ("trace", "compile", "first run", "warm run", "kernels", "transfers")
LABEL_ALL_BELOW = 12  # with fewer calls every bar gets its value; else the compiling calls' bars


def _call_phases(c: CallRecord) -> dict[str, float]:
    """A call's phases in ms. The device phases (backend "cuda") are taken out of its run; a
    shape-generic reuse made no machine code, so it has no compile (its trace and fusion are
    its trace bar and its marker)."""
    host = max(0.0, c.run - c.kernels - c.transfers) * 1e3
    return {"trace": c.trace * 1e3, "compile": 0.0 if c.shape_generic else c.compile * 1e3,
            "first run": host if c.first else 0.0, "warm run": 0.0 if c.first else host,
            "kernels": c.kernels * 1e3, "transfers": c.transfers * 1e3}


def _format_value(ms: float) -> str:
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.3g}"


def breakdown(report: Report) -> ProfileFigure:
    """Per call, one bar per phase side by side on a log axis (ms): trace, compile, first run,
    warm run, and on a device backend the kernels and host<->device transfers (taken out of the
    run). Side by side, every phase's size is readable even when a compile is a thousand times
    a run (stacked on a log axis, a 170 ms compile above a 134 ms trace looked like a sliver);
    the bars of calls that compiled carry their values. Markers: `recompile`, and `shape-generic`
    for a new size that reused machine code (no compile bar)."""
    names, hidden = _busiest(report, [st.function for st in report.functions if st.calls])
    if not names:
        return _empty("breakdown", "no jitted calls recorded")
    fig = ProfileFigure("breakdown", figsize=(10, 1.2 + 2.6 * len(names)))
    if hidden:
        fig.suptitle(f"time per call{_hidden_note(hidden)}", fontsize=10, x=0.01, ha="left")
    axes = fig.subplots(len(names), 1, squeeze=False)[:, 0]
    for ax, name in zip(axes, names):
        all_calls = report.calls(name)
        idx, calls = _select_calls(all_calls)
        phases = [_call_phases(c) for c in calls]
        present = [p for p in BREAKDOWN_PHASES if any(ph[p] for ph in phases)]
        label_all = len(calls) < LABEL_ALL_BELOW
        tops = [max([v for v in ph.values()] + [0.0]) for ph in phases]
        bars: dict[str, list[tuple[float, float, float, CallRecord]]] = {p: [] for p in present}
        for xi, (ph, c) in enumerate(zip(phases, calls)):
            own = [p for p in present if ph[p] > 0]  # a warm call's one bar takes the whole slot
            width = 0.8 / max(len(own), 1)
            for j, phase in enumerate(own):
                bars[phase].append((xi - 0.4 + width * (j + 0.5), ph[phase], width, c))
        for phase, group in bars.items():
            ax.bar([b[0] for b in group], [b[1] for b in group], width=[b[2] for b in group],
                   color=COLORS[phase], label=phase)
            for xb, value, width, c in group:
                if label_all or c.first:
                    ax.annotate(_format_value(value), (xb, value), textcoords="offset points", xytext=(0, 2),
                                ha="center", va="bottom", fontsize=6, rotation=90)
        generic = [(xi, top * 12) for xi, (c, top) in enumerate(zip(calls, tops)) if c.shape_generic]
        if generic:
            ax.plot([g[0] for g in generic], [g[1] for g in generic], marker="D", markersize=6, linestyle="none",
                    color=COLORS["shape-generic"], label="shape-generic (no compile)")
        for xi, (c, top) in enumerate(zip(calls, tops)):
            if c.reasons and not c.shape_generic:
                ax.annotate("recompile", (xi, top * 12), textcoords="offset points", xytext=(0, 3), ha="center",
                            fontsize=7, color=COLORS["recompile"])
        ax.set_yscale("log")
        positive = [ph[p] for ph in phases for p in present if ph[p] > 0]
        if positive:
            ax.set_ylim(min(positive) / 2, max(positive) * 60)  # room for the values and markers
        ax.set_ylabel("ms (log)")
        shown = "" if len(calls) == len(all_calls) else f" ({len(calls)} of {len(all_calls)} calls shown)"
        ax.set_title(f"{name}: time per call, phases side by side{shown}", fontsize=10, loc="left")
        ticks = list(range(len(calls))) if len(calls) <= 30 else list(range(0, len(calls), max(1, len(calls) // 15)))
        ax.set_xticks(ticks, [str(idx[t] + 1) for t in ticks], fontsize=8)
        ax.set_xlim(-0.6, len(calls) - 0.4)
        ax.set_xlabel("call", fontsize=8)
        handles, labels = ax.get_legend_handles_labels()
        keep = dict(zip(labels, handles))
        ax.legend(keep.values(), keep.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


class _Axis:
    """Time (ms) -> x position on the timeline: activity keeps its scale, idle gaps longer than
    a quarter of the busy time (and over 2 ms) are collapsed to a narrow marked band, so a
    notebook session's bursts minutes apart all stay readable."""

    def __init__(self, spans: list[tuple[float, float]]) -> None:
        merged: list[list[float]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        busy = sum(b - a for a, b in merged) or 1e-3
        threshold = max(0.25 * busy, 2.0)
        clusters = [list(merged[0])]
        self.gaps: list[tuple[float, float]] = []  # collapsed (real start, real end)
        for a, b in merged[1:]:
            if a - clusters[-1][1] > threshold:
                self.gaps.append((clusters[-1][1], a))
                clusters.append([a, b])
            else:
                clusters[-1][1] = max(clusters[-1][1], b)
        shown = sum(b - a for a, b in clusters) or 1e-3
        self.gap_width = 0.05 * shown
        real, pos, x = [], [], 0.0
        for a, b in clusters:
            real += [a, b]
            pos += [x, x + (b - a)]
            x += (b - a) + self.gap_width
        self.clusters, self._real, self._pos = clusters, np.array(real), np.array(pos)
        self.width = pos[-1] - pos[0] or 1e-3

    def __call__(self, t: float) -> float:
        return float(np.interp(t, self._real, self._pos))

    def ticks(self, max_ticks: int = 9) -> tuple[list[float], list[str]]:
        """Tick positions and labels (real ms): the start of every cluster after an idle gap,
        and round values inside each cluster by its width; never closer than a tick's width."""
        min_gap = self.width / (max_ticks + 2)
        ticks: list[tuple[float, float, bool]] = []  # (position, real ms, forced)
        for i, (a, b) in enumerate(self.clusters):
            n = max(1, int(round((b - a) / self.width * max_ticks)))
            inside = [v for v in MaxNLocator(nbins=n).tick_values(a, b) if a <= v <= b] if b > a else []
            candidates = ([(self(a), a, True)] if i > 0 or not inside else []) + [(self(v), v, False) for v in inside]
            for x, v, forced in candidates:
                while ticks and x - ticks[-1][0] < min_gap and forced and not ticks[-1][2]:
                    ticks.pop()  # a cluster's start beats a round value just before it
                if not ticks or x - ticks[-1][0] >= min_gap:
                    ticks.append((x, v, forced))
        return [t[0] for t in ticks], [_format_ms_tick(t[1]) for t in ticks]


def _format_ms_tick(ms: float) -> str:
    return f"{ms:.0f}" if abs(ms) >= 100 else f"{ms:.3g}"


def _format_gap(ms: float) -> str:
    if ms >= 60e3:
        return f"{ms / 60e3:.1f} min"
    return f"{ms / 1e3:.2f} s" if ms >= 1e3 else f"{ms:.0f} ms"


def _cut(text: str, width: int = FAILURE_WIDTH) -> str:
    """The first line of `text`, cut to `width` characters (the table has it whole)."""
    return textwrap.shorten(text, width=width, placeholder=" ... (whole: str(report))")


def _wrap_note(text: str) -> str:
    return textwrap.fill(text, width=NOTE_WIDTH, subsequent_indent="     ", break_long_words=True)


def timeline(report: Report) -> ProfileFigure:
    """Phases over time (ms since the profile started), one row per function, with a numbered
    marker at every recompilation and a cross at every failed compile, their reasons listed in
    full under the plot. The axis zooms to activity: long idle gaps are collapsed and marked."""
    all_names = [st.function for st in report.functions]
    names, hidden = _busiest(report, all_names, MAX_TIMELINE_ROWS)
    if report.snapshot.startup() is not None:
        names = [STARTUP_ROW, *names]  # the process's one-time start-up: its own row, first
    recs = [r for r in report.records() if r["function"] in names and r["phase"] != "cache"]
    if not recs:
        return _empty("timeline", "no jitted calls recorded")
    rows_of = {n: list(dict.fromkeys(track(r) for r in recs if r["function"] == n)) for n in names}
    names = [t for n in names for t in sorted(rows_of[n], key=lambda t: (t != n, t))]  # worker tracks after f
    axis = _Axis([(r["start"] * 1e3, (r["start"] + r["duration"]) * 1e3) for r in recs])
    row = {n: i for i, n in enumerate(names)}
    spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
    markers = []
    for r in recs:
        if r["phase"] in ("recompile", "failed", "debug nans"):
            markers.append(r)
            continue
        label = r["phase"] if r["phase"] != "run" else ("first run" if r["details"].get("first") else "warm run")
        a = axis(r["start"] * 1e3)
        spans.setdefault((track(r), label), []).append((a, axis((r["start"] + r["duration"]) * 1e3) - a))
        if r["phase"] == "block" and r["details"].get("compile"):  # the block's compile, drawn over its start
            spans.setdefault((track(r), "block compile"), []).append(
                (a, axis((r["start"] + r["details"]["compile"]) * 1e3) - a))
    notes = _timeline_notes(markers) + worker_notes(recs)
    note_lines = sum(n.count("\n") + 1 for n in notes) + (1 if notes else 0)
    plot_height = 1.1 + 0.55 * len(names)
    note_height = 0.16 * note_lines + (0.2 if notes else 0)
    fig = ProfileFigure("timeline", figsize=(11, plot_height + note_height + 0.3))
    if notes:
        grid = fig.add_gridspec(2, 1, height_ratios=[plot_height, note_height], hspace=0.0)
        ax, text_ax = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    else:
        ax, text_ax = fig.add_subplot(), None
    labelled: set[str] = set()
    for (fn, label), xs in spans.items():
        color = COLORS.get(label, "#333333")
        ax.broken_barh(xs, (row[fn] - 0.35, 0.7), facecolors=color, edgecolors=color, linewidth=0.6,
                       label=None if label in labelled else label)
        labelled.add(label)
    _draw_markers(ax, axis, row, markers, labelled)
    for a, b in axis.gaps:  # collapsed idle time: a grey band saying how long
        x0 = axis(a)
        ax.axvspan(x0, x0 + axis.gap_width, color="#e8e8e8", zorder=0)
        ax.text(x0 + axis.gap_width / 2, len(names) - 0.5, f"idle {_format_gap(b - a)}", rotation=90,
                ha="center", va="bottom", fontsize=7, color="#555555")
    pad = 0.02 * axis.width
    ax.set_xlim(axis(axis.clusters[0][0]) - pad, axis(axis.clusters[-1][1]) + pad)
    positions, labels = axis.ticks()
    ax.set_xticks(positions, labels, fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=9)
    ax.set_ylim(len(names) - 0.4, -0.85)  # first function on top, room for the marker numbers
    gaps = "; idle gaps collapsed" if axis.gaps else ""
    ax.set_xlabel(f"ms since the profile started{gaps}", fontsize=9)
    ax.set_title(f"jitkernel timeline{_hidden_note(hidden)}", fontsize=10, loc="left")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if text_ax is not None:
        text_ax.axis("off")
        text_ax.text(0.0, 0.0, "\n".join(notes), transform=text_ax.transAxes, va="bottom", ha="left",
                     fontsize=7.5, color=COLORS["recompile"], family="monospace")
    fig.tight_layout()
    return fig


def _timeline_notes(markers: list[dict[str, Any]]) -> list[str]:
    """One wrapped line group per recompilation (numbered as its marker) and failed compile (x)."""
    notes, k = [], 0
    for r in markers:
        if r["phase"] == "recompile":
            k += 1
            reasons = "; ".join(r["details"].get("reasons", [])) or "recompiled"
            notes.append(_wrap_note(f"{k:>2}. {r['function']}: {reasons}"))
        elif r["phase"] == "debug nans":
            d = r["details"]
            kernel = f" (kernel {d.get('kernel')})" if d.get("kernel") else ""
            notes.append(_wrap_note(f" !. {r['function']}: {d.get('what', 'NaN')} made by {d.get('operation', '?')}"
                                    f"{kernel} at {d.get('location') or 'an unknown line'}"))
        else:
            details = r["details"]
            notes.append(_cut(f" x. {r['function']}: {details.get('stage', 'compile')} failed, not counted as "
                              f"a compile: {details.get('error', '')}"))
    if len(notes) > MAX_NOTES:
        more = len(notes) - MAX_NOTES
        notes = notes[:MAX_NOTES] + [f"... and {more} more (str(report) lists every recompilation)"]
    if not notes:
        return []
    failed = any(r["phase"] == "failed" for r in markers)
    nans = any(r["phase"] == "debug nans" for r in markers)
    head = ("recompilations and failed compiles:" if failed and k else "failed compiles:" if failed
            else "recompilations:" if k else "")
    if nans:
        head = (head[:-1] + "; " if head else "") + "debug_nans:"
    return [head] + notes


def _draw_markers(ax: Any, axis: _Axis, row: dict[str, int], markers: list[dict[str, Any]],
                  labelled: set[str]) -> None:
    """Recompilations: a red line with its number above the row (numbers close together are
    staggered upwards); failed compiles: a black cross."""
    k = 0
    last_x: dict[str, list[float]] = {}
    for r in markers:
        x, y = axis(r["start"] * 1e3), row[r["function"]]
        if r["phase"] == "debug nans":  # a NaN or an infinity made inside the call (jk.config.debug_nans)
            ax.plot([x], [y], marker="D", markersize=7, color=COLORS["debug nans"],
                    label=None if "debug nans" in labelled else "debug nans", linestyle="none")
            labelled.add("debug nans")
            continue
        if r["phase"] == "failed":
            ax.plot([x], [y], marker="x", markersize=9, markeredgewidth=2, color=COLORS["failed"],
                    label=None if "failed compile" in labelled else "failed compile", linestyle="none")
            labelled.add("failed compile")
            continue
        k += 1
        ax.plot([x, x], [y - 0.45, y + 0.45], color=COLORS["recompile"], linewidth=1.5,
                label=None if "recompile" in labelled else "recompile")
        labelled.add("recompile")
        near = [p for p in last_x.setdefault(r["function"], []) if abs(p - x) < 0.025 * axis.width]
        level = len(near) % 3  # stagger up to three close numbers, then start again
        last_x[r["function"]] = near + [x]
        ax.annotate(str(k), (x, y - 0.45), textcoords="offset points", xytext=(0, 1 + 8 * level), ha="center",
                    va="bottom", fontsize=7, color=COLORS["recompile"], fontweight="bold")


def _op_name(op: Any) -> str:
    return str(op).split("->", 1)[0]


def _op_list(ops: list[Any], limit: int = 80) -> str:
    """The op names of a kernel, as many as fit in `limit` characters, then `+ n more`."""
    names = [_op_name(o) for o in ops]
    out: list[str] = []
    for i, name in enumerate(names):
        rest = len(names) - i
        if len(", ".join(out + [name])) > limit and rest > 0:
            return ", ".join(out) + f", + {rest} more"
        out.append(name)
    return ", ".join(out)


def fusion(report: Report) -> ProfileFigure:
    """Per function (its latest compile): the graph ops each kernel absorbed, and the bytes an
    op-by-op execution would move against the bytes the fused kernels move."""
    stats = [st for st in report.functions if st.groups]
    shown, hidden = _busiest(report, [s.function for s in stats])
    stats = [st for st in stats if st.function in shown]
    if not stats:
        return _empty("fusion", "no fusion recorded (compile a function with the cpu backend)")
    heights = [max(1.6, 0.45 * len(st.groups) + 1.0) for st in stats]
    fig = ProfileFigure("fusion", figsize=(10, sum(heights) + 0.4))
    if hidden:
        fig.suptitle(f"fusion{_hidden_note(hidden)}", fontsize=10, x=0.01, ha="left")
    grid = fig.add_gridspec(len(stats), 2, width_ratios=[3.2, 1], height_ratios=heights)
    for i, st in enumerate(stats):
        ax = fig.add_subplot(grid[i, 0])
        groups = st.groups
        y = list(range(len(groups)))
        counts = [len(g.get("ops", [])) for g in groups]
        colors = [COLORS["compile"] if g.get("kind") == "library" else COLORS["trace"] for g in groups]
        ax.barh(y, counts, color=colors, height=0.6)
        for yi, g, n in zip(y, groups, counts):
            ax.text(n + 0.1, yi, f" {_op_list(g.get('ops', []))}", va="center", fontsize=7)
            if g.get("split"):  # a data-dependent length is known after this step (numpy/_datadep.py)
                ax.axhline(yi + 0.5, color=COLORS["compile"], linestyle="--", linewidth=0.8)
                ax.text(n + 0.1, yi + 0.32, f" {g['split']}", va="center", fontsize=6, color=COLORS["compile"])
        ax.set_yticks(y, [f"{g.get('kernel', '?')} ({g.get('kind', '?')})" for g in groups], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, max(counts + [1]) * 2.2)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # a kernel absorbs whole ops
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
