"""Native loops and branches on the CPU (fusion/loops.py, backends/cpu/render_loops.py): results
equal to NumPy running the same loop in Python and to the interpreter, and the structure (one
native segment per loop, no Python per iteration, loop-invariant work hoisted)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.backends.cpu import CpuBackend
from jitkernel.backends.cpu.render import Segment
from jitkernel.fusion.kernel_ir import LibraryCall
from jitkernel.fusion.loops import BranchStep, LoopStep, all_steps
from jitkernel.interpreter import eval_program
from jitkernel.ir import AType, Eqn, Program, Var
from jitkernel.passes import optimize
import emulator_suite


# -- building programs with control flow from Python functions ----------------------------------

def _sub(fn, examples):
    return jk.make_ir(fn)(*[np.asarray(e) for e in examples])


def _var(example) -> Var:
    a = np.asarray(example)
    return Var(AType(a.shape, a.dtype))


def fori_program(body, consts, init, index_dtype=np.int64) -> Program:
    """Program(lower, upper, *consts, *init) -> fori_loop(lower, upper, body, consts, init)."""
    i0 = np.asarray(0, index_dtype)
    prog = _sub(body, [i0, *consts, *init])
    ins = [_var(i0), _var(i0)] + [_var(c) for c in consts] + [_var(x) for x in init]
    outs = [_var(x) for x in init]
    return optimize(Program(ins, [], [], [Eqn("fori_loop", ins, outs, {"body": prog, "nconsts": len(consts)})], outs))


def while_program(cond, body, cconsts, bconsts, init) -> Program:
    cprog = _sub(cond, [*cconsts, *init])
    bprog = _sub(body, [*bconsts, *init])
    ins = [_var(c) for c in cconsts] + [_var(c) for c in bconsts] + [_var(x) for x in init]
    outs = [_var(x) for x in init]
    params = {"cond": cprog, "body": bprog, "cond_nconsts": len(cconsts), "body_nconsts": len(bconsts)}
    return optimize(Program(ins, [], [], [Eqn("while_loop", ins, outs, params)], outs))


def cond_program(branches, operands) -> Program:
    progs = tuple(_sub(b, operands) for b in branches)
    ins = [Var(AType((), np.int32))] + [_var(o) for o in operands]
    outs = [Var(a) for a in progs[0].out_avals]
    return optimize(Program(ins, [], [], [Eqn("cond", ins, outs, {"branches": progs})], outs))


def compile_cpu(prog: Program):
    ex, texts = CpuBackend().compile(prog, name="loop_test", disk_cache=False)
    return ex, texts


def run_both(prog: Program, args: list) -> list:
    """CPU and interpreter results on the same arguments, checked equal; returns the CPU's."""
    args = [np.asarray(a) for a in args]
    ex, _ = compile_cpu(prog)
    got = ex([a.copy() for a in args])
    want = eval_program(prog, [a.copy() for a in args])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12 if g.dtype == np.float64 else 1e-5)
    return got


def loop_steps(prog: Program) -> list:
    ex, _ = compile_cpu(prog)
    return [s for s in all_steps(ex.kp.steps) if isinstance(s, (LoopStep, BranchStep))]


# -- fori_loop -------------------------------------------------------------------------------

@pytest.mark.parametrize("trips", [(0, 0), (0, 1), (0, 2), (0, 7), (3, 1), (-2, 3)])
def test_fori_array_and_scalar_carries(trips):
    lo, hi = trips
    x = np.arange(6.0).reshape(2, 3)
    c = np.linspace(-1, 1, 6).reshape(2, 3)
    prog = fori_program(lambda i, c, x, s: (x * 0.5 + c * i, s + x.sum()), [c], [x, np.float64(1.0)])
    got = run_both(prog, [np.int64(lo), np.int64(hi), c, x, np.float64(1.0)])
    xr, sr = x.copy(), 1.0
    for i in range(lo, hi):  # NumPy running the loop
        xr, sr = xr * 0.5 + c * i, sr + xr.sum()
    np.testing.assert_allclose(got[0], xr)
    np.testing.assert_allclose(got[1], sr)
    assert len(loop_steps(prog)) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_fori_carry_dtypes_and_shapes(dtype, shape):
    x = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    if dtype == np.bool_:
        body = lambda i, x: np.logical_xor(x, (i % 2) == 0)  # noqa: E731
        ref = lambda i, x: np.logical_xor(x, (i % 2) == 0)  # noqa: E731
    else:
        one = dtype(1)
        body = lambda i, x: x * dtype(2) + one  # noqa: E731
        ref = body
    prog = fori_program(body, [], [x])
    for n in (0, 1, 4):
        got = run_both(prog, [np.int64(0), np.int64(n), x])
        want = x.copy()
        for i in range(n):
            want = np.asarray(ref(np.int64(i), want))
        np.testing.assert_array_equal(got[0], want)
        assert np.asarray(got[0]).dtype == np.dtype(dtype)


def test_fori_int32_index_and_passthrough_carries():
    x = np.arange(4.0)
    y = np.ones(3, np.float32)
    prog = fori_program(lambda i, x, y, k: (x + i.astype(np.float64), y, k + i), [], [x, y, np.int32(0)],
                        index_dtype=np.int32)
    got = run_both(prog, [np.int32(2), np.int32(6), x, y, np.int32(0)])
    np.testing.assert_array_equal(got[0], x + (2 + 3 + 4 + 5))
    np.testing.assert_array_equal(got[1], y)
    assert int(got[2]) == 14 and np.asarray(got[2]).dtype == np.int32


def test_fori_body_with_several_kernels():
    # A row reduction, a broadcast subtraction and a full reduction: several kernels per trip.
    a = np.random.default_rng(0).standard_normal((8, 16))
    prog = fori_program(lambda i, a, t: (a - a.max(axis=1, keepdims=True) * 0.5, t + np.abs(a).sum()),
                        [], [a, np.float64(0)])
    got = run_both(prog, [np.int64(0), np.int64(5), a, np.float64(0)])
    ar, t = a.copy(), 0.0
    for _ in range(5):
        ar, t = ar - ar.max(axis=1, keepdims=True) * 0.5, t + np.abs(ar).sum()
    np.testing.assert_allclose(got[0], ar)
    np.testing.assert_allclose(got[1], t)
    (loop,) = loop_steps(prog)
    assert len(loop.body) >= 2


def test_nested_fori():
    x = np.arange(5.0)

    def inner_body(j, x):
        return x * 0.5 + j.astype(np.float64)

    inner = _sub(inner_body, [np.int64(0), x])

    def outer_body(i, x):
        return x + 1.0

    outer = _sub(outer_body, [np.int64(0), x])
    # outer body: x -> fori_loop(0, i, inner, x) + 1
    i_v, x_v = outer.invars
    zero = Var(AType((), np.int64))
    y = Var(AType((5,), np.float64))
    eqns = [Eqn("fori_loop", [zero, i_v, x_v], [y], {"body": inner, "nconsts": 0})]
    add_out = outer.eqns[-1]
    eqns.append(Eqn(add_out.prim, [y if v is x_v else v for v in add_out.inputs], add_out.outputs, add_out.params))
    body = Program([i_v, x_v], [zero] + outer.constvars, [np.asarray(0, np.int64)] + outer.consts,
                   outer.eqns[:-1] + eqns, outer.outvars)
    ins = [_var(np.int64(0)), _var(np.int64(0)), _var(x)]
    outs = [_var(x)]
    prog = optimize(Program(ins, [], [], [Eqn("fori_loop", ins, outs, {"body": body, "nconsts": 0})], outs))
    got = run_both(prog, [np.int64(0), np.int64(4), x])
    want = x.copy()
    for i in range(4):
        for j in range(i):
            want = want * 0.5 + j
        want = want + 1.0
    np.testing.assert_allclose(got[0], want)
    loops = loop_steps(prog)
    assert len(loops) == 2 and isinstance(loops[1], LoopStep)


# -- while_loop and cond --------------------------------------------------------------------------

def test_while_loop_native():
    x = np.array([1.0, 2.0, 3.0])
    prog = while_program(lambda lim, k, x: (x.sum() < lim) & (k < 100),
                         lambda k, x: (k + 1, x * 1.5),
                         [np.float64(0)], [], [np.int64(0), x])
    for lim in (0.0, 6.5, 100.0, 1e300):
        got = run_both(prog, [np.float64(lim), np.int64(0), x])
        k, xr = 0, x.copy()
        while xr.sum() < lim and k < 100:
            k, xr = k + 1, xr * 1.5
        assert int(got[0]) == k
        np.testing.assert_allclose(got[1], xr)
    (loop,) = loop_steps(prog)
    assert loop.kind == "while" and loop.cond


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_cond_branches_clamped(index):
    x = np.arange(4.0)
    prog = cond_program([lambda x, s: (x + s, s), lambda x, s: (x * s, s * 2), lambda x, s: (-x, s - 1)],
                        [x, np.float64(3)])
    got = run_both(prog, [np.int32(index), x, np.float64(3)])
    k = min(max(index, 0), 2)
    want = [(x + 3, 3.0), (x * 3, 6.0), (-x, 2.0)][k]
    np.testing.assert_allclose(got[0], want[0])
    assert float(got[1]) == want[1]
    assert len(loop_steps(prog)) == 1


def test_cond_inside_fori():
    # A data-dependent branch per trip (dynamic programming's `if a > best`).
    x = np.array([3.0, -1.0, 4.0, 1.0, -5.0, 9.0])
    # more than MAX_BRANCH_OPS operations (exact scalings), so the cond stays a branch and not a
    # select (passes/cond_selects.py)
    branch_up = _sub(lambda b, v: ((((b + v) * 2.0) * 0.5) * 4.0 * 0.25,), [np.float64(0), np.float64(0)])
    branch_dn = _sub(lambda b, v: (b - 1.0,), [np.float64(0), np.float64(0)])
    body0 = _sub(lambda i, x, b: (b + x[0],), [np.int64(0), x, np.float64(0)])
    i_v, x_v, b_v = body0.invars
    # body: v = sum(x * (arange == i)) (the element i without a dynamic index); idx = v > b
    gather = _sub(lambda i, x: ((x * (np.arange(6) == i)).sum(),), [np.int64(0), x])
    v = Var(AType((), np.float64))
    ren = dict(zip(gather.invars, [i_v, x_v]))
    eqns = [Eqn(e.prim, [ren.get(u, u) for u in e.inputs], e.outputs, e.params) for e in gather.eqns]
    ren[gather.outvars[0]] = v
    eqns[-1] = Eqn(eqns[-1].prim, eqns[-1].inputs, [v], eqns[-1].params)
    cmp = _sub(lambda v, b: ((v > b).astype(np.int32),), [np.float64(0), np.float64(0)])
    idx = Var(AType((), np.int32))
    eqns += [Eqn(e.prim, [{cmp.invars[0]: v, cmp.invars[1]: b_v}.get(u, u) for u in e.inputs],
                 [idx] if e is cmp.eqns[-1] else e.outputs, e.params) for e in cmp.eqns]
    out = Var(AType((), np.float64))
    eqns.append(Eqn("cond", [idx, b_v, v], [out], {"branches": (branch_dn, branch_up)}))
    body = Program([i_v, x_v, b_v], gather.constvars + cmp.constvars, gather.consts + cmp.consts, eqns, [out])
    ins = [_var(np.int64(0)), _var(np.int64(0)), _var(x), _var(np.float64(0))]
    outs = [_var(np.float64(0))]
    prog = optimize(Program(ins, [], [], [Eqn("fori_loop", ins, outs, {"body": body, "nconsts": 1})], outs))
    got = run_both(prog, [np.int64(0), np.int64(6), x, np.float64(0)])
    b = 0.0
    for i in range(6):
        b = b + x[i] if x[i] > b else b - 1.0
    assert float(got[0]) == b
    kinds = [type(s).__name__ for s in loop_steps(prog)]
    assert kinds == ["LoopStep", "BranchStep"]


# -- structure: one native call, hoisting, fallback ---------------------------------------------

def test_native_loop_is_one_native_call():
    x = np.arange(6.0)
    prog = fori_program(lambda i, x: np.sin(x) + 1.0, [], [x])
    ex, texts = compile_cpu(prog)
    segments = [s for s in ex.steps if isinstance(s, Segment)]
    assert len(ex.steps) == 1 and len(segments) == 1
    assert not any(isinstance(s, LibraryCall) for s in ex.steps)
    assert "loop k0_fori_loop" in texts["kernels"]() and "[native]" in texts["kernels"]()
    assert ex.source.count("seg0(") + ex.source.count("seg0,") >= 1 and "for " not in ex.source


def test_compile_does_not_grow_with_trip_count():
    # The trip count is a run-time value of the loop: one compiled program serves every count.
    x = np.arange(3.0)
    prog = fori_program(lambda i, x: x * 0.999 + 1.0, [], [x])
    ex, _ = compile_cpu(prog)
    for n in (10, 10_000):
        got = ex([np.asarray(np.int64(0)), np.asarray(np.int64(n)), x.copy()])[0]
        want = x.copy()
        for _ in range(n):
            want = want * 0.999 + 1.0
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_loop_invariant_work_is_hoisted():
    c = np.arange(12.0).reshape(3, 4)
    x = np.zeros(4)
    prog = fori_program(lambda i, c, x: x + np.exp(c).sum(axis=0), [c], [x])
    got = run_both(prog, [np.int64(0), np.int64(3), c, x])
    np.testing.assert_allclose(got[0], 3 * np.exp(c).sum(axis=0))
    ex, texts = compile_cpu(prog)
    (loop,) = [s for s in ex.kp.steps if isinstance(s, LoopStep)]
    body_text = "\n".join(str(s) for s in loop.body)
    assert "exp" not in body_text  # computed once, before the loop
    assert ex.kp.steps.index(loop) >= 1


def test_library_body_falls_back_to_python_driven_loop():
    # A matrix product too large for a fused reduction (passes/loop_dots.py MAX_WORK) stays a
    # library call, and the loop Python-driven.
    a = np.eye(48) * 0.5
    x = np.ones((48, 48))
    prog = fori_program(lambda i, a, x: a @ x + 1.0, [a], [x])
    got = run_both(prog, [np.int64(0), np.int64(3), a, x])
    want = x.copy()
    for _ in range(3):
        want = a @ want + 1.0
    np.testing.assert_allclose(got[0], want)
    assert not loop_steps(prog)


def test_small_products_in_a_body_become_reductions_and_the_loop_native():
    # Gram-Schmidt's `np.dot(Q[:, k], A[:, j])` and a small matrix-vector product per trip:
    # fused reductions instead of one library call per trip.
    a = np.arange(12.0).reshape(3, 4) / 10
    v = np.ones(4)
    prog = fori_program(lambda i, a, v: (np.tanh(a @ v) @ a + v * np.dot(v, v) / 8,), [a], [v])
    got = run_both(prog, [np.int64(0), np.int64(5), a, v])
    want = v.copy()
    for _ in range(5):
        want = np.tanh(a @ want) @ a + want * np.dot(want, want) / 8
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    (loop,) = loop_steps(prog)
    assert "reduce" in "\n".join(str(s) for s in loop.body)


@settings(max_examples=30, deadline=None)
@given(lo=st.integers(-3, 3), n=st.integers(0, 6), shape=st.sampled_from([(), (3,), (2, 5)]),
       dtype=st.sampled_from([np.float32, np.float64, np.int64]), seed=st.integers(0, 100))
def test_fori_random_affine_updates(lo, n, shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.integers(-3, 4, size=shape)).astype(dtype)
    a, b = dtype(rng.integers(-2, 3)), dtype(rng.integers(-2, 3))
    prog = fori_program(lambda i, x, s: (x * a + b + i.astype(dtype), s + (x * x).sum().astype(np.float64)),
                        [], [x, np.float64(0)])
    got = run_both(prog, [np.int64(lo), np.int64(lo + n), x, np.float64(0)])
    xr, sr = x.copy(), 0.0
    for i in range(lo, lo + n):
        xr, sr = xr * a + b + dtype(i), sr + float((xr * xr).sum())
    np.testing.assert_allclose(got[0], xr, rtol=1e-5)
    np.testing.assert_allclose(got[1], sr, rtol=1e-5)


# -- through jk.lax: traced indices in native loops --------------------------------------------

from jitkernel.numpy._dynamic import dynamic_update  # noqa: E402
from helpers import HOST_BACKENDS  # noqa: E402

BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is


def _lcs_lax(a, b):
    n, m = a.shape[0], b.shape[0]

    def row(i, D):
        def cell(j, D):
            v = np.where(a[i] == b[j], D[i, j] + 1, np.maximum(D[i, j + 1], D[i + 1, j]))
            return dynamic_update(D, (i + 1, j + 1), v)
        return jk.lax.fori_loop(0, m, cell, D)
    return jk.lax.fori_loop(0, n, row, np.zeros((n + 1, m + 1), np.int64))


def _lcs_numpy(a, b):
    n, m = len(a), len(b)
    D = np.zeros((n + 1, m + 1), np.int64)
    for i in range(n):
        for j in range(m):
            D[i + 1, j + 1] = D[i, j] + 1 if a[i] == b[j] else max(D[i, j + 1], D[i + 1, j])
    return D


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n,m", [(1, 1), (2, 1), (7, 5), (20, 31)])
def test_dynamic_programming_table(backend, n, m):
    rng = np.random.default_rng(n * 100 + m)
    a, b = rng.integers(0, 3, n), rng.integers(0, 3, m)
    got = jk.jit(_lcs_lax, backend=backend)(a, b)
    np.testing.assert_array_equal(got, _lcs_numpy(a, b))


def test_dynamic_programming_is_native_and_in_place():
    a, b = np.arange(5) % 3, np.arange(6) % 2
    text = jk.jit(_lcs_lax).lower(a, b).as_text("kernels")
    assert text.count("[native]") == 2  # both loops
    assert text.count("in place") == 2  # the table is never copied per cell
    assert "library" not in text


def _trisolve_lax(L, b):
    def row(i, x):
        return dynamic_update(x, (i,), (b[i] - (L[i, :] * x).sum()) / L[i, i])
    return jk.lax.fori_loop(0, b.shape[0], row, np.zeros_like(b))


def _jacobi_lax(A, B, T):
    inner = (slice(1, -1), slice(1, -1))

    def step(t, AB):
        A, B = AB
        B = dynamic_update(B, inner, 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]))
        A = dynamic_update(A, inner, 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]))
        return A, B
    return jk.lax.fori_loop(0, T, step, (A, B))


@pytest.mark.parametrize("backend", BACKENDS)
def test_triangular_solve(backend):
    rng = np.random.default_rng(1)
    L = np.tril(rng.uniform(-1, 1, (9, 9))) + 9 * np.eye(9)
    b = rng.uniform(-1, 1, 9)
    x = jk.jit(_trisolve_lax, backend=backend)(L, b)
    np.testing.assert_allclose(L @ x, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("T", [0, 1, 2, 5])
def test_jacobi_stencil(backend, T):
    n = 9
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    A, B = (i * (j + 2) + 2.0) / n, (i * (j + 3) + 3.0) / n
    got = jk.jit(_jacobi_lax, static_argnums=2, backend=backend)(A, B, T)
    Ar, Br = A.copy(), B.copy()
    for _ in range(T):
        Br[1:-1, 1:-1] = 0.2 * (Ar[1:-1, 1:-1] + Ar[1:-1, :-2] + Ar[1:-1, 2:] + Ar[2:, 1:-1] + Ar[:-2, 1:-1])
        Ar[1:-1, 1:-1] = 0.2 * (Br[1:-1, 1:-1] + Br[1:-1, :-2] + Br[1:-1, 2:] + Br[2:, 1:-1] + Br[:-2, 1:-1])
    np.testing.assert_array_equal(got[0], Ar)  # same operations in the same order: bit-equal
    np.testing.assert_array_equal(got[1], Br)


def test_stencil_carries_are_updated_in_place_in_one_native_loop():
    A = np.ones((6, 6))
    lowered = jk.jit(_jacobi_lax, static_argnums=2).lower(A, A, 3)
    text = lowered.as_text("kernels")
    assert text.count("in place") == 2 and "update_copy" not in text and "[native]" in text


def test_compile_is_independent_of_a_static_trip_count():
    # The trip count is a constant operand of one loop step: the kernels (and so the LLVM module,
    # but for that constant) are the same for 10 and for 10,000 iterations.
    A = np.ones((6, 6))
    texts = [jk.jit(_jacobi_lax, static_argnums=2).lower(A, A, T).as_text("kernels") for T in (10, 10_000)]
    assert texts[0] == texts[1]
    llvm = [jk.jit(_jacobi_lax, static_argnums=2).lower(A, A, T).as_text("llvm") for T in (10, 10_000)]
    assert abs(len(llvm[0]) - len(llvm[1])) < 200


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_bounds_traced_index_raises_index_error(backend):
    a = np.arange(5.0)
    f = jk.jit(lambda a, k: jk.lax.fori_loop(0, 4, lambda i, acc: acc + a[i * k], 0.0), backend=backend)
    assert float(f(a, 1)) == 6.0
    assert float(f(a, -1)) == a[0] + a[-1] + a[-2] + a[-3]  # negative indices wrap, as NumPy's
    with pytest.raises(IndexError, match="^index 6 is out of bounds for axis 0 with size 5$"):
        f(a, 2)  # a[6]: the first failing trip's index, NumPy's words
    with pytest.raises(IndexError, match="^index -6 is out of bounds for axis 0 with size 5$"):
        f(a, -2)  # a[-6]


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), trips=st.integers(0, 5), k=st.integers(-3, 3), o=st.integers(-7, 7))
def test_random_traced_indices_agree_with_numpy(n, trips, k, o):
    """a[i*k + o] in a native loop: the value NumPy reads, or IndexError exactly when NumPy raises."""
    a = np.arange(1.0, n + 1)
    f = jk.jit(lambda a, k, o: jk.lax.fori_loop(0, trips, lambda i, acc: acc * 0.5 + a[i * k + o], 0.0))
    try:
        want = 0.0
        for i in range(trips):
            want = want * 0.5 + a[i * k + o]
    except IndexError:
        with pytest.raises(IndexError):
            f(a, k, o)
        return
    assert float(f(a, k, o)) == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_branch_on_array_values_inside_a_loop(backend):
    x = np.array([3.0, -1.0, 4.0, 1.0, -5.0, 9.0, 2.0])

    def f(x):
        def body(i, best):
            return jk.lax.cond(x[i] > best, lambda b: b * 0.5 + x[i], lambda b: b - 1.0, best)
        return jk.lax.fori_loop(0, x.shape[0], body, 0.0)
    b = 0.0
    for v in x:
        b = b * 0.5 + v if v > b else b - 1.0
    assert float(jk.jit(f, backend=backend)(x)) == b
    if backend == "cpu":
        text = jk.jit(f).lower(x).as_text("kernels")
        assert "branch" in text and text.count("[native]") == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_while_loop_with_array_carry(backend):
    def f(x):
        return jk.lax.while_loop(lambda c: c[1].sum() < 100.0, lambda c: (c[0] + 1, c[1] * 2.0 + 1.0), (0, x))
    x = np.array([0.5, 1.0, 2.0])
    k, y = jk.jit(f, backend=backend)(x)
    kr, yr = 0, x.copy()
    while yr.sum() < 100.0:
        kr, yr = kr + 1, yr * 2.0 + 1.0
    assert int(k) == kr
    np.testing.assert_array_equal(y, yr)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), lo=st.integers(-8, 6), trips=st.integers(0, 6), c=st.integers(-7, 7))
def test_index_ranges_proved_from_static_bounds(n, lo, trips, c):
    """a[i + c] with constant loop bounds: the check is left out only where the bounds prove it
    (fusion/dynamic.py); at the edges NumPy's wrap and IndexError still apply."""
    a = np.arange(1.0, n + 1)
    f = jk.jit(lambda a: jk.lax.fori_loop(lo, lo + trips, lambda i, acc: acc * 0.5 + a[i + c], 0.0))
    try:
        want = 0.0
        for i in range(lo, lo + trips):
            want = want * 0.5 + a[i + c]
    except IndexError:
        with pytest.raises(IndexError):
            f(a)
        return
    assert float(f(a)) == want


def test_loops_benchmark_smoke(tmp_path):
    """benchmarks/loops.py runs and checks every jitkernel result against NumPy (no timing
    assertions; the Numba peer is skipped when no interpreter with numba is named)."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "loops.json"
    env = {k: v for k, v in os.environ.items() if k != "JITKERNEL_PEER_PYTHON"}
    env["JITKERNEL_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-m", "benchmarks.loops", "--quick", "--repeat", "1",
                           "--workloads", "lcs,trisolve", "--json", str(out)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    for name in ("lcs", "trisolve"):
        row = doc["results"][name]
        for impl in ("numpy", "jk-lax", "jk-lax-fastmath"):
            assert len(row[impl]["samples_s"]) == 1 and row[impl]["first_call_s"] > 0
        assert "skipped" in row["numba"]


def _scan_fn(reverse):
    def f(xs, c):
        def step(carry, x):
            s, m = carry
            return (s * 0.5 + x.sum() * c, np.maximum(m, x)), x * s + 1.0
        return jk.lax.scan(step, (0.0, np.full(xs.shape[1:], -np.inf)), xs, reverse=reverse)
    return f


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [0, 1, 5])
def test_scan_runs_as_a_native_loop(backend, reverse, length):
    xs = np.random.default_rng(length).standard_normal((length, 3))
    (s, m), ys = jk.jit(_scan_fn(reverse), backend=backend)(xs, 2.0)
    sr, mr, yr = 0.0, np.full(3, -np.inf), np.zeros((length, 3))
    for t in (range(length - 1, -1, -1) if reverse else range(length)):  # NumPy, as the loop runs
        x = xs[t]
        yr[t] = x * sr + 1.0
        sr, mr = sr * 0.5 + x.sum() * 2.0, np.maximum(mr, x)
    np.testing.assert_array_equal(ys, yr)
    np.testing.assert_array_equal(m, mr)
    assert float(s) == sr
    if backend == "cpu" and length:
        text = jk.jit(_scan_fn(reverse)).lower(xs, 2.0).as_text("kernels")
        assert "[native]" in text and "library" not in text and "in place" in text  # ys written in place


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_index_in_untaken_branch_or_zero_trip_loop_does_not_raise(backend):
    a = np.arange(3.0)
    f = jk.jit(lambda a, p, k: jk.lax.cond(p > 0, lambda a: a[k] + 1.0, lambda a: a[0], a), backend=backend)
    assert float(f(a, -1.0, 7)) == 0.0
    with pytest.raises(IndexError, match="^index 7 is out of bounds for axis 0 with size 3$"):
        f(a, 1.0, 7)
    g = jk.jit(lambda a, n, k: jk.lax.fori_loop(0, n, lambda i, s: s + a[k], 0.0), backend=backend)
    assert float(g(a, 0, 7)) == 0.0
    with pytest.raises(IndexError):
        g(a, 1, 7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_first_bad_axis_is_named_when_a_constant_index_is_out_of_bounds(backend):
    x = np.zeros((1, 1))
    f = jk.jit(lambda x, i: x[i, 1], backend=backend)
    with pytest.raises(IndexError, match="^index 1 is out of bounds for axis 0 with size 1$"):
        f(x, 1)
    with pytest.raises(IndexError, match="^index 1 is out of bounds for axis 1 with size 1$"):
        f(x, 0)


# -- ranges of loop indices whose bounds are computed (fusion/dynamic.py range_of) --------------

TRIANGULAR_DP = """
def f(a):
    n = a.shape[0]
    t = np.zeros((n, n))
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            for k in range(i + 1, j):
                t[i, j] = max(t[i, j], t[i, k] + t[k + 1, j] + a[k])
    return t
"""


def test_inner_loops_of_a_triangular_nest_are_proved_in_bounds(tmp_path):
    """`range(i + 1, n)` inside a reversed `range(n - 1, -1, -1)`: interval arithmetic gives j
    and k their ranges, so the innermost loop reads and writes with no index check, and the
    nest's trip counts are bounded: the call runs on the calling thread (runtime.py), not on a
    thread started per call for work of unknown length."""
    from helpers import load
    f = load(tmp_path, TRIANGULAR_DP)
    a = np.random.default_rng(0).random(9)
    np.testing.assert_array_equal(jk.jit(f)(a), f(a))
    lowered = jk.jit(f).lower(a)
    innermost = lowered.as_text("kernels").rsplit("loop ", 1)[1]
    assert "index_check" not in innermost, innermost
    assert "on_worker" not in lowered.compiled.executable.source


_INDEX_FORMS = ["j + {d}", "n - 1 - j + {d}", "2 * i - j + {d}", "i - k + {d}", "(i * j) % 5 + {d}"]


@settings(max_examples=40, deadline=None)
@given(form=st.sampled_from(_INDEX_FORMS), d=st.integers(-9, 4), c1=st.integers(-3, 3), c2=st.integers(-3, 2),
       reverse=st.booleans(), n=st.integers(1, 6))
def test_random_nests_with_computed_bounds_match_numpy(tmp_path_factory, form, d, c1, c2, reverse, n):
    """Reads through indices of loops whose bounds come from enclosing indices: a check is left
    out only where the ranges prove it; elsewhere NumPy's wrap of a negative index and its
    IndexError still apply."""
    from helpers import load
    outer = "range(n - 1, -1, -1)" if reverse else "range(n)"
    src = (f"def f(a):\n    n = a.shape[0]\n    acc = 0.0\n    for i in {outer}:\n"
           f"        for j in range(i + {c1}, n + {c2}):\n            for k in range(j - 1, j + 1):\n"
           f"                acc = acc * 0.5 + a[{form.format(d=d)}]\n    return acc\n")
    f = load(tmp_path_factory.mktemp("nest"), src)
    a = np.arange(1.0, n + 1)
    try:
        want = f(a)
    except IndexError:
        with pytest.raises(IndexError):
            jk.jit(f)(a)
        return
    assert float(jk.jit(f)(a)) == want, src


# -- loop versioning: bounds read from arguments (fusion/versioning.py) --------------------------

SWEEP = """
def f(T, N, A):
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i, j - 1] + A[i - 1, j] + A[i + 1, j + 1]) / 4.0
    return A
"""


def test_a_nest_with_bounds_from_arguments_has_a_copy_without_index_checks(tmp_path):
    """`range(1, N - 1)` with N an argument: the nest runs in a copy whose checks are proved
    from N - 1 <= 48 (checked once before the loop), or in the checked copy otherwise."""
    from helpers import load
    f = load(tmp_path, SWEEP)
    a = np.random.default_rng(1).random((50, 50))
    for n in (50, 30, 2, 51, 0):
        try:
            want = f(3, n, a.copy())
        except IndexError:
            with pytest.raises(IndexError):
                jk.jit(f)(3, n, a.copy())
            continue
        np.testing.assert_array_equal(jk.jit(f)(3, n, a.copy()), want)
    text = jk.jit(f).lower(3, 50, a).as_text("kernels")
    assert "_versions" in text, text
    checked, fast = text.split("branch 1:")
    assert "index_check" in checked and "index_check" not in fast, fast


def _same_value_or_index_error(f, args: tuple, where: object) -> None:
    """The jitted `f(*args)` returns NumPy's (Python's) value exactly, or raises IndexError where
    it does."""
    try:
        want = f(*args)
    except IndexError:
        with pytest.raises(IndexError):
            jk.jit(f)(*args)
        return
    assert float(jk.jit(f)(*args)) == want, where


@settings(max_examples=40, deadline=None)
@given(lo=st.integers(-3, 3), hi=st.integers(-2, 9), d=st.integers(-7, 3), e=st.integers(-2, 2),
       reverse=st.booleans())
def test_random_versioned_loops_match_numpy(tmp_path_factory, lo, hi, d, e, reverse):
    """Loops whose bounds are arguments, reading through `index + c`: whichever copy runs, the
    result is NumPy's, and so are the wrap of negative indices and the IndexError."""
    from helpers import load
    outer = "range(hi - 1, lo - 1, -1)" if reverse else "range(lo, hi)"
    src = (f"def f(lo, hi, a):\n    acc = 0.0\n    for i in {outer}:\n        for j in range(lo, hi + {e}):\n"
           f"            acc = acc * 0.5 + a[i + {d}, j] - a[j - 1, i]\n    return acc\n")
    f = load(tmp_path_factory.mktemp("ver"), src)
    _same_value_or_index_error(f, (lo, hi, np.arange(42.0).reshape(6, 7) ** 1.5), src)


def test_a_bound_carried_by_the_loop_is_never_assumed(tmp_path):
    """An inner bound that the outer loop changes every trip (`m = m + 2`) cannot be compared
    once before the nest: the inner loop keeps its checks, and NumPy's IndexError comes when m
    grows past the array."""
    from helpers import load
    f = load(tmp_path, "def f(T, a):\n    m = 1\n    acc = 0.0\n    for t in range(T):\n"
                       "        for j in range(m):\n            acc = acc + a[j]\n        m = m + 2\n    return acc\n")
    a = np.arange(1.0, 8.0)
    assert float(jk.jit(f)(3, a)) == f(3, a)
    with pytest.raises(IndexError):
        f(5, a)
    with pytest.raises(IndexError):
        jk.jit(f)(5, a)
    assert "_versions" not in jk.jit(f).lower(3, a).as_text("kernels")


TRIANGULAR_DOTS = """
def f(alpha, A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha
    return B
"""


def test_the_mask_of_a_loop_index_window_stays_in_the_inner_loop(tmp_path):
    """trmm: `A[i + 1:, i] @ B[i + 1:, j]` is a sum over a padded axis masked by `iota >= i + 1`.
    The mask reads only i, so it is invariant in the j loop, but hoisted it was a buffer and the
    sum ran over the whole padded axis; in the body it bounds the kernel's loop (extents.py)."""
    from helpers import load
    f = load(tmp_path, TRIANGULAR_DOTS)
    rng = np.random.default_rng(3)
    a, b = rng.random((9, 9)), rng.random((9, 7))
    np.testing.assert_allclose(jk.jit(f)(1.5, a, b.copy()), f(1.5, a, b.copy()), rtol=1e-13)
    text = jk.jit(f).lower(1.5, a, b).as_text("kernels")
    inner = text.split("k0_fori_k0_fori_loop")[1]
    assert "greater_equal" in inner and "bool[" not in text.split("outputs:")[0], text


def test_a_single_loop_with_argument_bounds_runs_unchecked_in_range(tmp_path):
    """The versioned loop's own index gets the assumed range: `a[j - 1] + a[j + 1]` over
    `range(lo, hi)` with lo and hi arguments has no check in the fast copy."""
    from helpers import load
    f = load(tmp_path, "def f(lo, hi, a):\n    s = 0.0\n    for j in range(lo, hi):\n"
                       "        s = s * 0.5 + a[j - 1] + a[j + 1]\n    return s\n")
    a = np.arange(1.0, 11.0)
    for lo, hi in ((1, 9), (0, 9), (1, 10), (3, 2), (-4, 3)):
        _same_value_or_index_error(f, (lo, hi, a), (lo, hi))
    checked, fast = jk.jit(f).lower(1, 9, a).as_text("kernels").split("branch 1:")
    assert "index_check" in checked and "index_check" not in fast, fast
