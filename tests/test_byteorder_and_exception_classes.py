"""Byte-swapped arguments and NumPy's exception classes.

A '>f8' argument (non-native on little-endian hosts) must be read as its values, a write into it
must land in the caller's array in its byte order, and every result must have NumPy's exact
dtype, byte order included: NumPy keeps the argument's dtype for views, copies, gathers, sorts,
`*_like` and the argument itself after writes, and returns native order for computed results.
Where NumPy raises, the jitted call raises NumPy's class or a subclass (AxisError, not only its
ValueError base). The soak's `edges` family (benchmarks/soak.py) draws these; a sample of it runs
here, seconds long, so CI keeps them."""
from __future__ import annotations

import itertools
import os
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import assert_matches_numpy, call_on_copies, HOST_BACKENDS
from jitkernel.ir.primitives import BINARY_UFUNCS, UNARY_UFUNCS

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.soak import NOT_MISMATCH, _public_numpy_class, generate, run_program  # noqa: E402

BACKENDS = HOST_BACKENDS + emulator_backends()
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False)

# (name, function): NumPy keeps a '>f8' argument's dtype in the first group, computes native in the second.
KEEPS_DTYPE = {
    "identity": lambda a: a, "transpose": lambda a: a.T, "slice": lambda a: a[::-1], "reshape": lambda a: a.reshape(-1),
    "copy": lambda a: a.copy(), "np.copy": lambda a: np.copy(a), "sort": lambda a: np.sort(a, axis=-1),
    "fancy": lambda a: a[np.array([0, -1])], "mask": lambda a: a[a > 0], "take": lambda a: np.take(a, [0, 1]),
    "repeat": lambda a: np.repeat(a, 2), "method repeat": lambda a: a.repeat(2), "tile": lambda a: np.tile(a, 2),
    "roll": lambda a: np.roll(a, 1), "pad": lambda a: np.pad(a, 1), "unique": lambda a: np.unique(a),
    "zeros_like": lambda a: np.zeros_like(a), "full_like": lambda a: np.full_like(a, 3),
    "compress": lambda a: np.compress([True, False], a, axis=0), "delete": lambda a: np.delete(a, 0),
    "take_along_axis": lambda a: np.take_along_axis(a, np.argsort(a, axis=-1), axis=-1),
    "partition": lambda a: np.partition(a, 0, axis=-1), "flip": lambda a: np.flip(a),
}
COMPUTES_NATIVE = {
    "add": lambda a: a + 1, "negative": lambda a: -a, "sum axis": lambda a: a.sum(axis=0), "cumsum": lambda a: np.cumsum(a),
    "astype": lambda a: a.astype(np.float64), "concatenate": lambda a: np.concatenate([a, a]),
    "where": lambda a: np.where(a > 0, a, 0), "clip": lambda a: np.clip(a, 0, 3), "full_like dtype": lambda a: np.full_like(a, 3, np.float32),
    "sum": lambda a: a.sum(), "max": lambda a: a.max(),
}
# Functions that read the argument's dtype, byte order included (as NumPy gives it inside the
# function), or ask for a byte order: the result keeps the order NumPy gives it.
READS_DTYPE = {
    "byteorder read": lambda a: a * 0 + (a.dtype.byteorder == ">"), "dtype == native": lambda a: a * 0 + (a.dtype == a.dtype.newbyteorder("=")),
    "zeros of dtype": lambda a: np.zeros(a.shape, a.dtype), "astype own dtype": lambda a: a.astype(a.dtype),
    "full of dtype": lambda a: np.full(3, 2, dtype=a.dtype), "empty_like dtype": lambda a: np.zeros_like(a, dtype=a.dtype),
    "asarray native": lambda a: np.asarray(a, dtype=a.dtype.newbyteorder("=")),
    "asarray big": lambda a: np.asarray(a, dtype=a.dtype.newbyteorder(">")),
    "astype big": lambda a: a.astype(">i4"), "concatenate big": lambda a: np.concatenate([a, a], dtype=">f8"),
    "zeros big view": lambda a: np.zeros((2, 4), ">f4")[:, ::2] + 0 * a[0, 0],
    "arange big": lambda a: np.arange(3, dtype=">f8"), "arange big + a": lambda a: a[0] + np.arange(3, dtype=">u2"),
    "ufunc dtype= big": lambda a: np.add.reduce(a, dtype=">f8"),
}


def _iadd(a):
    a += 1
    return a


def _setitem(a):
    a[0] = 7
    return a.sum()


def _mask_store(a):
    a[a > 1] = 0
    return a


def _view_write(a):
    v = a[1:]
    v *= 2
    return a


def _fill(a):
    a.fill(2)
    return a[::-1]


def _written_copy(a):
    c = a.copy()
    c[0] = 5
    return c


def _written_like(a):
    z = np.zeros_like(a)
    z[..., 1:] = a[..., :-1]
    return z


WRITES = {"written copy": _written_copy, "written zeros_like": _written_like, "iadd": _iadd, "setitem": _setitem, "mask store": _mask_store, "view write": _view_write, "fill": _fill}


def _run_both(fn, make, backend):
    """(NumPy's result or exception, its argument after), (the jitted ones)."""
    out = []
    for call in (fn, jk.jit(fn, backend=backend)):
        a = make()
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                r = call(a)
        except Exception as e:  # noqa: BLE001 - compared below
            r = e
        out.append((r, a))
    return out


def _assert_same(expected, got):
    (e, ea), (g, ga) = expected, got
    if isinstance(e, Exception):
        assert isinstance(g, _public_numpy_class(e)), (e, g)
        return
    assert not isinstance(g, Exception), g
    e_arr, g_arr = np.asarray(e), np.asarray(g)
    if isinstance(e, np.ndarray) and e.ndim:
        assert type(g) is np.ndarray and g.dtype == e.dtype, (g.dtype.str, e.dtype.str)  # byte order included
    else:  # 0-d results are NumPy scalars, native (docs/numpy-support.md)
        assert g_arr.dtype == e_arr.dtype.newbyteorder("="), (g_arr.dtype.str, e_arr.dtype.str)
    assert g_arr.shape == e_arr.shape and g_arr.tobytes() == e_arr.astype(g_arr.dtype).tobytes(), (g, e)
    assert ga.dtype == ea.dtype and ga.tobytes() == ea.tobytes(), (ga, ea)  # the caller's array as NumPy left it


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(KEEPS_DTYPE) + list(COMPUTES_NATIVE) + list(WRITES) + list(READS_DTYPE))
def test_big_endian_argument_read_written_and_returned_as_numpy(name, backend):
    """Each function of a '>f8' and a '>i2' argument on every backend: NumPy's values, NumPy's
    result dtype (byte order included) and the caller's array as NumPy leaves it."""
    fn = {**KEEPS_DTYPE, **COMPUTES_NATIVE, **WRITES, **READS_DTYPE}[name]
    for dt in (">f8", ">i2"):
        expected, got = _run_both(fn, lambda: np.arange(-2, 4, dtype=dt).reshape(2, 3), backend)
        if backend == "cuda-emulator" and isinstance(got[0], jk.UnsupportedOperationError):
            pytest.skip(f"the CUDA renderer refuses this step: {str(got[0])[:120]}")
        _assert_same(expected, got)


@st.composite
def byteswapped_cases(draw):
    """A function of the three groups on a byte-swapped (or explicitly native) argument of any
    numeric dtype, shape and memory layout."""
    group = draw(st.sampled_from([KEEPS_DTYPE, COMPUTES_NATIVE, WRITES, READS_DTYPE]))
    name = draw(st.sampled_from(sorted(group)))
    dt = np.dtype(draw(st.sampled_from(["int16", "int32", "int64", "uint16", "uint32", "uint64", "float16",
                                         "float32", "float64"])))
    order = draw(st.sampled_from([">", ">", "<"]))
    shape = draw(st.sampled_from([(2, 3), (3, 2), (2, 1), (2, 4)]))
    layout = draw(st.sampled_from(["C", "F", "strided", "reversed"]))
    values = draw(st.lists(st.integers(-5, 9), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return name, group[name], dt.newbyteorder(order), shape, layout, values


def _layout(x, layout):
    return {"C": lambda: x, "F": lambda: np.asfortranarray(x), "strided": lambda: np.repeat(x, 2, axis=-1)[:, ::2],
            "reversed": lambda: np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]}[layout]()


@SETTINGS
@given(case=byteswapped_cases(), backend=st.sampled_from(HOST_BACKENDS))
def test_byteswapped_arguments_match_numpy(case, backend):
    """Drawn: function x dtype x byte order x shape x layout; the whole class of the fix."""
    name, fn, dt, shape, layout, values = case
    make = lambda: _layout(np.array(values, dtype=np.float64).astype(dt).reshape(shape), layout)  # noqa: E731
    expected, got = _run_both(fn, make, backend)
    _assert_same(expected, got)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("expr, ndim", [
    ("np.cumsum(a, axis=1)", 0), ("np.cumsum(a, axis=-2)", 0), ("np.cumprod(a, axis=1)", 0),
    ("a.sum(axis=2)", 1), ("np.sum(a, axis=(0,))", 0), ("a.mean(axis=0)", 0), ("np.argmax(a, axis=1)", 0),
    ("np.sort(a, axis=-1)", 0), ("np.expand_dims(a, 3)", 1), ("np.moveaxis(a, 0, 2)", 1),
    ("np.argsort(a, axis=1)", 0), ("np.squeeze(a, axis=1)", 0), ("np.squeeze(a, axis=(0,))", 0),
])
def test_axis_errors_are_numpy_axis_error(expr, ndim, backend):
    """An axis out of range raises np.exceptions.AxisError, as NumPy does (not only ValueError)."""
    fn = eval(f"lambda a: {expr}", {"np": np})  # noqa: S307 - fixed test expressions
    a = np.ones((2,) * ndim)
    with pytest.raises(np.exceptions.AxisError):
        fn(a)
    with pytest.raises(np.exceptions.AxisError):
        jk.jit(fn, backend=backend)(a)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("expr", ["a.sum(axis=0)", "np.min(a, axis=-1)", "a.all(axis=-1)", "np.prod(a, axis=0, keepdims=True)",
                                  "np.cumsum(a, axis=0)", "np.cumsum(a, axis=-1)", "np.argmax(a, axis=0)", "np.argmin(a, axis=-1)",
                                  "np.squeeze(a, axis=-1)", "np.argsort(a, axis=0)", "np.repeat(a, 2, axis=-1)"])
def test_zero_d_array_takes_axis_0_as_numpy(expr, backend):
    """NumPy's legacy rule: a 0-d array takes an int axis 0 or -1 in ufunc reductions and squeeze
    (as no axis) and in cumsum/argmax/argsort (raveled first); the jitted call must not raise
    AxisError there."""
    fn = eval(f"lambda a: {expr}", {"np": np})  # noqa: S307 - fixed test expressions
    a = np.array(-2.5)
    expected, got = fn(a), jk.jit(fn, backend=backend)(a)
    assert np.asarray(got).dtype == np.asarray(expected).dtype and np.array_equal(got, expected)
    assert np.shape(got) == np.shape(expected)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("shape", [(-2,), (-3, 2), (2, -5), -4, (0, -2), (-1, -2)])
def test_reshape_takes_any_negative_length_as_the_unknown_one(shape, backend):
    """NumPy takes any negative length as the one unknown length (`reshape(-2)` is
    `reshape(-1)`; two of them raise ValueError); so does the jitted reshape."""
    fn = lambda a: a.reshape(shape)  # noqa: E731
    a = np.arange(6.0)
    try:
        expected = fn(a)
    except ValueError:
        with pytest.raises(ValueError):
            jk.jit(fn, backend=backend)(a)
        return
    got = jk.jit(fn, backend=backend)(a)
    assert got.shape == expected.shape and np.array_equal(got, expected)


def test_public_numpy_class_is_what_the_soak_compares():
    """AxisError is NumPy's own documented class (so ValueError alone does not match it); a private
    class (the UFuncTypeError of `float & int`) is compared as its public base, TypeError."""
    try:
        np.sum(np.ones(2), axis=3)
    except Exception as e:  # noqa: BLE001
        assert _public_numpy_class(e) is np.exceptions.AxisError
    try:
        np.ones(2) & 1
    except Exception as e:  # noqa: BLE001
        assert _public_numpy_class(e) is TypeError


EDGE_SEED = 20261205
EDGE_PROGRAMS = 48


@pytest.mark.filterwarnings("ignore")
def test_soak_edges_sample():
    """A fixed sample of the soak's `edges` family (byte-swapped arguments through views, copies,
    gathers, writes; axes and shapes that raise): no mismatch on cpu and interpret. Reproduce
    one with `python -m benchmarks.soak --families edges --seed 20261205 --show I`."""
    bad = []
    for i in range(EDGE_PROGRAMS):
        prog = generate(EDGE_SEED, i, "edges")
        for fd in run_program(prog):
            if fd.cls not in NOT_MISMATCH:
                bad.append(f"program {i} on {fd.backend}: {fd.cls}: {fd.message}\n{prog.source()}\n{prog.calls}")
    assert not bad, "\n\n".join(bad)


def test_soak_edges_sample_covers_the_new_classes():
    """The sample draws big-endian arguments, in-place writes, and axes that NumPy rejects."""
    progs = [generate(EDGE_SEED, i, "edges") for i in range(EDGE_PROGRAMS)]
    text = "\n".join("\n".join(p.body) + repr(p.calls) for p in progs)
    assert "'>" in text and "+=" in text or "] = " in text
    assert any("axis=" in "\n".join(p.body) for p in progs)


_BYTEORDER = {
    "identity": lambda x: x, "T": lambda x: x.T, "slice": lambda x: x[1:], "reshape": lambda x: x.reshape(3, 2),
    "copy": lambda x: x.copy(), "np.copy": lambda x: np.copy(x), "broadcast_to": lambda x: np.broadcast_to(x, (2, 6)),
    "flip": lambda x: np.flip(x), "ravel": lambda x: x.ravel(), "expand_dims": lambda x: np.expand_dims(x, 0),
    "round": lambda x: np.round(x), "add0": lambda x: x + 0, "positive": lambda x: +x,
    "astype": lambda x: x.astype(np.int16), "clip": lambda x: np.clip(x), "where": lambda x: np.where(x > 0, x, x),
    "concatenate": lambda x: np.concatenate([x, x]), "max": lambda x: x.max(), "index": lambda x: x[0],
    "tuple": lambda x: (x, x * 2, x[::2]),
    "zeros of dtype": lambda x: np.zeros(3, x.dtype), "astype own dtype": lambda x: x.astype(x.dtype),
    "asarray big": lambda x: (np.asarray(x, ">i2"), x),
}


@pytest.mark.parametrize("name", sorted(_BYTEORDER))
def test_byte_order_of_results_matches_numpy(name, backend):
    fn = _BYTEORDER[name]
    x = np.arange(6, dtype=">i2")
    f = jk.jit(fn, backend=backend)
    for arg in (x, x.astype("<i2"), x):   # the native call must not give the swapped one its entry
        got, expected = f(arg), fn(arg)
        for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
            assert g.dtype.str == e.dtype.str, (name, g.dtype.str, e.dtype.str)
            assert_matches_numpy(np.asarray(g).astype(g.dtype.newbyteorder("=")) if g.ndim else g,
                                 np.asarray(e).astype(e.dtype.newbyteorder("=")) if e.ndim else e)


def test_matmul_of_scalars_is_a_type_error():
    with pytest.raises(TypeError, match="unsupported operand type"):
        jk.jit(lambda a: a.sum() @ a.sum())(np.ones(3))
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        jk.jit(lambda a: np.matmul(a.sum(), a.sum()))(np.ones(3))
    with pytest.raises(ValueError):
        np.matmul(np.ones(3).sum(), np.ones(3).sum())


@pytest.mark.parametrize("value", [2**63, 2**64, -2**63 - 1])
@pytest.mark.parametrize("op", ["<", "==", ">="])
def test_bool_array_against_huge_int_overflows(value, op):
    fn = eval(f"lambda x: x {op} {value}")
    with pytest.raises(OverflowError):
        fn(np.array([True]))
    with pytest.raises(OverflowError):
        jk.jit(fn)(np.array([True]))


_DTYPES = ["bool", "int8", "uint16", "int64", "uint64", "float16", "float32", "float64"]
_OPERANDS = [(d, None) for d in _DTYPES] + [(None, 1), (None, 1.5), (None, True)]


def _rejected_cases():
    cases = []
    for name in UNARY_UFUNCS + BINARY_UFUNCS:
        uf = getattr(np, name)
        for ops in itertools.product(_OPERANDS, repeat=uf.nin):
            if all(d is None for d, _ in ops):
                continue
            args = [np.ones(2, d) if d is not None else v for d, v in ops]
            kind, err, _ = call_on_copies(uf, *args)
            if kind == "raise":
                cases.append(pytest.param(name, ops, type(err), id=f"{name}-{'-'.join(str(d or v) for d, v in ops)}"))
    return cases


@pytest.mark.parametrize("name,ops,expected", _rejected_cases())
def test_rejected_ufunc_calls_raise_numpys_exception_type(name, ops, expected):
    args = [np.ones(2, d) if d is not None else v for d, v in ops]
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    uf = getattr(np, name)

    def fn(*arrs):
        it = iter(arrs)
        return uf(*[next(it) if isinstance(a, np.ndarray) else a for a in args])
    kind, err, _ = call_on_copies(jk.jit(fn, backend="interpret"), *arrays)
    assert kind == "raise" and type(err) is expected, (name, ops, expected, err)


def _iadd_half(x, y):
    x += 1.5
    return x


def _iand(x, y):
    x &= y
    return x


def _ishift_by_float(x, y):
    x <<= 1.0
    return x


def _multiply_into_x(x, y):
    np.multiply(x, 1.5, out=x)
    return x


# Calls that NumPy refuses for some operand dtypes, most with one of its own TypeError subclasses
# (numpy._core._exceptions' _UFuncNoLoopError, _UFuncInputCastingError, _UFuncOutputCastingError,
# ...): the jitted call must raise exactly NumPy's class, not a base, nor jitkernel's refusal of an
# argument that NumPy would refuse anyway.
RAISING_CALLS = {
    "round decimals": lambda x, y: np.round(x, decimals=2), "around": lambda x, y: np.around(x, 1),
    "x.round": lambda x, y: x.round(3), "x & 1": lambda x, y: x & 1, "x & y": lambda x, y: x & y,
    "bitwise_or": lambda x, y: np.bitwise_or(x, y), "~x": lambda x, y: ~x, "x << 1": lambda x, y: x << 1,
    "y << x": lambda x, y: y << x, "x += 1.5": _iadd_half, "x &= y": _iand, "x <<= 1.0": _ishift_by_float,
    "multiply out=x": _multiply_into_x, "add casting='no'": lambda x, y: np.add(x, y, casting="no"),
    "add casting='equiv'": lambda x, y: np.add(x, y, casting="equiv"),
    "add out int8": lambda x, y: np.add(x, y, out=np.empty(3, np.int8)), "-x": lambda x, y: -x, "x - x": lambda x, y: x - x,
    "sign": lambda x, y: np.sign(x), "x % y": lambda x, y: x % y, "x // y": lambda x, y: x // y, "fmod": lambda x, y: np.fmod(x, y),
    "isnat": lambda x, y: np.isnat(x), "x.sum() @ y.sum()": lambda x, y: x.sum() @ y.sum(), "x @ y[:2]": lambda x, y: x @ y[:2],
    "ldexp": lambda x, y: np.ldexp(x, y), "gcd": lambda x, y: np.gcd(x, y), "bincount": lambda x, y: np.bincount(x),
    "logical_and dtype": lambda x, y: np.logical_and(x, y, dtype=np.float64), "sqrt out int": lambda x, y: np.sqrt(x, out=np.empty(3, np.int64)),
    "divmod": lambda x, y: np.divmod(x, y), "right_shift 1.5": lambda x, y: np.right_shift(x, 1.5),
    "astype safe": lambda x, y: x.astype(np.int8, casting="safe"),
}


@SETTINGS
@given(name=st.sampled_from(sorted(RAISING_CALLS)), backend=st.sampled_from(HOST_BACKENDS),
       dtypes=st.tuples(*[st.sampled_from(["bool", "int8", "int64", "uint64", "float32", "float64", "complex128"])] * 2))
def test_numpy_calls_that_raise_raise_numpys_exact_class(name, dtypes, backend):
    """Drawn: call x operand dtypes x backend. Where NumPy raises, `type(exc)` is NumPy's exactly."""
    fn = RAISING_CALLS[name]
    args = (np.arange(1, 4).astype(dtypes[0]), np.arange(1, 4).astype(dtypes[1]))
    kind, expected, _ = call_on_copies(fn, *args)
    if kind != "raise":
        return
    kind, got, _ = call_on_copies(jk.jit(fn, backend=backend), *args)
    assert kind == "raise" and type(got) is type(expected), (name, dtypes, expected, got)
