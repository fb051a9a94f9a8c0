"""Threefry-2x32 (20 rounds) and the counter layout of JAX's partitionable random bits, as
ordinary uint32 array operations on Tracers.

Everything here runs inside a trace and binds ordinary primitives (add, shifts, bitwise or/xor,
iota, convert, select): the generator fuses into the kernels that consume its bits, compiles
like any other elementwise code, and gives the same bits on every backend (no host-side
generation, no library step).

Key layout (as JAX's legacy keys): a key is uint32[2], the Threefry key words (k0, k1).
Counters (as `jax._src.random.prng.iota_2x32_shape`): element i (row-major) of a result of
shape S is hashed from the 64-bit counter i split into its (hi, lo) words; bits for 32-bit
results are out0 ^ out1, for 64-bit results (out0 << 32) | out1, for 8/16-bit results the low
bits of out0 ^ out1 (JAX's `_threefry_random_bits_partitionable`).

Reference: Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11), Threefry-2x32
with the Skein rotation constants.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..trace.tracer import Tracer
from ..transforms import ops

U32 = np.dtype(np.uint32)
U64 = np.dtype(np.uint64)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: U32, 64: U64}

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA  # Skein's key-schedule parity constant


def _rotate_left(x: Tracer, d: int) -> Tracer:
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def threefry2x32(k0: Tracer, k1: Tracer, x0: Tracer, x1: Tracer) -> tuple[Tracer, Tracer]:
    """The Threefry-2x32 block function: key words (k0, k1), counter words (x0, x1), all uint32
    and broadcast together; returns the two output words. Additions wrap modulo 2**32."""
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(_PARITY))
    x0 = x0 + ks[0]
    x1 = x1 + ks[1]
    for block in range(5):  # 5 blocks of 4 rounds, a key injection after each block
        for r in _ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = _rotate_left(x1, r) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + (ks[(block + 2) % 3] + np.uint32(block + 1))  # the injection counter, on the scalar key word
    return x0, x1


def key_words(key: Tracer) -> tuple[Tracer, Tracer]:
    """The two uint32 words of a key (uint32[2]) as 0-d Tracers.

    A masked sum rather than `key[0]`: vmap over a batch of keys then needs only the batching
    rules of elementwise ops and reductions, which every build has."""
    words = []
    for i in range(2):
        mask = ops.const(np.array([i == 0, i == 1], dtype=U32), U32)
        words.append(ops.reduce_sum(ops.mul(key, mask), (0,)))
    return words[0], words[1]


def make_key(k0: Tracer, k1: Tracer) -> Tracer:
    """uint32[2] from two 0-d words."""
    return stack_last(k0, k1, ())


def stack_last(a: Tracer, b: Tracer, shape: Sequence[int]) -> Tracer:
    """`np.stack([a, b], axis=-1)` for two uint32 arrays of `shape`, as an elementwise select
    (fuses, and vmaps with the elementwise rules)."""
    shape = tuple(shape)
    out_shape = shape + (2,)
    dims = tuple(range(len(shape)))
    which = ops.bind1("iota", shape=out_shape, dimension=len(shape), dtype=U32)
    first = ops.bind1("equal", which, ops.full(out_shape, 0, U32))
    return ops.select(first, ops.broadcast_in_dim(a, out_shape, dims), ops.broadcast_in_dim(b, out_shape, dims))


def counters(shape: Sequence[int], offset: int = 0) -> tuple[Tracer, Tracer]:
    """(hi, lo) uint32 words of `offset + flat index` for every element of `shape` (row-major)."""
    shape = tuple(int(d) for d in shape)
    size = math.prod(shape)
    if size + offset > 2 ** 64:
        raise NotImplementedError("random bits array of size exceeding 2 ** 64")
    if not shape:
        return ops.const(offset >> 32, U32), ops.const(offset & 0xFFFFFFFF, U32)
    wide = size + offset > 2 ** 32
    dtype = U64 if wide else U32
    flat = None
    stride = 1
    for d in reversed(range(len(shape))):
        term = ops.bind1("iota", shape=shape, dimension=d, dtype=dtype)
        if stride != 1:
            term = ops.mul(term, ops.full(shape, stride, dtype))
        flat = term if flat is None else ops.add(flat, term)
        stride *= shape[d]
    if offset:
        flat = ops.add(flat, ops.full(shape, offset, dtype))
    if not wide:
        return ops.full(shape, 0, U32), flat
    hi = ops.convert(ops.bind1("right_shift", flat, ops.full(shape, 32, U64)), U32)
    return hi, ops.convert(flat, U32)


def random_bits(k0: Tracer, k1: Tracer, shape: Sequence[int], width: int, offset: int = 0) -> Tracer:
    """Unsigned random integers of `width` bits for every element of `shape`, as JAX's
    partitionable threefry bits. `offset` shifts the counters: the bits of `(2, *shape)` are
    `random_bits(shape)` followed by `random_bits(shape, offset=prod(shape))`."""
    hi, lo = counters(shape, offset)
    b0, b1 = threefry2x32(k0, k1, hi, lo)
    if width == 32:
        return b0 ^ b1
    if width == 64:
        return (ops.convert(b0, U64) << np.uint64(32)) | ops.convert(b1, U64)
    return ops.convert(b0 ^ b1, UINT_DTYPES[width])


def subkey(k0: Tracer, k1: Tracer, index: int) -> tuple[Tracer, Tracer]:
    """The words of `split(key, n)[index]` (the same for every n >= index + 1: split is counter
    based, key i is the hash of counter (0, i))."""
    return threefry2x32(k0, k1, ops.const(0, U32), ops.const(index, U32))
