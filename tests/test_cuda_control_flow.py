"""Control flow on backend="cuda-emulator" (docs/gpu.md, "Control flow on the GPU"): fori_loop,
while_loop, cond/switch and scan steps, host-driven over kernels of the one translation unit,
against plain Python/NumPy loops; every program of the module compiled by nvcc in one run and
by the host compiler in one run (emulator.prebuild)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from cuda_corpus import Case, assert_compiles_with_nvcc, kernel_program, module_of, needs_nvcc
from helpers import assert_matches_numpy
from jitkernel import lax
from jitkernel.backends.cuda import emulator, flow
from jitkernel.backends.cuda.render import render_program

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

X = np.linspace(-1.0, 2.0, 70)
M = np.linspace(-1.0, 1.0, 3 * 40, dtype=np.float32).reshape(3, 40)


def fori_array_and_scalar(x, n):
    """An array carry and a 0-d carry, a run-time trip count (odd and even: the last value is in
    the output or in the spare buffer)."""
    return lax.fori_loop(0, n, lambda i, c: (c[0] * 0.5 + i, c[1] + c[0].sum()), (x, 0.0))


def fori_reference(x, n):
    c, s = x.copy(), 0.0
    for i in range(int(n)):
        c, s = c * 0.5 + i, s + c.sum()
    return c, np.float64(s)


def while_doubling(x):
    return lax.while_loop(lambda c: c.sum() < 1000.0, lambda c: c * 2.0 + 1.0, x)


def while_reference(x):
    c = x.copy()
    while c.sum() < 1000.0:
        c = c * 2.0 + 1.0
    return c


def switch3(k, m):
    """lax.switch clamps the index; the branches are a row reduction, a softmax, an elementwise."""
    return lax.switch(k, [lambda v: v - v.max(axis=1, keepdims=True),
                          lambda v: np.exp(v) / np.exp(v).sum(axis=1, keepdims=True),
                          lambda v: v * 3.0], m)


def switch_reference(k, m):
    k = min(max(int(k), 0), 2)
    if k == 0:
        return m - m.max(axis=1, keepdims=True)
    if k == 1:
        return np.exp(m) / np.exp(m).sum(axis=1, keepdims=True)
    return m * np.float32(3.0)


def cumulative_scan(x):
    return lax.scan(lambda c, xi: (c + xi, c * xi), 0.0, x)


def scan_reference(x):
    c, ys = 0.0, []
    for xi in x:
        ys.append(c * xi)
        c = c + xi
    return np.float64(c), np.array(ys)


def nested(m, n):
    """A fori_loop inside a fori_loop inside a cond."""
    inner = lambda j, c: c + np.sin(c) * 0.1
    body = lambda i, c: lax.fori_loop(0, 3, inner, c) * 0.9
    return lax.cond(n > 2, lambda v: lax.fori_loop(0, n, body, v), lambda v: v - 1.0, m)


def nested_reference(m, n):
    if not n > 2:
        return m - np.float32(1.0)
    c = m.copy()
    for _ in range(int(n)):
        for _ in range(3):
            c = c + np.sin(c) * np.float32(0.1)
        c = c * np.float32(0.9)
    return c


def in_place_carry(x, n):
    """A carry the body updates in its own buffer (a running prefix, x[i] = x[i-1] + x[i]). As in
    Python's loop, the body writes the caller's array itself (docs/numpy-support.md, "Control
    flow (jk.lax)"): the tests pass copies."""
    def body(i, c):
        c[i] = c[i - 1] + c[i]
        return c
    return lax.fori_loop(1, n, body, x)


def in_place_reference(x, n):
    c = x  # the caller's array, as Python's loop writes it
    for i in range(1, int(n)):
        c[i] = c[i - 1] + c[i]
    return c


CASES = [Case("fori", fori_array_and_scalar, (X, np.int64(5))),
         Case("while", while_doubling, (X,)),
         Case("switch", switch3, (np.int32(1), M)),
         Case("scan", cumulative_scan, (X,)),
         Case("nested", nested, (M, np.int64(3))),
         Case("in-place", in_place_carry, (X, np.int64(40)))]
REFERENCES = {"fori": fori_reference, "while": while_reference, "switch": switch_reference, "scan": scan_reference,
              "nested": nested_reference, "in-place": in_place_reference}


@pytest.fixture(scope="module", autouse=True)
def prebuilt() -> list:
    modules = [module_of(c) for c in CASES]
    emulator.prebuild(modules)
    return modules


def run(fn, *args):
    return jk.jit(fn, backend="cuda-emulator")(*args)


def _copies(args: tuple) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def check(name: str, *args) -> None:
    """The jitted case and its Python reference, each on copies of the arguments: the same result
    and the same arguments after the call."""
    case = next(c for c in CASES if c.name == name)
    got_args, want_args = _copies(args), _copies(args)
    got = run(case.fn, *got_args)
    expected = REFERENCES[name](*want_args)
    assert_matches_numpy(got, expected, rtol=1e-5 if M.dtype == np.float32 else None)
    for g, w in zip(got_args, want_args):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_control_flow_matches_the_python_loop(case: Case) -> None:
    check(case.name, *case.args)


def test_every_control_step_renders_as_a_plan_with_kernels_of_its_own(prebuilt) -> None:
    for case, module in zip(CASES, prebuilt):
        plans = [p for p in module.launches if isinstance(p, (flow.LoopPlan, flow.BranchPlan))]
        assert plans, case.name
        names = [launch.name for launch in flow.iter_launches(module.launches)]
        assert all(f'void {n}(' in module.kernels for n in names) and len(set(names)) == len(names)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(-2, 9), scale=st.floats(-3, 3))
def test_fori_trip_counts(n: int, scale: float) -> None:
    """Zero, negative, odd and even trip counts (the result in the output or the spare)."""
    check("fori", X * scale, np.int64(n))


@settings(max_examples=25, deadline=None)
@given(k=st.integers(-3, 5), n=st.integers(0, 5))
def test_switch_clamps_and_nested_loops(k: int, n: int) -> None:
    check("switch", np.int32(k), M)
    check("nested", M, np.int64(n))


@settings(max_examples=15, deadline=None)
@given(start=st.floats(-0.45, 50), n=st.integers(0, 70))
def test_while_data_dependent_trips_and_in_place_carries(start: float, n: int) -> None:
    # A positive sum grows to the bound: a diverging one would end where the sum overflows,
    # which depends on the order of the sum (a tree on the GPU, pairwise in NumPy).
    check("while", X + start)
    check("in-place", X * start, np.int64(n))


def test_results_do_not_depend_on_the_launch_shape() -> None:
    case = next(c for c in CASES if c.name == "nested")
    kp = kernel_program(case)
    module = render_program(kp)
    lib = emulator.library(module)
    expected = nested_reference(*case.args)
    for policy in (emulator.LaunchPolicy(32, 1), emulator.LaunchPolicy(96, 5)):
        (out,) = emulator.EmulatedProgram(kp, module, lib, policy)(list(case.args))
        assert_matches_numpy(out, expected, rtol=1e-5)


def test_loop_of_library_steps_raises_naming_it() -> None:
    with pytest.raises(jk.UnsupportedOperationError, match="control flow 'fori_loop'.*library step"):
        run(lambda x: lax.fori_loop(0, 2, lambda i, c: np.partition(c, 1), x), X)


@needs_nvcc
def test_every_program_compiles_with_nvcc(prebuilt) -> None:
    assert_compiles_with_nvcc(prebuilt)


def test_backend_cuda_drives_loops_with_device_buffers() -> None:
    """backend="cuda" on an emulated GPU: the same step runners over the device's buffers
    (copy_into / read_scalar / write_scalar), results as DeviceArrays."""
    from jitkernel.device_array import emulate_gpu
    with emulate_gpu():
        for name, args in (("nested", (M, np.int64(4))), ("while", (X,)), ("in-place", (X, np.int64(9)))):
            c = next(c for c in CASES if c.name == name)
            out = jk.jit(c.fn, backend="cuda")(*_copies(args))
            assert_matches_numpy(np.asarray(out), REFERENCES[name](*_copies(args)), rtol=1e-5)
