"""Generated programs called with three different shapes: the second call compiles shape-generic
kernels (sizes as run-time parameters, docs/recompilation.md) and the third runs on them or on
a fresh compile. Every result must be NumPy's (dtype, shape, values) at every call.

The inputs keep their ranks and the sizes of their size-1 axes; the other axes take sizes of 2
or more (sizes 0 and 1 of an argument are always specialised). Sizes derived inside the program
still reach 0 and 1: a slice past the end of an axis (`x[2:]` of a length-2 axis), a strided or
reversed slice of a short axis (`x[::-3]` of a length-3 axis), broadcasting against a 0-d
value or a size-1 axis, `...` indexing, reductions. A shape-generic program must serve each such
size exactly, or leave it to a fresh compile; never an internal error, never a wrong value.

The ops are the differential tests' (tests/test_differential.py), drawn so that each one is valid
NumPy at all three shapes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings, strategies as st

import jitkernel as jk
from helpers import ALL_DTYPES, assert_matches_numpy, numpy_result
from test_differential import apply_op, _op_source

MAX_ELEMENTS = 512
SETTINGS = settings(max_examples=200, deadline=None, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])

_BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
_CMP = ["less_equal", "not_equal", "greater", "equal"]
_SCALARS = [2, -3, 1, 0, 0.5, True]
_STEPS = [1, 2, -1, -2, 3, -3]
# Sizes of the axes that change: a slice from 2 on (or a step of 3) is empty or of length 1 at
# some of them and not at others.
_SIZES = st.sampled_from([2, 3, 4, 6, 7])


# ----------------------------------------------------------------------------- programs as data

@dataclass
class Input:
    axes: tuple  # per axis: an index into the base shapes' axes, or None (a size-1 axis)
    dtype: np.dtype
    seed: int

    def make(self, base: tuple[int, ...]) -> np.ndarray:
        """This input at one of the call's base shapes: small exact values (halves for floats)."""
        shape = tuple(1 if a is None else base[a] for a in self.axes)
        values = np.random.default_rng(self.seed).integers(-6, 7, size=shape)
        if self.dtype.kind == "f":
            return (values / 2).astype(self.dtype)
        return (values if self.dtype.kind == "i" else np.abs(values)).astype(self.dtype)


@dataclass
class Program:
    bases: list[tuple[int, ...]]  # one base shape per call
    inputs: list[Input]
    ops: list[tuple] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def arguments(self, call: int) -> list[np.ndarray]:
        return [x.make(self.bases[call]) for x in self.inputs]

    def run(self, *args: Any) -> tuple:
        vals = list(args)
        for op in self.ops:
            vals.append(apply_generic_op(op, vals))
        return tuple(vals[k] for k in self.outputs)

    def source(self) -> str:
        """The program as Python code (hypothesis prints it for a failing example)."""
        lines = [f"# calls with base shapes {self.bases}"]
        lines += [f"# a{k}: {x.dtype.str} axes {x.axes} seed={x.seed}" for k, x in enumerate(self.inputs)]
        lines.append(f"def f({', '.join(f'v{k}' for k in range(len(self.inputs)))}):")
        for n, op in enumerate(self.ops, start=len(self.inputs)):
            lines.append(f"    v{n} = {generic_op_source(op)}")
        lines.append(f"    return ({', '.join(f'v{k}' for k in self.outputs)},)")
        return "\n".join(lines)


def _slice_text(s: tuple) -> str:
    return ":".join("" if p is None else str(p) for p in s)


def apply_generic_op(op: tuple, vals: list) -> Any:
    """The differential tests' ops, plus `...` indexing: ("ellipsis", i, leading, trailing)
    is `v[lead..., ..., trail...]`."""
    if op[0] == "ellipsis":
        _, i, lead, trail = op
        return vals[i][(*(slice(*s) for s in lead), Ellipsis, *(slice(*s) for s in trail))]
    return apply_op(op, vals)


def generic_op_source(op: tuple) -> str:
    if op[0] == "ellipsis":
        _, i, lead, trail = op
        return f"v{i}[{', '.join([*map(_slice_text, lead), '...', *map(_slice_text, trail)])}]"
    return _op_source(op)


# ----------------------------------------------------------------------------- the generator

@st.composite
def _base_shapes(draw) -> list[tuple[int, ...]]:
    """Three base shapes of one rank: one axis takes three different sizes, the largest at the
    second call (the one that compiles shape-generic kernels, which later calls then run with
    smaller sizes), each other axis keeps one size or takes any three."""
    rank = draw(st.integers(1, 3))
    axes = [(n,) * 3 if draw(st.booleans()) else tuple(draw(st.lists(_SIZES, min_size=3, max_size=3)))
            for n in draw(st.lists(st.integers(2, 5), min_size=rank, max_size=rank))]
    first, third, largest = sorted(draw(st.lists(_SIZES, min_size=3, max_size=3, unique=True)))
    if draw(st.booleans()):
        first, third = third, first
    axes[draw(st.integers(0, rank - 1))] = (first, largest, third)
    return [tuple(a[c] for a in axes) for c in range(3)]


def _dtype(draw) -> np.dtype:
    dt = np.dtype(draw(st.sampled_from(ALL_DTYPES)))
    return dt.newbyteorder(">") if dt.itemsize > 1 and draw(st.integers(0, 3)) == 0 else dt


def _input(draw, rank: int) -> Input:
    """Trailing axes of the base shape, some of them size 1; 0-d when it takes none."""
    k = draw(st.one_of(st.just(rank), st.integers(0, rank)))
    axes = tuple(None if draw(st.integers(0, 3)) == 0 else a for a in range(rank - k, rank))
    return Input(axes, _dtype(draw), draw(st.integers(0, 2**32 - 1)))


def _slice(draw, lengths: set[int]) -> tuple:
    """A slice of an axis of these lengths (at the three calls), mostly with one bound and a
    step; bounds near the lengths make it empty or of length 1 at some calls only."""
    near = sorted({b for n in lengths for b in (n - 1, n, 1 - n, -n)})
    bound = st.one_of(st.sampled_from(near), st.integers(-4, 4))
    start, stop = draw(st.sampled_from([(bound, st.none()), (st.none(), bound), (bound, bound), (st.none(), st.none())]))
    return (draw(start), draw(stop), draw(st.sampled_from(_STEPS)))


def _pick(draw, n: int) -> int:
    """An index into the values so far, biased towards the most recent."""
    return draw(st.one_of(st.just(n - 1), st.integers(0, n - 1)))


def _draw_op(draw, kind: str, calls: list[list[np.ndarray]], exact: list[bool]) -> tuple[tuple | None, bool]:
    """One op on the values so far (NumPy's, at each call), and whether its result is exact
    (no float sum or mean: a comparison may only read exact values)."""
    n = len(calls[0])
    i = _pick(draw, n)
    x = calls[0][i]

    def slices(axes: range) -> tuple:
        return tuple(_slice(draw, {vals[i].shape[a] for vals in calls}) for a in axes)
    if kind == "unary":
        return ("unary", draw(st.sampled_from(["absolute", "negative", "square"])), i), exact[i]
    if kind == "binary":
        j = _pick(draw, n)
        return ("binary", draw(st.sampled_from(_BINARY)), i, j), exact[i] and exact[j]
    if kind == "compare":
        j = _pick(draw, n)
        return (("binary", draw(st.sampled_from(_CMP)), i, j), True) if exact[i] and exact[j] else (None, True)
    if kind == "scalar":
        return ("scalar", draw(st.sampled_from(_BINARY)), i, draw(st.sampled_from(_SCALARS)),
                draw(st.booleans())), exact[i]
    if kind == "where":
        j, a, b = _pick(draw, n), _pick(draw, n), _pick(draw, n)
        if not (exact[i] and exact[j]):
            return None, True
        return ("where", draw(st.sampled_from(_CMP)), i, j, a, b), exact[a] and exact[b]
    if kind == "astype":
        dt = np.dtype(draw(st.sampled_from(ALL_DTYPES)))
        if x.dtype.kind == "f" and (dt.kind in "iu" or not exact[i]):
            return None, True  # float -> int is undefined out of range; -> bool may flip on an ulp
        return ("astype", i, dt.name), exact[i]
    if kind == "slice" and x.ndim:
        return ("slice", i, slices(range(x.ndim))), exact[i]
    if kind in ("ellipsis", "slice"):  # `...` alone is the 0-d value's only index
        lead = slices(range(draw(st.integers(0, x.ndim))))
        trail = slices(range(x.ndim - draw(st.integers(0, x.ndim - len(lead))), x.ndim))
        return ("ellipsis", i, lead, trail), exact[i]
    if kind == "transpose":
        return ("transpose", i, tuple(draw(st.permutations(range(x.ndim))))), exact[i]
    if kind == "expand_dims":
        return ("expand_dims", i, draw(st.integers(-x.ndim - 1, x.ndim))), exact[i]
    name = draw(st.sampled_from(["sum", "max", "min", "mean", "any", "prod"]))
    axis = draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1))) if x.ndim else None
    floats = x.dtype.kind == "f" or name == "mean"
    return ("reduce", name, i, axis, draw(st.booleans())), exact[i] and not (floats and name in ("sum", "mean", "prod"))


_KINDS = ["unary", "binary", "binary", "compare", "scalar", "where", "astype", "slice", "slice", "slice",
          "ellipsis", "ellipsis", "transpose", "expand_dims", "reduce"]


@st.composite
def programs(draw) -> Program:
    """A program of 1-8 ops, each valid NumPy at all three base shapes (NumPy's value at each
    call decides), with one or two outputs."""
    bases = draw(_base_shapes())
    prog = Program(bases, [_input(draw, len(bases[0])) for _ in range(draw(st.integers(1, 3)))])
    calls = [prog.arguments(c) for c in range(3)]  # NumPy's value of every variable, per call
    exact = [True] * len(prog.inputs)
    for _ in range(draw(st.integers(1, 8))):
        op, ex = _draw_op(draw, draw(st.sampled_from(_KINDS)), calls, exact)
        if op is None:
            continue
        try:
            values = [np.asarray(numpy_result(apply_generic_op, op, vals)) for vals in calls]
        except Exception:  # noqa: BLE001 - NumPy rejects it at one of the shapes: not this op
            continue
        if max(v.size for v in values) > MAX_ELEMENTS:
            continue
        if values[1].size == 0 and draw(st.integers(0, 3)):
            continue  # mostly values that the shape-generic kernels (the second call's) compute
        prog.ops.append(op)
        for vals, v in zip(calls, values):
            vals.append(v)
        exact.append(ex)
    if not prog.ops:
        prog.ops.append(("unary", "absolute", 0))
        for vals in calls:
            vals.append(numpy_result(np.absolute, vals[0]))
    n = len(prog.inputs) + len(prog.ops)
    prog.outputs = [n - 1] + ([draw(st.integers(len(prog.inputs), n - 2))]
                              if n - 1 > len(prog.inputs) and draw(st.booleans()) else [])
    return prog


# ----------------------------------------------------------------------------- the check

def _native_when_0d(x: np.ndarray) -> np.ndarray:
    """A 0-d result comes back as a scalar in native byte order (docs/numpy-support.md, "0-d
    results are NumPy scalars"), where NumPy returns a 0-d view of a '>i2' argument as it is."""
    return x.astype(x.dtype.newbyteorder("=")) if x.ndim == 0 else x


def _check_three_calls(prog: Program, backend: str) -> None:
    note(prog.source())
    f = jk.jit(prog.run, backend=backend, disk_cache=False)
    for call in range(3):
        args = prog.arguments(call)
        expected = tuple(_native_when_0d(x) if isinstance(x, np.ndarray) else x
                         for x in numpy_result(prog.run, *args))
        assert_matches_numpy(numpy_result(f, *args), expected)


@SETTINGS
@given(prog=programs())
def test_programs_called_at_three_shapes_match_numpy(prog):
    """About 20 s: two or three compiles per program (the first shape, then shape-generic
    kernels at the second), which the third call reuses or compiles anew."""
    _check_three_calls(prog, "cpu")


def _sliced_comparison(a0, a1, a2):
    v0 = a0 <= a2
    v4 = np.not_equal(a2.astype(np.float64), v0[..., ::-3, 0:])
    v5 = v4[2::1, -1::1, ::-1]
    return (v5 * v5,)


@pytest.mark.parametrize("backend", ["interpret", "cpu", "cuda-emulator"])
def test_a_slice_empty_at_the_third_shape_only(backend):
    """`v4[2:]` has 5 rows at the second shape and none at the third, whose call runs the
    shape-generic kernels compiled at the second: its outer loop is empty (the CPU runtime once
    indexed the last of its no chunks: IndexError)."""
    f = jk.jit(_sliced_comparison, backend=backend, disk_cache=False)
    a2 = np.array(5, np.uint64)
    for n, shape in enumerate([(2, 3, 4), (7, 6, 4), (2, 6, 5)]):
        a0 = (np.arange(np.prod(shape)).reshape(shape) % 13 - 6).astype(np.int8)
        args = (a0, a0[::-1].astype(">i1"), a2)
        assert_matches_numpy(f(*args), _sliced_comparison(*args))
    if backend != "interpret":
        assert "is now dynamic" in " ".join(f.recompilations()[-1].reasons)


def test_generator_reaches_empty_and_length_one_values_at_the_third_shape_only():
    """The generator is not degenerate: its programs have values that are empty, or of length 1
    on an axis, at the third call and not at the second (the sizes the shape-generic kernels
    were compiled for), `...` indexing, 0-d and byte-swapped inputs and reductions."""
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(prog=programs())
    def collect(prog):
        calls = []
        for call in range(3):
            vals = prog.arguments(call)
            for op in prog.ops:
                vals.append(np.asarray(numpy_result(apply_generic_op, op, vals)))
            calls.append(vals)
        for second, third in zip(calls[1], calls[2]):
            if third.size == 0 < second.size:
                seen.add("empty at the third call only")
            if any(m == 1 < n for n, m in zip(second.shape, third.shape)):
                seen.add("length 1 at the third call only")
        seen.update(op[0] for op in prog.ops)
        seen.update("0-d input" if not x.axes else "byte-swapped input" if not x.dtype.isnative else "input"
                    for x in prog.inputs)

    collect()
    assert seen >= {"empty at the third call only", "length 1 at the third call only", "ellipsis", "slice",
                    "reduce", "0-d input", "byte-swapped input"}, seen
