"""Library steps: any primitive of kind "library" runs through its reference implementation on
the CPU backend, with one buffer per output, and its results feed fused kernels."""
import numpy as np
import pytest

import jitkernel as jk
from jitkernel.ir import AType, primitives
from jitkernel.trace import current_context
from helpers import HOST_BACKENDS

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


@pytest.mark.parametrize("backend", HOST_BACKENDS)
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


BAD = "test_only_wrong_result"


@pytest.fixture(params=["dtype", "shape"])
def wrong_result_primitive(request):
    """A library primitive whose implementation disagrees with its own shape rule."""
    if request.param == "dtype":
        impl = lambda a: [a.astype(np.float32)]  # noqa: E731  (rule says float64)
    else:
        impl = lambda a: [a.reshape(1, -1)]  # noqa: E731  (same data, rule says 1-d)
    primitives.register(primitives.Primitive(BAD, "library", lambda avals: [avals[0]], impl))
    yield request.param
    del primitives.PRIMITIVES[BAD]


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_a_library_result_unlike_its_rule_raises_instead_of_being_converted(wrong_result_primitive, backend):
    # The CPU runtime used to cast and reshape such a result into the buffer, which hid a
    # complex reduction packed as (1, 2) instead of (2,): a bug must not become an answer.
    def f(a):
        (r,) = current_context().bind(BAD, [a * 1.0])
        return r + 1
    with pytest.raises(Exception, match="float32|shape|1, 4"):
        jk.jit(f, backend=backend)(np.arange(4.0))
