"""Library steps inside control-flow bodies on the GPU backends (docs/gpu.md, "Control flow on
the GPU"): a fori_loop, while_loop, scan or cond whose body holds a matmul (the tile step), a
complex library step or a gather/scatter step runs as a host-driven LoopStep/BranchStep whose
body plans are those step kinds, checked against NumPy loops on `cuda-emulator` and on
`backend="cuda"` over the emulated GPU, and every program compiled by nvcc in one run."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from cuda_corpus import Case, assert_compiles_with_nvcc, kernel_program, module_of, needs_nvcc
from complex_compare import assert_matches as assert_matches_numpy
from jitkernel import lax
from jitkernel.backends.cuda import emulator, flow
from jitkernel.backends.cuda.executor import step_kind
from jitkernel.device_array import DeviceArray, emulate_gpu

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

RNG = np.random.default_rng(11)
W = (RNG.standard_normal((8, 8)) * 0.4).astype(np.float32)
H0 = RNG.standard_normal((4, 8)).astype(np.float32)
TABLE = np.linspace(-2.0, 2.0, 12)
IDX = np.array([3, 0, 11, 5, 5, 7])
Z0 = (np.linspace(-1, 1, 6) + 1j * np.linspace(0.5, -0.5, 6)).astype(np.complex128)


def rnn(h0, w, n):
    """The RNN-style loop users write: the body is a matmul step then a kernel."""
    return lax.fori_loop(0, n, lambda i, h: np.tanh(h @ w), h0)


def rnn_reference(h0, w, n):
    h = h0.copy()
    for _ in range(int(n)):
        h = np.tanh(h @ w)
    return h


def while_gather(table, idx):
    """A while loop whose body gathers (a gather step) and scatters with np.add.at."""
    def body(c):
        x, k = c
        y = x.copy()
        np.add.at(y, idx, table[idx] * 0.5)
        return y, k + 1
    return lax.while_loop(lambda c: c[1] < 3, body, (table * 1.0, 0))


def while_gather_reference(table, idx):
    x = table * 1.0
    for _ in range(3):
        y = x.copy()
        np.add.at(y, idx, table[idx] * 0.5)
        x = y
    return x, 3


def scan_matmul(h0, w):
    """scan over rows of xs, the body a matmul: fusion turns it into a fori_loop on the GPU too."""
    return lax.scan(lambda h, x: (np.tanh(h @ w + x), h.sum()), h0, np.ones((3, 8), np.float32))


def scan_matmul_reference(h0, w):
    h, ys = h0.copy(), []
    for x in np.ones((3, 8), np.float32):
        ys.append(h.sum())
        h = np.tanh(h @ w + x)
    return h, np.array(ys, np.float32)


def cond_matmul(k, h0, w):
    return lax.cond(k > 0, lambda h: h @ w, lambda h: h @ w.T * 2.0, h0)


def cond_matmul_reference(k, h0, w):
    return h0 @ w if k > 0 else h0 @ w.T * np.float32(2.0)


def complex_loop(z, n):
    """A complex carry and a complex library step (exp) in the body."""
    return lax.fori_loop(0, n, lambda i, c: np.exp(c * 0.5j) + c.sum() * 0.01, z)


def complex_loop_reference(z, n):
    c = z.copy()
    for _ in range(int(n)):
        c = np.exp(c * 0.5j) + c.sum() * 0.01
    return c


XS = np.stack([Z0 * 0.1 * k for k in range(4)])


def complex_scan(z, xs):
    """scan with a complex carry and complex ys (stacked packed), a complex exp and sum inside."""
    return lax.scan(lambda c, x: (c * x + 1j, np.exp(c).sum()), z, xs)


def complex_scan_reference(z, xs):
    c, ys = z.copy(), []
    for x in xs:
        ys.append(np.exp(c).sum())
        c = c * x + 1j
    return c, np.array(ys)


def complex_while(z):
    return lax.while_loop(lambda c: np.abs(c).sum() < 50, lambda c: c * (1 + 1j), z)


def complex_while_reference(z):
    c = z.copy()
    while np.abs(c).sum() < 50:
        c = c * (1 + 1j)
    return c


def complex_cond(k, z):
    return lax.cond(k > 0, lambda a: np.sqrt(a) * 2, lambda a: np.log(a + 3), z)


def complex_cond_reference(k, z):
    return np.sqrt(z) * 2 if k > 0 else np.log(z + 3)


CASES = [
    Case("rnn-odd", rnn, (H0, W, np.int64(5)), 1e-5),
    Case("rnn-even", rnn, (H0, W, np.int64(4)), 1e-5),
    Case("while-gather", while_gather, (TABLE, IDX)),
    Case("scan-matmul", scan_matmul, (H0, W), 1e-5),
    Case("cond-matmul", cond_matmul, (np.int64(1), H0, W), 1e-5),
    Case("complex-loop", complex_loop, (Z0, np.int64(3)), 1e-12),
    Case("complex-scan", complex_scan, (Z0, XS), 1e-12),
    Case("complex-while", complex_while, (Z0,), 1e-12),
    Case("complex-cond-true", complex_cond, (np.int64(1), Z0), 1e-12),
    Case("complex-cond-false", complex_cond, (np.int64(0), Z0), 1e-12),
]
REFERENCES = {"rnn-odd": rnn_reference, "rnn-even": rnn_reference, "while-gather": while_gather_reference,
              "scan-matmul": scan_matmul_reference, "cond-matmul": cond_matmul_reference,
              "complex-loop": complex_loop_reference, "complex-scan": complex_scan_reference,
              "complex-while": complex_while_reference, "complex-cond-true": complex_cond_reference,
              "complex-cond-false": complex_cond_reference}


def to_host(d: DeviceArray):
    """A DeviceArray's host value as jit's host results are (a 0-d one as a NumPy scalar)."""
    a = np.asarray(d)
    return a[()] if a.ndim == 0 else a


@pytest.fixture(scope="module", autouse=True)
def prebuilt() -> list:
    modules = [module_of(c) for c in CASES]
    emulator.prebuild(modules)
    return modules


def body_kinds(plans: list) -> set[str]:
    """The step kinds inside the control plans of a module (nested ones included)."""
    kinds: set[str] = set()
    for plan in plans:
        subs = (plan.cond + plan.body if isinstance(plan, flow.LoopPlan) else
                [p for br in plan.branches for p in br] if isinstance(plan, flow.BranchPlan) else [])
        kinds |= {step_kind(p) for p in subs} | body_kinds(subs)
    return kinds


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_library_steps_in_bodies_match_numpy_on_the_emulator(case: Case) -> None:
    got = jk.jit(case.fn, backend="cuda-emulator")(*case.args)
    assert_matches_numpy(got, REFERENCES[case.name](*case.args), rtol=case.rtol)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_library_steps_in_bodies_on_backend_cuda_over_the_emulated_gpu(case: Case) -> None:
    with emulate_gpu():
        got = jk.jit(case.fn, backend="cuda")(*case.args)
        leaves = got if isinstance(got, tuple) else (got,)
        assert all(isinstance(g, DeviceArray) for g in leaves)
        host = tuple(to_host(g) for g in leaves)
    assert_matches_numpy(host if isinstance(got, tuple) else host[0], REFERENCES[case.name](*case.args),
                         rtol=case.rtol)


def test_bodies_hold_the_library_step_kinds(prebuilt) -> None:
    """The loops are control plans (not refused library steps) whose bodies run the tile,
    gather/scatter and complex step kinds."""
    kinds = set()
    for m in prebuilt:
        assert any(isinstance(p, (flow.LoopPlan, flow.BranchPlan)) for p in m.launches), m.name
        kinds |= body_kinds(m.launches)
    assert "tiles" in kinds  # the matmul's tile step (matmul_step.py)
    assert "kernels" in kinds


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 6), k=st.integers(-2, 2))
def test_rnn_and_cond_any_trip_count(n: int, k: int) -> None:
    """Any trip count (0: the initial value; odd and even: the spare buffer) and either branch."""
    assert_matches_numpy(jk.jit(rnn, backend="cuda-emulator")(H0, W, np.int64(n)),
                         rnn_reference(H0, W, n), rtol=1e-5)
    assert_matches_numpy(jk.jit(cond_matmul, backend="cuda-emulator")(np.int64(k), H0, W),
                         cond_matmul_reference(k, H0, W), rtol=1e-5)


def test_a_body_with_a_library_step_the_gpu_lacks_raises_naming_it() -> None:
    with pytest.raises(jk.UnsupportedOperationError, match=r"control flow 'fori_loop'.*library step \('partition'\)"):
        jk.jit(lambda x: lax.fori_loop(0, 2, lambda i, c: np.partition(c, 1) @ W, x), backend="cuda-emulator")(H0)


def test_cpu_backend_keeps_library_bodies_python_driven() -> None:
    """The CPU's native loops hold kernels only: a product too large for a fused reduction keeps
    the loop Python-driven; a small one (this rnn's 4x8 by 8x8) becomes a reduction in a native
    loop (passes/loop_dots.py)."""
    from jitkernel.fusion import schedule
    from jitkernel.fusion.kernel_ir import LibraryCall
    from jitkernel.fusion.loops import all_steps, is_control
    case = CASES[0]
    compiled = jk.jit(case.fn, backend="interpret").lower(*case.args).compiled
    steps = schedule(compiled.optimized).steps
    assert any(is_control(s) for s in steps)
    assert not any(isinstance(sub, LibraryCall) for s in steps if is_control(s) for sub in all_steps([s]))
    big = (RNG.standard_normal((64, 64)) * 0.1).astype(np.float32)
    h0 = RNG.standard_normal((32, 64)).astype(np.float32)
    compiled = jk.jit(rnn, backend="interpret").lower(h0, big, np.int64(3)).compiled
    assert not any(is_control(s) for s in schedule(compiled.optimized).steps)
    assert any(is_control(s) for s in kernel_program(case).steps)
    assert_matches_numpy(jk.jit(rnn)(H0, W, np.int64(3)), rnn_reference(H0, W, 3), rtol=1e-5)
    assert_matches_numpy(jk.jit(rnn)(h0, big, np.int64(3)), rnn_reference(h0, big, 3), rtol=1e-5)


@needs_nvcc
def test_every_program_compiles_with_nvcc(prebuilt) -> None:
    assert_compiles_with_nvcc(prebuilt)  # the two rnn cases are one source (n is an argument)


@pytest.mark.parametrize("backend", ["cuda-emulator", "cuda"])
def test_new_batch_sizes_compile_for_their_sizes(backend: str) -> None:
    """A third size makes a program shape-generic; a matmul has no run-time-extent form yet, so
    that signature compiles for its own sizes (emulator.render_shape_generic) instead of raising:
    for a top-level matmul and for one inside a loop body."""
    with emulate_gpu():
        loop = jk.jit(rnn, backend=backend)
        plain = jk.jit(lambda a, w: np.tanh(a @ w), backend=backend)
        for batch in (4, 6, 9):
            h0 = np.random.default_rng(batch).standard_normal((batch, 8)).astype(np.float32)
            assert_matches_numpy(to_host(loop(h0, W, np.int64(3))), rnn_reference(h0, W, 3), rtol=1e-5)
            assert_matches_numpy(to_host(plain(h0, W)), np.tanh(h0 @ W), rtol=1e-5)


def test_as_text_cuda_of_a_cpu_function_renders_the_loop_with_its_matmul() -> None:
    """`as_text("cuda")` schedules as the CUDA backends do, whatever backend compiled the function."""
    source = jk.jit(rnn).lower(H0, W, np.int64(3)).as_text("cuda")
    assert "a fori loop driven from the host" in source and "_fori_k0_dot_general" in source
    complex_source = jk.jit(complex_loop).lower(Z0, np.int64(3)).as_text("cuda")
    assert "a fori loop driven from the host" in complex_source
