"""`Report`: the profile of a snapshot as a text table, an HTML table, plots and records."""
from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from .collector import Snapshot
from .records import records as _records
from .records import write_chrome_trace
from .stats import CallRecord, FunctionStats, call_records, function_stats

PLOT_KINDS = ("breakdown", "timeline", "fusion")

COLUMNS = ("function", "calls", "cache hits", "compiles", "shape-generic", "recompiles", "trace ms",
           "compile ms", "first run ms", "warm median ms", "ops -> kernels", "bytes unfused -> fused")


def format_ms(seconds: float | None) -> str:
    """Milliseconds with three significant decimals for small values: `0.012`, `18.4`."""
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def format_bytes(n: int | None) -> str:
    """`512 B`, `25.6 kB`, `4.2 MB` (decimal units)."""
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _row(st: FunctionStats) -> list[str]:
    notes = [f"{st.disk_hits} from disk"] if st.disk_hits else []
    notes += [f"+{st.failed} failed"] if st.failed else []
    compiles = str(st.compiles) + (f" ({', '.join(notes)})" if notes else "")
    if st.kernels is None:
        fusion = "-"
    else:
        fusion = f"{st.graph_ops} -> {st.kernels}" + (f" + {st.library_calls} lib" if st.library_calls else "")
    bytes_ = "-" if st.bytes_fused is None else f"{format_bytes(st.bytes_unfused)} -> {format_bytes(st.bytes_fused)}"
    return [st.function, str(st.calls), str(st.cache_hits), compiles, str(st.shape_generic), str(st.recompiles),
            format_ms(st.trace),
            format_ms(st.compile), format_ms(st.first_run), format_ms(st.warm_median), fusion, bytes_]


def _device_line(st: FunctionStats) -> str:
    """`3 launches 0.120 ms; host->device 4.0 MB 0.51 ms; device->host 4 B 0.002 ms`."""
    parts = []
    if st.kernel_launches:
        parts.append(f"kernels {format_ms(st.kernel_time)} ms in {st.kernel_launches} launches")
    if st.h2d_bytes or st.h2d_time:
        parts.append(f"host->device {format_bytes(st.h2d_bytes)} in {format_ms(st.h2d_time)} ms")
    if st.d2h_bytes or st.d2h_time:
        parts.append(f"device->host {format_bytes(st.d2h_bytes)} in {format_ms(st.d2h_time)} ms")
    return "; ".join(parts)


class Report:
    """The profile of some jitted functions over a time window.

    Displays as an HTML table in notebooks and as a text table elsewhere; `plot(kind)` draws
    it, `records()` and `to_chrome_trace(path)` export the underlying phases."""

    def __init__(self, snapshot: Snapshot, title: str = "jitkernel profile") -> None:
        self.snapshot = snapshot
        self.title = title
        self.functions: list[FunctionStats] = function_stats(snapshot)

    # -- data --------------------------------------------------------------------------
    def __getitem__(self, function: Any) -> FunctionStats:
        """The stats of a label (`"step"`, `"step (2)"`) or of a jitted function object."""
        st = self._find(function)
        if st is None:
            raise KeyError(f"no profile for function {function!r}; profiled: {[s.function for s in self.functions]}")
        return st

    def _find(self, function: Any) -> FunctionStats | None:
        fid = getattr(function, "function_id", None)
        if fid is None:  # a label
            return next((st for st in self.functions if st.function == function), None)
        key = (function.__name__, fid)  # a jitted function object
        return next((st for st in self.functions if (st.name, st.function_id) == key), None)

    def records(self) -> list[dict[str, Any]]:
        """One plain dict per phase occurrence: function, phase, start (s), duration (s), details."""
        return _records(self.snapshot)

    def calls(self, function: Any) -> list[CallRecord]:
        """The calls of `function` (a label or a jitted function) in time order with their
        trace/compile/run split."""
        st = self[function]
        return call_records(self.snapshot, (st.name, st.function_id))

    def to_chrome_trace(self, path: str | os.PathLike) -> Path:
        """Write a Chrome trace JSON (one complete event per phase; open it in
        https://ui.perfetto.dev or chrome://tracing). Returns the path written."""
        return write_chrome_trace(self.records(), path)

    def plot(self, kind: str = "breakdown") -> Any:
        """A matplotlib Figure (a subclass with `_repr_png_`, so it displays as one PNG):
        `breakdown` (per call: trace, compile, first run, warm run), `timeline` (phases over
        time with recompilation markers and reasons), `fusion` (graph ops per kernel, bytes
        before and after fusion)."""
        if kind not in PLOT_KINDS:
            raise ValueError(f"unknown plot kind {kind!r}; kinds are {', '.join(PLOT_KINDS)}")
        from . import plots  # matplotlib is imported only here
        return getattr(plots, kind)(self)

    # -- display -----------------------------------------------------------------------
    def _recompile_lines(self) -> list[tuple[str, str]]:
        return [(st.function, "; ".join(reasons)) for st in self.functions for _, reasons, _ in st.recompilations]

    def _failure_lines(self) -> list[tuple[str, str]]:
        return [(st.function, f"{f.stage} failed ({f.signature}): {f.error}" if f.signature else
                 f"{f.stage} failed: {f.error}") for st in self.functions for f in st.failures]

    def _startup_line(self) -> str | None:
        """The process's one-time start-up, shown once, apart from every function's trace."""
        seconds = self.snapshot.startup()
        if seconds is None:
            return None
        return (f"start-up: {format_ms(seconds)} ms, once per process before its first trace "
                "(not in any function's trace ms)")

    def _device_lines(self) -> list[tuple[str, str]]:
        """(device, "function: kernels ...; transfers ...") for functions with device phases."""
        return [(st.device or "device", f"{st.function}: {_device_line(st)}") for st in self.functions
                if st.device is not None]

    def __str__(self) -> str:
        if not self.functions:
            return f"{self.title}: no jitted calls recorded"
        rows = [list(COLUMNS)] + [_row(st) for st in self.functions]
        widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
        lines = [self.title]
        for k, r in enumerate(rows):
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
            if k == 0:
                lines.append("  ".join("-" * w for w in widths))
        startup = self._startup_line()
        if startup:
            lines.append(startup)
        dev = self._device_lines()
        if dev:
            lines.append("device phases (kernel times from CUDA events; host<->device copies):")
            lines += [f"  [{device}] {text}" for device, text in dev]
        rec = self._recompile_lines()
        if rec:
            lines.append("recompilations:")
            lines += [f"  {fn}: {why}" for fn, why in rec]
        failed = self._failure_lines()
        if failed:
            lines.append("failed compiles (not counted as compiles):")
            lines += [f"  {fn}: {why}" for fn, why in failed]
        lines += self._worker_lines()
        return "\n".join(lines)

    def _worker_lines(self) -> list[str]:
        from .workers import text_lines  # per-worker tracks of Dask graphs (profiler/workers.py)
        return text_lines(self.records())

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th>{esc(c)}</th>" for c in COLUMNS)
        body = "".join("<tr>" + "".join(f"<td style='text-align:{'left' if i == 0 else 'right'}'>{esc(c)}</td>"
                                        for i, c in enumerate(_row(st))) + "</tr>" for st in self.functions)
        if not self.functions:
            body = f"<tr><td colspan='{len(COLUMNS)}'>no jitted calls recorded</td></tr>"
        out = [f"<div class='jitkernel-profile'><b>{esc(self.title)}</b>",
               f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"]
        startup = self._startup_line()
        if startup:
            out.append(f"<p class='jitkernel-startup'>{esc(startup)}</p>")
        dev = self._device_lines()
        if dev:
            out.append("<p>device phases:</p><ul>" + "".join(
                f"<li>[{esc(device)}] {esc(text)}</li>" for device, text in dev) + "</ul>")
        rec = self._recompile_lines()
        if rec:
            out.append("<p>recompilations:</p><ul>" + "".join(
                f"<li><code>{esc(fn)}</code>: {esc(why)}</li>" for fn, why in rec) + "</ul>")
        failed = self._failure_lines()
        if failed:
            out.append("<p>failed compiles (not counted as compiles):</p><ul>" + "".join(
                f"<li><code>{esc(fn)}</code>: {esc(why)}</li>" for fn, why in failed) + "</ul>")
        per_worker = self._worker_lines()
        if per_worker:
            out.append(f"<pre>{esc(chr(10).join(per_worker))}</pre>")
        out.append("</div>")
        return "".join(out)
