"""Python control flow as written (jitkernel/autograph): `for i in range(...)`, `while`, `if` on
traced values, `x if c else y`, `and`/`or`/`not`, `max`/`min`, `break`/`continue`/`return`,
loops that write arrays in place, compared with the same function run by NumPy, on both
backends; errors name the user's line; IPython cells convert; a generator of random programs
with loops and ifs runs converted and as plain Python."""
from __future__ import annotations

import linecache
import sys
import textwrap
import traceback

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from benchmarks import first_calls
from jitkernel.autograph import UNROLL_LIMIT, convert
from jitkernel.errors import InPlaceUpdateError, TracerBoolConversionError, UnsupportedOperationError
from tests.helpers import assert_matches_numpy, check
import emulator_suite
from helpers import HOST_BACKENDS, primitive_names

BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is
RNG = np.random.default_rng(8)


# ----------------------------------------------------------------------------- the forms


def sum_positive(x, n):
    s = 0.0
    for i in range(n):
        if x[i] > 0:
            s = s + x[i]
    return s


def range_forms(x):
    a = 0.0
    for i in range(2, x.shape[0], 3):
        a = a + x[i] * i
    for i in range(x.shape[0] - 1, -1, -2):
        a = a - x[i]
    return a, i


def traced_bounds(x, lo, hi, step):
    acc = 0.0
    for k in range(lo, hi, step):
        acc = acc + x[k] + k
    return acc


def while_halving(x):
    v = x.max()
    steps = 0
    while v > 1.0:
        v = v / 2
        steps += 1
    return v, steps


def if_elif_else(x):
    s = x.sum()
    if s > 10:
        y = x * 2
    elif s > 0:
        y = x + 1
    else:
        y = -x
    return y


def conditional_expression(x):
    s = x.sum()
    return (x if s > 0 else -x), (1.0 if s > 0 else 2.0)


def bool_operators(x):
    a, b = x[0], x[1]
    out = 0
    if a > 0 and b > 0:
        out = out + 1
    if a > 0 or b > 0:
        out = out + 10
    if not a > 0:
        out = out + 100
    return out


def chained_comparison(x):
    count = 0
    for i in range(x.shape[0]):
        if -0.5 < x[i] <= 0.5:
            count += 1
    return count, 0 < 1 < 2 < 1


def python_builtins(a, b):
    return max(a, b), min(a, b), abs(a - b), max(a, b, 0.5), min(a, 0.25)


def dp_best(a):
    best = a[0, 0]
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] > best:
                best = a[i, j]
    return best


def lcs_length(a, b):
    n, m = a.shape[0], b.shape[0]
    table = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                table[i, j] = table[i - 1, j - 1] + 1
            else:
                table[i, j] = max(table[i - 1, j], table[i, j - 1])
    return table[n, m]


def first_negative(a):
    for i in range(a.shape[0]):
        if a[i] < 0:
            return i
    return -1


def first_negative_while(a):
    i = 0
    while i < a.shape[0]:
        if a[i] < 0:
            return i
        i += 1
    return -1


def while_true_break(x):
    i = 0
    total = 0.0
    while True:
        total = total + x[i]
        if total > 2.0 or i >= x.shape[0] - 1:
            break
        i += 1
    return total, i


class Accumulator:
    def __init__(self, scale):
        self.scale = scale

    def run(self, x, n):
        acc = 0.0
        for i in range(n):
            acc = acc + x[i] * self.scale
        return acc


def test_methods_convert():
    acc = Accumulator(2.0)
    x = RNG.standard_normal(8)
    f = jk.jit(acc.run)
    assert_matches_numpy(f(x, 8), acc.run(x, 8))
    assert "fori_loop" in primitive_names(jk.make_ir(acc.run)(x, 8))


def sum_until(x, limit):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        s = s + x[i]
        if s > limit:
            break
    return s, i


def early_return_if(x):
    if x.sum() > 0:
        return x * 2
    y = x - 1
    return y


def nested_tail_returns(x):
    s = x.sum()
    if s > 5:
        if s > 50:
            return s * 3
        return s * 2
    return s


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1))
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + cost)
    return D[n, m]


def power_iteration(A, tol):
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    lam = 0.0
    err = np.inf  # concrete: the first iteration runs as Python, the rest is one while_loop
    it = 0
    while err > tol and it < 1000:
        w = A @ v
        new = np.sqrt((w * w).sum())
        v = w / new
        err = abs(new - lam)
        lam = new
        it += 1
    return lam, it


def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        s = A[j, j] - L[j, :j] @ L[j, :j]
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
    return L


def _spd(n):
    m = RNG.uniform(0, 1, (n, n))
    return m @ m.T + n * np.eye(n)


FORMS = [
    (sum_positive, lambda: (RNG.standard_normal(12), 12)),
    (sum_positive, lambda: (RNG.standard_normal(12), 7)),
    (range_forms, lambda: (RNG.standard_normal(11),)),
    (traced_bounds, lambda: (RNG.standard_normal(20), 3, 17, 2)),
    (traced_bounds, lambda: (RNG.standard_normal(20), 15, 1, -3)),
    (traced_bounds, lambda: (RNG.standard_normal(20), 9, 3, 1)),
    (while_halving, lambda: (RNG.uniform(0, 100, 5),)),
    (while_halving, lambda: (RNG.uniform(0, 0.5, 5),)),
    (if_elif_else, lambda: (RNG.uniform(1, 3, 6),)),
    (if_elif_else, lambda: (RNG.uniform(0, 1, 4),)),
    (if_elif_else, lambda: (-RNG.uniform(0, 1, 4),)),
    (conditional_expression, lambda: (RNG.standard_normal(5),)),
    (bool_operators, lambda: (np.array([1.0, -1.0]),)),
    (bool_operators, lambda: (np.array([-1.0, -1.0]),)),
    (bool_operators, lambda: (np.array([1.0, 2.0]),)),
    (chained_comparison, lambda: (RNG.standard_normal(9),)),
    (python_builtins, lambda: (np.float64(0.3), np.float64(0.7))),
    (python_builtins, lambda: (np.float64(np.nan), np.float64(0.7))),
    (python_builtins, lambda: (np.float64(0.7), np.float64(np.nan))),
    (dp_best, lambda: (RNG.standard_normal((6, 7)),)),
    (lcs_length, lambda: (RNG.integers(0, 3, 9), RNG.integers(0, 3, 8))),
    (edit_distance, lambda: (RNG.integers(0, 4, 9), RNG.integers(0, 4, 7))),
    (power_iteration, lambda: (_spd(6), 1e-10)),
    (cholesky, lambda: (_spd(7),)),  # L[j, :j]: unrolled (symbolic lengths are not supported yet)
    (first_negative, lambda: (np.array([3.0, 1.0, -2.0, 5.0, -1.0, 2.0]),)),
    (first_negative, lambda: (np.arange(1.0, 8.0),)),
    (first_negative_while, lambda: (np.array([3, 1, 4, -1, 5, 9]),)),
    (first_negative_while, lambda: (np.array([3, 1]),)),
    (while_true_break, lambda: (RNG.uniform(0, 1, 10),)),
    (while_true_break, lambda: (RNG.uniform(0, 0.1, 10),)),
    (sum_until, lambda: (RNG.standard_normal(10), 1.5)),
    (sum_until, lambda: (np.abs(RNG.standard_normal(10)), 100.0)),
    (early_return_if, lambda: (RNG.standard_normal(4),)),
    (nested_tail_returns, lambda: (np.array([1.0, 2.0]),)),
    (nested_tail_returns, lambda: (np.array([10.0, 2.0]),)),
    (nested_tail_returns, lambda: (np.array([100.0, 2.0]),)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(FORMS)), ids=lambda k: f"{FORMS[k][0].__name__}-{k}")
def test_form_matches_numpy(case, backend):
    fn, make_args = FORMS[case]
    check(fn, *make_args(), backend=backend)


def test_loops_compile_to_loops_not_unrolled_code():
    program = jk.make_ir(dp_best)(np.zeros((50, 60)))
    assert primitive_names(program).count("fori_loop") == 1  # the inner loop is in the outer body
    assert len(program.eqns) < 20
    program = jk.make_ir(while_halving)(np.zeros(5))
    assert "while_loop" in primitive_names(program)
    program = jk.make_ir(if_elif_else)(np.zeros(5))
    assert "cond" in primitive_names(program)


def test_short_static_loops_unroll_and_the_threshold_is_documented():
    def f(x):
        for i in range(UNROLL_LIMIT):
            x = x + i
        return x
    assert "fori_loop" not in primitive_names(jk.make_ir(f)(np.zeros(3)))

    def g(x):
        for i in range(UNROLL_LIMIT + 1):
            x = x + i
        return x
    assert "fori_loop" in primitive_names(jk.make_ir(g)(np.zeros(3)))
    assert f"UNROLL_LIMIT` ({UNROLL_LIMIT})" in open("docs/numpy-support.md").read()


def test_a_short_loop_holding_a_loop_is_one_loop():
    """Unrolling a short loop copies the loops in its body (compiled code per copy): it stays one
    loop, and a short innermost loop still unrolls."""
    def nest(x):
        for k in range(2):
            for a in range(UNROLL_LIMIT + 3):
                for b in range(2):
                    x = x + k * a - b
        return x
    names = primitive_names(jk.make_ir(nest)(np.zeros(3)))
    assert names.count("fori_loop") == 1  # the outer loop; the middle one is in its body, b unrolled
    check(nest, np.zeros(3), backend="cpu")


def long_loop(x, n):
    acc = x
    for i in range(n):
        acc = acc * 0.5 + x[i % 7]
    return acc


def test_a_10000_iteration_loop_compiles_in_about_the_time_of_one():
    x = RNG.standard_normal(7)
    got = jk.jit(long_loop)(x, 10_000)
    assert_matches_numpy(got, long_loop(x, 10_000))
    program = jk.make_ir(long_loop)(x, 10_000)
    # One loop equation whatever the trip count: the same program (and machine code) for 10 and
    # 10,000 iterations, so compile time cannot grow with it (timed in benchmarks, not here).
    assert len(program.eqns) < 15
    assert str(program) == str(jk.make_ir(long_loop)(x, 10))

    def static_long(x):
        acc = x
        for i in range(10_000):
            acc = acc * 0.5 + 1.0
        return acc
    program = jk.make_ir(static_long)(x)
    assert primitive_names(program).count("fori_loop") == 1 and len(program.eqns) < 15


# ----------------------------------------------------------------------------- int() and float() in loops
# `k = int(x * bins)` in a loop body used to need the concrete value: the loop was unrolled (or
# refused over a traced range). In a compiled body it is a traced Python-like int.

# (the function benchmarks/first_calls.py times: one definition for both)
histogram_by_loop = first_calls.histogram


def conversions_in_a_traced_loop(a, n):
    total = 0.0
    for i in range(n):
        total += float(a[i]) + int(-a[i] * 2.5) + int(a[i] > 0)
    return total


@pytest.mark.parametrize("backend", BACKENDS)
def test_int_and_float_of_traced_scalars_in_loops_match_numpy(backend):
    a = RNG.standard_normal(300)
    check(histogram_by_loop, a, 7, backend=backend, jit_kwargs={"static_argnums": 1})
    assert primitive_names(jk.make_ir(histogram_by_loop, static_argnums=1)(a, 7)).count("fori_loop") == 1
    check(conversions_in_a_traced_loop, a, 20, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad, error", [(np.nan, ValueError), (np.inf, OverflowError),
                                        (1e19, OverflowError)])  # (past int64: jitkernel's bound, loud)
def test_int_of_a_traced_float_raises_pythons_errors(backend, bad, error):
    a = np.array([1.0, bad, 2.0])
    with pytest.raises(error):
        jk.jit(conversions_in_a_traced_loop, backend=backend)(a, 3)


# ----------------------------------------------------------------------------- enumerate and zip
# `for i, x in enumerate(a)` was not converted: Python iterated the traced array and unrolled
# every element's body (1,000 bodies for 1,000 elements). Now it is one loop.

def enumerate_forms(a, A):
    out = np.zeros_like(a)
    for i, x in enumerate(a):
        out[i] = x * i
    s = 0.0
    for k, (x, y) in enumerate(zip(a, a[::-1]), 1):
        if x > y:
            s += k * x
    for i, row in enumerate(A):
        if row.sum() > 2:
            break
        out[i] += row.max()
    return out, s, i, row, k, x, y


def zip_forms(a, b, c):
    s = 0.0
    for x, y in zip(a, b):  # b is shorter: zip stops at its end
        s += x * y
    for x, (y, z) in zip(a, zip(b, c)):
        s -= x * y * z
    for x, y in zip(a, [1.0, 2.0, 3.0]):  # a list: runs as Python
        s += x * y
    return s, x, y


def writes_the_array_it_enumerates(a):
    for i, x in enumerate(a):
        a[i] = x + a[i - 1]
    return a


@pytest.mark.parametrize("backend", BACKENDS)
def test_enumerate_and_zip_of_traced_arrays_match_numpy(backend):
    a = RNG.standard_normal(40)
    check(enumerate_forms, a, RNG.random((30, 3)), backend=backend)
    check(zip_forms, a, RNG.standard_normal(25), RNG.standard_normal(30), backend=backend)
    check(writes_the_array_it_enumerates, a, backend=backend)
    prims = primitive_names(jk.make_ir(enumerate_forms)(RNG.standard_normal(40), RNG.random((30, 3))))
    assert prims.count("fori_loop") == 2 and prims.count("while_loop") == 1  # (the `break`: a while loop)


def test_zip_strict_of_unequal_traced_arrays_raises_value_error():
    def f(a, b):
        s = 0.0
        for x, y in zip(a, b, strict=True):
            s += x * y
        return s
    with pytest.raises(ValueError):
        jk.jit(f)(np.ones(6), np.ones(5))


# ----------------------------------------------------------------------------- state types


def python_counter(x):
    k = 0
    total = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            k += 1
        total = total + x[i]
    return k, total


def growing_list_static(x):
    parts = []
    for i in range(6):
        parts.append(x[i] * 2)
    return np.stack(parts)


def growing_concat_static(x):
    out = x[:1]
    for i in range(1, 6):
        out = np.concatenate([out, x[i:i + 1] * i])
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [python_counter, growing_list_static, growing_concat_static])
def test_state_that_changes_type_or_is_a_python_list(fn, backend):
    check(fn, RNG.standard_normal(8).astype(np.float32), backend=backend)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_python_list_grown_in_a_traced_loop_names_the_line():
    def f(x, n):
        parts = []
        for i in range(n):
            parts.append(x[i])
        return parts[0]
    with pytest.raises(UnsupportedOperationError, match=r"test_autograph.py:\d+ \(`for i in range\(n\):`\).*`parts`"):
        jk.jit(f)(np.ones(4), 3)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_shape_change_in_a_traced_loop_names_the_variable():
    def f(x, n):
        for i in range(n):
            x = np.concatenate([x, x[:1]])
        return x
    with pytest.raises(UnsupportedOperationError, match=r"`x` changes shape from \(3,\) to \(4,\)"):
        jk.jit(f)(np.ones(3), 3)


# ----------------------------------------------------------------------------- in-place writes


def fill_by_index(a, n):
    for i in range(n):
        a[i] = i * 2.0 + a[i]
    return a.sum()


def running_sum(x):
    out = np.zeros_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc
    return out


def jacobi(A, B, T):
    for t in range(T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[:-2, 1:-1] + B[2:, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:])


def augmented_in_branch(a):
    if a.sum() > 0:
        a += 1.0
    else:
        a[0] = -1.0
    return a.mean()


def write_in_branch_until_break(x, y, n):
    for i in range(n):
        if x[i] > 3:
            break
        if x[i] > 1:
            y[i] = x[i]
    return y


def writes_through_alias(a):
    b = a  # the same array under two names: writes through `a` are seen through `b`
    for i in range(6):
        a[i] = i
    return b


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, make_args", [
    (fill_by_index, lambda: (RNG.standard_normal(9), 9)),
    (fill_by_index, lambda: (RNG.standard_normal(9), 5)),
    (running_sum, lambda: (RNG.standard_normal(10),)),
    (jacobi, lambda: (RNG.standard_normal((10, 12)), np.zeros((10, 12)), 8)),
    (augmented_in_branch, lambda: (RNG.uniform(0, 1, 5),)),
    (augmented_in_branch, lambda: (-RNG.uniform(0, 1, 5),)),
    (writes_through_alias, lambda: (np.zeros(6),)),
    (write_in_branch_until_break, lambda: (np.arange(6.0), np.zeros(6), 6)),
    (write_in_branch_until_break, lambda: (np.arange(6.0), np.zeros(6), 3)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_loops_and_branches_mutating_arguments(fn, make_args, backend):
    args = make_args()
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    expected = fn(*args)
    got = jk.jit(fn, backend=backend)(*mine)
    assert_matches_numpy(got, expected)
    for a, b in zip(mine, args):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)  # the caller's array, as NumPy left it


def view_read_in_loop(a, n):
    v = a[1:]
    for i in range(n):
        a[i % 2] = a[0] + v[0]
    return a


@pytest.mark.usefixtures("no_static_int_fallback")
def test_written_carry_aliasing_a_read_view_is_an_error():
    with pytest.raises(UnsupportedOperationError, match=r"writes into `a` and reads `v`, which shares memory"):
        jk.jit(view_read_in_loop)(np.ones(5), 10)
    # a static range is unrolled instead: Python's answer
    a, b = np.arange(5.0), np.arange(5.0)
    jk.jit(view_read_in_loop, static_argnames=("n",))(a, 10)
    view_read_in_loop(b, 10)
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- triangular solve


def triangular_solve(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_triangular_solve_small_unrolls(backend):
    L = np.tril(RNG.uniform(0.1, 1, (6, 6))) + 4 * np.eye(6)
    b = RNG.standard_normal(6)
    check(triangular_solve, L, b, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_triangular_solve_long_runs_as_a_loop_with_symbolic_lengths(backend):
    L = np.tril(RNG.uniform(0.1, 1, (300, 300))) + 4 * np.eye(300)
    b = RNG.standard_normal(300)
    check(triangular_solve, L, b, backend=backend)


# ----------------------------------------------------------------------------- errors and lines


def body_with_shape_error(x, n):
    for i in range(n):
        x = x + np.ones(4)  # the line the error must point at
    return x


def test_errors_point_at_the_users_line_after_the_rewrite():
    with pytest.raises(ValueError) as info:
        jk.jit(body_with_shape_error)(np.ones(3), 5)
    frames = [fr for fr in traceback.extract_tb(info.value.__traceback__) if fr.filename == __file__]
    assert frames[-1].line == "x = x + np.ones(4)  # the line the error must point at"
    assert frames[-1].name == "body_with_shape_error"  # the loop body is named as the function
    assert frames[-2].line == "for i in range(n):"
    assert all("ag__" not in fr.name for fr in frames)


def bool_of_array_in_loop(x, n):
    for i in range(n):
        if x > 0:  # a whole array as a condition
            x = x - 1
    return x


def test_tracer_where_names_the_user_line_in_a_converted_body():
    with pytest.raises(ValueError, match=r"test_autograph.py:\d+: if x > 0:  # a whole array as a condition"):
        jk.jit(bool_of_array_in_loop)(np.ones(3), 5)


def raise_in_traced_branch(x):
    if x.sum() > 0:
        raise ValueError("positive")
    return x


def try_in_traced_loop(x, n):
    for i in range(n):
        try:
            x = x + 1
        except ValueError:
            pass
    return x


@pytest.mark.usefixtures("no_static_int_fallback")
def test_unsupported_statements_in_traced_code_name_the_line():
    with pytest.raises(UnsupportedOperationError, match=r"a `raise` statement \(line \d+\) inside an `if` on a traced"):
        jk.jit(raise_in_traced_branch)(np.ones(2))
    with pytest.raises(UnsupportedOperationError, match=r"a `try` statement \(line \d+\) inside a loop whose range is traced"):
        jk.jit(try_in_traced_loop)(np.ones(2), 3)
    check(try_in_traced_loop, np.ones(2), 30, backend="interpret", jit_kwargs={"static_argnames": ("n",)})


G = np.zeros(3)


def writes_global(x):
    G[0] = x.sum()
    return x


def test_write_into_a_captured_global_array_names_the_line():
    with pytest.raises(InPlaceUpdateError, match=r"stored into a NumPy array captured .*`G`.*G\[0\] = x.sum\(\)"):
        jk.jit(writes_global)(np.ones(3))
    assert not G.any()


def test_opt_out_and_sources_that_are_not_available():
    with pytest.raises(TracerBoolConversionError):
        jk.jit(early_return_if, autograph=False)(np.ones(2))
    namespace: dict = {"np": np}
    exec(compile("def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n", "<no source>", "exec"), namespace)
    assert convert(namespace["f"]) is None  # no linecache entry: today's behaviour
    with pytest.raises(TracerBoolConversionError):
        jk.jit(namespace["f"])(np.ones(2))
    exec(compile("def g(x):\n    return x + 1\n", "<no source 2>", "exec"), namespace)
    check(namespace["g"], np.ones(2), backend="cpu")
    check(lambda x: x * 2 if True else x, np.ones(2), backend="cpu")  # lambdas are not converted
    assert convert(np.sin) is None and convert(len) is None


def test_closures_globals_and_defaults_keep_working():
    scale = 3.0

    def make(offset):
        def f(x, n=4):
            acc = x * 0
            for i in range(n):
                acc = acc + x * scale + offset + OFFSET
            return acc
        return f
    f = make(1.0)
    check(f, np.ones(3), backend="interpret")
    globals()["OFFSET"] = 5.0  # a global read at call time (trace time), as in Python
    check(make(2.0), np.ones(3), 7, backend="cpu")


OFFSET = 0.0


def test_converted_code_in_a_file_written_at_run_time(tmp_path, monkeypatch):
    path = tmp_path / "user_module_ag.py"
    path.write_text(textwrap.dedent("""
        import numpy as np

        def count(x, n):
            c = 0
            i = 0
            while i < n:
                if x[i] > 0.5:
                    c += 1
                i += 1
            return c
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    mod = importlib.import_module("user_module_ag")
    x = RNG.uniform(0, 1, 12)
    for backend in BACKENDS:
        check(mod.count, x, 12, backend=backend)
    assert "while_loop" in primitive_names(jk.make_ir(mod.count)(x, 12))
    sys.modules.pop("user_module_ag", None)


# ----------------------------------------------------------------------------- IPython


@pytest.fixture
def ip(tmp_path, monkeypatch):
    from ipython_shell import extension_shell
    with extension_shell(tmp_path, monkeypatch, "import numpy as np; import jitkernel as jk") as shell:
        yield shell


def _run(ip, cell: str):
    from IPython.utils.capture import capture_output
    with capture_output() as cap:
        result = ip.run_cell(cell)
    assert result.success, cap.stdout + cap.stderr
    return result


def test_functions_defined_in_ipython_cells_convert(ip):
    _run(ip, textwrap.dedent("""
        def dp(a):
            best = a[0, 0]
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    if a[i, j] > best:
                        best = a[i, j]
            return best
        f = jk.jit(dp)
        a = np.arange(30.0).reshape(5, 6) % 7
        r = f(a)
        prims = [e.prim for e in jk.make_ir(dp)(a).eqns]
    """))
    assert ip.user_ns["r"] == 6.0 and "fori_loop" in ip.user_ns["prims"]


def test_jit_cell_magic_converts_loops(ip):
    _run(ip, "x = np.arange(12.0) - 5")
    _run(ip, textwrap.dedent("""\
        %%jit
        def first_pos(x):
            for i in range(x.shape[0]):
                if x[i] > 0:
                    return i
            return -1
    """))
    _run(ip, "r = first_pos(x)\nprims = [e.prim for e in first_pos.lower(x).compiled.program.eqns]")
    assert ip.user_ns["r"] == 6
    assert "while_loop" in ip.user_ns["prims"] or "fori_loop" in ip.user_ns["prims"]


def test_ipython_cell_errors_point_at_the_cell_line(ip):
    from IPython.utils.capture import capture_output
    _run(ip, textwrap.dedent("""
        def bad(x, n):
            for i in range(n):
                x = x + np.ones(4)
            return x
    """))
    with capture_output() as cap:
        result = ip.run_cell("jk.jit(bad)(np.ones(3), 5)")
    assert isinstance(result.error_in_exec, ValueError)
    import re
    text = re.sub(r"\x1b\[[0-9;]*m", "", cap.stdout + cap.stderr)
    assert "----> 3         x = x + np.ones(4)" in text and "ag__for_body" not in text


# ----------------------------------------------------------------------------- random programs

_VARS = ("s", "t")


def _expr(draw, depth: int = 0) -> str:
    choice = draw(st.integers(0, 6 if depth < 2 else 3))
    if choice == 0:
        return draw(st.sampled_from(_VARS))
    if choice == 1:
        return draw(st.sampled_from(["x[i]", "x[i % 5]", "x[0]"]))
    if choice == 2:
        return repr(draw(st.sampled_from([0.5, 1.0, 2.0, -1.5])))
    if choice == 3:
        return "i"
    op = draw(st.sampled_from(["+", "-", "*"]))
    if choice == 6:
        return f"max({_expr(draw, depth + 1)}, {_expr(draw, depth + 1)})"
    return f"({_expr(draw, depth + 1)} {op} {_expr(draw, depth + 1)})"


def _block(draw, depth: int, in_loop: bool) -> list[str]:
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 7 if depth < 2 else 1))
        if kind <= 1:
            v = draw(st.sampled_from(_VARS))
            lines.append(f"{v} = {_expr(draw)} * 0.5")
        elif kind == 2:
            lines.append(f"y[i % 5] = {_expr(draw)}")
        elif kind == 3:
            cond = f"{_expr(draw)} > {_expr(draw)}"
            body = _block(draw, depth + 1, in_loop)
            lines.append(f"if {cond}:")
            lines += ["    " + b for b in body]
            if draw(st.booleans()):
                lines.append("else:")
                lines += ["    " + b for b in _block(draw, depth + 1, in_loop)]
        elif kind == 4:
            bound = draw(st.sampled_from(["n", "3", "7", "x.shape[0]"]))
            lines.append(f"for i in range({bound}):")
            lines += ["    " + b for b in _block(draw, depth + 1, True)]
        elif kind == 6:
            counter = f"k{depth}"
            bound = draw(st.sampled_from(["n", "4"]))
            lines.append(f"{counter} = 0")
            lines.append(f"while {counter} < {bound} and s < 50.0:")
            lines.append(f"    {counter} += 1")  # first: a `continue` must not skip it
            lines.append(f"    i = {counter}")
            lines += ["    " + b for b in _block(draw, depth + 1, True)]
        elif in_loop:
            lines.append(f"if {_expr(draw)} > 1.0:")
            lines.append("    " + draw(st.sampled_from(["break", "continue", "return s, t, y"])))
        else:
            lines.append(f"t = t + {_expr(draw)}")
    return lines


@st.composite
def programs(draw):
    body = ["s = 0.0", "t = 1.0", "i = 0"] + _block(draw, 0, False) + ["return s, t, y"]
    return "def prog(x, y, n):\n" + "\n".join("    " + line for line in body) + "\n"


_COUNTER = iter(range(10**9))


@settings(max_examples=60, deadline=None)
@given(programs(), st.integers(0, 9))
def test_random_programs_converted_match_plain_python(source, n):
    filename = f"<autograph random program {next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    prog = namespace["prog"]
    assert convert(prog) is not None or "for" not in source and "if" not in source
    x = np.linspace(-1.0, 1.3, 9)
    y0 = np.zeros(5)
    try:
        expected_y = y0.copy()
        expected = prog(x, expected_y, n)
    except IndexError:
        return
    for backend in BACKENDS:
        y = y0.copy()
        got = jk.jit(prog, backend=backend)(x, y, n)
        assert_matches_numpy(got[:2], expected[:2], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(y, expected_y, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got[2], expected_y, rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- iteration-local names
# A name each iteration binds before reading it, and that nothing outside the loop reads, is no
# loop state (analysis.iteration_locals): its value may change type or shape from one iteration
# to the next (a selection `x[x > c]`), and the loop is still one compiled loop.

def _local_statement(draw, bound: set) -> list[str]:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        bound.add("u")
        return [f"u = x[i % 9] * {draw(st.sampled_from([0.5, 2.0, -1.0]))}"]
    if kind == 1:
        bound.add("v")
        return [f"v = x[x >= x[(i * {draw(st.integers(1, 4))}) % 9]]"]
    if kind == 2:
        return [f"if x[i % 9] > {draw(st.sampled_from([-0.5, 0.0, 0.5]))}:", "    u = u + 1.0"]
    if kind == 3:
        return ["s = s + u"]
    if kind == 4 and "v" in bound:
        return [draw(st.sampled_from(["s = s + v.sum()", "y[i % 5] = v.size + u", "s = s + v.mean() * 0.0"]))]
    if kind == 5:
        return ["y[i % 5] = s * 0.5 + u"]
    return ["s = s * 0.5"]


@st.composite
def iteration_local_programs(draw):
    """A loop over i whose body binds a scalar u (sometimes read first: then it is state) and a
    selection v (read only after it is bound in the same iteration), with reads of u after the
    loop in some programs."""
    bound: set = set()
    body: list[str] = []
    for _ in range(draw(st.integers(1, 7))):
        body += _local_statement(draw, bound)
    after = draw(st.sampled_from(["return s, y", "return s + u, y"]))
    loop = draw(st.sampled_from(["for i in range(x.shape[0] * 40):", "for i in range(n):"]))
    lines = ["s = 0.0", "u = 0.25", loop] + ["    " + b for b in body] + [after]
    return "def prog(x, y, n):\n" + "\n".join("    " + line for line in lines) + "\n"


@settings(max_examples=40, deadline=None)
@given(iteration_local_programs())
def test_iteration_local_names_are_not_loop_state(source):
    filename = f"<autograph iteration-local program {next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    prog = namespace["prog"]
    x = np.linspace(-1.0, 1.3, 9)
    expected_y = np.zeros(5)
    expected = prog(x, expected_y, 360)
    for backend in HOST_BACKENDS:
        y = np.zeros(5)
        got = jk.jit(prog, backend=backend)(x, y, 360)  # 360 trips: past any unrolling
        assert_matches_numpy(got[0], expected[0], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(y, expected_y, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got[1], expected_y, rtol=1e-9, atol=1e-9)


def test_iteration_locals_by_the_analysis():
    import ast
    from jitkernel.autograph.analysis import iteration_locals
    source = textwrap.dedent("""
        def f(x, n):
            c = 0
            for i in range(n):
                a = x[i]            # bound first: local
                b = b + a           # read first: state
                if a > 0:
                    d = a           # bound on one path only, read after: state
                e = d * 2
                g = x[x > a]        # bound first, read only in the loop: local
                c = c + g.sum() + e
                h = 1               # bound first, read after the loop: state
            return c + h + b
    """)
    fn = ast.parse(source).body[0]
    loop = fn.body[1]
    assert iteration_locals(fn.body, loop) == {"a", "e", "g"}


@st.composite
def nested_view_write_programs(draw):
    """A loop of more than UNROLL_LIMIT trips (one loop), a short loop inside it, and a write
    through a view at the outer index (`S[E] += ...`, a window at a traced start) inside a branch
    or directly in the inner loop: the view's start belongs to the enclosing loop's trace."""
    outer = draw(st.integers(UNROLL_LIMIT + 1, UNROLL_LIMIT + 3))
    inner = draw(st.integers(1, 3))
    write = draw(st.sampled_from(["S[E] += G[E - w]", "S[E, :] = S[E, :] * 0.5 + G[E - w]",
                                  "S[E][1:] -= G[E - w][:-1]", "S[E - w] += 1.0", "row = S[E]\n        row *= 2.0"]))
    cond = draw(st.sampled_from([None, "E - w >= 0", "E - w >= 1", "G[E - w, 0] > 3.0"]))
    lines = [f"for E in range({outer}):", f"    for w in range({inner}):"]
    if cond is None:
        lines += ["        " + part for part in write.replace("\n        ", "\n").splitlines()]
    else:
        lines += [f"        if {cond}:"] + ["            " + part for part in write.replace("\n        ", "\n").splitlines()]
    return outer, "def prog(S, G):\n" + "\n".join("    " + line for line in lines) + "\n    return S\n"


@settings(max_examples=40, deadline=None)
@given(nested_view_write_programs())
def test_writes_through_views_at_an_enclosing_loop_index(case):
    """Writing through `S[E]` inside a branch or a short inner loop, with E the enclosing loop's
    index: the write-back reads the index as the nested trace captured it (it read the enclosing
    trace's variable, and the program failed verification: NPBench's scattering_self_energies
    at NE > 4)."""
    outer, source = case
    filename = f"<nested view write {next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    prog = namespace["prog"]
    G = np.arange(outer * 4, dtype=np.float64).reshape(outer, 4) / 3.0
    for backend in HOST_BACKENDS:
        check(prog, np.ones((outer, 4)), G, backend=backend)
