"""Random index expressions (test_advanced_indexing's generator: ints, slices with any bounds
and steps, None, Ellipsis, integer arrays that broadcast or not, in range or out of it) as
gathers, scatters and ufunc.at on backend="cuda-emulator" (backends/cuda/index_layout.py
places the result's dimensions): NumPy's values and errors. The GPU's IndexError may name
another of several bad indices than NumPy's (its check is parallel), never another exception."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy
from test_advanced_indexing import _traced_index_function, _traced_ufunc_at, index_expressions, scatter_value

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")
EMU = "cuda-emulator"
FORMS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False)


def _run(f, *args):
    """(result, None) or (None, exception) of a call; a refusal of the renderer is an outcome too."""
    try:
        return f(*args), None
    except (IndexError, ValueError, TypeError, OverflowError, jk.UnsupportedOperationError) as e:
        return None, e


def _same_outcome(got, got_error, want, want_error) -> None:
    if want_error is not None:
        assert type(got_error) is type(want_error), (got_error, want_error)
        return
    if isinstance(got_error, jk.UnsupportedOperationError):
        return  # refused naming the step: never a wrong answer
    assert got_error is None, got_error
    assert_matches_numpy(got, want)


@FORMS
@given(expr=index_expressions())
def test_random_gathers(expr) -> None:
    shape, index = expr
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    f, arrays = _traced_index_function(index)
    want, want_error = _run(lambda: x[index])
    got, got_error = _run(jk.jit(f, backend=EMU), x, *arrays)
    _same_outcome(got, got_error, want, want_error)


@FORMS
@given(expr=index_expressions(), data=st.data())
def test_random_scatters(expr, data) -> None:
    shape, index = expr
    x = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    value = scatter_value(x, index, data, mismatch=False)
    positions = [k for k, e in enumerate(index) if isinstance(e, np.ndarray)]
    arrays = [index[k] for k in positions]

    def update(x, v, *arrays):
        ix = list(index)
        for k, a in zip(positions, arrays):
            ix[k] = a
        y = x * 1
        y[tuple(ix)] = v
        return y

    want, want_error = _run(update, x, value, *arrays)
    got, got_error = _run(jk.jit(update, backend=EMU), x, value, *arrays)
    _same_outcome(got, got_error, want, want_error)


@FORMS
@given(expr=index_expressions(), ufunc=st.sampled_from([np.add, np.maximum, np.subtract]))
def test_random_ufunc_at(expr, ufunc) -> None:
    shape, index = expr
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) % 5
    g, arrays = _traced_ufunc_at(index, ufunc, np.int32(-2))
    want, want_error = _run(g, x, *arrays)
    got, got_error = _run(jk.jit(g, backend=EMU), x, *arrays)
    _same_outcome(got, got_error, want, want_error)
