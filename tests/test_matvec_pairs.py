"""`A @ v` and `w @ A` of one matrix run as one sweep over the matrix on the CPU backend
(backends/cpu/matvec_pairs.py): NumPy's values (within tolerance: the column products add their
blocks in order), and no pairing where a step between the two products writes the matrix, the
later product's vector or its source. The generator covers both orders, the chain
`(A @ x) @ A`, vectors made between the products (copies, scaled copies) and writes between
them; the sweep is forced on small matrices by lowering its size threshold and block size."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel.backends.cpu import matvec_pairs
from tests.helpers import assert_matches_numpy, run_on_copies

# chain: `(A @ v) @ A`; chain_cols: `A @ (w @ A)` (square A), which needs every column first.
ORDERS = ("rows_first", "cols_first", "chain", "chain_cols")
BETWEEN = ("none", "other", "write_matrix", "write_vector", "scaled_vector", "reversed_vector",
           "write_result_source")


def make(order: str, between: str, made_inside: bool = False):
    """One program of the class: two products of `A`, something between them; with
    `made_inside`, of a matrix the function makes (whose buffer a write may update in place)."""
    def f(A0, v, w, u):
        A = A0 * 2.0 if made_inside else A0
        if order in ("cols_first", "chain_cols"):
            z = w @ A
        else:
            y = A @ v
        extra = u + 1.0
        if between == "write_matrix":
            A[0] = 0.5  # the later product must read the written matrix
        if between == "write_vector":
            w[0] = 7.0
            v[0] = 7.0
        if between == "write_result_source":
            u[0] = 3.0
        later_w, later_v, y_used, z_used = w, v, None, None
        if between == "scaled_vector":
            later_w, later_v = w * 2.0, v * 2.0
        if between == "reversed_vector":
            later_w, later_v = w[::-1], v[::-1]
        if order == "cols_first":
            y = A @ later_v
        elif order == "chain":
            y_used = y * 2.0 if between == "scaled_vector" else (y[::-1] if between == "reversed_vector" else y)
            z = y_used @ A
        elif order == "chain_cols":
            z_used = z * 2.0 if between == "scaled_vector" else (z[::-1] if between == "reversed_vector" else z)
            y = A @ z_used
        else:
            z = later_w @ A
        return y, z, extra
    f.__name__ = f"{order}_{between}{'_made_inside' if made_inside else ''}"
    return f


def runtime_steps(f, *args) -> list[str]:
    return [getattr(s, "prim", type(s).__name__) for s in f.lower(*args).compiled.executable.steps]


@pytest.fixture
def sweep_always(monkeypatch):
    """Every pair takes the blocked sweep, in blocks of 3 rows of 8 bytes per column."""
    monkeypatch.setattr(matvec_pairs, "PAIRED_MIN_BYTES", 0)
    monkeypatch.setattr(matvec_pairs, "BLOCK_BYTES", 24)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # the patch holds for every input
@given(order=st.sampled_from(ORDERS), between=st.sampled_from(BETWEEN), made_inside=st.booleans(),
       m=st.integers(1, 13), n=st.integers(1, 11), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**16))
def test_paired_products_match_numpy(sweep_always, order, between, made_inside, m, n, dtype, seed):
    rng = np.random.default_rng(seed)
    if order == "chain_cols":
        n = m
    A = rng.standard_normal((m, n)).astype(dtype)
    args = (A, rng.standard_normal(n).astype(dtype), rng.standard_normal(m).astype(dtype),
            rng.standard_normal(3).astype(dtype))
    f = make(order, between, made_inside)
    want = run_on_copies(f, *args)
    got = run_on_copies(jk.jit(f), *args)
    assert got[0] == want[0] == "ok"
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert_matches_numpy(got[1], want[1], **tol)
    assert_matches_numpy(got[2], want[2], **tol)  # the arguments as the call left them


@pytest.mark.parametrize("made_inside", [False, True])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("between", BETWEEN)
def test_which_programs_pair(order, between, made_inside):
    """The sweep is used where it is safe, never where a step between the products writes the
    matrix or the later vector, or computes the later vector from the first product."""
    rng = np.random.default_rng(0)
    n = 6 if order == "chain_cols" else 5
    args = (rng.standard_normal((6, n)), rng.standard_normal(n), rng.standard_normal(6), rng.standard_normal(3))
    steps = runtime_steps(jk.jit(make(order, between, made_inside)), *args)
    chained = order in ("chain", "chain_cols")
    later_vector_written = between == "write_vector" and not chained
    made_from_first = chained and between in ("scaled_vector", "reversed_vector")
    if between == "write_matrix" or later_vector_written or made_from_first or order == "chain_cols":
        assert "matvec_pair" not in steps and steps.count("dot_general") == 2, steps
    elif between not in ("scaled_vector", "reversed_vector"):  # made from an argument: anywhere
        assert "matvec_pair" in steps and "dot_general" not in steps, steps


@pytest.mark.parametrize("order", ORDERS)
def test_a_large_matrix_takes_the_sweep_and_matches_numpy(order):
    """At its real threshold (8 MiB) and block size: float64, 1100 x 1000."""
    rng = np.random.default_rng(1)
    n = 1100 if order == "chain_cols" else 1000
    args = (rng.standard_normal((1100, n)), rng.standard_normal(n), rng.standard_normal(1100),
            rng.standard_normal(3))
    f = make(order, "none")
    assert args[0].nbytes >= matvec_pairs.PAIRED_MIN_BYTES
    assert ("matvec_pair" in runtime_steps(jk.jit(f), *args)) == (order != "chain_cols")
    assert_matches_numpy(jk.jit(f)(*args), f(*args), rtol=1e-11, atol=1e-11)


def test_a_small_matrix_is_multiplied_whole_bit_for_bit():
    """Below the threshold the pair is NumPy's two products on the same operands."""
    rng = np.random.default_rng(2)
    A, v, w = rng.standard_normal((30, 20)), rng.standard_normal(20), rng.standard_normal(30)
    f = make("rows_first", "none")
    y, z, _ = jk.jit(f)(A, v, w, np.zeros(3))
    assert np.array_equal(y, A @ v) and np.array_equal(z, w @ A)
