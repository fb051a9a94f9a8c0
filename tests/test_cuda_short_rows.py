"""Short rows and row-kernel scratch on the CUDA renderer (docs/gpu.md, "What the renderer
produces"): reductions whose rows have at most WARP_ROWS_MAX_REDUCED points run one warp per kept
point (Launch kind "warp_rows", shuffles only), longer rows and run-time extents a block per kept
point; row kernels keep their row scratch in `__shared__` arrays when it fits
ROW_SCRATCH_SHARED_BYTES, else in the global work buffer. Checked on `cuda-emulator` against NumPy
(dtype, shape, values; NaN, ties, first-index argmax, the sign of equal zeros), for several launch
shapes (the warp form gives the same bits for every one), by hypothesis over a pool of shapes,
axes and reductions, and compiled by nvcc for sm_90. Every program of the module is built in
one prebuild (a few g++ runs), so the examples cost no compiler run."""
from __future__ import annotations

import re
import shutil
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from cuda_corpus import (Case, assert_compiles_with_nvcc, kernel_program, layer_norm, module_of, needs_nvcc,
                         softmax)
from helpers import assert_matches_numpy, numpy_result, rng_for
from jitkernel.backends.cuda import emulator, kernel_writer
from jitkernel.backends.cuda.kernel_writer import ROW_SCRATCH_SHARED_BYTES, WARP_ROWS_MAX_REDUCED
from jitkernel.backends.cuda.render import render_program
from jitkernel.fusion.kernel_ir import RowKernel
from jitkernel.fusion.params import constants, parametrize, varying_positions

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

T = WARP_ROWS_MAX_REDUCED
EXTENTS = [1, 2, 31, 32, 33, 100, T, T + 1]
SOME_EXTENTS = [1, 2, 32, 33, T, T + 1]
# 13 kept points: more than the 6 warps of the emulator's default launch (3 blocks of 2 warps),
# so the grid-stride loop over warps wraps, and not a multiple of the warps per block.
KEPT = 13
ALL_DTYPES = ["float16", "float32", "float64", "int8", "int32", "uint64", "bool"]
POLICIES = [emulator.LaunchPolicy(32, 1), emulator.LaunchPolicy(96, 7), emulator.LaunchPolicy(1024, 2)]


def reductions(x, y, axis):
    """Every reduction with a warp form, of one x (prod of y: values whose products stay exact)."""
    out = (x.sum(axis=axis), y.prod(axis=axis), x.max(axis=axis), x.min(axis=axis), x.any(axis=axis),
           x.all(axis=axis))
    return out + ((np.argmax(x, axis=axis), np.argmin(x, axis=axis)) if isinstance(axis, int) else ())


def moments(x, axis):
    """mean and var: row kernels over trailing axes."""
    return x.mean(axis=axis), x.var(axis=axis)


def empty_rows(x):
    return x.sum(axis=-1), x.prod(axis=-1), x.any(axis=-1), x.all(axis=-1), x.sum(axis=0)


# -- data: exact sums and products (so any order of the combine gives NumPy's value), NaN, ties --
def values(dt: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Few distinct values (many ties), halves whose sums are exact in every float dtype at
    these sizes, NaN in some rows, an all-zero row and a row without zeros (any/all)."""
    if dt.kind == "b":
        x = rng.random(shape) < 0.5
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, shape, endpoint=True, dtype=dt)
        ties = rng.random(shape) < 0.6  # the extremes, 0 and 1 many times over
        x[ties] = rng.choice(np.array([info.min, info.max, 0, 1], dtype=dt), int(ties.sum()))
    else:
        x = rng.choice(np.array([-1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 2.0, np.inf]), shape).astype(dt)
    if x.ndim and x.size:
        rows = x.reshape(-1, x.shape[-1])
        rows[0] = 0
        if len(rows) > 1:
            rows[1] = 1
        if dt.kind == "f" and len(rows) > 5:
            rows[3, rows.shape[1] // 2] = np.nan
            rows[4, -1] = np.nan
            rows[5] = np.nan
    return x


def signs(dt: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Factors of exact products: mostly -1 and 1, a few 2 and 0.5 (and zeros for ints)."""
    if dt.kind == "b":
        return rng.random(shape) < 0.9
    if dt.kind in "iu":  # products wrap around, the same in any order
        return rng.choice(np.array([1, 3, 127, 7, 0, 2]).astype(dt), shape, p=[0.3, 0.2, 0.2, 0.2, 0.02, 0.08])
    y = rng.choice(np.array([-1.0, 1.0, 2.0, 0.5]), shape, p=[0.48, 0.48, 0.02, 0.02]).astype(dt)
    if y.ndim and y.size and y.shape[-1] > 2:
        y.reshape(-1, y.shape[-1])[-1, 1] = 0.0  # a zero product (its sign from the -1s)
    return y


def case(name: str, fn: Callable, shape: tuple[int, ...], dtype: str, two: bool = True) -> Case:
    dt = np.dtype(dtype)
    rng = rng_for("short-rows", name)
    args = (values(dt, shape, rng), signs(dt, shape, rng)) if two else (values(dt, shape, rng),)
    rtol = 1e-2 if dt == np.float16 else None
    return Case(name, fn, args, rtol=rtol)


def last_axis_cases() -> list[Case]:
    out = []
    for dt in ALL_DTYPES:
        for n in EXTENTS if dt in ("float32", "int8", "bool") else SOME_EXTENTS:
            out.append(case(f"last-{dt}-{n}", lambda x, y: reductions(x, y, -1), (KEPT, n), dt))
    return out


LAYOUTS = [((4, 2, 5), 1), ((4, 33, 5), 1), ((4, T + 1, 3), 1), ((3, 1, 4, 2), (1, 3)), ((3, 3, 4, 11), (1, 3)),
           ((2, 16, 7, 16), (1, 3)), ((3, 257, 5, 1), (1, 3)), ((4, 5, 31), (0, 2))]


def axes_cases() -> list[Case]:
    out = []
    for dt in ("float32", "int8", "bool", "float16", "uint64"):
        for shape, axis in LAYOUTS:
            out.append(case(f"axes-{dt}-{shape}-{axis}", lambda x, y, axis=axis: reductions(x, y, axis), shape, dt))
    return out


def moment_cases() -> list[Case]:
    return [case(f"moments-{dt}-{n}-{axis}", lambda x, axis=axis: moments(x, axis), shape, dt, two=False)
            for dt in ("float32", "float16", "int8") for n in (2, 33, T + 1)
            for shape, axis in (((KEPT, n), -1), ((3, n, 4), 1))]


def empty_cases() -> list[Case]:
    return [case(f"empty-{dt}", empty_rows, (KEPT, 0), dt, two=False) for dt in ("float32", "int8", "bool")]


def var_row(x):
    return x.var(axis=-1)


def layer_norm_centred(x):
    """A layer norm of tanh(x - mean) that keeps that row (scratch of a row's length, as
    softmax's e): fusion recomputes a cheap x - mean instead (the corpus's layer_norm and var,
    whose scratch is one scalar per row)."""
    c = np.tanh(x - x.mean(axis=-1, keepdims=True))
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5)


# Row kernels: rows whose scratch fits shared memory (130), and rows too long for it (5000 float32:
# one row of e is 20000 bytes). softmax's scratch is e, the max and the sum: 4 * (n + 2) bytes.
SHARED_MAX_SOFTMAX_ROW = ROW_SCRATCH_SHARED_BYTES // 4 - 2


def row_cases() -> list[Case]:
    out = []
    for n in (130, 5000):
        rng = rng_for("short-rows-row-kernels", n)
        x = rng.standard_normal((5, n)).astype(np.float32)
        g, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        out += [Case(f"softmax-{n}", softmax, (x,), rtol=1e-5), Case(f"layer-norm-{n}", layer_norm, (x, g, b), rtol=1e-4),
                Case(f"var-{n}", var_row, (x.astype(np.float64),)),
                Case(f"centred-{n}", layer_norm_centred, (x,), rtol=1e-4)]
    rng = rng_for("short-rows-boundary")
    for n in (SHARED_MAX_SOFTMAX_ROW, SHARED_MAX_SOFTMAX_ROW + 1):
        out.append(Case(f"softmax-{n}", softmax, (rng.standard_normal((3, n)).astype(np.float32),), rtol=1e-5))
    out.append(Case("softmax-float16-40", softmax, (rng.standard_normal((7, 40)).astype(np.float16),), rtol=1e-2))
    x = rng.standard_normal((5, 130)).astype(np.float32)
    out += [Case("softmax-reversed", softmax_reversed, (x,), rtol=1e-5),  # rows read last to first
            Case("softmax-slice", softmax_slice, (x,), rtol=1e-5),  # 97 of 130 elements a row
            Case("softmax-transposed", softmax_transposed, (x.T.copy(),), rtol=1e-5)]  # a row is a column
    return out


def softmax_reversed(x):
    return softmax(x[:, ::-1])


def softmax_slice(x):
    return softmax(x[:, 3:100])


def softmax_transposed(x):
    return softmax(x.T)


# -- the hypothesis pool: random shapes, axes and reductions, each one program built up front --
POOL_REDUCTIONS = ["sum", "prod", "max", "min", "any", "all", "argmax", "argmin"]


def _pool_fn(names: tuple[str, ...], axis: Any) -> Callable:
    def f(x, y):
        out = []
        for n in names:
            if n in ("argmax", "argmin"):
                out.append(getattr(np, n)(x, axis=axis))
            else:
                out.append(getattr(y if n == "prod" else x, n)(axis=axis))
        return tuple(out)
    return f


def pool(n: int) -> list[Case]:
    rng = rng_for("short-rows-pool")
    out = []
    for i in range(n):
        dt = str(rng.choice(ALL_DTYPES))
        red = [T + 1 if i % 5 == 4 else int(rng.choice([1, 2, 3, 17, 31, 32, 33, 64, 100, T - 1, T]))]
        kept = [int(rng.integers(1, 9)) for _ in range(int(rng.integers(1, 3)))]
        layout = ["last", "middle", "two"][i % 3]
        if layout == "last":
            shape, axis = tuple(kept + red), len(kept)
        elif layout == "middle":
            shape, axis = (kept[0], red[0], *kept[1:], 3), 1
        else:
            a = int(rng.integers(1, 5))
            shape, axis = (kept[0], a, *kept[1:], max(1, red[0] // a)), (1, len(kept) + 1)
        names = tuple(str(s) for s in rng.choice(POOL_REDUCTIONS, int(rng.integers(1, 5)), replace=False))
        if not isinstance(axis, int):
            names = tuple(s for s in names if not s.startswith("arg")) or ("sum",)
        out.append(case(f"pool{i}-{dt}-{shape}-{axis}-{'+'.join(names)}", _pool_fn(names, axis), shape, dt))
    return out


LAST, AXES, MOMENTS, EMPTY, ROWS, POOL = (last_axis_cases(), axes_cases(), moment_cases(), empty_cases(),
                                         row_cases(), pool(16))
CASES = LAST + AXES + MOMENTS + EMPTY + ROWS + POOL


@pytest.fixture(scope="module")
def modules() -> dict[str, Any]:
    """Every program of the module, built in one prebuild (parallel chunks of one g++ run); the
    row kernels of UNSHARED also as rendered with no shared-memory budget ("plain-" + name)."""
    out = {c.name: module_of(c) for c in CASES}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernel_writer, "ROW_SCRATCH_SHARED_BYTES", 0)
        out.update({f"plain-{c.name}": render_program(kernel_program(c)) for c in CASES if c.name in UNSHARED})
    emulator.prebuild(list(out.values()))
    return out


UNSHARED = ["softmax-130", "layer-norm-130", "var-130", "centred-130", "softmax-float16-40", "softmax-reversed",
            "softmax-slice"]


def run(fn, *args):
    return jk.jit(fn, backend="cuda-emulator")(*args)  # a fresh jit: never a shape-generic program


def check(c: Case) -> Any:
    got = run(c.fn, *c.args)
    assert_matches_numpy(got, numpy_result(c.fn, *c.args), rtol=c.rtol)
    return got


def kinds(module) -> list[str]:
    return [launch.kind for ls in module.launches for launch in ls]


def kernel_text(module, kind: str) -> list[str]:
    """The C text of each kernel of `module` launched as `kind`."""
    texts = module.kernels.split('extern "C" __global__ void ')[1:]
    names = [launch.name for ls in module.launches for launch in ls]
    by_name = {t.split("(", 1)[0]: t for t in texts}
    return [by_name[n] for n, k in zip(names, kinds(module)) if k == kind]


# -- results against NumPy ---------------------------------------------------------------------
@pytest.mark.parametrize("c", LAST, ids=repr)
def test_last_axis_reductions_match_numpy(modules, c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", AXES, ids=repr)
def test_middle_and_multiple_axes_match_numpy(modules, c: Case) -> None:
    check(c)


@pytest.mark.parametrize("c", MOMENTS + EMPTY, ids=repr)
def test_mean_var_and_empty_rows_match_numpy(modules, c: Case) -> None:
    check(c)


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
@pytest.mark.parametrize("n", [2, 33, T])
def test_max_min_of_equal_zeros_keep_numpys_sign(modules, dt: str, n: int) -> None:
    """Rows of 0.0 and -0.0 only: max and min keep the first zero (float16) or the last one
    (float32/float64), NumPy's rule (ir/semantics.max_min_tie_keeps_first), whatever lane
    holds it; argmax/argmin give 0 (every value ties). Runs the last-axis programs."""
    c = next(c for c in LAST if c.name == f"last-{dt}-{n}")
    rng = rng_for("zeros", dt, n)
    z = np.where(rng.random((KEPT, n)) < 0.5, -0.0, 0.0).astype(dt)
    z[0], z[1] = 0.0, -0.0
    z[2, :], z[2, 0], z[3, :], z[3, -1] = 0.0, -0.0, -0.0, 0.0
    got = run(c.fn, z, np.ones_like(z))
    keep = z[:, 0] if dt == "float16" else z[:, -1]
    for result in (got[2], got[3]):
        assert np.array_equal(result, np.zeros(KEPT, dt)) and np.array_equal(np.signbit(result), np.signbit(keep))
    assert np.array_equal(got[6], np.zeros(KEPT, np.int64)) and np.array_equal(got[7], np.zeros(KEPT, np.int64))
    expected = numpy_result(c.fn, z, np.ones_like(z))
    assert_matches_numpy(got, expected)


def _programs(c: Case, policies: list) -> list:
    kp = kernel_program(c)
    module = render_program(kp)
    lib = emulator.library(module)
    return [emulator.EmulatedProgram(kp, module, lib, p) for p in policies]


@pytest.mark.parametrize("name", ["last-float32-33", "last-float16-256", "last-int8-100", "axes-bool-(2, 16, 7, 16)-(1, 3)",
                                  "last-float64-2", "last-uint64-32"])
def test_warp_rows_give_the_same_bits_for_every_launch_shape(modules, name: str) -> None:
    """One warp per row, lanes in a fixed order: the result depends on nothing but the row, so
    every launch shape (1 warp per block and 1 block; 3 warps in 7 blocks; 32 warps per block,
    most of them past the last row) gives the same bits, equal to NumPy's values. Random float
    data (sums that round) makes the combine order visible."""
    c = next(c for c in CASES if c.name == name)
    x = c.args[0]
    if x.dtype.kind == "f":
        x = rng_for("bits", name).standard_normal(x.shape).astype(x.dtype)
    args = [x, c.args[1]]
    assert "warp_rows" in kinds(modules[name])
    expected = numpy_result(c.fn, *args)
    results = [program(args) for program in _programs(c, [emulator.LaunchPolicy()] + POLICIES)]
    for outs in results:
        assert_matches_numpy(tuple(o[()] if o.ndim == 0 else o for o in outs), expected,
                             rtol=5e-3 if x.dtype == np.float16 else 1e-5)
        assert [o.tobytes() for o in outs] == [o.tobytes() for o in results[0]]


@pytest.mark.parametrize("name", ["last-float32-257", "softmax-130", "layer-norm-5000", "axes-int8-(4, 257, 3)-1"])
def test_block_forms_do_not_depend_on_the_launch_shape(modules, name: str) -> None:
    c = next(c for c in CASES if c.name == name)
    expected = numpy_result(c.fn, *c.args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for program in _programs(c, POLICIES):
        outs = tuple(o[()] if o.ndim == 0 else o for o in program(list(c.args)))
        assert_matches_numpy(outs, expected, rtol=c.rtol)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_pool_of_shapes_axes_and_reductions_matches_numpy(modules, data) -> None:
    """Hypothesis draws a program of the pool (random shapes, axes, reductions, dtypes: built
    up front) and any values for it, special ones included (NaN, infinities, signed zeros,
    integer extremes)."""
    c = data.draw(st.sampled_from(POOL))
    x, y = c.args
    if x.dtype.kind == "f":
        elems = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -1.0, 1.0, 2.0])
        factors = st.sampled_from([np.nan, np.inf, 0.0, -0.0, 1.0, -1.0])  # products exact in any order
    elif x.dtype.kind == "b":
        elems = factors = st.booleans()
    else:
        info = np.iinfo(x.dtype)
        elems = st.one_of(st.sampled_from([0, 1, int(info.min), int(info.max)]),
                          st.integers(int(info.min), int(info.max)))
        factors = elems
    x = data.draw(hnp.arrays(x.dtype, x.shape, elements=elems))
    y = data.draw(hnp.arrays(y.dtype, y.shape, elements=factors))
    assert_matches_numpy(run(c.fn, x, y), numpy_result(c.fn, x, y), rtol=c.rtol)


# -- which form is built -------------------------------------------------------------------
def test_short_rows_are_warp_rows_and_long_rows_blocks(modules) -> None:
    """Up to the threshold a warp per kept point, shuffles only: no shared memory and no
    __syncthreads; past it, a block per kept point."""
    for dt in ALL_DTYPES:
        for n in EXTENTS if dt in ("float32", "int8", "bool") else SOME_EXTENTS:
            m = modules[f"last-{dt}-{n}"]
            if n == 1:  # a reduction over one point is a copy (fusion drops the loop)
                assert kinds(m) == ["elementwise"], dt
            elif n <= T:
                assert kinds(m) == ["warp_rows"], (dt, n)
                (text,) = kernel_text(m, "warp_rows")
                assert "jk_shfl_down(" in text and "__syncthreads" not in text and "__shared__" not in text
                assert m.launches[0][0].items == KEPT
            else:
                assert kinds(m) == ["rows"], (dt, n)
                assert "__syncthreads();" in kernel_text(m, "rows")[0]
    assert kinds(modules["axes-float32-(2, 16, 7, 16)-(1, 3)"]) == ["warp_rows"]  # 256 points over two axes
    # (3, 257, 5, 1) over (1, 3): the extent-1 axis does not count, so NumPy's inner loop runs
    # along the kept axis 2 (rows added in order): one column-like kernel per reduction, each a
    # block form (257 > T)
    assert set(kinds(modules["axes-float32-(3, 257, 5, 1)-(1, 3)"])) == {"rows"}


def _generic(fn: Callable, a: np.ndarray, b: np.ndarray):
    """The shape-generic kernel program of `fn` over the shapes of `a` and `b` (their sizes that
    differ become run-time parameters: dynamic_params.py)."""
    kp1, kp2 = kernel_program(Case("a", fn, (a,))), kernel_program(Case("b", fn, (b,)))
    positions = varying_positions(constants(kp1)[1], constants(kp2)[1])
    assert positions
    return parametrize(kp2, positions)


def test_run_time_extents_keep_the_block_form() -> None:
    """A shape-generic program's reduced extent is a run-time parameter: the block form, so the
    source is the same for every size; a run-time count of short rows keeps the warp form."""
    f = lambda x: (x.sum(axis=1), np.argmax(x, axis=1))  # noqa: E731
    red = render_program(_generic(f, np.ones((KEPT, 33)), np.ones((KEPT, 34))))
    assert kinds(red) == ["rows"] and "jk_params[" in red.kernels
    kept = render_program(_generic(f, np.ones((KEPT, 33)), np.ones((KEPT + 1, 33))))
    assert kinds(kept) == ["warp_rows"] and "jk_params[" in kept.kernels


def test_a_shape_generic_reduction_matches_numpy_at_new_sizes() -> None:
    """Three sizes of one jitted function: the second compiles the shape-generic (block) form,
    the third reuses it; every result is NumPy's."""
    f = jk.jit(lambda x: (x.sum(axis=1), np.argmin(x, axis=1), x.max(axis=1)), backend="cuda-emulator")
    for n in (33, 34, 200):
        x = rng_for("generic", n).integers(-3, 4, (KEPT, n)).astype(np.float32)
        assert_matches_numpy(f(x), (x.sum(axis=1), np.argmin(x, axis=1), x.max(axis=1)))


# -- row kernels: shared or global scratch --------------------------------------------------
@pytest.mark.parametrize("c", ROWS, ids=repr)
def test_row_kernels_match_numpy(modules, c: Case) -> None:
    check(c)


def _row_launch(module):
    (launch,) = [launch for ls in module.launches for launch in ls if launch.kind == "rows"]
    return launch


def _shared(module) -> bool:
    launch = _row_launch(module)
    on_global = bool(launch.scratch) or any(p[0] == "scratch" for p in launch.params)
    assert on_global != ("in shared memory */" in module.kernels)
    return not on_global


@pytest.mark.parametrize("name", ["softmax", "centred", "layer-norm", "var"])
def test_row_scratch_is_shared_when_it_fits(modules, name: str) -> None:
    """Rows of 130: every row kernel's scratch is shared. Rows of 5000 float32: a scratch row
    of the row's length (softmax's e, the tanh of the centred row) is global; the corpus's layer norm and var
    keep only scalars per row (fusion recomputes x - mean), shared at any length."""
    assert _shared(modules[f"{name}-130"])
    assert _shared(modules[f"{name}-5000"]) == (name in ("layer-norm", "var"))


def test_row_scratch_budget_boundary(modules) -> None:
    """softmax's scratch is 4 (n + 2) bytes a row: the longest row that fits the budget is
    shared, one more element goes to the global work buffer."""
    kp = kernel_program(next(c for c in ROWS if c.name == f"softmax-{SHARED_MAX_SOFTMAX_ROW}"))
    (rk,) = [s for s in kp.steps if isinstance(s, RowKernel)]
    assert sum(int(n) * kp.buffers[b].dtype.itemsize for b, n in rk.scratch.items()) == ROW_SCRATCH_SHARED_BYTES
    assert _row_launch(modules[f"softmax-{SHARED_MAX_SOFTMAX_ROW}"]).scratch == []
    assert _row_launch(modules[f"softmax-{SHARED_MAX_SOFTMAX_ROW + 1}"]).scratch


def test_run_time_row_scratch_stays_global() -> None:
    generic = render_program(_generic(softmax, np.ones((4, 40), np.float32), np.ones((4, 41), np.float32)))
    assert _row_launch(generic).scratch and "in shared memory */" not in generic.kernels
    assert "jk_row" not in generic.kernels  # nor is an input row staged


def staged(module) -> list[str]:
    """The buffers whose rows a row kernel of `module` stages in shared memory."""
    return re.findall(r"__shared__ \w[\w ]* jk_row(\d+)\[", module.kernels)


@pytest.mark.parametrize("name", ["softmax", "layer-norm", "var", "centred"])
def test_inputs_read_by_several_phases_are_staged_when_they_fit(modules, name: str) -> None:
    """x is read by two or three phases: its row is copied into shared memory once (then a
    barrier) and the phases read the copy, while it fits the budget left by the scratch; the
    layer norm's g and b (one read each, not per row) stay global."""
    short, long_ = modules[f"{name}-130"], modules[f"{name}-5000"]
    (x,) = staged(short)
    assert f"b{x}[130LL * row + t]" in short.kernels and f"jk_row{x}[i1]" in short.kernels
    assert f"b{x}[130LL * i0 + i1]" not in short.kernels  # every phase reads the copy
    assert not staged(long_) and "jk_row" not in long_.kernels
    assert not staged(modules[f"softmax-{SHARED_MAX_SOFTMAX_ROW}"])  # the scratch took the whole budget


def test_staged_rows_follow_the_index_maps(modules) -> None:
    """A reversed row is staged whole and read last to first (the copy's barrier matters: a
    thread reads what another one copied); a slice stages the row up to its last element; a
    transposed input (a row kernel's row is a column of it) is not staged."""
    rev, sl, tr = modules["softmax-reversed"], modules["softmax-slice"], modules["softmax-transposed"]
    assert staged(rev) and "jk_row0[-1LL * i1 + 129LL]" in rev.kernels
    assert "__shared__ float jk_row0[100];" in sl.kernels and "jk_row0[i1 + 3LL]" in sl.kernels
    assert not staged(tr) and "b0[i0 + 5LL * i1]" in tr.kernels


@pytest.mark.parametrize("name", UNSHARED)
def test_shared_memory_forms_give_the_same_bits_as_global_ones(modules, name: str) -> None:
    """Shared scratch and staged rows move where values live, not what they are: the same bits
    as the program rendered without a shared-memory budget (global scratch, no staging), for
    every launch shape."""
    c = next(c for c in CASES if c.name == name)
    plain = modules[f"plain-{name}"]
    assert "__shared__" in modules[name].kernels.replace("__shared__ float jk_s", "")
    assert "in shared memory */" not in plain.kernels and "jk_row" not in plain.kernels
    kp = kernel_program(c)
    for policy in [emulator.LaunchPolicy()] + POLICIES:
        got = emulator.EmulatedProgram(kp, modules[name], emulator.library(modules[name]), policy)(list(c.args))
        ref = emulator.EmulatedProgram(kp, plain, emulator.library(plain), policy)(list(c.args))
        assert [o.tobytes() for o in got] == [o.tobytes() for o in ref]


# -- nvcc ------------------------------------------------------------------------------------
@needs_nvcc
def test_every_program_compiles_with_nvcc(modules) -> None:
    assert_compiles_with_nvcc(list(modules.values()))
