"""jk.random: explicit, counter-based random keys, bit-compatible with JAX's defaults
(threefry2x32, `jax_threefry_partitionable=True`).

A key is a uint32[2] array (JAX's legacy raw keys; `key(seed)` returns the same array, the one
difference from JAX's typed keys). Every function takes the key explicitly; the same key gives
the same numbers, so split it (`split`, `fold_in`) for independent streams. The generator is
Threefry-2x32 written in ordinary uint32 operations, so inside a jitted function it fuses into
the kernels that use the numbers; called outside one, each function runs compiled (`jk.jit`,
cached per shape and static parameters) and returns NumPy arrays.

Defaults are NumPy's: float64 (uniform, normal, truncated_normal), int64 (randint, choice,
permutation of a range); these give JAX's numbers with jax_enable_x64=True. Pass
dtype=np.float32 / np.int32 for JAX's x64-off defaults; `bits` defaults to uint32.

>>> import numpy as np, jitkernel as jk
>>> key = jk.random.PRNGKey(0)
>>> k1, k2 = jk.random.split(key)
>>> @jk.jit
... def noisy(x, key):
...     return x + 0.1 * jk.random.normal(key, x.shape)
>>> noisy(np.zeros(3), k1).shape
(3,)
"""
from __future__ import annotations

import numpy as np

from ..trace.tracer import Tracer
from ._dispatch import run
from ._samplers import (PRNGKey, bernoulli, bits, categorical, choice, fold_in, key, normal, permutation, randint, split,
                        truncated_normal, uniform)
from ._threefry import threefry2x32 as _threefry2x32_tracers

__all__ = ["PRNGKey", "key", "split", "fold_in", "bits", "uniform", "normal", "truncated_normal", "bernoulli",
           "categorical", "randint", "permutation", "choice", "threefry2x32"]


def threefry2x32(key: tuple[int, int], counter: tuple[int, int]) -> tuple:
    """The Threefry-2x32 block function (20 rounds) on uint32 words or arrays: key words
    (k0, k1), counter words (x0, x1); returns (y0, y1).

    >>> import jitkernel as jk
    >>> [hex(int(w)) for w in jk.random.threefry2x32((0, 0), (0, 0))]
    ['0x6b200159', '0x99ba4efe']
    """
    words = tuple(w if isinstance(w, Tracer) else np.asarray(w, dtype=np.uint32) for w in (*key, *counter))
    if any(np.dtype(w.dtype) != np.uint32 for w in words):
        raise TypeError(f"threefry2x32 requires uint32 arguments, got {[str(w.dtype) for w in words]}")
    return run("threefry2x32", _threefry2x32_tracers, words, {})
