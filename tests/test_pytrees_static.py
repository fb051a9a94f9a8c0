"""Pytree arguments and results, static arguments, and the compile cache (retracing only for a
new signature)."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk

from helpers import assert_matches_numpy, check, numpy_result

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)


def _arr(*shape, dtype=np.float32, start=0.0):
    n = int(np.prod(shape)) if shape else 1
    return (np.arange(n, dtype=np.float64) * 0.25 + start).astype(dtype).reshape(shape)


# ----------------------------------------------------------------------------- pytrees

def test_nested_pytree_arguments_and_results(backend):
    def f(params, xs, opt=None):
        w, b = params["w"], params["b"]
        first, rest = xs[0], xs[1:]
        out = {"y": first @ w + b, "list": [r * 2 for r in rest], "none": None,
               "tuple": (params["scale"] * first.sum(), (b.max(),))}
        if opt is not None:
            out["opt"] = opt["k"] - 1
        return out

    params = {"w": _arr(3, 2), "b": _arr(2, start=1.0), "scale": 3}
    xs = [_arr(4, 3), _arr(2, dtype=np.int16), np.float64(2.5)]
    check(f, params, xs, backend=backend)
    check(f, params, xs, {"k": _arr(2, 2, dtype=np.uint8)}, backend=backend)
    check(lambda p, x: f(p, x, opt={"k": np.int8(5)}), params, xs, backend=backend)


def test_tuple_list_dict_roundtrip(backend):
    def f(t, l, d):
        return [t[0] + 1, t[1]], (l[0] * l[1],), {"b": d["b"], "a": d["a"] - 1}, None, ()
    check(f, (_arr(2), _arr(2, 2)), [_arr(3), 2.0], {"a": _arr(1), "b": np.int32(4)}, backend=backend)


def test_none_and_empty_containers_as_arguments(backend):
    def f(x, nothing, empty_t, empty_l, empty_d, inner):
        assert nothing is None and empty_t == () and empty_l == [] and empty_d == {}
        assert inner[1] is None
        return x + inner[0]
    check(f, _arr(3), None, (), [], {}, (1.0, None), backend=backend)


def test_outputs_python_constants_and_shapes(backend):
    """Non-array outputs (Python scalars, shape tuples) come back as NumPy scalars."""
    check(lambda x: (x.shape[0], x.ndim, 1.5, True, x.size), _arr(3, 4), backend=backend)


def test_keyword_arguments_are_dynamic(backend):
    def f(x, y=None, *, scale=1.0):
        return x * scale if y is None else x * y * scale
    jf = jk.jit(f, backend=backend)
    x, y = _arr(3), _arr(3, start=2.0)
    assert_matches_numpy(jf(x, y=y), f(x, y=y))
    assert_matches_numpy(jf(x, scale=np.float32(2)), f(x, scale=np.float32(2)))
    assert_matches_numpy(jf(x, y, scale=3.0), f(x, y, scale=3.0))


def test_unsupported_leaf_type_raises_typeerror(backend):
    with pytest.raises(TypeError, match="argument x"):
        jk.jit(lambda x: x, backend=backend)("a string")
    with pytest.raises(TypeError):
        jk.jit(lambda x: x, backend=backend)(object())
    with pytest.raises(TypeError, match="object|int|output"):
        jk.jit(lambda x: object(), backend=backend)(np.ones(2))


# ----------------------------------------------------------------------------- static arguments

def test_static_argnums_decorator_with_arguments(backend):
    calls = []

    @jk.jit(static_argnums=1, backend=backend)
    def power_sum(x, n):
        calls.append(n)
        out = x
        for _ in range(n - 1):  # a Python loop over a static value
            out = out * x
        return out.sum()

    x = _arr(5)
    for n in (1, 2, 3, 2):
        assert_matches_numpy(power_sum(x, n), numpy_result(lambda: (x ** n).sum()), rtol=1e-5)
    assert calls == [1, 2, 3]  # n=2 the second time is a cache hit
    assert power_sum.cache_size() == 3


def test_static_argnames_and_control_flow(backend):
    @jk.jit(static_argnames=("mode", "axis"), backend=backend)
    def f(x, mode="sum", axis=None):
        if mode == "sum":
            return x.sum(axis=axis)
        if mode == "max":
            return x.max(axis=axis)
        return x.reshape(axis)

    x = _arr(3, 4)
    assert_matches_numpy(f(x), x.sum())
    assert_matches_numpy(f(x, mode="max", axis=1), x.max(axis=1))
    assert_matches_numpy(f(x, "max", 0), x.max(axis=0))  # a static name passed by position
    assert_matches_numpy(f(x, mode="reshape", axis=(2, 6)), x.reshape(2, 6))


def test_static_argnums_sequence_negative_and_by_keyword(backend):
    calls = []

    def f(x, shape, scale):
        calls.append((shape, scale))
        return x.reshape(shape) * scale

    jf = jk.jit(f, static_argnums=(1, -1), backend=backend)
    x = _arr(2, 3)
    assert_matches_numpy(jf(x, (3, 2), 2), x.reshape(3, 2) * 2)
    assert_matches_numpy(jf(x, shape=(6,), scale=0.5), x.reshape(6) * 0.5)  # static by keyword
    assert_matches_numpy(jf(x, (3, 2), 2), x.reshape(3, 2) * 2)
    assert calls == [((3, 2), 2), ((6,), 0.5)]  # the third call hit the cache
    assert jf.cache_size() == 2


def test_jit_without_arguments_as_decorator(backend):
    @jk.jit
    def f(x, y):
        """Docstring."""
        return np.sin(x) * y + 1

    assert isinstance(f, jk.Jitted)
    assert f.__name__ == "f" and f.__doc__ == "Docstring." and f.__wrapped__ is not None
    x = _arr(4)
    previous = jk.config.default_backend
    jk.config.update("default_backend", backend)  # the bare decorator compiles for the default backend
    try:
        assert_matches_numpy(f(x, 2.0), numpy_result(f.__wrapped__, x, 2.0))
        assert f.lower(x, 2.0).compiled.backend == backend
    finally:
        jk.config.update("default_backend", previous)


def test_unhashable_static_argument_raises_typeerror(backend):
    jf = jk.jit(lambda x, shape: x.reshape(shape), static_argnums=1, backend=backend)
    with pytest.raises(TypeError, match="hashable"):
        jf(_arr(6), [2, 3])


def test_static_argument_on_a_method(backend):
    class Model:
        def __init__(self, k):
            self.k = k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, Model) and other.k == self.k

        @jk.jit(static_argnums=0, backend=backend)
        def apply(self, x):
            return x * self.k

    x = _arr(3)
    assert_matches_numpy(Model(3).apply(x), x * 3)
    assert_matches_numpy(Model(4).apply(x), x * 4)


# ----------------------------------------------------------------------------- the compile cache

def test_same_signature_does_not_retrace(backend):
    traces = []

    @jk.jit(backend=backend)
    def f(x, y):
        traces.append((x.shape, y.shape))  # a side effect: runs only while tracing
        return x * 2 + y

    x, y = _arr(3, 4), _arr(4)
    r1 = f(x, y)
    r2 = f(x + 1, y * 3)  # new values, same dtypes and shapes
    r3 = f(x[::-1], y)  # a view with the same shape and dtype: same signature
    assert len(traces) == 1
    assert f.cache_size() == 1
    assert_matches_numpy((r1, r2, r3), (x * 2 + y, (x + 1) * 2 + y * 3, x[::-1] * 2 + y))


def test_new_shape_or_dtype_or_structure_retraces(backend):
    traces = []

    @jk.jit(backend=backend)
    def f(x, s):
        traces.append(1)
        return x + s

    x = _arr(3)
    f(x, 1.0)
    assert len(traces) == 1
    f(x, 2.0)  # a Python float of another value: same signature (weak float)
    assert len(traces) == 1
    f(_arr(4), 1.0)  # new shape
    assert len(traces) == 2
    f(_arr(4, dtype=np.float64), 1.0)  # new dtype
    assert len(traces) == 3
    r = f(x, 1)  # Python int instead of float
    assert len(traces) == 4 and r.dtype == np.float32
    f(x, np.float64(1.0))  # a NumPy scalar is strongly typed: another signature
    assert len(traces) == 5
    f(_arr(4), 3.0)  # back to an earlier signature: cached
    assert len(traces) == 5
    assert f.cache_size() == 5


def test_pytree_structure_change_retraces(backend):
    traces = []

    @jk.jit(backend=backend)
    def f(d):
        traces.append(1)
        return sum(v.sum() for v in d.values())

    f({"a": _arr(2)})
    f({"a": _arr(2, start=3)})
    assert len(traces) == 1
    f({"a": _arr(2), "b": _arr(2)})
    f({"b": _arr(2)})
    assert len(traces) == 3


def test_clear_cache_and_lower(backend):
    traces = []

    @jk.jit(backend=backend)
    def f(x):
        traces.append(1)
        return np.exp(x) + 1.0

    x = _arr(4)
    lowered = f.lower(x)
    assert len(traces) == 1
    assert "exp" in lowered.as_text("ir") and "exp" in lowered.as_text("optimized")
    with pytest.raises(ValueError, match="stage"):
        lowered.as_text("nonsense")
    f(x)  # lower() filled the cache
    assert len(traces) == 1
    f.clear_cache()
    assert f.cache_size() == 0
    assert_matches_numpy(f(x), np.exp(x) + np.float32(1.0))
    assert len(traces) == 2


def test_make_ir_and_eval_program(backend):
    def f(x, y):
        return np.tanh(x) @ y, (x > 0).sum(axis=0)
    x, y = _arr(3, 4, start=-1.0), _arr(4, 2)
    prog = jk.make_ir(f)(x, y)
    assert [str(a) for a in prog.in_avals] == ["f32[3,4]", "f32[4,2]"]
    outs = jk.eval_program(prog, [x, y])
    assert_matches_numpy(tuple(outs), tuple(np.asarray(o) for o in numpy_result(f, x, y)))
    assert_matches_numpy(jk.jit(f, backend=backend)(x, y), numpy_result(f, x, y))


def test_jitted_function_calling_jitted_function(backend):
    """A jitted function called on traced values inside another one is inlined into its trace."""
    inner = jk.jit(lambda x: x * 2, backend=backend)
    power = jk.jit(lambda x, n: x ** n, static_argnums=1, backend=backend)
    outer = jk.jit(lambda x: inner(x) + power(x, 3) + inner(np.float32(1.5)), backend=backend)
    x = _arr(3)
    assert_matches_numpy(outer(x), x * 2 + x ** 3 + np.float32(3.0))
    assert inner.cache_size() == 1 and power.cache_size() == 0  # only the concrete call compiled
