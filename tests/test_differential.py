"""Random-program differential tests: hypothesis draws 1-3 input arrays of broadcastable shapes
(0-4 dims, size-0 and size-1 dims included), dtypes and layouts, then a chain of 1-20 ops
(elementwise, movement, a final optional reduction). The program is data; it runs once as plain
NumPy and once inside jk.jit, and the results must match (and, for the compiled backend, match
the reference interpreter run on the traced program too).

Programs avoid what NumPy leaves undefined: float -> int casts only of NaN-free values clipped to
the target's range, transcendental functions on clipped inputs. Integer overflow wraps, which
NumPy defines. Ops that are discontinuous (comparisons, float -> int/bool casts) only read values
computed exactly (no transcendental function upstream), so that an ulp of difference in sin or
exp cannot flip a branch."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import jitkernel as jk

from helpers import ALL_DTYPES, FLOAT_TOL, assert_matches_numpy

TPU_SUITE = True  # the backend tests run on tpu-interpret too (tests/tpu_suite.py)

MAX_ELEMENTS = 512
_EPS = {np.dtype(np.float16): 9.8e-4, np.dtype(np.float32): 1.2e-7, np.dtype(np.float64): 2.3e-16}

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                           HealthCheck.large_base_example])


# ----------------------------------------------------------------------------- programs as data

@dataclass
class InputSpec:
    shape: tuple[int, ...]
    dtype: np.dtype
    layout: str  # "C" | "F" | "reversed" | "strided" | "broadcast"
    seed: int
    specials: bool  # inject NaN / inf / -0.0 into float inputs
    small: bool  # ints in [-10, 10] rather than the dtype's full range

    def make(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        dt, shape = self.dtype, self.shape
        if self.layout == "broadcast":
            # zero strides: a broadcast view of an array with size-1 dims in place of the first ones
            shape = tuple(1 if i % 2 == 0 else n for i, n in enumerate(self.shape))
        if dt.kind == "b":
            x = rng.integers(0, 2, size=shape).astype(bool)
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            lo, hi = (max(-10, info.min), 10) if self.small else (info.min, info.max)
            x = rng.integers(lo, hi, size=shape, endpoint=True, dtype=dt)
        else:
            x = rng.uniform(-10, 10, size=shape).astype(dt)
            if self.specials and x.size:
                flat = x.reshape(-1)
                picks = rng.integers(0, x.size, size=min(3, x.size))
                flat[picks] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0], dtype=dt), size=len(picks))
        if self.layout == "F" and x.ndim:
            return np.asfortranarray(x)
        if self.layout == "reversed" and x.ndim:
            return np.ascontiguousarray(x[(slice(None, None, -1),) * x.ndim])[(slice(None, None, -1),) * x.ndim]
        if self.layout == "strided" and x.ndim:
            big = np.zeros(tuple(2 * n for n in x.shape), dtype=dt)
            view = big[(slice(None, None, 2),) * x.ndim]
            view[...] = x
            return view
        if self.layout == "broadcast":
            return np.broadcast_to(x, self.shape)
        return x


@dataclass
class Program:
    inputs: list[InputSpec]
    ops: list[tuple] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    inexact: bool = False  # some output depends on a transcendental function or a reduction
    reduced: int = 1  # elements folded into one output element by the final reduction
    magnitude: float = 1.0  # largest finite |value| of any float intermediate
    eps: float = 0.0  # machine epsilon of the least precise float dtype of any intermediate

    def source(self) -> str:
        """The program as Python code (hypothesis prints it for a failing example)."""
        lines = [f"# v{k}: {s.dtype}{list(s.shape)} layout={s.layout} seed={s.seed} specials={s.specials}"
                 for k, s in enumerate(self.inputs)]
        lines.append(f"def f({', '.join(f'v{k}' for k in range(len(self.inputs)))}):")
        for n, op in enumerate(self.ops, start=len(self.inputs)):
            lines.append(f"    v{n} = {_op_source(op)}")
        lines.append(f"    return ({', '.join(f'v{k}' for k in self.outputs)},)")
        return "\n".join(lines)


def apply_op(op: tuple, vals: list) -> Any:
    """One op on NumPy arrays or on Tracers: the same code runs in both worlds."""
    kind = op[0]
    if kind == "unary":
        return getattr(np, op[1])(vals[op[2]])
    if kind == "clipped":  # sin / exp / tanh of an input clipped to a safe range
        _, name, i, lo, hi = op
        return getattr(np, name)(np.clip(vals[i], lo, hi))
    if kind == "binary":
        return getattr(np, op[1])(vals[op[2]], vals[op[3]])
    if kind == "scalar":
        _, name, i, s, reflected = op
        return getattr(np, name)(s, vals[i]) if reflected else getattr(np, name)(vals[i], s)
    if kind == "where":
        _, cmp, i, j, a, b = op
        return np.where(getattr(np, cmp)(vals[i], vals[j]), vals[a], vals[b])
    if kind == "astype":
        return vals[op[1]].astype(op[2])
    if kind == "safe_int":  # float -> int with NaN and out-of-range values taken out first
        _, i, dt, lo, hi = op
        v = vals[i]
        return np.clip(np.where(np.isnan(v), 0, v), lo, hi).astype(dt)
    if kind == "transpose":
        return np.transpose(vals[op[1]], op[2])
    if kind == "slice":
        return vals[op[1]][tuple(slice(*s) for s in op[2])]
    if kind == "reshape":
        return vals[op[1]].reshape(op[2])
    if kind == "broadcast":
        return np.broadcast_to(vals[op[1]], op[2])
    if kind == "expand_dims":
        return np.expand_dims(vals[op[1]], op[2])
    if kind == "reduce":
        _, name, i, axis, keepdims = op
        return getattr(np, name)(vals[i], axis=axis, keepdims=keepdims)
    raise AssertionError(f"unknown op {op!r}")


def _op_source(op: tuple) -> str:
    kind = op[0]
    if kind == "unary":
        return f"np.{op[1]}(v{op[2]})"
    if kind == "clipped":
        return f"np.{op[1]}(np.clip(v{op[2]}, {op[3]}, {op[4]}))"
    if kind == "binary":
        return f"np.{op[1]}(v{op[2]}, v{op[3]})"
    if kind == "scalar":
        return f"np.{op[1]}({op[3]!r}, v{op[2]})" if op[4] else f"np.{op[1]}(v{op[2]}, {op[3]!r})"
    if kind == "where":
        return f"np.where(np.{op[1]}(v{op[2]}, v{op[3]}), v{op[4]}, v{op[5]})"
    if kind == "astype":
        return f"v{op[1]}.astype(np.{op[2]})"
    if kind == "safe_int":
        return f"np.clip(np.where(np.isnan(v{op[1]}), 0, v{op[1]}), {op[3]}, {op[4]}).astype(np.{op[2]})"
    if kind == "transpose":
        return f"np.transpose(v{op[1]}, {op[2]})"
    if kind == "slice":
        return f"v{op[1]}[{', '.join(':'.join('' if p is None else str(p) for p in s) for s in op[2])}]"
    if kind == "reshape":
        return f"v{op[1]}.reshape({op[2]})"
    if kind == "broadcast":
        return f"np.broadcast_to(v{op[1]}, {op[2]})"
    if kind == "expand_dims":
        return f"np.expand_dims(v{op[1]}, {op[2]})"
    if kind == "reduce":
        return f"np.{op[1]}(v{op[2]}, axis={op[3]}, keepdims={op[4]})"
    return repr(op)


def run_program(prog: Program, *inputs: Any) -> tuple:
    vals = list(inputs)
    for op in prog.ops:
        vals.append(apply_op(op, vals))
    return tuple(vals[k] for k in prog.outputs)


def _numpy(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


# ----------------------------------------------------------------------------- the generator

# Base shapes of the inputs (each input takes trailing dims of one, some replaced by 1).
_BASE_SHAPES = st.sampled_from([
    (5,), (3, 4), (2, 3, 4), (2, 3, 2, 3), (4, 1, 3), (0,), (4, 5), (2, 0, 3), (1,), (), (6, 5), (3, 1, 4, 2),
    (2, 2, 2, 2), (7,), (1, 4), (4, 3, 1), (2, 5, 3), (3, 2, 5), (8, 6),
])
_BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
_CMP = ["greater", "less", "equal", "not_equal", "greater_equal", "less_equal"]
_SCALARS = [2, -3, 1, 0, 0.5, -1.5, 2.0, True]


def _pick(draw, n: int) -> int:
    """An index into the values so far, biased towards the most recent."""
    return draw(st.one_of(st.just(n - 1), st.integers(0, n - 1), st.integers(max(0, n - 3), n - 1)))


@st.composite
def programs(draw, movement: bool, reduction: bool, max_ops: int = 20) -> tuple[Program, list[np.ndarray]]:
    base = draw(_BASE_SHAPES)
    ndim = len(base)
    specs = []
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.one_of(st.just(ndim), st.integers(0, ndim)))  # trailing dims of the base shape
        shape = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else n for n in base[ndim - k:])
        specs.append(InputSpec(shape, np.dtype(draw(st.sampled_from(ALL_DTYPES))),
                               draw(st.sampled_from(["C", "C", "F", "reversed", "strided", "broadcast"])),
                               draw(st.integers(0, 2**32 - 1)), draw(st.booleans()), draw(st.booleans())))
    prog = Program(specs)
    arrays = [s.make() for s in specs]
    vals = list(arrays)  # NumPy's value of every variable: it drives the choice of valid ops
    exact = [True] * len(arrays)

    kinds = ["unary", "clipped", "binary", "binary", "scalar", "where", "astype"]
    if movement:
        kinds += ["transpose", "slice", "reshape", "broadcast", "expand_dims", "slice"]
    for _ in range(draw(st.integers(1, max_ops))):
        n = len(vals)
        kind = draw(st.sampled_from(kinds))
        i = _pick(draw, n)
        x = vals[i]
        op: tuple | None = None
        ex = exact[i]
        if kind == "unary":
            op = ("unary", draw(st.sampled_from(["absolute", "negative", "square"])), i)
        elif kind == "clipped":
            name = draw(st.sampled_from(["sin", "exp", "tanh"]))
            lim = 4 if name == "exp" else 6
            op, ex = ("clipped", name, i, -lim, lim), False
        elif kind == "binary":
            j = _pick(draw, n)
            op, ex = ("binary", draw(st.sampled_from(_BINARY)), i, j), exact[i] and exact[j]
        elif kind == "scalar":
            op = ("scalar", draw(st.sampled_from(_BINARY)), i, draw(st.sampled_from(_SCALARS)), draw(st.booleans()))
        elif kind == "where":
            j, a, b = _pick(draw, n), _pick(draw, n), _pick(draw, n)
            if not (exact[i] and exact[j]):
                continue  # a comparison of inexact values could flip on an ulp
            op, ex = ("where", draw(st.sampled_from(_CMP)), i, j, a, b), exact[a] and exact[b]
        elif kind == "astype":
            dt = np.dtype(draw(st.sampled_from(ALL_DTYPES)))
            if x.dtype.kind == "f" and dt.kind in "iu":
                if not exact[i]:
                    continue
                lo, hi = (0, 100) if dt.kind == "u" else (-100, 100)
                op = ("safe_int", i, dt.name, lo, hi)
            elif x.dtype.kind == "f" and dt.kind == "b" and not exact[i]:
                continue
            else:
                op = ("astype", i, dt.name)
        elif kind == "transpose":
            op = ("transpose", i, tuple(draw(st.permutations(range(x.ndim)))))
        elif kind == "slice":
            slices = []
            for size in x.shape:
                step = draw(st.sampled_from([1, 1, 2, -1, -2, 3]))
                start = draw(st.one_of(st.none(), st.none(), st.integers(-size - 1, size + 1)))
                stop = draw(st.one_of(st.none(), st.none(), st.integers(-size - 1, size + 1)))
                if size and not len(range(*slice(start, stop, step).indices(size))):
                    start = stop = None  # keep most slices non-empty (size-0 inputs cover empties)
                slices.append((start, stop, step))
            op = ("slice", i, tuple(slices))
        elif kind == "reshape":
            cands = [(-1,), (1, -1), (x.size, 1), (1,) + x.shape + (1,)]
            if x.ndim >= 2:
                cands.append(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))
            if x.ndim >= 1 and x.size:
                cands.append(x.shape[::-1])  # same size, other dims (a real reshape, not a transpose)
            op = ("reshape", i, draw(st.sampled_from(cands)))
        elif kind == "broadcast":
            shape = tuple(draw(st.sampled_from([n, 2, 3])) if n == 1 else n for n in x.shape)
            if draw(st.booleans()):
                shape = (draw(st.integers(1, 3)),) + shape
            op = ("broadcast", i, shape)
        elif kind == "expand_dims":
            op = ("expand_dims", i, draw(st.integers(-x.ndim - 1, x.ndim)))
        try:
            value = _numpy(lambda: apply_op(op, vals))
        except Exception:  # noqa: BLE001 - NumPy rejects it (no loop, bad broadcast): not this op
            continue
        value = np.asarray(value)
        if value.size > MAX_ELEMENTS:
            continue
        prog.ops.append(op)
        vals.append(value)
        exact.append(ex)

    if not prog.ops:
        prog.ops.append(("unary", "absolute", 0))
        vals.append(_numpy(lambda: np.absolute(vals[0])))
        exact.append(True)
    prog.outputs = [len(vals) - 1]
    if reduction and draw(st.booleans()):
        x = vals[-1]
        name = draw(st.sampled_from(["sum", "max", "min", "mean"]))
        axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim else None
        op = ("reduce", name, len(vals) - 1, axis, draw(st.booleans()))
        prog.ops.append(op)
        try:
            vals.append(np.asarray(_numpy(lambda: apply_op(op, vals))))
        except ValueError:  # max/min of an empty axis: both sides must raise it
            vals.append(None)
        prog.outputs = [len(vals) - 1]
        prog.reduced = max(1, x.size if axis is None else x.shape[axis])
        # max/min pick an element; integer sums are exact (wrapping); float sums and means are not.
        exact.append(exact[-1] and (name in ("max", "min") or (name == "sum" and x.dtype.kind in "biu")))
    if draw(st.booleans()) and len(vals) > 1:  # a second output
        prog.outputs.append(draw(st.integers(0, len(vals) - 2)))
    prog.inexact = prog.inexact or not all(exact[k] for k in prog.outputs)
    floats = [v for v in vals if v is not None and v.dtype.kind == "f" and v.size]
    finite = [np.abs(v[np.isfinite(v)]).max() for v in floats if np.isfinite(v).any()]
    prog.magnitude = float(max(finite, default=1.0))
    prog.eps = max((_EPS[v.dtype] for v in floats), default=0.0)
    return prog, arrays


# ----------------------------------------------------------------------------- the check

def _tolerance(prog: Program, expected: tuple) -> dict:
    """Exact ops (+ - * max min where casts moves) round identically in any correct
    implementation; transcendental functions and reordered sums differ by ulps, which later
    ops may scale by the magnitude of the values involved."""
    dts = [np.asarray(e).dtype for e in expected if e is not None]
    fdts = [d for d in dts if d.kind == "f"]
    if not fdts or not prog.inexact:
        return {}
    # an ulp lost in a float32 sin stays lost after a cast to float64
    eps = max([_EPS[d] for d in fdts] + [prog.eps])
    rtol = max(max(FLOAT_TOL[d][0] for d in fdts), 64 * eps)
    atol = max(max(FLOAT_TOL[d][1] for d in fdts), 64 * eps * max(prog.magnitude, 1.0) * prog.reduced)
    return {"rtol": rtol, "atol": atol}


def _check_program(prog: Program, arrays: list[np.ndarray], backend: str) -> None:
    note(prog.source())

    def f(*xs):
        return run_program(prog, *xs)

    try:
        expected = _numpy(f, *arrays)
    except ValueError:
        with pytest.raises(ValueError):
            jk.jit(f, backend=backend)(*arrays)
        return
    tol = _tolerance(prog, expected)
    got = jk.jit(f, backend=backend)(*arrays)
    assert_matches_numpy(got, expected, **tol)
    if backend != "interpret":
        ref = jk.eval_program(jk.make_ir(f)(*arrays), arrays)
        assert_matches_numpy(got, tuple(o[()] if o.ndim == 0 else o for o in ref), **tol)


@SETTINGS
@given(data=programs(movement=False, reduction=True))
def test_random_elementwise_programs(data, backend):
    """Chains of elementwise ops (broadcasting, promotion, weak scalars, where, casts) with an
    optional final reduction."""
    _check_program(*data, backend)


@SETTINGS
@given(data=programs(movement=True, reduction=True))
def test_random_programs_with_movement(data, backend):
    """Elementwise ops interleaved with transposes, strided/negative slices, reshapes,
    broadcasts and expand_dims, with an optional final reduction."""
    _check_program(*data, backend)


def test_generator_covers_the_space():
    """The generator is not degenerate: over many draws it produces every op kind, size-0 and
    0-d values, every dtype, reductions, multiple outputs and programs of up to 20 ops."""
    seen_kinds, dtypes, lengths, zero_size, zero_d, multi = set(), set(), [], False, False, False

    @settings(max_examples=300, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=programs(movement=True, reduction=True))
    def collect(data):
        nonlocal zero_size, zero_d, multi
        prog, arrays = data
        seen_kinds.update(op[0] for op in prog.ops)
        dtypes.update(a.dtype for a in arrays)
        lengths.append(len(prog.ops))
        zero_size |= any(a.size == 0 for a in arrays)
        zero_d |= any(a.ndim == 0 for a in arrays)
        multi |= len(prog.outputs) > 1

    collect()
    assert seen_kinds >= {"unary", "clipped", "binary", "scalar", "where", "astype", "safe_int", "transpose",
                          "slice", "reshape", "broadcast", "expand_dims", "reduce"}, seen_kinds
    assert dtypes == set(ALL_DTYPES)
    assert max(lengths) >= 15 and min(lengths) == 1
    assert zero_size and zero_d and multi
