"""Movement and structural ops, basic indexing, inputs of any layout, matmul-family products and
constants created inside the function, against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
import jitkernel.numpy as jnp

from helpers import ALL_DTYPES, assert_matches_numpy, check, numpy_result, rng_for, sample

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)

MOVE_DTYPES = [str(d) for d in ALL_DTYPES]


def _x(dtype, shape, key="x", lo=-10, hi=10):
    return sample(rng_for("shapes", key, dtype, shape), dtype, shape, lo, hi)


# ----------------------------------------------------------------------------- movement ops

@pytest.mark.parametrize("dtype", MOVE_DTYPES)
def test_movement_ops(dtype, backend):
    x = _x(dtype, (2, 3, 4))

    def f(x):
        return {
            "reshape-1": x.reshape(-1), "np.reshape": np.reshape(x, (4, -1)), "reshape-args": x.reshape(3, 2, 4),
            "reshape-4d": x.reshape((1, 2, 12, 1)), "reshape-kw": np.reshape(x, shape=(6, 4)),
            "transpose": x.transpose(), "np.transpose": np.transpose(x, (1, 0, 2)), "T": x.T,
            "transpose-args": x.transpose(2, 0, 1), "transpose-neg": np.transpose(x, (-1, 0, 1)),
            "permute_dims": np.permute_dims(x, (0, 2, 1)),
            "swapaxes": np.swapaxes(x, 0, 2), "swapaxes-m": x.swapaxes(-1, 1),
            "moveaxis": np.moveaxis(x, 0, -1), "moveaxis-multi": np.moveaxis(x, (0, 1), (2, 0)),
            "expand_dims0": np.expand_dims(x, 0), "expand_dims-1": np.expand_dims(x, -1),
            "expand_dims-tuple": np.expand_dims(x, (0, 2, -1)),
            "squeeze": np.squeeze(np.expand_dims(x, (0, 3))), "squeeze-axis": np.expand_dims(x, 1).squeeze(1),
            "squeeze-neg": np.squeeze(x.reshape(2, 3, 4, 1), axis=-1),
            "ravel": np.ravel(x), "ravel-m": x.T.ravel(), "flatten": x[:, 1].flatten(),
            "broadcast_to": np.broadcast_to(x, (5, 2, 3, 4)), "broadcast_to-1": np.broadcast_to(x[:, :1], (2, 3, 4)),
            "flip": np.flip(x), "flip0": np.flip(x, 0), "flip-tuple": np.flip(x, (0, 2)), "flip-neg": np.flip(x, -1),
            "atleast_2d": np.atleast_2d(x[0, 0]), "atleast_1d": np.atleast_1d(x[0, 0, 0]),
            "mT": x.mT,
        }
    check(f, x, backend=backend)


@pytest.mark.parametrize("dtype", MOVE_DTYPES)
def test_concatenate_stack(dtype, backend):
    a = _x(dtype, (2, 3), "a")
    b = _x(dtype, (4, 3), "b")
    c = _x(dtype, (2, 5), "c")
    v = _x(dtype, (3,), "v")

    def f(a, b, c, v):
        return {
            "cat0": np.concatenate([a, b]), "cat1": np.concatenate((a, c), axis=1),
            "cat-1": np.concatenate([a, c, a], axis=-1), "catNone": np.concatenate([a, v], axis=None),
            "concat": np.concat([a, a]), "cat-one": np.concatenate([a]),
            "stack0": np.stack([a, a]), "stack1": np.stack([a, a, a], axis=1), "stack-1": np.stack((v, v), axis=-1),
            "hstack1d": np.hstack([v, v]), "hstack2d": np.hstack([a, c]), "hstack0d": np.hstack([v[0], v]),
            "vstack1d": np.vstack([v, v]), "vstack2d": np.vstack([a, b, v]),
            "cat-views": np.concatenate([a.T, b[::-1].T], axis=1),
            "cat-empty": np.concatenate([a[:0], b]),
        }
    check(f, a, b, c, v, backend=backend)


def test_concatenate_promotes_dtypes(backend):
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    b = np.linspace(0, 1, 3, dtype=np.float32)[None]
    u = np.arange(3, dtype=np.uint8)[None]
    check(lambda a, b, u: (np.concatenate([a, b]), np.concatenate([a, u]), np.stack([a[0], u[0]]),
                           np.concatenate([a, u], dtype=np.float64), np.vstack([u, b])), a, b, u, backend=backend)


def test_broadcast_arrays_and_size0(backend):
    x = np.arange(3, dtype=np.float32)
    y = np.arange(4, dtype=np.int16).reshape(4, 1)
    e = np.zeros((0, 3), dtype=np.float64)
    check(lambda x, y, e: (tuple(np.broadcast_arrays(x, y)), e.T, e.reshape(3, 0, 1), np.broadcast_to(x, (0, 3)),
                           np.concatenate([e, x[None]]), np.expand_dims(e, 1), np.flip(e), e.reshape(-1)),
          x, y, e, backend=backend)


def test_movement_of_0d(backend):
    x = np.array(7, dtype=np.int32)
    check(lambda x: (x.reshape(1, 1), x.reshape(-1), np.transpose(x), np.expand_dims(x, 0), np.broadcast_to(x, (2, 3)),
                     np.squeeze(x), x.ravel(), np.atleast_2d(x), np.stack([x, x])), x, backend=backend)


@pytest.mark.parametrize("call", [
    lambda x: x.reshape(5, -1), lambda x: x.reshape(-1, -1), lambda x: np.reshape(x, (7,)),
    lambda x: np.squeeze(x, axis=0), lambda x: np.broadcast_to(x, (3, 5)), lambda x: np.transpose(x, (0, 0)),
    lambda x: np.transpose(x, (0,)), lambda x: np.concatenate([x, x[:, :2]], axis=0),
    lambda x: np.concatenate([x, x[0]]), lambda x: np.stack([x, x[:, :2]]), lambda x: np.concatenate([x[0, 0], x[0, 0]]),
    lambda x: np.swapaxes(x, 0, 2), lambda x: np.moveaxis(x, 0, 5), lambda x: np.expand_dims(x, 4),
    lambda x: np.vstack([x, x[:, :3]]),
], ids=["reshape-5", "two-unknown", "reshape-7", "squeeze-non1", "broadcast-bad", "transpose-repeat",
        "transpose-short", "cat-mismatch", "cat-ndim", "stack-shapes", "cat-0d", "swapaxes-oob",
        "moveaxis-oob", "expand-oob", "vstack-mismatch"])
def test_shape_errors_like_numpy(call, backend):
    """Each of these raises in NumPy (ValueError, or AxisError which is a ValueError): jitkernel
    must raise the same builtin type."""
    x = np.ones((3, 4), np.float32)
    with pytest.raises(Exception) as np_exc:
        numpy_result(call, x)
    expected = next(t for t in type(np_exc.value).__mro__ if t.__module__ == "builtins")
    assert issubclass(expected, ValueError)
    with pytest.raises(expected):
        jk.jit(call, backend=backend)(x)


def test_reshape_error_message(backend):
    with pytest.raises(ValueError, match=r"cannot reshape array of size 12 into shape \(5, ?7\)"):
        jk.jit(lambda x: x.reshape(5, 7), backend=backend)(np.ones((3, 4)))


def test_reshape_order_f_unsupported(backend):
    with pytest.raises(jk.UnsupportedOperationError, match="order"):
        jk.jit(lambda x: x.reshape(-1, order="F"), backend=backend)(np.ones((3, 4)))


# ----------------------------------------------------------------------------- basic indexing

@pytest.mark.parametrize("dtype", ["bool", "int32", "uint8", "float16", "float64"])
def test_basic_indexing(dtype, backend):
    x = _x(dtype, (4, 5, 6))

    def f(x):
        return {
            "int": x[1], "neg-int": x[-1], "two-ints": x[2, -3], "scalar": x[1, 2, 3], "neg-scalar": x[-1, -1, -1],
            "np-int": x[np.int64(2)], "slice": x[1:3], "step": x[::2], "neg-step": x[::-1], "neg-step2": x[::-2],
            "neg-bounds": x[-1:0:-2], "mixed": x[1:-1:2, ::-3, 4], "clamped": x[-100:100], "empty": x[3:1],
            "empty-neg": x[1:3:-1], "none": x[None], "none-mid": x[:, None, 1], "none-end": x[..., None],
            "ellipsis": x[..., 0], "ellipsis-mid": x[1, ..., ::-1], "ellipsis-all": x[...],
            "ellipsis-none": x[None, ..., None, 2], "full": x[:, :, :], "chained": x[::-1][1:][:, ::2][..., 0],
            "last": x[:, -1, -1], "step-over": x[::10], "stop-neg": x[:, :-2, :-7],
        }
    check(f, x, backend=backend)


def test_indexing_0d_and_1d(backend):
    v = np.arange(5, dtype=np.float32)
    s = np.array(3.0, dtype=np.float32)
    check(lambda v, s: (v[0], v[-1], v[1:4], v[::-1], s[()], s[...], s[None], v[None, :, None], v[4:5], v[5:]),
          v, s, backend=backend)


@pytest.mark.parametrize("index", [
    5, -6, (0, 5), (slice(None), -6), (0, 0, 0), (Ellipsis, Ellipsis), (1, Ellipsis, 1, 1),
], ids=["5", "-6", "(0,5)", "(:,-6)", "too-many", "two-ellipsis", "ellipsis-too-many"])
def test_index_errors(index, backend):
    x = np.ones((5, 5), np.float32)
    with pytest.raises(IndexError):
        x[index]
    with pytest.raises(IndexError):
        jk.jit(lambda x: x[index], backend=backend)(x)


def test_index_error_message(backend):
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 5"):
        jk.jit(lambda x: x[0, 7], backend=backend)(np.ones((3, 5)))


@pytest.mark.parametrize("index", [
    np.array([0, 2]), [0, 1], np.array([True, False, True, False, True]), (slice(None), np.array([1])),
], ids=["int-array", "list", "bool-mask", "mixed-advanced"])
def test_static_advanced_indexing_matches_numpy(index, backend):
    # Advanced indexing is compiled (tests/test_advanced_indexing.py has the rest).
    x = np.arange(25, dtype=np.float32).reshape(5, 5)
    np.testing.assert_array_equal(jk.jit(lambda x: x[index], backend=backend)(x), x[index])


def test_traced_mask_read_has_a_data_dependent_length(backend):
    np.testing.assert_array_equal(jk.jit(lambda x, i: x[i], backend=backend)(np.ones(5), np.array([1, 2])), [1, 1])
    x = np.array([1.0, -2.0, 3.0, 0.0, 5.0])  # (numpy/_datadep.py; tests/test_data_dependent_shapes.py)
    np.testing.assert_array_equal(jk.jit(lambda x, i: x[x > i], backend=backend)(x, 0), x[x > 0])


def test_setitem_writes_the_argument(backend):
    def f(x):
        x[0] = 7.0
        return x
    x = np.ones(5)
    np.testing.assert_array_equal(jk.jit(f, backend=backend)(x), f(np.ones(5)))
    np.testing.assert_array_equal(x, f(np.ones(5)))  # the caller's array is written back


# ----------------------------------------------------------------------------- input layouts

def _layouts(dtype) -> dict[str, np.ndarray]:
    base = _x(dtype, (6, 8), "layout")
    cube = _x(dtype, (3, 4, 5), "cube")
    return {
        "contiguous": base[:3, :4].copy(),
        "transposed": base[:4, :3].T,
        "neg-rows": base[::-2, :4],
        "neg-both": base[-1:0:-2, ::-2],
        "strided": base[1::2, 1:8:2],
        "fortran": np.asfortranarray(base[:3, :4]),
        "broadcast-row": np.broadcast_to(base[0, :4], (3, 4)),
        "broadcast-col": np.broadcast_to(base[:3, :1], (3, 4)),
        "cube-slice": cube[:, 1, :4],
        "cube-perm": np.transpose(cube, (2, 0, 1))[1, :, :],
    }


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool", "float64"])
def test_inputs_of_any_layout(dtype, backend):
    """Views (transposed, negative strides, non-contiguous, zero strides from broadcast_to,
    Fortran order) give the same results as the same data contiguous."""
    views = _layouts(dtype)
    for name, v in views.items():
        assert v.shape in ((3, 4), (4, 3)), name

    def f(vs):
        out = {}
        for k, v in vs.items():
            v = v.reshape(3, 4) if v.shape == (3, 4) else v
            out[k] = (v + v[::-1], v.sum(axis=0), v.T, np.max(v, axis=1), v[1:, ::-2])
        return out
    got = check(f, views, backend=backend)
    # The layout of the input must not matter: compare against contiguous copies too.
    contiguous = {k: np.ascontiguousarray(v) for k, v in views.items()}
    assert_matches_numpy(got, numpy_result(f, contiguous))


def test_input_not_modified_and_outputs_alias_it_as_in_numpy(backend):
    """Returned views of an argument are views of the caller's array, as NumPy's
    (the argument itself, .T and a[1] share its memory; a + 1 and the reshape of a reversed
    layout, which NumPy copies, do not); computed results are fresh."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    x_view = x[:, ::-1]
    before = x.copy()
    f = jk.jit(lambda a: (a, a.T, a[1], a + 1, a.reshape(-1)), backend=backend)
    outs = f(x_view)
    np.testing.assert_array_equal(x, before)
    for o in outs:
        assert type(o) is np.ndarray
    assert [np.shares_memory(o, x) for o in outs] == [True, True, True, False, False]
    assert_matches_numpy(outs, (x_view, x_view.T, x_view[1], x_view + 1, x_view.reshape(-1)))
    outs[3][0, 0] = 100.0  # computed outputs are writeable and independent of the next call
    np.testing.assert_array_equal(f(x_view)[3], x_view + 1)


def test_readonly_and_unaligned_inputs(backend):
    x = np.arange(10, dtype=np.float64)
    x.flags.writeable = False
    raw = np.zeros(8 * 10 + 1, dtype=np.uint8)[1:]  # a misaligned buffer
    unaligned = raw.view(np.float64)
    unaligned[:] = np.arange(10) * 0.5
    assert not unaligned.flags.aligned
    check(lambda x, u: (x * 2, u + x, u[::-3]), x, unaligned, backend=backend)


# ----------------------------------------------------------------------------- matmul family

MATMUL_DTYPES = [str(d) for d in ALL_DTYPES]


def _mm_tol(dtype):
    return {"float16": {"rtol": 2e-2, "atol": 5e-2}, "float32": {"rtol": 1e-4, "atol": 1e-4}}.get(dtype, {})


@pytest.mark.parametrize("dtype", MATMUL_DTYPES)
def test_matmul_shapes(dtype, backend):
    lo, hi = (-1, 1) if np.dtype(dtype).kind == "f" else (-20, 20)
    r = lambda *s: _x(dtype, s, f"mm{s}", lo, hi)  # noqa: E731
    args = {
        "v4": r(4), "w4": r(4), "m34": r(3, 4), "m45": r(4, 5), "b234": r(2, 3, 4), "b245": r(2, 4, 5),
        "c2134": r(2, 1, 3, 4), "c545": r(5, 4, 5), "m43": r(4, 3), "m0x4": r(0, 4), "m40": r(4, 0),
    }

    def f(a):
        return {
            "2d@2d": a["m34"] @ a["m45"], "np.matmul": np.matmul(a["m34"], a["m45"]),
            "1d@1d": a["v4"] @ a["w4"], "1d@2d": a["v4"] @ a["m45"], "2d@1d": a["m34"] @ a["v4"],
            "batched": a["b234"] @ a["b245"], "batch-bcast": a["c2134"] @ a["c545"],
            "batch@2d": a["b234"] @ a["m45"], "batch@1d": a["b234"] @ a["v4"], "1d@batch": a["v4"] @ a["b245"],
            "T@": a["m43"].T @ a["m43"], "neg@": a["m34"][::-1] @ a["m45"][:, ::-2],
            "empty-m": a["m0x4"] @ a["m45"], "empty-k": a["m40"].T @ a["m40"],
            "dot2d": np.dot(a["m34"], a["m45"]), "dot1d": np.dot(a["v4"], a["w4"]), "dot-m": a["m34"].dot(a["v4"]),
            "dot-nd": np.dot(a["b234"], a["m45"]), "dot-nd-nd": np.dot(a["b234"], a["b245"]),
            "dot-scalar": np.dot(a["m34"], a["v4"][0]),
            "inner1d": np.inner(a["v4"], a["w4"]), "inner2d": np.inner(a["m34"], a["m34"]),
            "inner-nd": np.inner(a["b234"], a["v4"]),
            "outer": np.outer(a["v4"], a["m34"][0]), "outer-2d": np.outer(a["m34"], a["v4"]),
            "vdot": np.vdot(a["m34"], a["m34"]),
        }
    check(f, args, backend=backend, **_mm_tol(dtype))


def test_matmul_mixed_dtypes(backend):
    a = _x(np.int8, (3, 4), "mmi8")
    b = _x(np.float32, (4, 2), "mmf32", -1, 1)
    u = _x(np.uint8, (4,), "mmu8", 0, 9)
    check(lambda a, b, u: (a @ b, np.matmul(a, u), np.dot(u, b), a @ 2.0 * np.ones((4, 1), np.float16)),
          a, b, u, backend=backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("call", [
    lambda a, b: a @ b, lambda a, b: np.matmul(a, b.T[:2]), lambda a, b: np.dot(a, b),
    lambda a, b: np.matmul(a, a[0, 0]), lambda a, b: np.inner(a, b[:, :3]),
], ids=["2d@2d", "matmul", "dot", "scalar", "inner"])
def test_matmul_shape_mismatch(call, backend):
    a = np.ones((3, 4), np.float32)
    b = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError):
        numpy_result(call, a, b)
    with pytest.raises(ValueError):
        jk.jit(call, backend=backend)(a, b)


# ----------------------------------------------------------------------------- constants

def test_creation_constants(backend):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)

    def f(x):
        return {
            "zeros": x + np.zeros((3, 4)), "zeros-f32": x + np.zeros(4, dtype=np.float32),
            "ones": x * np.ones((3, 1), np.float32), "full": x - np.full((3, 4), 2.5, np.float32),
            "full-int": np.full(4, 7, np.int8) + x.astype(np.int8), "arange": x * np.arange(4),
            "arange-f32": x + np.arange(0, 2, 0.5, dtype=np.float32), "linspace": x + np.linspace(0, 1, 4),
            "eye": x[:, :3] @ np.eye(3, dtype=np.float32), "eye-k": np.eye(3, 4, k=1) * x,
            "identity": np.identity(4, dtype=np.float32) @ x.T, "const-only": np.arange(3) * 2,
            "zeros_like": np.zeros_like(x), "ones_like": np.ones_like(x, dtype=np.int16) + 1,
            "full_like": np.full_like(x, 3), "full_like-traced": np.full_like(x, x[0, 0]),
            "zeros_like-shape": np.zeros_like(x, shape=(2, 2)), "ones_like-f64": np.ones_like(x, dtype=float) * x,
            "empty_like-shape": np.empty_like(x, dtype=np.int32).shape,
            "jnp.asarray": jnp.asarray([x[0], x[1] * 2]), "jnp.array": jnp.array([x[0, 0], x[1, 1]], dtype=np.float64),
            "big-const": x.sum() + np.arange(10_000, dtype=np.float32),
        }
    check(f, x, backend=backend)


def test_asarray_of_concrete_lists_is_numpys_constant(backend):
    # An empty list or one without traced values is NumPy's array (an empty list: float64 (0,));
    # only a list holding traced values is stacked.
    x = np.arange(3.0, dtype=np.float32)
    got = jk.jit(lambda x: (jnp.asarray([]), jnp.asarray([[], []], dtype=np.int8), jnp.asarray([[1, 2]]) + x[:2],
                            jnp.asarray([x[0], 1.0])), backend=backend)(x)
    want = (np.asarray([]), np.asarray([[], []], dtype=np.int8), np.asarray([[1, 2]]) + x[:2], np.asarray([x[0], 1.0]))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_empty_like_shape_and_dtype(backend):
    x = np.ones((2, 3), np.float32)
    got = jk.jit(lambda x: (np.empty_like(x), np.empty_like(x, dtype=np.int8)), backend=backend)(x)
    assert got[0].shape == (2, 3) and got[0].dtype == np.float32
    assert got[1].shape == (2, 3) and got[1].dtype == np.int8


def test_non_native_byte_order_inputs(backend):
    """Byte-swapped arrays (">f4" on a little-endian host) hold the same values and dtype to
    NumPy's promotion rules; computed results come back in native byte order, views of the input
    in its byte order, as NumPy's do."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    swapped = x.astype(x.dtype.newbyteorder())
    i = np.arange(4, dtype=np.dtype(np.int16).newbyteorder())
    assert not swapped.dtype.isnative
    check(lambda a, i: (a * 2 + i, a.sum(axis=0), np.maximum(a, 3.0), i.astype(np.float32)), swapped, i,
          backend=backend)
    got = jk.jit(lambda a: (a.T, a[::-1]), backend=backend)(swapped)
    # Views of an input keep its byte order in NumPy: '>f4' stays '>f4'.
    assert_matches_numpy(got, (swapped.T, swapped[::-1]))


def test_same_array_passed_twice(backend):
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    check(lambda a, b: (a + b, a @ b.T, a - b[::-1]), x, x, backend=backend)
    check(lambda a, b: a * b, x, x.T.T, backend=backend)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "float16"])
def test_large_odd_sized_elementwise(dtype, backend):
    """Sizes that are not multiples of any vector width, and large views (vectorised loops must
    handle their tails and strides)."""
    rng = rng_for("large", dtype)
    a = sample(rng, dtype, (1023, 517), 0, 9)
    b = sample(rng, dtype, (517,), 1, 9)
    c = sample(rng, dtype, (2050, 1031), 0, 9)[::-2, 3::3]

    def f(a, b, c):
        return a * b - a, np.maximum(a.T, 3), c + 1, np.where(a > b, a, b)[::-1, 1:], (a[:, :343] + c[:1023:, :343])
    check(f, a, b, c, backend=backend)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_large_matmul(dtype, backend):
    rng = rng_for("large-mm", dtype)
    lo, hi = (-1, 1) if dtype.startswith("float") else (-50, 50)
    a = sample(rng, dtype, (131, 70), lo, hi)
    b = sample(rng, dtype, (70, 97), lo, hi)
    batch = sample(rng, dtype, (3, 17, 70), lo, hi)
    tol = {"float32": {"rtol": 1e-4, "atol": 1e-4}, "float64": {"rtol": 1e-10, "atol": 1e-10}}.get(dtype, {})
    check(lambda a, b, batch: (a @ b, a[::-1].T.T @ b[:, ::2], batch @ b, np.dot(b.T, a.T)), a, b, batch,
          backend=backend, **tol)
