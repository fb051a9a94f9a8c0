"""Loop and branch state carried several times as one value (passes/equal_state.py): merged only
where the body keeps it one value, NumPy's answers either way; counts of selections by one mask
merged, so their length checks are proved (passes/int_ranges.py)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel.ir import AType, Eqn, Program, Var
from jitkernel.passes import optimize

UPDATES = {
    "double": lambda s, k: s[k] * 2,
    "inc": lambda s, k: s[k] + 1,
    "double_first": lambda s, k: s[0] * 2,
    "flip": lambda s, k: s[k][::-1],
    "keep": lambda s, k: s[k],
}


def _loop_carries(fn, *args) -> list[int]:
    text = jk.jit(fn).lower(*args).as_text("optimized")
    return [line.split(" = ")[0].count(":") for line in text.splitlines() if "_loop[" in line]


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(sorted(UPDATES)), min_size=3, max_size=3), st.booleans(), st.integers(0, 6),
       st.integers(0, 2**16))
def test_equal_initial_carries_match_numpy(kinds, branchy, n, seed):
    x = np.random.default_rng(seed).standard_normal(5)

    def fn(x, n):
        a = b = c = x * 2  # three carries of one initial variable
        for i in range(n):
            s = (a, b, c)
            new = (UPDATES[kinds[0]](s, 0), UPDATES[kinds[1]](s, 1), UPDATES[kinds[2]](s, 2))
            if branchy:
                if a.sum() > 1:
                    new = (new[0], new[1] - 1, new[2])
            a, b, c = new
        return a, b, c

    expected = fn(x, n)
    for backend in ("cpu", "interpret"):
        got = jk.jit(fn, backend=backend)(x, np.int64(n))
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_array_equal(g, e)


def test_carries_merged_only_where_the_body_keeps_them_equal():
    def same(x, n):
        a = b = x * 2
        for i in range(n):
            a, b = a * 2, b * 2
        return a, b

    def different(x, n):
        a = b = x * 2
        for i in range(n):
            a, b = a * 2, b + 1
        return a, b

    args = (np.ones(3), np.int64(4))
    (merged,), (kept,) = _loop_carries(same, *args), _loop_carries(different, *args)
    assert merged == kept - 1  # (the loop also carries its trip counter)
    np.testing.assert_array_equal(jk.jit(different)(*args)[1], different(np.ones(3), 4)[1])


def test_comparing_an_integer_with_itself_proves_the_check():
    c = Var(AType((), np.dtype(np.int64)))
    f = Var(AType((), np.dtype(np.float64)))
    flags = [Var(AType((), np.dtype(bool))) for _ in range(2)]
    outs = [Var(AType((), np.dtype(np.int64))), Var(AType((), np.dtype(np.float64)))]
    check = {"exception": "ValueError", "message": "differ"}
    prog = Program([c, f], [], [], [Eqn("not_equal", [c, c], [flags[0]], {}),
                                    Eqn("raise_if", [c, flags[0]], [outs[0]], check),
                                    Eqn("not_equal", [f, f], [flags[1]], {}),  # NaN != NaN: kept
                                    Eqn("raise_if", [f, flags[1]], [outs[1]], check)], outs)
    assert [e.prim for e in optimize(prog).eqns].count("raise_if") == 1


def test_selections_by_one_mask_carry_one_count():
    def fn(z, c, n):
        first = abs(c) < 10
        z, c = z[first], c[first]
        for i in range(n):
            if not len(z):
                break
            z = z * z + c
            keep = abs(z) <= 2
            z, c = z[keep], c[keep]
        return z, c

    rng = np.random.default_rng(0)
    z, c = rng.standard_normal(50) + 0j, rng.standard_normal(50) + 1j * rng.standard_normal(50)
    text = jk.jit(fn).lower(z, c, np.int64(8)).as_text("optimized")
    body = text[text.index("while_loop"):]
    for backend in ("cpu", "interpret"):
        for got, exp in zip(jk.jit(fn, backend=backend)(z, c, np.int64(8)), fn(z, c, 8)):
            np.testing.assert_array_equal(got, exp)
    assert body.count("raise_if") == 0  # one count: z * z + c needs no length check
    other = jk.jit(fn_two_masks).lower(z, c, np.int64(8)).as_text("optimized")
    assert "raise_if" in other[other.index("_loop["):]  # counts that may differ on entry


def fn_two_masks(z, c, n):
    z, c = z[abs(z) < 10], c[abs(c) < 10]
    for i in range(n):
        z = z * z + c
        keep = abs(z) <= 2
        z, c = z[keep], c[keep]
    return z, c


def shrink_by_two_masks(x, y, n):
    m = x > -10
    x, y = x[m], y[m]  # one count on entry
    for i in range(n):
        x, y = x[x > 0.1], y[y > -0.5]  # then selections by different masks of one count
        x, y = x - 0.1, y - 0.1
    return x, y


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(st.integers(1, 30), st.integers(0, 5), st.integers(0, 2**16))
def test_selections_by_different_masks_keep_their_lengths(size, n, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1, 1, size), rng.uniform(-1, 1, size)
    expected = shrink_by_two_masks(x, y, n)
    for backend in ("cpu", "interpret"):
        for got, exp in zip(jk.jit(shrink_by_two_masks, backend=backend)(x, y, np.int64(n)), expected):
            assert got.shape == exp.shape
            np.testing.assert_array_equal(got, exp)


def two_selections_of_one_array(x, n):
    x = x[x > -10]
    last = x[x > 0.5]
    for i in range(n):
        last = x[x > 0.5]  # two selections of x in one trip: one count, two masks
        x = x[x > 0.1] - 0.1
    return x, last


@settings(max_examples=10, deadline=None, derandomize=True, database=None)
@given(st.integers(1, 30), st.integers(0, 5), st.integers(0, 2**16))
def test_two_selections_of_one_array_by_different_masks(size, n, seed):
    x = np.random.default_rng(seed).uniform(-1, 1, size)
    expected = two_selections_of_one_array(x, n)
    for backend in ("cpu", "interpret"):
        for got, exp in zip(jk.jit(two_selections_of_one_array, backend=backend)(x, np.int64(n)), expected):
            assert got.shape == exp.shape
            np.testing.assert_array_equal(got, exp)
