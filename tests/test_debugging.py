"""Run-time debugging inside compiled code (docs/debugging.md): `jk.debug.print` and
`jk.debug.callback` run when the program runs, with the run's values, in program order, in
loops, under grad and vmap; `debug_nans` names the user's line of the first NaN made inside."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS

BACKENDS = HOST_BACKENDS + emulator_backends()  # cuda-emulator where g++ is


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_runs_each_call_with_its_values_in_program_order(backend, capsys):
    @jk.jit(backend=backend)
    def f(x):
        y = np.sin(x)
        jk.debug.print("first {}", x[0])
        jk.debug.print("y = {}, total = {total:.1f}", y, total=x.sum())
        jk.debug.print("first {}", x[0])  # equal to the first print: both run
        return y * 2

    capsys.readouterr()  # nothing printed while tracing
    f(np.zeros(3))
    f(np.ones(3))
    assert _lines(capsys) == [
        "first 0.0", "y = [0. 0. 0.], total = 0.0", "first 0.0",
        "first 1.0", f"y = {np.sin(np.ones(3))}, total = 3.0", "first 1.0"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_callback_receives_host_arrays(backend):
    seen = []

    @jk.jit(backend=backend)
    def f(x):
        jk.debug.callback(lambda a, b, scale: seen.append((a, b, scale)), x, x.max(), scale=2)
        return x + 1

    np.testing.assert_array_equal(f(np.arange(4.0)), np.arange(4.0) + 1)
    ((a, b, scale),) = seen
    assert type(a) is np.ndarray and a.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert b == 3.0 and np.ndim(b) == 0 and scale == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_of_complex_values(backend, capsys):
    """The complex lowering packs complex values as float pairs: the print gets them complex."""
    @jk.jit(backend=backend)
    def f(z):
        jk.debug.print("z={} a={}", z * 2, np.abs(z))
        return z + 1

    f(np.array([1 + 2j, 3 - 1j]))
    assert _lines(capsys) == [f"z={np.array([1 + 2j, 3 - 1j]) * 2} a={np.abs(np.array([1 + 2j, 3 - 1j]))}"]


def test_print_outside_a_trace_runs_at_once(capsys):
    jk.debug.print("now {x}", x=np.arange(2))
    assert _lines(capsys) == ["now [0 1]"]


def test_print_of_an_unread_value_is_kept(capsys):
    @jk.jit
    def f(x):
        jk.debug.print("unread {}", x * 3)
        return x

    f(np.float64(2.0))
    assert _lines(capsys) == ["unread 6.0"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_in_every_iteration_of_lax_loops(backend, capsys):
    def body(i, x):
        jk.debug.print("i={} x={}", i, x)
        return x * 2

    def cond(v):
        return v < 10

    def wbody(v):
        jk.debug.print("v={}", v)
        return v * 3

    @jk.jit(backend=backend)
    def f(x):
        return jk.lax.fori_loop(0, 3, body, x), jk.lax.while_loop(cond, wbody, x)

    f(np.float64(1.0))
    assert _lines(capsys) == ["i=0 x=1.0", "i=1 x=2.0", "i=2 x=4.0", "v=1.0", "v=3.0", "v=9.0"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_without_values_in_a_loop_and_branch_whose_results_are_unread(backend, capsys):
    def body(i, v):
        jk.debug.print("i={}", i)
        return v + 1

    @jk.jit(backend=backend)
    def f(x):
        jk.lax.fori_loop(0, 2, body, x)
        jk.lax.cond(x > 0, lambda a: (jk.debug.print("positive"), a)[1], lambda a: a, x)
        return x

    f(1.0)
    assert _lines(capsys) == ["i=0", "i=1", "positive"]


def test_print_in_every_iteration_of_a_converted_python_loop(capsys):
    @jk.jit
    def f(x, n):
        for i in range(n):
            jk.debug.print("i={} x={}", i, x)
            x = x + 1
        return x

    f(0.0, 3)
    assert _lines(capsys) == ["i=0 x=0.0", "i=1 x=1.0", "i=2 x=2.0"]


def test_print_invariant_in_a_loop_is_not_hoisted(capsys):
    @jk.jit
    def f(x, c):
        def body(i, v):
            jk.debug.print("c={}", c)
            return v + c
        return jk.lax.fori_loop(0, 2, body, x)

    f(0.0, 5.0)
    assert _lines(capsys) == ["c=5.0", "c=5.0"]


def _g(x):
    jk.debug.print("x={}", x)
    y = np.sin(x)
    jk.debug.print("y={:.4f}", y)
    return y


@pytest.mark.parametrize("wrap", [lambda f: f, jk.jit], ids=["eager", "jit"])
def test_grad_prints_primals_once(wrap, capsys):
    assert wrap(jk.grad(_g))(1.0) == pytest.approx(np.cos(1.0))
    assert _lines(capsys) == ["x=1.0", f"y={np.sin(1.0):.4f}"]


def test_grad_through_loops_and_branches_prints_the_forward_pass_only(capsys):
    """Reverse mode recomputes a loop's or branch's forward pass: that copy does not print."""
    def body(i, v):
        jk.debug.print("v={}", v)
        return v * v

    def f(x):
        y = jk.lax.fori_loop(0, 2, body, x)
        return jk.lax.cond(y > 0, lambda a: (jk.debug.print("pos {}", a), a * 3)[1], lambda a: a, y)

    assert jk.jit(jk.grad(f))(1.5) == pytest.approx(3 * 4 * 1.5 ** 3)
    assert _lines(capsys) == ["v=1.5", "v=2.25", "pos 5.0625"]


def test_jvp_prints_primals(capsys):
    jk.jvp(_g, (1.0,), (1.0,))
    assert _lines(capsys) == ["x=1.0", f"y={np.sin(1.0):.4f}"]


def test_vmap_prints_once_with_the_batch(capsys):
    def f(x, c):
        jk.debug.print("x={} c={}", x, c)
        return x * c

    out = jk.jit(jk.vmap(f, in_axes=(0, None)))(np.arange(3.0), 2.0)
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    assert _lines(capsys) == ["x=[0. 1. 2.] c=2.0"]


def _fuses(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if "fuses:" in line]


def test_print_keeps_the_fusion_around_it():
    """Only the printed value is materialised: `x + 1`, exp and `* 2` stay one kernel."""
    def f(x):
        a = x + 1
        jk.debug.print("s={}", x.sum())
        return np.exp(a) * 2

    text = jk.jit(f).lower(np.ones(8)).as_text("kernels")
    assert "debug_callback" in text
    fused = [line for line in _fuses(text) if "add" in line]
    assert len(fused) == 1 and "exp" in fused[0] and "multiply" in fused[0], text


def test_print_of_a_result_changes_no_kernel():
    """A print of a value the program computes anyway adds a step and no kernel: the sum and the
    elementwise result stay one loop with two stores (the print is sunk past them)."""
    def with_print(x):
        y = np.sin(x)
        s = x.sum()
        jk.debug.print("s={}", s)
        return y * 2, s

    def without(x):
        y = np.sin(x)
        s = x.sum()
        return y * 2, s

    x = np.ones(8)
    printed = jk.jit(with_print).lower(x).as_text("kernels")
    assert _fuses(printed) == _fuses(jk.jit(without).lower(x).as_text("kernels")), printed
    assert len(_fuses(printed)) == 1 and "debug_callback" in printed


def test_print_runs_before_a_later_check_raises(capsys):
    @jk.jit
    def f(x, i):
        jk.debug.print("i={}", i)
        return x[i]  # an IndexError at run time for i = 5

    with pytest.raises(IndexError):
        f(np.ones(3), 5)
    assert _lines(capsys) == ["i=5"]


def test_two_equal_prints_are_not_merged_and_print_is_kept_by_the_passes():
    def f(x):
        jk.debug.print("{}", x)
        jk.debug.print("{}", x)
        return x

    assert jk.jit(f).lower(np.ones(2)).as_text("optimized").count("debug_callback") == 2


def test_print_needs_a_str_format_and_array_values():
    with pytest.raises(TypeError, match="format must be a str"):
        jk.debug.print(3)

    @jk.jit
    def f(x):
        jk.debug.print("{}", "text")
        return x

    with pytest.raises(TypeError, match="must be an array or a number"):
        f(1.0)


# -- debug_nans ---------------------------------------------------------------------------


@pytest.fixture
def debug_nans():
    jk.config.update("debug_nans", True)
    try:
        yield
    finally:
        jk.config.update("debug_nans", False)


def _log_of_shifted(x):
    y = x * 2
    z = np.log(y - 3)  # the line debug_nans names
    return z + 1


LOG_LINE = _log_of_shifted.__code__.co_firstlineno + 2


def test_debug_nans_is_off_by_default():
    assert jk.config.debug_nans is False
    assert np.isnan(jk.jit(_log_of_shifted)(np.ones(3))).all()


@pytest.mark.parametrize("backend", ["interpret", "cpu", *emulator_backends()])
def test_debug_nans_names_the_operation_kernel_and_line(backend, debug_nans):
    f = jk.jit(_log_of_shifted, backend=backend)
    for _ in range(2):  # the checked path, then the warm entry
        with pytest.raises(FloatingPointError) as info:
            f(np.ones(3))
        message = str(info.value)
        assert "NaN produced by 'log' in _log_of_shifted" in message, message
        assert f"{__file__}:{LOG_LINE}: z = np.log(y - 3)" in message, message
        assert ("(kernel k" in message) == (backend != "interpret")  # the interpreter runs no kernels


def test_debug_nans_is_silent_for_nan_in_the_inputs(debug_nans):
    f = jk.jit(_log_of_shifted)
    out = f(np.array([np.nan, 5.0]))
    assert np.isnan(out[0]) and np.isfinite(out[1])
    with pytest.raises(FloatingPointError, match="'log'"):  # one made inside, next to one passed in
        f(np.array([np.nan, 1.0]))


def test_debug_nans_reports_infinity_and_finds_the_line_in_a_loop_body(debug_nans):
    @jk.jit
    def f(x, n):
        for i in range(n):
            x = np.sqrt(x - 1.0)
        return 1.0 / x

    with pytest.raises(FloatingPointError, match=r"NaN produced by 'sqrt'.*x = np.sqrt\(x - 1.0\).*inside the"):
        f(2.0, 3)
    with pytest.raises(FloatingPointError, match=r"Inf produced by 'divide'.*return 1.0 / x"):
        f(1.0, 1)


def test_debug_nans_finds_the_line_in_a_scan_body_and_a_branch(debug_nans):
    def step(c, x):
        return c + x, np.log(x)  # the scan's line

    @jk.jit
    def f(xs):
        return jk.lax.scan(step, 0.0, xs)[1]

    @jk.jit
    def g(x):
        return jk.lax.cond(x > 0, lambda a: a, lambda a: np.arccos(a), x)  # the branch's line

    with pytest.raises(FloatingPointError, match=r"'log'.*the scan's line \(inside the scan at "):
        f(np.array([1.0, -1.0]))
    with pytest.raises(FloatingPointError, match=r"'arccos'.*the branch's line \(inside the cond at "):
        g(-2.0)


def test_debug_nans_switched_on_after_warm_calls_checks_them():
    f = jk.jit(_log_of_shifted)
    f(np.ones(3))
    f(np.ones(3))  # a warm entry now exists
    jk.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            f(np.ones(3))
    finally:
        jk.config.update("debug_nans", False)
    assert np.isnan(f(np.ones(3))).all()  # off again: no check


def test_debug_nans_publishes_an_event(debug_nans):
    seen = []
    unsubscribe = jk.events.subscribe(seen.append)
    try:
        with pytest.raises(FloatingPointError):
            jk.jit(_log_of_shifted)(np.ones(2))
    finally:
        unsubscribe()
    (event,) = [e for e in seen if isinstance(e, jk.events.DebugNansEvent)]
    assert event.operation == "log" and event.function == "_log_of_shifted" and event.what == "NaN"
    assert event.location.startswith(f"{__file__}:{LOG_LINE}:") and event.kernel


def test_debug_nans_option_must_be_a_bool():
    with pytest.raises(ValueError, match="True or False"):
        jk.config.update("debug_nans", "on")


def test_debug_nans_does_not_print_twice(debug_nans, capsys):
    @jk.jit
    def f(x):
        jk.debug.print("x={}", x)
        y = jk.lax.cond(x < 0, lambda a: (jk.debug.print("branch"), a * 2)[1], lambda a: a, x)
        return np.log(y)

    with pytest.raises(FloatingPointError, match="'log'"):
        f(-1.0)
    assert _lines(capsys) == ["x=-1.0", "branch"]


def test_jit_debug_magic_switches_debug_nans(tmp_path, monkeypatch):
    from ipython_shell import extension_shell, ok
    try:
        with extension_shell(tmp_path, monkeypatch) as ip:
            _, out, _ = ok(ip, "%jit_debug nans on")
            assert out.strip() == "jit debug nans: on" and jk.config.debug_nans is True
            _, out, _ = ok(ip, "%jit_debug nans off")
            assert out.strip() == "jit debug nans: off" and jk.config.debug_nans is False
    finally:
        jk.config.update("debug_nans", False)


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_print_over_dask_runs_once_per_compute_in_order(scheduler, capsys):
    """docs/debugging.md, Dask: each print is one task over whole values, chained after the
    previous print and before the results; the local schedulers run it in this process."""
    da = pytest.importorskip("dask.array")
    import dask

    @jk.jit
    def f(x):
        y = x * 2
        jk.debug.print("y={}", y)  # a chunked value: rechunked to one block for the print
        jk.debug.print("max={}", y.max())
        return y + 1, y.sum()

    with pytest.warns(Warning, match="debug_callback is not partitioned"):
        out, total = f(da.from_array(np.arange(8.0), chunks=4))
    out, total = dask.compute(out, total, scheduler=scheduler)
    np.testing.assert_array_equal(out, np.arange(8.0) * 2 + 1)
    assert total == 56.0
    assert _lines(capsys) == ["y=[ 0.  2.  4.  6.  8. 10. 12. 14.]", "max=14.0"]


def test_print_of_a_reduction_over_dask_is_not_lost(capsys):
    """A print in a segment whose values no result reads still runs (its token is tied to the
    first output)."""
    da = pytest.importorskip("dask.array")

    @jk.jit
    def f(x):
        y = x * 2
        jk.debug.print("sum={}", y.sum())
        return y

    f(da.from_array(np.arange(8.0), chunks=4)).compute(scheduler="synchronous")
    assert _lines(capsys) == ["sum=56.0"]
