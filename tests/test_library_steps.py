"""Library steps: any primitive of kind "library" runs through its reference implementation on
the CPU backend, with one buffer per output, and its results feed fused kernels."""
import numpy as np
import pytest

import jitkernel as jk
from jitkernel.ir import AType, primitives
from jitkernel.trace import current_context

NAME = "test_only_eigh"


@pytest.fixture
def eigh_primitive():
    primitives.register(primitives.Primitive(
        NAME, "library", lambda avals: [AType(avals[0].shape[:-1], avals[0].dtype), avals[0]],
        lambda a: [np.asarray(x) for x in np.linalg.eigh(a)]))
    yield
    del primitives.PRIMITIVES[NAME]


def _f(a):
    w, v = current_context().bind(NAME, [a * 1.0])
    return w * 2, v.T + 1, (v * v).sum(axis=0)


@pytest.mark.parametrize("backend", ["cpu", "interpret"])
def test_multi_output_library_step_feeds_kernels(eigh_primitive, backend):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 5))
    a = a + a.T
    w2, vt1, norms = jk.jit(_f, backend=backend)(a)
    w, v = np.linalg.eigh(a)
    np.testing.assert_allclose(w2, w * 2)
    np.testing.assert_allclose(vt1, v.T + 1)
    np.testing.assert_allclose(norms, np.ones(5))
    assert w2.dtype == np.float64 and vt1.shape == (5, 5)


def test_library_step_is_printed_with_all_outputs(eigh_primitive):
    text = jk.jit(_f).lower(np.eye(3)).as_text("kernels")
    line = next(ln for ln in text.splitlines() if NAME in ln)
    assert line.count("%") == 3, line  # two outputs and one input
