"""64-bit and complex types through every kind of operation on the TPU backends. The chip's XLA
has no float64 or complex128 (it emulates them with float32 pairs) and no rewrite at all for
some operations on them: a 64-bit integer product failed with UNIMPLEMENTED (numpy-100 #66,
`np.dot(I.astype(np.uint32), [1, 256, 65536])`), a float64 -> complex128 convert aborted the
process (NPBench's scattering_self_energies). Each program here mixes the types a NumPy user
mixes (an operation on each dtype, every cast between them, a float32 or complex64 program with
a float64 or complex128 value inside) and must give NumPy's answer, on the chip (backend "tpu",
`make tpu-check`) and on tpu-interpret; the chip's compiler must never see a type it aborts on
(backends/tpu/chip_limits.py reads the lowered text, checked here on every program)."""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jitkernel as jk  # noqa: E402
from helpers import assert_matches_numpy, on_host  # noqa: E402
from tpu_suite import have_jax, tpu_backends  # noqa: E402

pytestmark = pytest.mark.skipif(not have_jax(), reason="JAX is not installed (the test extra brings it)")

DTYPES = [np.int32, np.int64, np.uint64, np.float32, np.float64, np.complex64, np.complex128]

OPS = {
    "add": lambda a, b: a + b,
    "multiply": lambda a, b: a * b,
    "matmul": lambda a, b: a @ b.T,
    "dot_vector": lambda a, b: np.dot(a, b[0]),
    "einsum": lambda a, b: np.einsum("ij,ij->i", a, b),
    "sum": lambda a, b: a.sum(axis=0),
    "cumsum": lambda a, b: np.cumsum(a, axis=1),
    "prod": lambda a, b: a.prod(axis=1),
    "mean": lambda a, b: a.mean(),
    "take": lambda a, b: a[:, [2, 0, 1, 3]],
    "where": lambda a, b: np.where(a.real > 1, a, b),
    "scatter_add": lambda a, b: np.add.at(a, ([0, 0, 2], [1, 1, 3]), b[0, :3]) or a,
    "mixed_python_complex": lambda a, b: a * 1j + b,
    "with_float64_value": lambda a, b: (a * np.float64(0.5)).astype(a.dtype),
    "with_complex128_value": lambda a, b: (a * np.complex128(0.5 + 1j)).astype(a.dtype)
    if np.dtype(a.dtype).kind == "c" else (a + np.abs(np.complex128(3 + 4j))).astype(a.dtype),
}


def _operands(dtype) -> tuple[np.ndarray, np.ndarray]:
    a = (np.arange(12).reshape(3, 4) % 5 + 1).astype(dtype)
    b = (np.arange(12).reshape(3, 4)[::-1] % 4 + 2).astype(dtype)
    return a, b


def _same(f, *args, backend: str) -> None:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = f(*[a.copy() for a in args])
        got = on_host(jk.jit(f, backend=backend)(*[a.copy() for a in args]))
    assert_matches_numpy(got, want, rtol=1e-5 if np.result_type(*args).itemsize <= 8 else None)


@pytest.mark.parametrize("backend", tpu_backends())
@pytest.mark.parametrize("op", sorted(OPS))
def test_each_operation_on_each_dtype(backend, op):
    for dtype in DTYPES:
        _same(OPS[op], *_operands(dtype), backend=backend)


@pytest.mark.parametrize("backend", tpu_backends())
def test_every_cast(backend):
    for source in DTYPES + [np.uint8, np.bool_]:
        for target in DTYPES + [np.uint8]:
            x = _operands(source)[0]
            _same(lambda a: a.astype(target) * 2, x, backend=backend)


@pytest.mark.parametrize("backend", tpu_backends())
def test_a_64_bit_integer_product_and_an_image_packed_into_integers(backend):
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3)).astype(np.uint8)
    _same(lambda I: np.dot(I.astype(np.uint32), [1, 256, 65536]), image, backend=backend)  # numpy-100 #66
    big = np.array([[2**62, 3], [5, 7]], np.int64)
    _same(lambda a, b: a @ b, big, big.T.copy(), backend=backend)  # wraps as NumPy's does


def test_the_chip_never_gets_a_type_its_compiler_aborts_on():
    """The check between lowering and the chip's compiler (chip_limits.py) on the lowered text of
    real programs, float32, complex64 (float32 pairs, products through float64 on purpose) and
    64-bit integer ones (their products are host steps): none holds complex128 or a 64-bit
    integer product; text that does is refused."""
    import jax
    from jitkernel.backends.tpu.chip_limits import ChipWouldAbort, refuse_chip_aborts
    from jitkernel.backends.tpu.lowering import lower
    from jitkernel.passes.complex_lower import lower_complex

    def lowered_text(f, *args):
        program = lower_complex(jk.make_ir(f)(*args))[0]
        specs = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in program.invars]
        with jax.enable_x64(True):
            return jax.jit(lower(program).fn).lower(*specs).as_text()

    f32, i64 = np.ones((3, 4), np.float32), np.ones((3, 3), np.int64)
    for f, args in [(lambda a: (a * 2 + 1).sum(axis=0), (f32,)), (lambda a: np.abs(a * 1j) @ a.T, (f32,)),
                    (lambda a: np.exp(a.astype(np.complex64)).sum(), (f32,)), (lambda a, b: a @ b, (i64, i64)),
                    (lambda a: np.einsum("ij,jk->ik", a, a), (i64,))]:
        refuse_chip_aborts(lowered_text(f, *args))
    for line, what in [("%1 = stablehlo.convert %0 : (tensor<f64>) -> tensor<complex<f64>>", "complex128"),
                       ("%9 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] : (tensor<2x2xi64>, "
                        "tensor<2x2xi64>) -> tensor<2x2xi64>", "a 64-bit integer product")]:
        with pytest.raises(ChipWouldAbort) as refused:
            refuse_chip_aborts(lowered_text(lambda a: a + 1, f32) + "\n" + line)
        assert refused.value.what == what
