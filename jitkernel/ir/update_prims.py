"""`update_slice`: the functional form of a write into a static basic-index region.

`update_slice(base, value; starts, steps)` is `base` with `base[region] = value`, where the
region is `starts[d] + steps[d] * i` for `0 <= i < value.shape[d]` in every dimension `d`
(steps may be negative, never zero): the inverse of the `slice` primitive, which the in-place
machinery (trace/views.py) emits for a write through a sliced view.
"""
from __future__ import annotations

import numpy as np

from .primitives import Primitive, register
from .types import AType


def region_index(starts: tuple[int, ...], steps: tuple[int, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """The basic index of the region (a negative step's stop may pass 0: then None)."""
    index = []
    for s, st, n in zip(starts, steps, shape):
        stop = s + st * n
        index.append(slice(s, stop if stop >= 0 else None, st))
    return tuple(index)


def _update_slice_rule(in_avals: list[AType], *, starts: tuple[int, ...], steps: tuple[int, ...]) -> list[AType]:
    base, value = in_avals
    if base.dtype != value.dtype:
        raise TypeError(f"update_slice: value dtype {value.dtype} differs from base dtype {base.dtype}")
    if not (len(starts) == len(steps) == base.ndim == value.ndim):
        raise ValueError(f"update_slice: ranks differ: base {base.shape}, value {value.shape}, starts {starts}")
    for d, (s, st, n, size) in enumerate(zip(starts, steps, value.shape, base.shape)):
        if st == 0 or (n > 0 and not (0 <= s < size and 0 <= s + st * (n - 1) < size)):
            raise ValueError(f"update_slice out of bounds in dimension {d}: start {s}, step {st}, length {n}, size {size}")
    return [base]


def _update_slice_impl(base: np.ndarray, value: np.ndarray, *, starts: tuple[int, ...], steps: tuple[int, ...]) -> list[np.ndarray]:
    out = np.array(base, copy=True)
    out[region_index(starts, steps, np.shape(value))] = value
    return [out]


register(Primitive("update_slice", "structural", _update_slice_rule, _update_slice_impl))
