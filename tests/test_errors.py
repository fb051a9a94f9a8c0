"""Errors: each names its cause (function, source line, NumPy function, dtype) and has the type
NumPy users expect (TypeError / ValueError / IndexError) or jitkernel's own documented type."""
from __future__ import annotations

import operator
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import jitkernel as jk
from helpers import assert_matches_numpy, load

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)
TPU_SUITE = True  # and on tpu-interpret (tests/tpu_suite.py)

X = np.linspace(-1, 1, 6, dtype=np.float32)


# ----------------------------------------------------------------------------- concrete values

def test_if_on_traced_value_names_function_and_line(backend):
    def my_branchy_function(x):
        if x.sum() > 0:  # the line the message must quote
            return x
        return -x

    # Converted by default (jitkernel/autograph); traced as written, the if needs a concrete value.
    np.testing.assert_array_equal(jk.jit(my_branchy_function, backend=backend)(X), my_branchy_function(X))
    with pytest.raises(jk.TracerBoolConversionError) as exc:
        jk.jit(my_branchy_function, backend=backend, autograph=False)(X)
    msg = str(exc.value)
    assert "my_branchy_function" in msg
    assert "if x.sum() > 0:" in msg
    assert "test_errors.py" in msg
    assert "np.where" in msg and "static_argnums" in msg  # how to fix it


@pytest.mark.parametrize("fn,line", [
    (lambda x: bool(x[0]), "bool(x[0])"),
    (lambda x: x if x.all() else -x, "x if x.all() else -x"),
    (lambda x: (x > 0) and x, "(x > 0) and x"),
    (lambda x: x[0] or x, "x[0] or x"),
    (lambda x: not x.any(), "not x.any()"),
    (lambda x: [v for v in x if v > 0], "[v for v in x if v > 0]"),
    (lambda x: 1 if np.max(x) == 1 else 2, "np.max(x) == 1"),
], ids=["bool", "ternary", "and", "or", "not", "comprehension-if", "compare"])
def test_bool_conversions(fn, line, backend):
    with pytest.raises(jk.TracerBoolConversionError, match="truth value") as exc:
        jk.jit(fn, backend=backend)(X)
    assert line in str(exc.value)
    assert "<lambda>" in str(exc.value)


def test_while_and_assert_on_traced_value(backend):
    def looping(x):
        while x.sum() < 10:
            x = x + 1
        return x

    def asserting(x):
        assert (x > -5).all()
        return x

    np.testing.assert_array_equal(jk.jit(looping, backend=backend)(X), looping(X))  # converted (autograph)
    with pytest.raises(jk.TracerBoolConversionError, match="looping") as exc:
        jk.jit(looping, backend=backend, autograph=False)(X)
    assert "while x.sum() < 10:" in str(exc.value)
    with pytest.raises(jk.TracerBoolConversionError, match="asserting"):
        jk.jit(asserting, backend=backend)(X)


def test_bool_conversion_is_a_typeerror():
    assert issubclass(jk.TracerBoolConversionError, TypeError)
    assert issubclass(jk.TracerBoolConversionError, jk.JitError)
    assert issubclass(jk.TracerIntegerConversionError, TypeError)
    assert issubclass(jk.UnsupportedOperationError, NotImplementedError)


@pytest.mark.parametrize("fn,what", [
    (lambda x: int(x[0]), "int()"),
    (lambda x: float(x.sum()), "float()"),
    (lambda x: range(x.shape[0])[x.argmax()], "operator.index()"),
    (lambda x: operator.index(x[0].astype(np.int32)), "operator.index()"),
    (lambda x: x.item(), "item()"),
    (lambda x: x.tolist(), "tolist()"),
    (lambda x: x.reshape(int(x.sum()), -1), "int()"),
], ids=["int", "float", "range-index", "operator.index", "item", "tolist", "int-in-shape"])
def test_integer_conversions(fn, what, backend):
    with pytest.raises(jk.TracerIntegerConversionError) as exc:
        jk.jit(fn, backend=backend)(X)
    msg = str(exc.value)
    assert what in msg and "<lambda>" in msg and "static" in msg


@pytest.mark.usefixtures("no_static_int_fallback")
def test_int_conversion_message_names_function_and_line(backend):
    # (int() of a traced Python int in converted code is that int, still checked, so `x[: int(n)]`
    # compiles: tests/test_python_int_control_flow.py; int() of an array still needs its value)
    def sizes(x, n):
        return x[: int(np.asarray(n))]

    with pytest.raises(jk.TracerIntegerConversionError) as exc:
        jk.jit(sizes, backend=backend)(X, 3)
    assert "sizes" in str(exc.value) and "return x[: int(np.asarray(n))]" in str(exc.value)
    # The fix the message suggests works:
    np.testing.assert_array_equal(jk.jit(sizes, static_argnums=1, backend=backend)(X, 3), X[:3])


def test_asarray_of_tracer(backend):
    # np.asarray / np.array of traced values, called on the user's line, are traced
    # (the same array / a new one, trace/creation.py); other conversions still need data.
    np.testing.assert_array_equal(jk.jit(lambda x: np.asarray(x) + 1, backend=backend)(X), X + 1)
    np.testing.assert_array_equal(jk.jit(lambda x: np.array([x[0], x[1]]), backend=backend)(X), X[:2])
    # (np.ascontiguousarray is traced too: tests/test_ndarray_api.py)
    np.testing.assert_array_equal(jk.jit(lambda x: np.ascontiguousarray(x) + 1, backend=backend)(X), X + 1)
    with pytest.raises(jk.TracerArrayConversionError, match="concrete"):
        jk.jit(lambda x: np.ma.masked_array(x) + 1, backend=backend)(X)


# ----------------------------------------------------------------------------- unsupported NumPy

@pytest.mark.parametrize("fn,name", [
    (lambda x: np.unique(x[None], axis=1), "unique"), (lambda x: np.roots(x), "roots"),
    (lambda x: x[x > 0][0], "data-dependent"),
    (lambda x: np.real_if_close(x), "real_if_close"), (lambda x: np.fromfile(x), "fromfile"),
    (lambda x: np.add.reduceat(x[x > 0], [0]), "reduceat"),
    (lambda x: np.lexsort((x[x > 0],)), "lexsort"), (lambda x: x[x > 0, None], "mask"),
    (lambda x: np.sum(x, where=x > 0), "where"),
    (lambda x: np.pad(x, 1, mode="linear_ramp"), "linear_ramp"), (lambda x: np.linalg.eigvals(np.outer(x, x)), "eigvals"),
    (lambda x: np.linalg.eig(x[None]), "eig"),
], ids=["unique-axis", "roots", "index-a-selection",
        "real_if_close", "fromfile", "reduceat-of-a-selection", "function-of-a-selection", "advanced-index", "sum-where",
        "pad-linear-ramp", "eigvals", "eig"])
def test_unsupported_numpy_raises_and_names_it(fn, name, backend):
    with pytest.raises(jk.UnsupportedOperationError) as exc:
        jk.jit(fn, backend=backend)(X)
    assert name in str(exc.value)


def test_unsupported_function_message_format(backend):
    with pytest.raises(jk.UnsupportedOperationError, match=r"numpy\.roots is not supported"):
        jk.jit(lambda x: np.roots(x), backend=backend)(X)
    with pytest.raises(jk.UnsupportedOperationError, match=r"numpy\.linalg\.eig"):
        jk.jit(lambda x: np.linalg.eig(x[None]), backend=backend)(X)


def test_unsupported_function_message_gives_the_tables_reason(backend):
    """A function refused by nature says why and what to do instead."""
    with pytest.raises(jk.UnsupportedOperationError, match=r"real_if_close.*result dtype depends on the values.*\.real"):
        jk.jit(lambda x: np.real_if_close(x), backend=backend)(X)
    with pytest.raises(jk.UnsupportedOperationError, match=r"numpy\.is_busday.*datetime"):
        jk.jit(lambda x: np.is_busday(x), backend=backend)(X)


# ----------------------------------------------------------------------------- shapes

@pytest.mark.parametrize("fn,shapes", [
    (lambda x, y: x + y, ((3,), (4,))),
    (lambda x, y: np.maximum(x, y), ((2, 3), (3, 2))),
    (lambda x, y: x * y[0], ((5,), (2, 4))),
    (lambda x, y: np.where(x > 0, x, y), ((3,), (2,))),
    (lambda x, y: np.clip(x, y, 1), ((3,), (2,))),
], ids=["add", "maximum", "mul", "where", "clip"])
def test_broadcast_mismatch_valueerror(fn, shapes, backend):
    x, y = (np.ones(s, np.float32) for s in shapes)
    with pytest.raises(ValueError):
        fn(x, y)
    with pytest.raises(ValueError, match="broadcast"):
        jk.jit(fn, backend=backend)(x, y)


def test_broadcast_mismatch_message_names_both_shapes(backend):
    with pytest.raises(ValueError) as exc:
        jk.jit(lambda x, y: x - y, backend=backend)(np.ones((2, 3)), np.ones((4,)))
    msg = str(exc.value).replace(" ", "")
    assert "(2,3)" in msg and "(4,)" in msg, msg


def test_len_and_iteration_of_0d(backend):
    with pytest.raises(TypeError, match="len"):
        jk.jit(lambda x: len(x), backend=backend)(np.float32(1))
    with pytest.raises(TypeError, match="0-d"):
        jk.jit(lambda x: [v for v in x], backend=backend)(np.array(1.0))
    # iteration over a 1-d traced array unrolls, like NumPy
    got = jk.jit(lambda x: [v * 2 for v in x], backend=backend)(X[:3])
    assert [float(g) for g in got] == [float(v * 2) for v in X[:3]]


# ----------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("arg,kind", [
    (np.array([1, 2], dtype=object), "object"), (np.array(["a", "b"]), "str"), (np.array([b"a"]), "bytes"),
    # complex64/complex128 are supported (tests/test_complex.py); long double complex is not
    (np.array([1 + 2j], np.clongdouble), "complex"), (np.clongdouble(1j), "complex"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime"),
    (np.zeros(2, dtype=[("a", "f4")]), "structured"),
], ids=["object", "str", "bytes", "complex-array", "complex-scalar", "datetime", "structured"])
def test_unsupported_dtype_arguments(arg, kind, backend):
    with pytest.raises(TypeError) as exc:
        jk.jit(lambda x: x + 1 if kind != "str" else x, backend=backend)(arg)
    assert kind in str(exc.value)


@pytest.mark.parametrize("fn", [
    lambda x: x.astype(np.clongdouble), lambda x: x * np.clongdouble(1j),
    lambda x: x + np.array([1j, 2j, 3j, 4j, 5j, 6j], np.clongdouble),
    lambda x: np.sum(x, dtype=np.clongdouble), lambda x: x + np.zeros(6, dtype=object),
    lambda x: np.zeros_like(x, dtype=np.clongdouble), lambda x: np.mean(x, dtype=object),
], ids=["astype", "clongdouble-scalar", "complex-const", "sum-dtype", "object-const", "zeros_like", "mean-object"])
def test_unsupported_dtypes_inside(fn, backend):
    with pytest.raises(TypeError, match="complex|object"):
        jk.jit(fn, backend=backend)(X)


# ----------------------------------------------------------------------------- misc

def test_unknown_backend_valueerror():
    with pytest.raises(ValueError, match="backend"):
        jk.jit(lambda x: x + 1, backend="npu")(X)


def test_leaked_tracer(backend):
    leaked = []

    def f(x):
        leaked.append(x * 2)
        return x

    jk.jit(f, backend=backend)(X)
    with pytest.raises(jk.UnsupportedOperationError, match="another"):
        jk.jit(lambda x: x + leaked[0], backend=backend)(X)
    with pytest.raises(jk.UnsupportedOperationError, match="another"):
        jk.jit(lambda x: leaked[0], backend=backend)(X)


def test_error_leaves_no_trace_state_behind(backend):
    """After an error inside tracing, the next (valid) trace works and nothing is cached."""
    def f(x, flag):
        if flag:
            return x + 1
        return x

    jf = jk.jit(f, backend=backend, autograph=False)  # (converted, the `if` would compile)
    with pytest.raises(jk.TracerBoolConversionError):
        jf(X, X[0] > 0)
    assert jf.cache_size() == 0
    assert jk.trace.current_context() is None
    np.testing.assert_array_equal(jk.jit(f, static_argnums=1, backend=backend)(X, True), X + 1)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_traced_size_suggests_static_argnames(tmp_path):
    f = load(tmp_path, "def f(x, n):\n    return np.zeros(n) + x\n")
    with pytest.raises(jk.TracerIntegerConversionError) as info:
        jk.jit(f)(np.ones(3), 3)
    assert 'static_argnames=("n",)' in str(info.value) and "--static n" in str(info.value)


def test_at_says_what_to_use():
    with pytest.raises(AttributeError, match="np.where"):
        jk.jit(lambda x: x.at[0].set(1.0))(np.ones(3))
    assert jk.jit(lambda x: np.float64(hasattr(x, "at")))(np.ones(3)) == 0


def test_list_argument_says_pass_an_array():
    with pytest.raises(jk.TracerArrayConversionError, match=r"pass an array \(np.asarray"):
        jk.jit(lambda x: np.sin(x))([1.0, 2.0])


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool", "float32"])
def test_storing_into_a_numpy_array_names_the_cause(tmp_path, dtype):
    # An array made inside the function is traced and takes the value...
    f = load(tmp_path, f"def f(x):\n    out = np.zeros(3, '{dtype}')\n    out[0] = x.sum()\n    return out\n")
    assert_matches_numpy(jk.jit(f)(np.ones(3)), f(np.ones(3)))
    # ... while a NumPy array captured from outside cannot: the error names the cause and line.
    g = load(tmp_path, f"OUT = np.zeros(3, '{dtype}')\ndef f(x):\n    OUT[0] = x.sum()\n    return OUT\n")
    with pytest.raises(jk.TracerArrayConversionError, match="stored into a NumPy array") as info:
        jk.jit(g)(np.ones(3))
    assert "probably not supported" not in str(info.value) and "OUT[0] = x.sum()" in str(info.value)


def test_warnings_while_tracing_point_at_the_user_line(tmp_path):
    f = load(tmp_path, "def f(x):\n    return x + 1e300\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jk.jit(f)(np.ones(2, np.float32))
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert runtime and all(w.filename == f.__code__.co_filename and w.lineno == 3 for w in runtime), \
        [(w.filename, w.lineno, str(w.message)) for w in caught]


def test_trace_stack_is_per_thread():
    """Two threads tracing at once each record into their own program (jnp.stack of Python
    scalars has no Tracer argument: it finds the trace through current_context())."""
    import jitkernel.numpy as jnp
    barrier = threading.Barrier(2)
    results: dict = {}

    def work(i: int) -> None:
        def fn(x):
            barrier.wait(timeout=10)
            c = jnp.stack([float(i), float(i)])
            barrier.wait(timeout=10)
            return c + x
        try:
            results[i] = jk.jit(fn, backend="interpret")(np.ones(2))
        except Exception as e:  # noqa: BLE001
            results[i] = e

    threads = [threading.Thread(target=work, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_matches_numpy(results[1], np.ones(2) + 1)
    assert_matches_numpy(results[2], np.ones(2) + 2)


def test_numpy_warning_while_tracing_a_python_dash_c_program():
    # The warning points at the user's line; the loader of `python -c`'s __main__ cannot give
    # source lines, which used to raise ImportError out of the warning itself.
    code = ("import numpy as np, jitkernel as jk\n"
            "a = np.ones(3, np.float16)\n"
            "print(jk.jit(lambda x: x * 1e300)(a))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[inf inf inf]"
    assert "<string>:3: RuntimeWarning: overflow encountered" in proc.stderr
