"""ndarray subclasses: plain data subclasses are arrays, subclasses with their own semantics are
rejected naming the type."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from helpers import assert_matches_numpy


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_semantic_subclasses_are_rejected_naming_the_type():
    f = jk.jit(lambda x: x * x)
    f(np.ones((2, 2)))  # registers the fast path for plain arrays of this shape
    with pytest.raises(TypeError, match="numpy.matrix"):
        f(np.matrix(np.ones((2, 2))))
    with pytest.raises(TypeError, match="MaskedArray"):
        jk.jit(lambda x: x.sum())(np.ma.masked_array([1.0, 2.0], mask=[0, 1]))

    class Custom(np.ndarray):
        def __array_ufunc__(self, *a, **k):
            return NotImplemented
    with pytest.raises(TypeError, match="Custom"):
        jk.jit(lambda x: x + 1)(np.ones(2).view(Custom))
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="numpy.matrix"):
        jk.jit(lambda x: x * m)(np.ones((2, 2)))   # a constant of the program


def test_plain_data_subclasses_are_arrays(tmp_path):
    mm = np.memmap(tmp_path / "m.dat", dtype=np.float32, mode="w+", shape=(4,))
    mm[:] = [1, 2, 3, 4]
    assert_matches_numpy(jk.jit(lambda x: (x * 2).sum())(mm), np.asarray(mm * 2).sum())

    class Tagged(np.ndarray):
        def __array_finalize__(self, obj):
            self.tag = getattr(obj, "tag", None)
    assert_matches_numpy(jk.jit(lambda x: x + 1)(np.ones(2).view(Tagged)), np.ones(2) + 1)
