"""The standard's manipulation functions (concat, permute_dims, unstack, ...) over jitkernel.numpy.

>>> import numpy as np
>>> concat([np.zeros(2), np.ones(1)]).tolist(), [a.tolist() for a in unstack(np.eye(2))]
([0.0, 0.0, 1.0], [[1.0, 0.0], [0.0, 1.0]])
"""
from __future__ import annotations

from typing import Any

from .. import numpy as jnp


def broadcast_arrays(*arrays: Any) -> list:
    return list(jnp.broadcast_arrays(*arrays))


def broadcast_to(x: Any, /, shape: tuple[int, ...]) -> Any:
    return jnp.broadcast_to(x, shape)


def concat(arrays: Any, /, *, axis: int | None = 0) -> Any:
    """Join arrays along `axis` (None: flattened first); dtypes promote as the standard says."""
    return jnp.concat(tuple(arrays), axis=axis)


def expand_dims(x: Any, /, axis: int = 0) -> Any:
    return jnp.expand_dims(x, axis)


def flip(x: Any, /, *, axis: Any = None) -> Any:
    return jnp.flip(x, axis=axis)


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    return jnp.moveaxis(x, source, destination)


def permute_dims(x: Any, /, axes: tuple[int, ...]) -> Any:
    return jnp.permute_dims(x, axes)


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    return jnp.repeat(x, repeats, axis=axis)


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
    out = jnp.reshape(x, shape)
    return jnp.copy(out) if copy is True else out


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    return jnp.roll(x, shift, axis=axis)


def squeeze(x: Any, /, axis: Any) -> Any:
    return jnp.squeeze(x, axis=axis)


def stack(arrays: Any, /, *, axis: int = 0) -> Any:
    return jnp.stack(tuple(arrays), axis=axis)


def tile(x: Any, repetitions: tuple[int, ...], /) -> Any:
    return jnp.tile(x, repetitions)


def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    return tuple(jnp.unstack(x, axis=axis))


FUNCTIONS = {f.__name__: f for f in (broadcast_arrays, broadcast_to, concat, expand_dims, flip, moveaxis,
                                     permute_dims, repeat, reshape, roll, squeeze, stack, tile, unstack)}
