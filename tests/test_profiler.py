"""The profiler against the real engine: counts, times, records, Chrome trace, compaction, plots."""
from __future__ import annotations

import json

import numpy as np
import pytest

import jitkernel as jk
import profiler
from jitkernel import events
from profiler.collector import Collector


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    saved = list(events.SUBSCRIBERS)
    yield
    profiler.stop()
    events.SUBSCRIBERS[:] = saved


def _step(x):
    return (np.tanh(x) * 2.0).sum(axis=1)


def test_report_counts_and_times():
    c = Collector()
    c.start()
    f = jk.jit(_step)
    a, b = np.ones((64, 16), np.float32), np.ones((128, 16), np.float32)
    for arr in (a, a, a, b, b):
        f(arr)
    c.stop()
    f(a)  # after stop: not recorded
    from profiler.report import Report
    st = Report(c.snapshot())["_step"]
    assert (st.calls, st.cache_hits, st.compiles, st.recompiles) == (5, 3, 2, 1)
    assert st.trace > 0 and st.compile > 0 and st.first_run > 0
    assert st.warm_runs == 3 and st.warm_median is not None and st.warm_median > 0
    assert st.graph_ops >= 3 and st.kernels == 1 and st.library_calls == 0
    assert st.bytes_fused == 128 * 16 * 4 + 128 * 4  # reads x once, writes the row sums
    assert st.bytes_unfused > st.bytes_fused
    assert st.recompilations[0][1][0] == "x: shape (64, 16) -> (128, 16)"
    calls = Report(c.snapshot()).calls("_step")
    assert [c_.first for c_ in calls] == [True, False, False, True, False]
    assert calls[3].reasons[0] == "x: shape (64, 16) -> (128, 16)" and calls[3].compile > 0


def test_records_and_chrome_trace(tmp_path):
    c = Collector()
    c.start()
    f = jk.jit(_step)
    f(np.ones((8, 4), np.float32))
    f(np.ones((8, 4), np.float32))
    f(np.ones((9, 4), np.float32))
    c.stop()
    from profiler.report import Report
    report = Report(c.snapshot())
    recs = report.records()
    phases = [r["phase"] for r in recs]
    for phase in ("cache", "trace", "optimize", "fuse", "codegen", "compile", "run", "recompile"):
        assert phase in phases
    assert all(set(r) == {"function", "phase", "start", "duration", "details"} for r in recs)
    assert [r["start"] for r in recs] == sorted(r["start"] for r in recs)
    rec = next(r for r in recs if r["phase"] == "recompile")
    trace = [r for r in recs if r["phase"] == "trace"][-1]
    assert rec["start"] == trace["start"] and rec["details"]["reasons"][0] == "x: shape (8, 4) -> (9, 4)"

    path = report.to_chrome_trace(tmp_path / "out" / "trace.json")
    data = json.loads(path.read_text())
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(recs)
    assert [e["name"] for e in complete] == phases
    for e, r in zip(complete, recs):
        assert e["ts"] == pytest.approx(r["start"] * 1e6) and e["dur"] == pytest.approx(r["duration"] * 1e6)
    names = {e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"_step"}


def test_compaction_keeps_the_numbers():
    c = Collector(compact_every=16)
    c.start()
    f = jk.jit(_step)
    x = np.ones((4, 4), np.float32)
    for _ in range(200):
        f(x)
    c.stop()
    assert len(c._events) < 40  # warm runs and hits moved into columns
    from profiler.report import Report
    st = Report(c.snapshot())["_step"]
    assert (st.calls, st.cache_hits, st.compiles, st.warm_runs) == (200, 199, 1, 199)
    assert sum(r["phase"] == "run" for r in Report(c.snapshot()).records()) == 200
    late = events.clock()
    f(x)
    f(np.ones((5, 4), np.float32))
    st_late = Report(c.snapshot(since=late))  # stopped: nothing new
    assert st_late.functions == []
    c.start()
    f(x)
    f(np.ones((6, 4), np.float32))
    c.stop()
    st_late = Report(c.snapshot(since=late))["_step"]
    assert (st_late.calls, st_late.cache_hits, st_late.compiles) == (2, 1, 1)


def test_session_api_and_filters():
    profiler.start()
    profiler.reset()
    f = jk.jit(_step)
    g = jk.jit(lambda x: x + 1, backend="interpret")
    f(np.ones((3, 3), np.float32))
    g(np.ones(3))
    assert {s.function for s in profiler.report().functions} == {"_step", "<lambda>"}
    assert [s.function for s in profiler.report(f).functions] == ["_step"]
    assert [s.function for s in profiler.report(["<lambda>"]).functions] == ["<lambda>"]
    profiler.reset()
    assert profiler.report().functions == []
    assert "no jitted calls" in str(profiler.report())


def test_text_and_html_tables():
    c = Collector()
    c.start()
    f = jk.jit(_step)
    f(np.ones((3, 3), np.float32))
    f(np.ones((4, 3), np.float32))
    c.stop()
    from profiler.report import COLUMNS, Report
    r = Report(c.snapshot(), title="t <&>")
    text = str(r)
    assert text.splitlines()[1].split()[:2] == ["function", "calls"]
    assert "_step: x: shape (3, 3) -> (4, 3)" in text
    html = r._repr_html_()
    assert "<table>" in html and "t &lt;&amp;&gt;" in html and html.count("<th>") == len(COLUMNS)
    assert "x: shape (3, 3) -&gt; (4, 3)" in html


def test_plots_are_single_pngs():
    from matplotlib.figure import Figure
    c = Collector()
    c.start()
    f = jk.jit(_step)
    for n in (4, 4, 8):
        f(np.ones((n, 4), np.float32))
    c.stop()
    from profiler.report import Report
    r = Report(c.snapshot())
    for kind in profiler.PLOT_KINDS:
        fig = r.plot(kind)
        assert isinstance(fig, Figure)
        png = fig._repr_png_()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
    empty = Report(Collector().snapshot())
    assert empty.plot("timeline")._repr_png_().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="unknown plot kind"):
        r.plot("pie")
