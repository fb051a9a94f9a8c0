"""The profiler against the real engine: counts, times, records, Chrome trace, compaction, plots."""
from __future__ import annotations

import json

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import profiler
from jitkernel import events
from jitkernel.profiler.collector import Collector
from helpers import HOST_BACKENDS


@pytest.fixture(autouse=True)
def _isolated(temp_cache_dir):
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
    from jitkernel.profiler.report import Report
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
    from jitkernel.profiler.report import Report
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
    from jitkernel.profiler.report import Report
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
    # (6, 4) runs on the shape-generic code made at (5, 4): a reuse, not a compile
    assert (st_late.calls, st_late.cache_hits, st_late.compiles, st_late.shape_generic) == (2, 1, 0, 1)


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
    from jitkernel.profiler.report import COLUMNS, Report
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
    from jitkernel.profiler.report import Report
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


# -- failed traces, same-named functions, plot readability ----------------------
def _bad(x):
    return np.zeros(x.shape[0] + x)  # a traced size: the trace fails


def _report_of(*calls) -> "profiler.Report":
    from jitkernel.profiler.report import Report
    c = Collector()
    c.start()
    try:
        for call in calls:
            call()
    finally:
        c.stop()
    return Report(c.snapshot())


def _raises(f, *args):
    def call():
        with pytest.raises(Exception):
            f(*args)
    return call


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_failed_trace_is_not_a_compile(backend):
    bad = jk.jit(_bad, backend=backend)
    good = jk.jit(_step, backend=backend)
    x = np.ones((3, 3), np.float32)
    r = _report_of(_raises(bad, x), _raises(bad, x), lambda: good(x), lambda: good(x))
    st = r["_bad"]
    assert (st.calls, st.compiles, st.failed, st.cache_hits) == (0, 0, 2, 0)
    assert [f.stage for f in st.failures] == ["trace", "trace"]
    assert "TracerIntegerConversionError" in st.failures[0].error
    assert (r["_step"].compiles, r["_step"].failed) == (1, 0)
    assert r.calls("_bad") == []
    text = str(r)
    assert "0 (+2 failed)" in text and "failed compiles (not counted as compiles):" in text
    assert "_bad: trace failed (x: float32[3, 3]): TracerIntegerConversionError" in text
    assert "trace failed" in r._repr_html_()
    assert [rec["details"]["stage"] for rec in r.records() if rec["phase"] == "failed"] == ["trace", "trace"]


def test_a_failed_compile_after_a_good_one_counts_once():
    def sometimes(x):
        if x.shape[0] > 4:
            raise ValueError("too big")
        return x + 1
    f = jk.jit(sometimes, backend="interpret")
    r = _report_of(lambda: f(np.ones(3)), _raises(f, np.ones(8)), lambda: f(np.ones(3)))
    st = r["sometimes"]
    assert (st.calls, st.cache_hits, st.compiles, st.failed, st.recompiles) == (2, 1, 1, 1, 0)


def _redefined_steps():
    """Two different function objects named `step`, as a %%jit cell run twice defines."""
    def step(x):
        return np.tanh(x).sum()
    first = jk.jit(step)

    def step(x):  # noqa: F811 -- the point: same name, another function
        return (np.tanh(x) * 2.0).sum()
    return first, jk.jit(step)


def test_a_redefined_function_is_profiled_apart():
    first, second = _redefined_steps()
    assert first.function_id != second.function_id
    x = np.ones(16)
    r = _report_of(lambda: first(x), lambda: first(x), lambda: second(x), lambda: second(np.ones(32)),
                   lambda: first(x))
    assert [st.function for st in r.functions] == ["step", "step (2)"]
    old, new = r["step"], r["step (2)"]
    assert (old.calls, old.compiles, old.cache_hits, old.recompiles) == (3, 1, 2, 0)
    assert (new.calls, new.compiles, new.cache_hits, new.recompiles) == (2, 2, 0, 1)
    assert r[first] is old and r[second] is new
    # the backends' events (fuse, codegen, compile) carry no id: each is attributed to its call
    assert old.kernels == new.kernels == 1 and old.compile > 0 and new.compile > 0
    assert [c.first for c in r.calls(second)] == [True, True]
    assert {rec["function"] for rec in r.records()} == {"step", "step (2)"}
    assert "step (2): x: shape (16,) -> (32,)" in str(r)


def test_report_of_a_function_object_excludes_its_namesakes(tmp_path):
    first, second = _redefined_steps()
    profiler.start()
    profiler.reset()
    first(np.ones(4))
    second(np.ones(4))
    second(np.ones(4))
    only = profiler.report(second)
    assert [(st.function, st.calls) for st in only.functions] == [("step", 2)]
    both = profiler.report("step")
    assert [st.function for st in both.functions] == ["step", "step (2)"]
    names = {e["args"]["name"] for e in json.loads(both.to_chrome_trace(tmp_path / "t.json").read_text())["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"step", "step (2)"}


def test_compaction_keeps_same_named_functions_apart():
    first, second = _redefined_steps()
    c = Collector(compact_every=8)
    c.start()
    x = np.ones(4)
    for _ in range(30):
        first(x)
        second(x)
    second(x)
    c.stop()
    from jitkernel.profiler.report import Report
    r = Report(c.snapshot())
    assert (r["step"].calls, r["step (2)"].calls) == (30, 31)
    assert (r["step"].compiles, r["step (2)"].compiles) == (1, 1)


def _timeline_texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_timeline_zooms_to_activity_and_keeps_every_reason():
    import time
    f = jk.jit(lambda x, n: x ** n, static_argnums=1, backend="interpret")
    long_name = "x_with_a_rather_long_argument_name_for_the_reason_text"

    def g(**kw):
        return kw[long_name] * 2
    gj = jk.jit(g, backend="interpret")

    def calls():
        start = time.perf_counter()
        for n in range(2, 6):
            f(np.ones(4), n)
        # idle time in the middle of the profile, long against the activity on either side
        # whatever the machine's load (a gap is collapsed when longer than a quarter of the busy
        # time: a fixed 0.5 s was not, once a loaded machine stretched the compiles past 2 s)
        time.sleep(max(0.5, 4 * (time.perf_counter() - start)))
        for m in (3, 4, 5):
            gj(**{long_name: np.ones((m, 7, 2))})
    r = _report_of(calls)
    fig = r.plot("timeline")
    texts = _timeline_texts(fig)
    notes = next(t for t in texts if t.startswith("recompilations"))
    for st in r.functions:
        for _, reasons, _ in st.recompilations:
            for reason in reasons:  # in full, wrapped but never cut
                assert reason.replace(" ", "") in notes.replace("\n", "").replace(" ", "")
    assert "..." not in notes
    assert any(t.startswith("idle ") for t in texts)  # the gap is collapsed and marked
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    recs = [rec for rec in r.records() if rec["phase"] != "cache"]
    busy = sum(rec["duration"] for rec in recs) * 1e3
    assert hi - lo < busy * 3 + 10  # the axis spans the activity, not the idle time


def test_plots_say_how_many_functions_are_hidden():
    fns = []
    for i in range(20):
        ns = {"np": np}
        exec(f"def fn_{i}(x):\n    return np.sin(x) + {i}", ns)
        fns.append(jk.jit(ns[f"fn_{i}"], backend="cpu" if i < 8 else "interpret"))
    r = _report_of(*[(lambda f=f: f(np.ones(3))) for f in fns])
    from jitkernel.profiler import plots
    timeline = r.plot("timeline")
    rows = [t.get_text() for t in timeline.axes[0].get_yticklabels()]
    assert len(rows) == plots.MAX_TIMELINE_ROWS
    assert f"{20 - plots.MAX_TIMELINE_ROWS} more functions not shown" in timeline.axes[0].get_title(loc="left")
    breakdown = r.plot("breakdown")
    assert f"{20 - plots.MAX_FUNCTIONS} more functions not shown" in breakdown._suptitle.get_text()
    fusion = r.plot("fusion")
    assert f"{8 - plots.MAX_FUNCTIONS} more functions not shown" in fusion._suptitle.get_text()


def test_fusion_plot_has_integer_op_counts():
    f = jk.jit(lambda x: np.sin(x))  # one kernel of one op: matplotlib's default ticks are 0, 0.5, 1...
    r = _report_of(lambda: f(np.ones(8)))
    ax = r.plot("fusion").axes[0]
    ax.figure.to_png()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_timeline_marks_a_failed_compile():
    bad = jk.jit(_bad, backend="interpret")
    r = _report_of(_raises(bad, np.ones(3)))
    fig = r.plot("timeline")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["_bad"]
    assert any("trace failed, not counted as a compile" in t for t in _timeline_texts(fig))


def _log_of_shifted(x):
    return np.log(x - 2)


def test_timeline_marks_a_debug_nans_finding():
    f = jk.jit(_log_of_shifted)
    jk.config.update("debug_nans", True)
    try:
        r = _report_of(_raises(f, np.ones(3)))
    finally:
        jk.config.update("debug_nans", False)
    (rec,) = [x for x in r.records() if x["phase"] == "debug nans"]
    assert rec["details"]["operation"] == "log" and rec["details"]["what"] == "NaN"
    fig = r.plot("timeline")
    texts = _timeline_texts(fig)
    assert any("NaN made by log (kernel k0_" in t and "return np.log(x - 2)" in t for t in texts), texts
    assert "debug nans" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def _namesakes():
    """Two function objects named `f` (as two runs of a %%jit cell make); `fail=True` makes the
    trace raise, so that call is a failed compile every time."""
    def f(x, fail):
        if fail:
            raise ValueError("the trace fails")
        return x * 2.0
    first = jk.jit(f, static_argnames="fail", backend="interpret")

    def f(x, fail):  # noqa: F811
        if fail:
            raise ValueError("the trace fails")
        return x + 1.0
    return first, jk.jit(f, static_argnames="fail", backend="interpret")


def test_profile_counts_follow_a_model_of_the_calls():
    from hypothesis import given, settings
    from hypothesis import strategies as hst

    call = hst.tuples(hst.sampled_from([0, 1]), hst.sampled_from([2, 3]),
                      hst.sampled_from([np.float32, np.float64]), hst.booleans())

    @settings(max_examples=30, deadline=None, database=None, derandomize=True)
    @given(hst.lists(call, min_size=1, max_size=14), hst.sampled_from([3, 7, 1000]))
    def check(calls, compact_every):
        fns = _namesakes()
        model = [{"calls": 0, "failed": 0, "signatures": set()} for _ in fns]
        order: list[int] = []
        c = Collector(compact_every=compact_every)
        c.start()
        try:
            for which, n, dtype, fail in calls:
                if which not in order:
                    order.append(which)
                m = model[which]
                if fail:
                    with pytest.raises(ValueError):
                        fns[which](np.ones(n, dtype), fail=True)
                    m["failed"] += 1
                else:
                    fns[which](np.ones(n, dtype), fail=False)
                    m["calls"] += 1
                    m["signatures"].add((n, dtype))
        finally:
            c.stop()
        from jitkernel.profiler.report import Report
        r = Report(c.snapshot())
        assert [st.function for st in r.functions] == ["f", "f (2)"][:len(order)]
        for label, which in zip(["f", "f (2)"], order):
            st, m = r[label], model[which]
            assert r[fns[which]] is st
            assert (st.calls, st.failed) == (m["calls"], m["failed"])
            assert st.compiles + st.shape_generic == len(m["signatures"])
            assert st.cache_hits == m["calls"] - len(m["signatures"])
            assert len(r.calls(fns[which])) == m["calls"]
            assert all(f.stage == "trace" for f in st.failures)

    check()


def test_the_process_start_up_is_its_own_row_not_the_first_functions_trace(monkeypatch):
    """The one-time start-up of tracing (jitkernel/startup.py) is published once, before the
    first trace starts: it is never inside a function's trace time, and the profile shows it
    apart (a line under the table, a `start-up` record, its own timeline row)."""
    from jitkernel import startup
    from jitkernel.profiler.report import Report
    monkeypatch.setattr(startup, "_seconds", None)  # as in a fresh process
    c = Collector()
    c.start()
    first, second = jk.jit(lambda x: x * 2.0 + 1.0), jk.jit(lambda x: x * 2.0 + 1.0)
    first(np.ones(5))
    second(np.ones(5))
    c.stop()
    snap = c.snapshot()
    starts = [e for e in snap.events if isinstance(e, events.StartupEvent)]
    traces = [e for e in snap.events if isinstance(e, events.TraceEvent)]
    assert len(starts) == 1 and len(traces) == 2
    assert starts[0].function == "start-up" and starts[0].first_function == "<lambda>"
    assert starts[0].start + starts[0].duration <= traces[0].start  # not inside the first trace
    assert startup.seconds() == starts[0].duration
    report = Report(snap)
    assert [st.function for st in report.functions] == ["<lambda>", "<lambda> (2)"]
    line = next(l for l in str(report).splitlines() if l.startswith("start-up: "))
    assert line.endswith("ms, once per process before its first trace (not in any function's trace ms)")
    assert "class='jitkernel-startup'" in report._repr_html_()
    assert [r["function"] for r in report.records() if r["phase"] == "start-up"] == ["start-up"]
    fig = report.plot("timeline")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()][0] == "start-up"
    c2 = Collector()
    c2.start()
    jk.jit(lambda x: x - 1.0)(np.ones(5))  # later functions: no start-up again
    c2.stop()
    assert not any(isinstance(e, events.StartupEvent) for e in c2.snapshot().events)
    assert "start-up" not in str(Report(c2.snapshot()))


def _bars_by_call(ax) -> dict[int, dict[str, float]]:
    """{call position: {phase colour name: bar height}} of a breakdown subplot."""
    from matplotlib.colors import to_hex
    from matplotlib.patches import Rectangle
    from jitkernel.profiler.plots import COLORS
    names = {v: k for k, v in COLORS.items() if k in ("trace", "compile", "first run", "warm run")}
    out: dict[int, dict[str, float]] = {}
    for p in ax.patches:
        if isinstance(p, Rectangle) and to_hex(p.get_facecolor()) in names:
            assert p.get_y() == 0  # side by side from the axis, never stacked
            out.setdefault(round(p.get_x() + p.get_width() / 2), {})[names[to_hex(p.get_facecolor())]] = p.get_height()
    return out


def test_breakdown_shows_each_phase_readably_and_marks_shape_generic_reuse():
    """Phases side by side on a log axis, each bar its own value (a compile much longer than the
    trace no longer hides it), the compiling calls' values written on the bars; a shape-generic
    reuse has no compile bar and its own marker."""
    f = jk.jit(_step)
    sizes = (100, 100, 101, 102)  # compile, warm, recompile (dimension 0 becomes dynamic), reuse
    r = _report_of(*[(lambda n=n: f(np.ones((n, 8), np.float32))) for n in sizes])
    calls = r.calls("_step")
    assert [(c.first, c.shape_generic) for c in calls] == [(True, False), (False, False), (True, False), (True, True)]
    fig = r.plot("breakdown")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    bars = _bars_by_call(ax)
    assert bars[0]["trace"] == pytest.approx(calls[0].trace * 1e3) and bars[0]["compile"] == pytest.approx(calls[0].compile * 1e3)
    assert set(bars[1]) == {"warm run"} and "compile" in bars[2]
    assert "compile" not in bars[3] and {"trace", "first run"} <= set(bars[3])
    texts = [t.get_text() for t in ax.texts]
    assert f"{calls[0].compile * 1e3:.3g}" in texts or f"{calls[0].compile * 1e3:.0f}" in texts
    assert texts.count("recompile") == 1
    generic = [line for line in ax.lines if line.get_label() == "shape-generic (no compile)"]
    assert len(generic) == 1 and list(generic[0].get_xdata()) == [3]
    assert "shape-generic (no compile)" in [t.get_text() for t in ax.get_legend().get_texts()]
    fig.to_png()


def test_long_failure_messages_are_cut_in_the_plot_and_whole_in_the_table():
    message = "this trace fails " + "because of a very long explanation " * 12

    def fails(x):
        raise ValueError(message)
    r = _report_of(_raises(jk.jit(fails, backend="interpret"), np.ones(3)))
    from jitkernel.profiler import plots
    note = next(t for t in _timeline_texts(r.plot("timeline")) if "failed" in t).splitlines()[-1]
    assert len(note) <= plots.FAILURE_WIDTH and note.endswith("... (whole: str(report))"), note
    first_line = "ValueError: " + message.strip()  # the event keeps the type and first line
    assert first_line in str(r) and first_line.replace("  ", " ") in r._repr_html_()
