"""The ndarray API inside jit: the traced length of a data-dependent
value (`.size`, `.shape[0]`, `len()`), np.atleast_1d/2d/3d of several arrays, ndarray attributes
traced arrays lack (a JitError that is an AttributeError), the static `.itemsize`/`.nbytes`,
in-place `a.sort()`, np.ascontiguousarray/asfortranarray, and every function the support table
lists as unsupported raising at its call, naming it."""
from __future__ import annotations

import importlib.util
import inspect
import re
import sys
import textwrap

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.errors import UnsupportedAttributeError, UnsupportedOperationError
from jitkernel.ir.symdim import SymbolicDimError
import emulator_suite
from helpers import HOST_BACKENDS

BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()


def _x(n=20, seed=0):
    # integer-valued floats: sums are exact in any order
    return np.random.default_rng(seed).integers(0, 10, n).astype(np.float64)


def _same(got, want):
    if want is None:
        assert got is None
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert np.array_equal(got, want, equal_nan=True), (got, want)


def _check(f, *args, backend="cpu"):
    """jit(f) and f on copies of args: the same results and the same arguments afterwards."""
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = jk.jit(f, backend=backend)(*mine)
    want = f(*theirs)
    _same(got, want)
    for m, t in zip(mine, theirs):
        _same(m, t)
    return got


# ----------------------------------------------------------------------------- traced lengths

def size_in_arithmetic(x):
    return (x[x > 5] ** 2).sum() + np.nonzero(x > 8)[0].size


def shape0_in_arithmetic(x):
    return x[x > 5].shape[0] * 2 - 1


def len_of_a_selection(x):
    return len(x[x > 5])


def sizes_compared(x):
    return x[x > 5].size > 5, np.flatnonzero(x > 3).size == 11


def size_as_a_loop_bound(x):
    s = 0.0
    for i in range(np.nonzero(x > 5)[0].size):
        s += x[i]
    return s


def mean_by_len(x):
    sel = x[x > 2]
    return sel.sum() / len(sel)


def size_of_rows(x):
    m = x.reshape(4, 5)
    return m[m[:, 0] > 3].size


def size_promotes_as_a_python_int(x):
    return x.astype(np.float32).sum() + x[x > 5].size  # float32, as NEP 50's weak int


def size_if(x):
    if x[x > 5].size > 8:
        return x.sum()
    return -x.sum()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [size_in_arithmetic, shape0_in_arithmetic, len_of_a_selection, sizes_compared,
                                size_as_a_loop_bound, mean_by_len, size_of_rows, size_promotes_as_a_python_int,
                                size_if], ids=lambda f: f.__name__)
def test_the_length_of_a_data_dependent_value_is_a_traced_int(fn, backend):
    for seed in (0, 1, 2):
        _check(fn, _x(seed=seed), backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_returning_the_size_of_unique_gives_an_intp_like_a_static_size(backend):
    x = _x()
    got = jk.jit(lambda x: np.unique(x).size, backend=backend)(x)
    static = jk.jit(lambda x: x.size, backend=backend)(x)
    assert got == np.unique(x).size and type(got) is type(static) and np.asarray(got).dtype == np.intp


def test_the_length_used_as_a_concrete_int_still_names_the_cause():
    x = _x()
    with pytest.raises(SymbolicDimError, match="np.count_nonzero"):
        jk.jit(lambda x: np.ones(x[x > 5].shape[0]))(x)
    with pytest.raises(SymbolicDimError, match="np.count_nonzero"):
        jk.jit(lambda x: np.zeros(len(x[x > 5])))(x)  # a lambda is not converted: Python's len()


# ----------------------------------------------------------------------------- atleast_Nd

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_nd_of_several_arrays_is_a_tuple(name, backend):
    fn = getattr(np, name)
    a, b, c = np.arange(3.0), np.arange(6.0).reshape(2, 3), np.array(2.0)
    _check(lambda a, b, c: fn(a, b, c, np.ones(2)), a, b, c, backend=backend)
    _check(lambda a, b: fn(a, b), a, b, backend=backend)
    for one in (a, b, c, np.ones((2, 1, 3, 1))):
        _check(lambda a: fn(a), one, backend=backend)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_nd_returns_views_as_numpy(name):
    fn = getattr(np, name)

    def write(a, b):
        x, y = fn(a, b)
        x[...] = 7
        y[...] = 8
    _check(write, np.arange(3.0), np.array(1.0))


# ----------------------------------------------------------------------------- attributes

@pytest.mark.parametrize("attr", ["strides", "flat", "flags", "base", "ctypes", "data", "tobytes",
                                  "resize", "byteswap", "setflags", "dump"])
def test_missing_ndarray_attributes_are_jit_errors_and_attribute_errors(attr):
    x = np.arange(6.0).reshape(2, 3)

    def f(a):
        return getattr(a, attr)
    with pytest.raises(UnsupportedAttributeError) as info:
        jk.jit(f)(x)
    assert isinstance(info.value, jk.JitError) and isinstance(info.value, AttributeError)
    assert f"ndarray.{attr}" in str(info.value)
    assert f"{__file__}:{inspect.getsourcelines(f)[1] + 1}" in str(info.value)
    with pytest.raises(UnsupportedAttributeError):
        jk.jit(lambda a: getattr(a[a > 1], attr))(x)  # a data-dependent value too
    assert jk.jit(lambda a: (hasattr(a, attr), hasattr(a[a > 1], attr), getattr(a, attr, 5)))(x) == (False, False, 5)


def test_view_as_another_dtype_is_refused_naming_it():
    """a.view() is a view (tests/test_argument_layouts.py); a.view(other dtype) reinterprets bytes,
    which is not compiled: a JitError and an AttributeError naming ndarray.view and the line."""
    def f(a):
        return a.view(np.int64)
    with pytest.raises(UnsupportedAttributeError, match="ndarray.view") as info:
        jk.jit(f)(np.ones(3))
    assert f"{__file__}:{inspect.getsourcelines(f)[1] + 1}" in str(info.value)


def test_other_names_stay_plain_attribute_errors():
    with pytest.raises(AttributeError) as info:
        jk.jit(lambda a: a.no_such_thing)(np.ones(3))
    assert not isinstance(info.value, jk.JitError)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.bool_, np.complex64])
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3)])
def test_itemsize_and_nbytes_are_numpys(dtype, shape):
    x = np.ones(shape, dtype)
    _check(lambda a: (a.itemsize, a.nbytes, a.T.nbytes, (a + 1).itemsize), x)


def test_nbytes_of_a_selection_is_traced():
    x = np.arange(12.0).reshape(6, 2)
    _check(lambda a: (a[a[:, 0] > 3].nbytes, a[a[:, 0] > 3].itemsize), x)


def _fresh_interpreter_result(code: str) -> str:
    import subprocess
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    return out.stdout.strip() + out.stderr.strip()[-500:]


def test_a_method_jitkernel_numpy_attaches_works_as_the_first_operation():
    # a.sort() (cumsum, take, nonzero, ...) are attached by jitkernel.numpy's modules: a trace
    # whose first operation is one of them must find it
    out = _fresh_interpreter_result(textwrap.dedent("""
        import numpy as np, jitkernel as jk
        def f(a):
            a.sort()
            return a
        print(jk.jit(f)(np.array([3.0, 1.0, 2.0])).tolist())
    """))
    assert out.endswith("[1.0, 2.0, 3.0]"), out


def sort_all(a):
    a.sort()
    return a


def sort_rows_of_a_view(a):
    a[:, ::2].sort(axis=1)


def sort_columns(a):
    a.sort(axis=0, kind="stable")
    return a.sum()


def sort_transposed(a):
    b = a.T
    b.sort()
    return b


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [sort_all, sort_rows_of_a_view, sort_columns, sort_transposed], ids=lambda f: f.__name__)
def test_sort_in_place_as_numpy(fn, backend):
    x = np.random.default_rng(3).integers(0, 9, (4, 5)).astype(np.float64)
    x[1, 2] = np.nan
    _check(fn, x, backend=backend)


def test_sort_in_place_refuses_axis_none_as_numpy():
    with pytest.raises(TypeError):
        np.ones(3).sort(axis=None)
    with pytest.raises(TypeError):
        jk.jit(lambda a: a.sort(axis=None))(np.ones(3))


# ----------------------------------------------------------------------------- ascontiguousarray

def write_through(fn_name, index):
    fn = getattr(np, fn_name)

    def f(a):
        b = fn(index(a))
        b[...] = 9
        return a, b
    return f


LAYOUT_CASES = {
    "whole": lambda a: a, "strided": lambda a: a[:, ::2], "transposed": lambda a: a.T,
    "row": lambda a: a[0], "column": lambda a: a[:, 1], "0-d view": lambda a: a[0, 0, ...],
    "scalar": lambda a: a[0, 0], "sum": lambda a: a.sum(),
}


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("case", list(LAYOUT_CASES))
@pytest.mark.parametrize("fn_name", ["ascontiguousarray", "asfortranarray", "asanyarray"])
def test_as_layout_array_is_a_view_exactly_when_numpy_returns_one(fn_name, case, backend):
    x = np.arange(12.0).reshape(3, 4)
    _check(write_through(fn_name, LAYOUT_CASES[case]), x, backend=backend)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_ascontiguousarray_with_a_dtype(dtype):
    def f(a):
        b = np.ascontiguousarray(a, dtype=dtype)
        b[0] = 9
        return a, b
    _check(f, np.arange(4.0))


# ----------------------------------------------------------------------------- unsupported functions

def _unsupported_rows():
    from jitkernel.numpy.support_table import FUNCTION_MODULES, function_rows
    rows = []
    for module in FUNCTION_MODULES:
        for qualified, status, _ in function_rows(module):
            if status == "unsupported":
                rows.append(qualified)
    return rows


def _exempt(qualified):
    from jitkernel.numpy.support_table import _REASON_OF
    return _REASON_OF.get(qualified.rsplit(".", 1)[1], "").startswith("dtypes and Python objects")


# Argument lists tried in turn (traced arrays where "x"/"m"/"i"): the first NumPy accepts is used.
_CANDIDATES = [("x",), ("x", "x"), ("m",), ("m", "m"), ("x", "2"), ("m", "1"), ("i",), ("(2, 3)",), ("3",),
               ("3", "3"), ("x", "[1]"), ("i", "(2, 3)"), ("[x, x]",), ("[m, m]",), ("x > 0.5",)]


def _spelled(qualified):
    return "np." + qualified[len("numpy."):]


def _numpy_accepts(call, env):
    import warnings
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            eval(call, env)
        return True
    except Exception:
        return False


def _has_side_effects(qualified):
    """Files, printing, error state, NumPy's own test runner: never run to probe a call."""
    from jitkernel.numpy.support_table import _REASON_OF
    return _REASON_OF.get(qualified.rsplit(".", 1)[1], "").startswith("files, text and printing")


def _call_for(qualified):
    if _has_side_effects(qualified):
        return f"{_spelled(qualified)}(x)"
    env = {"np": np, "x": np.linspace(0.1, 0.9, 6), "m": np.eye(3) + 1, "i": np.array([1, 2, 3])}
    for args in _CANDIDATES:
        call = f"{_spelled(qualified)}({', '.join(args)})"
        if _numpy_accepts(call, env):
            return call
    return f"{_spelled(qualified)}(x)"  # no simple call: the refusal comes before the arguments are read


@pytest.fixture(scope="module")
def unsupported_module(tmp_path_factory):
    """One jitted function per unsupported row, in a file (the refusal reads the call's source)."""
    lines = ["import numpy as np", ""]
    names = {}
    for k, qualified in enumerate(q for q in _unsupported_rows() if not _exempt(q)):
        call = _call_for(qualified)
        static = re.sub(r"\b([xmi])\b", r"\g<1>0", call)  # the same call on constants
        lines += [f"def traced_{k}(x, m, i):", f"    return {call}", "",
                  f"def static_{k}(x, m, i):", f"    {static}", "    return x", ""]
        names[qualified] = k
    lines += ["x0 = np.linspace(0.1, 0.9, 6)", "m0 = np.eye(3) + 1", "i0 = np.array([1, 2, 3])"]
    path = tmp_path_factory.mktemp("unsupported") / "unsupported_calls.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("unsupported_calls", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, names, str(path)


def test_the_table_lists_unsupported_functions():
    rows = _unsupported_rows()
    assert "numpy.fromfile" in rows and "numpy.linalg.eig" in rows and "numpy.real_if_close" in rows and len(rows) > 50


@pytest.mark.parametrize("qualified", [q for q in _unsupported_rows() if not _exempt(q)])
def test_every_unsupported_function_raises_at_its_call_naming_it(qualified, unsupported_module):
    module, names, path = unsupported_module
    k = names[qualified]
    args = (np.linspace(0.1, 0.9, 6), np.eye(3) + 1, np.array([1, 2, 3]))
    for kind in ("traced", "static"):  # with traced arguments, and with constants only
        fn = getattr(module, f"{kind}_{k}")
        with pytest.raises(UnsupportedOperationError) as info:
            jk.make_ir(fn)(*args)
        message = str(info.value)
        assert qualified in message, message
        assert f"{path}:{inspect.getsourcelines(fn)[1] + 1}" in message, message


def test_an_unsupported_function_under_another_name_raises_too():
    from numpy import roots
    fn = roots

    def f(x):
        return fn([1.0, 8.0]) + x.sum()
    with pytest.raises(UnsupportedOperationError, match="numpy.roots"):
        jk.jit(f)(np.ones(3))


def test_static_helpers_on_dtypes_stay_callable():
    def f(a):
        return a.astype(np.result_type(a.dtype, np.float32)) * np.issubdtype(a.dtype, np.floating)
    _check(f, np.arange(3.0))


def test_outside_a_trace_numpy_runs_unchanged():
    jk.jit(lambda a: a + 1)(np.ones(2))
    assert np.indices((2, 3)).shape == (2, 2, 3)
    assert np.indices is getattr(np.indices, "__jitkernel_original__", np.indices)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_functions_of_shapes_only_are_numpys_constants(backend):
    """np.indices, np.tril_indices, the windows and fftfreq take no array: they run at trace time
    (a constant, NumPy's exact values) rather than being refused."""
    def f(a):
        return (a[np.tril_indices(3)].sum() + np.indices((2, 3)).sum() + np.hanning(5).sum()
                + np.kaiser(4, 5.0).sum() + np.fft.rfftfreq(6)[2] + a[np.diag_indices(3)].sum())
    a = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(jk.jit(f, backend=backend)(a), f(a))
