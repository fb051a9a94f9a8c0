"""A name bound on some run-time paths only, read after a compiled loop or `if`
(jitkernel/autograph/runtime.py MaybeBound, `read`): the target of a `for` over a run-time range
that runs zero times, a name first bound in the body of a loop that may run zero times, or in
one branch of an `if` on a traced value. Python raises UnboundLocalError where the name is read
on a path that did not bind it; jitkernel checks that at run time (a `raise_if` step) instead of
returning the placeholder the conversion carries, and a name never read costs nothing."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
import emulator_suite

CUDA_EMULATOR_SUITE = True  # the `backend` fixture also runs cuda-emulator (tests/emulator_suite.py)
TPU_SUITE = True  # and on tpu-interpret (tests/tpu_suite.py)


def target_after_loop(n):
    for i in range(n):
        pass
    return i


def first_bound_in_loop(x, n):
    for i in range(n):
        y = x * i
    return y


def first_bound_in_branch(x):
    if x.sum() > 0:
        z = x + 1
    return z


def first_bound_in_while(x, n):
    k = 0
    while k < n:
        y = x * k
        k += 1
    return y


def target_in_expression(x, n):
    for i in range(n):
        x = x + i
    return x * 0 + i


def augmented_after_branch(x):
    if x.sum() > 0:
        z = x + 1
    z += 2
    return z


def bound_in_branch_inside_loop(x, n):
    for i in range(n):
        if x[0] > i:
            y = x + i
    return y


def read_only_on_the_bound_path(x):
    if x.sum() > 0:
        z = x + 1
    if x.sum() > 0:
        return z
    return x - 1


def bound_before(x, n):
    i, y = -7, x
    for i in range(n):
        y = x * i
    return y + i


def float_target_before(x, n):
    i = 0.5  # a number of another type before the loop: kept where no iteration ran
    for i in range(n):
        x = x + i
    return x * 0 + i


def read_in_a_while_test(x, n):
    if x.sum() > 0:
        y = x
    k = 0
    while k < n and y.sum() > -100:  # `k < n` false first: y is not read
        k += 1
    return k


def never_read(x, n):
    for i in range(n):
        y = x * i  # noqa: F841 (the unused name is what the test traces)
    if x.sum() > 0:
        z = x  # noqa: F841 (the unused name is what the test traces)
    return x + 1


x3 = np.arange(3.0)
CASES = [
    (target_after_loop, (0,)), (target_after_loop, (3,)),
    (first_bound_in_loop, (x3, 0)), (first_bound_in_loop, (x3, 3)),
    (first_bound_in_branch, (-x3,)), (first_bound_in_branch, (x3,)),
    (first_bound_in_while, (x3, 0)), (first_bound_in_while, (x3, 3)),
    (target_in_expression, (x3, 0)), (target_in_expression, (x3, 2)),
    (augmented_after_branch, (-x3,)), (augmented_after_branch, (x3,)),
    (bound_in_branch_inside_loop, (x3, 0)), (bound_in_branch_inside_loop, (x3 + 1, 2)),
    (bound_in_branch_inside_loop, (x3, 1)),
    (read_only_on_the_bound_path, (-x3,)), (read_only_on_the_bound_path, (x3,)),
    (bound_before, (x3, 0)), (bound_before, (x3, 3)),
    (float_target_before, (x3, 0)), (float_target_before, (x3, 2)),
    (read_in_a_while_test, (x3, 3)), (read_in_a_while_test, (-x3, 3)), (read_in_a_while_test, (-x3, 0)),
    (never_read, (-x3, 0)), (never_read, (x3, 2)),
]


def _python(fn, args):
    try:
        return fn(*args), None
    except Exception as e:  # the exception type is part of the comparison
        return None, e


def _assert_like_python(fn, args, backend: str) -> None:
    expected, error = _python(fn, args)
    jitted = jk.jit(fn, backend=backend)
    if error is not None:
        with pytest.raises(type(error)) as info:
            jitted(*args)
        assert type(info.value) is type(error)
        assert str(error) in str(info.value)  # Python's message naming the variable, then the line
        return
    np.testing.assert_array_equal(np.asarray(jitted(*args)), np.asarray(expected), strict=False)


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{f.__name__}-{k}" for k, (f, _) in enumerate(CASES)])
def test_read_after_construct_matches_python(backend, fn, args):
    _assert_like_python(fn, args, backend)


def test_message_names_the_variable_and_the_users_line(backend):
    with pytest.raises(UnboundLocalError, match=r"local variable 'y'.*test_unbound_after_control_flow.py:\d+ "
                                                r"\(`return y`\)"):
        jk.jit(first_bound_in_loop, backend=backend)(x3, 0)


def test_unread_names_add_no_check(backend):
    """A name bound on some paths and never read adds no run-time check to the program (and
    never raises); a read one adds one."""
    assert "raise_if" not in str(jk.make_ir(never_read)(x3, 2))
    assert "raise_if" in str(jk.make_ir(first_bound_in_loop)(x3, 2))
    np.testing.assert_array_equal(jk.jit(never_read, backend=backend)(-x3, 0), -x3 + 1)


def squared_norm_of_first_bound(x, n):
    for i in range(n):
        y = x * i
    return (y * y).sum()


def test_gradient_through_the_check():
    np.testing.assert_array_equal(jk.grad(squared_norm_of_first_bound)(x3, 3), 2 * x3 * 4)
    with pytest.raises(UnboundLocalError):
        jk.grad(squared_norm_of_first_bound)(x3, 0)


# ----------------------------------------------------------------------------- generated programs


def _program(kind: str, bound_before: bool, read_after: bool, what: str) -> str:
    """A small function of (x, n) with one construct of `kind` that binds `what` ("target": the
    loop variable, "body": a name first bound inside) and maybe binds it before and reads it
    after."""
    name = "i" if what == "target" else "y"
    lines = ["def f(x, n):"]
    if bound_before:  # (an array bound before keeps its shape: a traced `if` may not change it)
        lines.append(f"    {name} = -7" if what == "target" else f"    {name} = x * 0 - 7")
    if kind == "for":
        lines += ["    for i in range(n):", "        y = x * i" if what == "body" else "        x = x + i"]
    elif kind == "while":
        lines += ["    i = 0", "    while i < n:", "        y = x * i" if what == "body" else "        x = x + i",
                  "        i += 1"]
    else:  # an `if` on a traced value: n > 0 decides
        lines += ["    if x[0] * 0 + n > 0:", f"        {name} = x * 2"]
    lines.append(f"    return x + {name}" if read_after else "    return x + 1")
    return "\n".join(lines)


def _compiled(source: str):
    """The function defined by `source`, with a linecache entry so that autograph converts it."""
    import linecache
    filename = f"<unbound-after-{abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(textwrap.dedent(source), filename, "exec"), namespace)
    return namespace["f"]


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(kind=st.sampled_from(["for", "while", "if"]), bound_before=st.booleans(), read_after=st.booleans(),
       what=st.sampled_from(["target", "body"]), trips=st.sampled_from([0, 1, 3]), traced=st.booleans(),
       backend=st.sampled_from(emulator_suite.DRAWN_BACKENDS))
def test_generated_programs_match_python(kind, bound_before, read_after, what, trips, traced, backend):
    if kind == "if" and what == "target":
        what = "body"
    fn = _compiled(_program(kind, bound_before, read_after, what))
    x = np.arange(1.0, 4.0)
    expected, error = _python(fn, (x, trips))
    jitted = jk.jit(fn, backend=backend, static_argnames=() if traced else ("n",))
    if error is not None:
        with pytest.raises(type(error)):
            jitted(x, trips)
        return
    np.testing.assert_array_equal(np.asarray(jitted(x, trips)), np.asarray(expected), strict=False)
