"""The standard's set functions (unique_all, unique_counts, unique_inverse, unique_values) over
jitkernel.numpy.unique. Their results have data-dependent shapes: inside jit they are what
jitkernel.numpy supports for such values (returned from the jitted function or reduced), and
every NaN is its own unique value, as the standard says.

>>> import numpy as np
>>> unique_counts(np.array([2, 1, 2]))
UniqueCountsResult(values=array([1, 2]), counts=array([1, 2]))
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import numpy as jnp


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def unique_all(x: Any, /) -> UniqueAllResult:
    values, indices, inverse, counts = jnp.unique(jnp.reshape(x, (-1,)), return_index=True, return_inverse=True,
                                                  return_counts=True, equal_nan=False)
    return UniqueAllResult(values, indices, jnp.reshape(inverse, x.shape), counts)


def unique_counts(x: Any, /) -> UniqueCountsResult:
    values, counts = jnp.unique(jnp.reshape(x, (-1,)), return_counts=True, equal_nan=False)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    values, inverse = jnp.unique(jnp.reshape(x, (-1,)), return_inverse=True, equal_nan=False)
    return UniqueInverseResult(values, jnp.reshape(inverse, x.shape))


def unique_values(x: Any, /) -> Any:
    return jnp.unique(jnp.reshape(x, (-1,)), equal_nan=False)


FUNCTIONS = {f.__name__: f for f in (unique_all, unique_counts, unique_inverse, unique_values)}
