"""The public jk.random functions: argument checks in Python (JAX's messages), then the
implementation on Tracers (`_*_impl`), run in the active trace or compiled (`_dispatch.run`).

Static: shapes, dtypes, axis, replace, mode, and the population size of `choice`/`permutation`
when given as an int. Traced: keys and every array parameter (minval, maxval, p, logits, lower,
upper, the array to permute or choose from).
"""
from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from ..trace.tracer import Tracer
from ..transforms import ops, stop_gradient
from ._dispatch import run
from ._special import erf, erfinv, fma, log1p_as_xla, next_up
from ._threefry import U32, U64, UINT_DTYPES, key_words, make_key, random_bits, stack_last, subkey, threefry2x32
from ._threefry import counters

DEFAULT_FLOAT = np.dtype(np.float64)  # NumPy's default, = JAX with jax_enable_x64=True
DEFAULT_INT = np.dtype(np.int64)
DEFAULT_UINT = np.dtype(np.uint32)  # bits: JAX's default without x64 (the brief's choice)

Shape = Sequence[int]


# ----------------------------------------------------------------------------- argument checks


def _shape_of(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, Tracer) else np.shape(x)


def _dtype_of(x: Any) -> np.dtype:
    if isinstance(x, Tracer):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if isinstance(x, int):
        return DEFAULT_INT
    if isinstance(x, float):
        return DEFAULT_FLOAT
    if isinstance(x, complex):
        return np.dtype(np.complex128)
    return np.asarray(x).dtype


def _as_key(name: str, key: Any, allow_batched: bool = False) -> Any:
    """A uint32 key array as JAX checks raw keys (`random_wrap` and `_check_prng_key`)."""
    if not isinstance(key, (Tracer, np.ndarray)):
        key = np.asarray(key)
    dtype, shape = _dtype_of(key), _shape_of(key)
    if len(shape) < 1:
        raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; got ndim={len(shape)}")
    if shape[-1] != 2:
        raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.shape to end with (2,); "
                        f"got shape={shape} for impl=threefry2x32")
    if dtype != U32:
        raise TypeError(f"JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; got dtype={dtype}")
    if not allow_batched and len(shape) > 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape {shape[:-1]} != (). "
                         "Use jax.vmap for batching.")
    return key


def _canonical_shape(shape: Any) -> tuple[int, ...]:
    """JAX's `core.canonicalize_shape`: an int or a sequence of ints, each nonnegative."""
    try:
        dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got {shape!r}.") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"Shapes must be 1D sequences of nonnegative integers, got {shape!r}.")
    return dims


def _check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """JAX's `_check_shape`: parameters must broadcast to exactly `shape`."""
    if param_shapes:
        try:
            result = np.broadcast_shapes(shape, *param_shapes)
        except ValueError:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={[shape, *param_shapes]}") from None
        if result != shape:
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape argument, and the "
                             f"result of broadcasting the shapes must equal the shape argument, but got result "
                             f"{result} for shape argument {shape}.")


def _canonical_dtype(dtype: Any, default: np.dtype) -> np.dtype:
    return default if dtype is None else np.dtype(dtype)


def _float_dtype(name: str, dtype: Any, allow_complex: bool = False) -> np.dtype:
    dtype = _canonical_dtype(dtype, DEFAULT_FLOAT)
    if allow_complex and dtype.kind == "c":
        return dtype
    if dtype.kind != "f":
        what = "a float or complex dtype" if allow_complex else "a float dtype"
        raise ValueError(f"dtype argument to `{name}` must be {what}, got {dtype}")
    if dtype.itemsize < 4:
        raise ValueError(f"jk.random.{name} samples float32 and float64 (and complex64/128 for normal), got {dtype}: "
                         "sample float32 and convert")
    return dtype


def _check_width(name: str, dtype: np.dtype) -> np.dtype:
    if dtype.kind in "fc" and dtype.itemsize < (4 if dtype.kind == "f" else 8):
        raise ValueError(f"jk.random.{name} samples float32 and float64, got {dtype}: pass float32 values")
    return dtype


def _c(value: Any, dtype: Any) -> np.ndarray:
    return np.asarray(value, dtype=dtype)


def _convert(x: Tracer, dtype: np.dtype) -> Tracer:
    """x as `dtype` (a Python scalar's weak type is dropped)."""
    out = ops.convert(x, dtype)
    return out if out.weak is None else Tracer(out._ctx, out.ir_var, None)


# ----------------------------------------------------------------------------- keys


def PRNGKey(seed: Any) -> np.ndarray:
    """A key (uint32[2]) from an integer seed, as `jax.random.PRNGKey`: the seed's 64 bits split
    into (high word, low word). A Python int is an int64 (JAX with x64 on: `PRNGKey(-1)` is
    [0xffffffff, 0xffffffff]); a NumPy integer of 32 bits or fewer gives [0, seed as uint32].

    >>> import jitkernel as jk
    >>> jk.random.PRNGKey(42).tolist()
    [0, 42]
    """
    if isinstance(seed, (Tracer, np.ndarray, np.generic)):
        if _shape_of(seed):
            raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape {_shape_of(seed)} != (). "
                            "Use jax.vmap for batching")
        if _dtype_of(seed).kind not in "iu":
            raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    elif isinstance(seed, bool) or not isinstance(seed, int):
        if np.ndim(seed):
            raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape {np.shape(seed)} != (). "
                            "Use jax.vmap for batching")
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    elif not -2 ** 63 <= seed < 2 ** 64:
        raise OverflowError(f"Python int {seed} too large to convert to int64 or uint64 (PRNGKey's seed is 64 bits)")
    elif seed >= 2 ** 63:
        seed = np.uint64(seed)
    return run("PRNGKey", _seed_impl, (seed,), {})


def key(seed: Any) -> np.ndarray:
    """The same as `PRNGKey` (a uint32[2] array). The one difference from JAX: `jax.random.key`
    returns a typed scalar key; jk.random has only the raw uint32[2] keys.

    >>> import jitkernel as jk
    >>> jk.random.key(42).tolist()
    [0, 42]
    """
    return PRNGKey(seed)


def _seed_impl(seed: Tracer) -> Tracer:
    if seed.dtype.itemsize == 8:
        wide = ops.convert(seed, U64)
        hi = ops.convert(ops.bind1("right_shift", wide, ops.const(32, U64)), U32)
    else:  # a logical shift by 32 of a 32-bit (or narrower) seed is 0, as XLA's
        hi = ops.const(0, U32)
    return make_key(hi, ops.convert(seed, U32))


def split(key: Any, num: int | Sequence[int] = 2) -> np.ndarray:
    """`num` new keys (shape (*num, 2)): key i is the hash of counter i, as JAX's partitionable split.

    >>> import jitkernel as jk
    >>> jk.random.split(jk.random.PRNGKey(42)).tolist()
    [[1832780943, 270669613], [64467757, 2916123636]]
    """
    key = _as_key("split", key)
    shape = _canonical_shape(num)
    return run("split", _split_impl, (key,), dict(shape=shape))


def _split_impl(key: Tracer, *, shape: tuple[int, ...]) -> Tracer:
    k0, k1 = key_words(key)
    hi, lo = counters(shape)
    b0, b1 = threefry2x32(k0, k1, hi, lo)
    return stack_last(b0, b1, shape)


def fold_in(key: Any, data: Any) -> np.ndarray:
    """A new key from `key` and a 32-bit integer (`data` modulo 2**32), as `jax.random.fold_in`.

    >>> import jitkernel as jk
    >>> jk.random.fold_in(jk.random.PRNGKey(0), 1).shape
    (2,)
    """
    key = _as_key("fold_in", key)
    if _shape_of(data):
        raise TypeError(f"fold_in accepts a scalar, but was given an array ofshape {_shape_of(data)} != (). "
                        "Use jax.vmap for batching.")
    if _dtype_of(data).kind not in "iub":
        raise TypeError(f"fold_in data must be an integer, got {_dtype_of(data)}")
    if isinstance(data, int) and not isinstance(data, bool):
        data = np.uint32(data % 2 ** 32) if not -2 ** 63 <= data < 2 ** 63 else data
    return run("fold_in", _fold_in_impl, (key, data), {})


def _fold_in_impl(key: Tracer, data: Tracer) -> Tracer:
    k0, k1 = key_words(key)
    b0, b1 = threefry2x32(k0, k1, ops.const(0, U32), _convert(data, U32))
    return make_key(b0, b1)


# ----------------------------------------------------------------------------- bits, uniform


def bits(key: Any, shape: Shape = (), dtype: Any = None) -> np.ndarray:
    """Uniform random unsigned integers (uint32 by default; uint8/16/32/64).

    >>> import jitkernel as jk
    >>> jk.random.bits(jk.random.PRNGKey(0), (3,)).dtype
    dtype('uint32')
    """
    key = _as_key("bits", key)
    dtype = _canonical_dtype(dtype, DEFAULT_UINT)
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    shape = _canonical_shape(shape)
    return run("bits", _bits_impl, (key,), dict(shape=shape, width=dtype.itemsize * 8))


def _bits_impl(key: Tracer, *, shape: tuple[int, ...], width: int) -> Tracer:
    k0, k1 = key_words(key)
    return random_bits(k0, k1, shape, width)


def _unit_floats(k0: Tracer, k1: Tracer, shape: tuple[int, ...], dtype: np.dtype, offset: int = 0) -> Tracer:
    """Floats in [0, 1) from the top `nmant` random bits: m * 2**-nmant, exactly the value of
    JAX's bit trick (mantissa bits under the exponent of 1.0, minus 1.0)."""
    info = np.finfo(dtype)
    nbits, nmant = info.bits, info.nmant
    width = max(nbits, 8)
    raw = random_bits(k0, k1, shape, width, offset)
    mantissa = raw >> _c(width - nmant, UINT_DTYPES[width])
    return ops.convert(mantissa, dtype) * _c(2.0 ** -nmant, dtype)


def _uniform_in(k0: Tracer, k1: Tracer, shape: tuple[int, ...], dtype: np.dtype, minval: Tracer, maxval: Tracer,
                offset: int = 0) -> Tracer:
    """JAX's `_uniform` on Tracers: minval/maxval already of `dtype`, broadcastable to shape."""
    floats = _unit_floats(k0, k1, shape, dtype, offset)
    out = np.maximum(minval, fma(floats, maxval - minval, minval))
    return out if tuple(out.shape) == shape else np.broadcast_to(out, shape)


def uniform(key: Any, shape: Shape = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> np.ndarray:
    """Uniform floats in [minval, maxval) (float64 by default; float32 gives JAX's float32 bits).

    >>> import jitkernel as jk
    >>> u = jk.random.uniform(jk.random.PRNGKey(0), (1000,))
    >>> bool((u >= 0).all() and (u < 1).all()), u.dtype
    (True, dtype('float64'))
    """
    key = _as_key("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    shape = _canonical_shape(shape)
    _check_shape("uniform", shape, _shape_of(minval), _shape_of(maxval))
    return run("uniform", _uniform_impl, (key, minval, maxval), dict(shape=shape, dtype=dtype))


def _uniform_impl(key: Tracer, minval: Tracer, maxval: Tracer, *, shape: tuple[int, ...], dtype: np.dtype) -> Tracer:
    k0, k1 = key_words(key)
    return _uniform_in(k0, k1, shape, dtype, _convert(minval, dtype), _convert(maxval, dtype))


# ----------------------------------------------------------------------------- normal family


def normal(key: Any, shape: Shape = (), dtype: Any = None) -> np.ndarray:
    """Standard normal samples: sqrt(2) * erfinv(u), u uniform in (-1, 1), as JAX (float64 by
    default; complex dtypes have independent real and imaginary parts of variance 1/2).

    >>> import jitkernel as jk
    >>> jk.random.normal(jk.random.PRNGKey(0), (2, 3)).shape
    (2, 3)
    """
    key = _as_key("normal", key)
    shape = _canonical_shape(shape)
    dtype = _float_dtype("normal", dtype, allow_complex=True)
    return run("normal", _normal_impl, (key,), dict(shape=shape, dtype=dtype))


def _normal_real(k0: Tracer, k1: Tracer, shape: tuple[int, ...], dtype: np.dtype) -> Tracer:
    lo = np.nextafter(_c(-1.0, dtype), _c(0.0, dtype))
    u = _uniform_in(k0, k1, shape, dtype, ops.const(lo, dtype), ops.const(1.0, dtype))
    return _c(np.sqrt(2), dtype) * erfinv(u)


def _normal_impl(key: Tracer, *, shape: tuple[int, ...], dtype: np.dtype) -> Tracer:
    k0, k1 = key_words(key)
    if dtype.kind != "c":
        return _normal_real(k0, k1, shape, dtype)
    real = np.dtype(ops.real_dtype(dtype))
    re = _normal_real(*subkey(k0, k1, 0), shape, real)
    im = _normal_real(*subkey(k0, k1, 1), shape, real)
    z = ops.convert(re, dtype) + _c(1j, dtype) * ops.convert(im, dtype)
    return z / _c(np.sqrt(2), dtype)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Shape | None = None, dtype: Any = None) -> np.ndarray:
    """Standard normal samples truncated to the open interval (lower, upper), as JAX: the inverse
    CDF of a uniform sample between erf(lower/sqrt2) and erf(upper/sqrt2), clipped inside.

    >>> import jitkernel as jk
    >>> x = jk.random.truncated_normal(jk.random.PRNGKey(0), -1.0, 1.0, (100,))
    >>> bool((x > -1).all() and (x < 1).all())
    True
    """
    if shape is not None:
        shape = _canonical_shape(shape)
    key = _as_key("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = np.broadcast_shapes(_shape_of(lower), _shape_of(upper))
    else:
        _check_shape("truncated_normal", shape, _shape_of(lower), _shape_of(upper))
    static = dict(shape=tuple(shape), dtype=dtype)
    if dtype == np.float64 and not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        # XLA computes a float64 erf with the C library (float32 with its own polynomial, as
        # _special.erf does): with constant bounds, do the same on the host. One ulp of
        # erf(upper / sqrt2) moves samples near upper = 4 by hundreds of ulp.
        return run("truncated_normal_const", _truncated_normal_const_impl, (key, *_host_bounds(lower, upper, dtype)),
                   static)
    return run("truncated_normal", _truncated_normal_impl, (key, lower, upper), static)


def _host_bounds(lower: Any, upper: Any, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """erf(bound / sqrt2) as XLA computes it for float64 bounds (a multiplication by the
    reciprocal, then the C library's erf) and the bounds' inner neighbours."""
    lower, upper = np.asarray(lower, dtype=dtype), np.asarray(upper, dtype=dtype)
    inv_sqrt2 = _c(1.0, dtype) / _c(np.sqrt(2), dtype)
    erf = np.vectorize(lambda v: math.erf(float(v)), otypes=[np.float64])
    a, b = erf(lower * inv_sqrt2).astype(dtype), erf(upper * inv_sqrt2).astype(dtype)
    return a, b, np.nextafter(lower, _c(np.inf, dtype)), np.nextafter(upper, _c(-np.inf, dtype))


def _truncated_normal_impl(key: Tracer, lower: Tracer, upper: Tracer, *, shape: tuple[int, ...], dtype: np.dtype) -> Tracer:
    # JAX divides by sqrt(2); XLA rewrites a division by a constant as a multiplication by its
    # reciprocal (rounded in the dtype), and a bound one ulp off moves samples near 0 by
    # thousands of ulp: multiply as XLA does.
    inv_sqrt2 = _c(1.0, dtype) / _c(np.sqrt(2), dtype)
    lower, upper = _convert(lower, dtype), _convert(upper, dtype)
    a, b = erf(lower * inv_sqrt2), erf(upper * inv_sqrt2)
    low = next_up(stop_gradient(lower))
    high = -next_up(-stop_gradient(upper))
    return _truncated_normal_between(key, a, b, low, high, shape, dtype)


def _truncated_normal_const_impl(key: Tracer, a: Tracer, b: Tracer, low: Tracer, high: Tracer, *,
                                 shape: tuple[int, ...], dtype: np.dtype) -> Tracer:
    return _truncated_normal_between(key, a, b, low, high, shape, dtype)


def _truncated_normal_between(key: Tracer, a: Tracer, b: Tracer, low: Tracer, high: Tracer, shape: tuple[int, ...],
                              dtype: np.dtype) -> Tracer:
    """sqrt2 * erfinv(uniform(a, b)) clipped to [low, high] (the open interval's inner neighbours:
    rounding, or u == a, must not leave it)."""
    k0, k1 = key_words(key)
    out = _c(np.sqrt(2), dtype) * erfinv(_uniform_in(k0, k1, shape, dtype, a, b))
    return np.minimum(np.maximum(out, low), high)


# ----------------------------------------------------------------------------- discrete


def bernoulli(key: Any, p: Any = 0.5, shape: Shape | None = None, mode: str = "low") -> np.ndarray:
    """Booleans that are True with probability p (uniform(p.dtype) < p, as JAX; mode="high" uses
    two uniforms for small p).

    >>> import jitkernel as jk
    >>> jk.random.bernoulli(jk.random.PRNGKey(0), 0.5, (4,)).dtype
    dtype('bool')
    """
    if shape is not None:
        shape = _canonical_shape(shape)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    key = _as_key("bernoulli", key)
    dtype = _dtype_of(p)
    if dtype.kind != "f":
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
    _check_width("bernoulli", dtype)
    if shape is None:
        shape = _shape_of(p)
    else:
        _check_shape("bernoulli", shape, _shape_of(p))
    return run("bernoulli", _bernoulli_impl, (key, p), dict(shape=tuple(shape), mode=mode, dtype=dtype))


def _bernoulli_impl(key: Tracer, p: Tracer, *, shape: tuple[int, ...], mode: str, dtype: np.dtype) -> Tracer:
    k0, k1 = key_words(key)
    p = _convert(p, dtype)
    zero, one = ops.const(0.0, dtype), ops.const(1.0, dtype)
    if mode == "low":
        return _uniform_in(k0, k1, shape, dtype, zero, one) < p
    u1 = _uniform_in(k0, k1, shape, dtype, zero, one)  # uniform(key, (2, *shape))[0]
    u2 = _uniform_in(k0, k1, shape, dtype, zero, one, offset=math.prod(shape))  # ...[1]
    u2 = u2 * _c(2.0 ** -np.finfo(dtype).nmant, dtype)
    return u2 < p - u1


def _gumbel(k0: Tracer, k1: Tracer, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Tracer:
    """JAX's `_gumbel` ("low" and "high" modes)."""
    info = np.finfo(dtype)
    if mode == "high":
        zero, one = ops.const(0.0, dtype), ops.const(1.0, dtype)
        high = _uniform_in(k0, k1, shape, dtype, zero, one)
        low = _uniform_in(k0, k1, shape, dtype, zero, one, offset=math.prod(shape))
        x = np.where(high >= _c(0.5, dtype), high, high + _c(2.0 ** -info.nmant, dtype) * low + _c(info.tiny, dtype))
        return -np.log(-log1p_as_xla(-x))
    u = _uniform_in(k0, k1, shape, dtype, ops.const(info.tiny, dtype), ops.const(1.0, dtype))
    return -np.log(-np.log(u))


def _top_k_indices(x: Tracer, k: int) -> Tracer:
    """Indices of the k largest along the last axis, largest first, ties by lower index (lax.top_k)."""
    order = np.argsort(-x, axis=-1, kind="stable")
    return order[..., :k]


def categorical(key: Any, logits: Any, axis: int = -1, shape: Shape | None = None, replace: bool = True,
                mode: str | None = None) -> np.ndarray:
    """Samples of categorical distributions given by unnormalised log probabilities (the Gumbel
    max trick; without replacement, Gumbel top-k), as `jax.random.categorical`.

    >>> import numpy as np, jitkernel as jk
    >>> jk.random.categorical(jk.random.PRNGKey(0), np.log([0.5, 0.5]), shape=(3,)).shape
    (3,)
    """
    key = _as_key("categorical", key)
    lshape = _shape_of(logits)
    if not lshape:
        raise ValueError("categorical: logits must have at least one dimension")
    axis = operator.index(axis)
    if not -len(lshape) <= axis < len(lshape):
        raise ValueError(f"axis {axis} is out of bounds for logits of dimension {len(lshape)}")
    batch_shape = tuple(np.delete(np.array(lshape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = _canonical_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    dtype = _dtype_of(logits)
    if dtype.kind != "f":
        dtype = DEFAULT_FLOAT
    _check_width("categorical", dtype)
    mode = _gumbel_mode(mode)
    if not replace:
        k = math.prod(shape[:len(shape) - len(batch_shape)])
        if k > lshape[axis]:
            raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of categories "
                             f"({lshape[axis]}).")
    return run("categorical", _categorical_impl, (key, logits),
               dict(axis=axis, shape=tuple(shape), batch_shape=batch_shape, replace=bool(replace), mode=mode, dtype=dtype))


def _gumbel_mode(mode: str | None) -> str:
    if mode is None:
        return "low"  # JAX's use_high_dynamic_range_gumbel default
    if mode not in ("high", "low"):
        raise ValueError(f"Must specify either 'high' or 'low' for mode, got {mode!r}")
    return mode


def _categorical_impl(key: Tracer, logits: Tracer, *, axis: int, shape: tuple[int, ...], batch_shape: tuple[int, ...],
                      replace: bool, mode: str, dtype: np.dtype) -> Tracer:
    k0, k1 = key_words(key)
    logits = _convert(logits, dtype)
    ndim = logits.ndim
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= ndim
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % ndim, logits.shape[axis])
        g = _gumbel(k0, k1, tuple(prefix) + tuple(logits_shape), dtype, mode)
        expanded = logits.reshape((1,) * len(prefix) + tuple(logits.shape))
        return np.argmax(g + expanded, axis=axis)
    noisy = logits + _gumbel(k0, k1, tuple(logits.shape), dtype, mode)
    k = math.prod(prefix)
    indices = _top_k_indices(np.moveaxis(noisy, axis, -1), k)  # batch_shape + (k,)
    # int32, as JAX's (lax.top_k's indices are int32 whatever jax_enable_x64 says)
    return _convert(np.moveaxis(indices, -1, 0).reshape(shape), np.dtype(np.int32))


def randint(key: Any, shape: Shape, minval: Any, maxval: Any, dtype: Any = None) -> np.ndarray:
    """Uniform integers in [minval, maxval) (int64 by default), as `jax.random.randint`: two
    words of random bits reduced modulo the span (the same small bias as JAX's).

    >>> import jitkernel as jk
    >>> r = jk.random.randint(jk.random.PRNGKey(0), (100,), 0, 10)
    >>> bool(((r >= 0) & (r < 10)).all()), r.dtype
    (True, dtype('int64'))
    """
    key = _as_key("randint", key)
    dtype = _canonical_dtype(dtype, DEFAULT_INT)
    shape = _canonical_shape(shape)
    if dtype.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    return run("randint", _randint_impl, (key, minval, maxval), dict(shape=shape, dtype=dtype))


def _clip_convert(val: Tracer, dtype: np.dtype) -> Tracer:
    """JAX's `_convert_and_clip_integer`: clip to the range both dtypes hold, then convert."""
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(val.dtype).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(val.dtype).max))
    return _convert(np.minimum(np.maximum(val, _c(lo, val.dtype)), _c(hi, val.dtype)), dtype)


def _integer(x: Tracer) -> Tracer:
    return x if x.dtype.kind in "iu" else _convert(x, DEFAULT_INT)


def _rem(a: Tracer, span: Tracer) -> Tracer:
    """a % span for unsigned ints, with XLA's a % 0 == a (span wraps to 0 for a full-range span)."""
    zero = span == _c(0, span.dtype)
    return np.where(zero, a, a % np.where(zero, _c(1, span.dtype), span))


def _randint_impl(key: Tracer, minval: Tracer, maxval: Tracer, *, shape: tuple[int, ...], dtype: np.dtype) -> Tracer:
    info = np.iinfo(dtype)
    minval, maxval = _integer(minval), _integer(maxval)
    if info.bits < 32:  # sampled as int32 with the bounds clipped to dtype's range (less bias)
        i32 = np.dtype(np.int32)
        minval = np.clip(_convert(minval, i32), _c(info.min, i32), _c(info.max, i32))
        maxval = np.clip(_convert(maxval, i32), _c(info.min, i32), _c(int(info.max) + 1, i32))
        return _convert(_randint_words(key, minval, maxval, shape, i32), dtype)
    return _randint_words(key, minval, maxval, shape, dtype)


def _randint_words(key: Tracer, minval: Tracer, maxval: Tracer, shape: tuple[int, ...], dtype: np.dtype) -> Tracer:
    k0, k1 = key_words(key)
    info = np.iinfo(dtype)
    ceiling = min(int(info.max), int(np.iinfo(maxval.dtype).max))  # dtype's max in maxval's dtype, clipped
    out_of_range = maxval > _c(ceiling, maxval.dtype)
    minval, maxval = _clip_convert(minval, dtype), _clip_convert(maxval, dtype)
    nbits = info.bits
    unsigned = UINT_DTYPES[nbits]
    higher = random_bits(*subkey(k0, k1, 0), shape, nbits)
    lower = random_bits(*subkey(k0, k1, 1), shape, nbits)
    span = _convert(maxval - minval, unsigned)
    span = np.where(maxval <= minval, _c(1, unsigned), span)  # maxval <= minval: always minval
    span = np.where(out_of_range & (maxval > minval), span + _c(1, unsigned), span)
    # (hi * 2**nbits + lo) % span without overflow: 2**nbits % span = (2**(nbits/2) % span)**2 % span
    multiplier = _rem(_c(2 ** (nbits // 2), unsigned), span)
    multiplier = _rem(multiplier * multiplier, span)
    offset = _rem(_rem(higher, span) * multiplier + _rem(lower, span), span)
    return minval + _convert(offset, dtype)


# ----------------------------------------------------------------------------- permutations


def _shuffle(k0: Tracer, k1: Tracer, x: Tracer, axis: int) -> Tracer:
    """JAX's `_shuffle`: sort by fresh 32-bit random keys, enough rounds that collisions are
    unlikely (3 * log(n) / log(2**32 - 1) rounds; one below ~1600 elements)."""
    size = math.prod(x.shape)
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        (k0, k1), (s0, s1) = subkey(k0, k1, 0), subkey(k0, k1, 1)
        sort_keys = random_bits(s0, s1, tuple(x.shape), 32)
        order = np.argsort(sort_keys, axis=axis, kind="stable")
        x = np.take_along_axis(x, order, axis=axis)
    return x


def _normalize_axis(axis: int, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> np.ndarray:
    """A random permutation of range(x) (x an int) or of x along `axis`, as `jax.random.permutation`.

    >>> import jitkernel as jk
    >>> sorted(jk.random.permutation(jk.random.PRNGKey(0), 5).tolist())
    [0, 1, 2, 3, 4]
    """
    key = _as_key("permutation", key)
    xshape = _shape_of(x)
    axis = _normalize_axis(axis, len(xshape) or 1)
    if not xshape:
        if _dtype_of(x).kind not in "iu":
            raise TypeError("x must be an integer or at least 1-dimensional")
        if isinstance(x, Tracer):
            raise TypeError("permutation: an integer x must be static (a Python or NumPy int: it is the size of the "
                            "result); a traced integer was given")
        return run("permutation_range", _permutation_range_impl, (key,), dict(n=int(x)))
    return run("permutation", _permutation_impl, (key, x), dict(axis=axis, independent=bool(independent)))


def _arange(n: int) -> Tracer:
    return ops.bind1("iota", shape=(n,), dimension=0, dtype=DEFAULT_INT)


def _permutation_range_impl(key: Tracer, *, n: int) -> Tracer:
    k0, k1 = key_words(key)
    return _shuffle(k0, k1, _arange(n), 0)


def _permutation_impl(key: Tracer, x: Tracer, *, axis: int, independent: bool) -> Tracer:
    k0, k1 = key_words(key)
    if independent or x.ndim == 1:
        return _shuffle(k0, k1, x, axis)
    order = _shuffle(k0, k1, _arange(x.shape[axis]), 0)
    return np.take(x, order, axis=axis)


def choice(key: Any, a: Any, shape: Shape = (), replace: bool = True, p: Any = None, axis: int = 0,
           mode: str | None = None) -> np.ndarray:
    """A random sample from `a` (an array, or range(a) for an int), as `jax.random.choice`:
    with replacement, uniform (randint) or weighted (inverse CDF of p); without, a permutation
    prefix or, with p, Gumbel top-k.

    >>> import jitkernel as jk
    >>> jk.random.choice(jk.random.PRNGKey(0), 10, (3,), replace=False).shape
    (3,)
    """
    key = _as_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    shape = _canonical_shape(shape)
    ashape = _shape_of(a)
    if not ashape:
        if isinstance(a, Tracer) or _dtype_of(a).kind not in "iu":
            raise TypeError("choice: a must be a static int (the population size) or an array")
        n_inputs = int(a)
    else:
        axis = _normalize_axis(axis, len(ashape))
        n_inputs = ashape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        out_shape = shape if not ashape else ashape[:axis] + shape + ashape[axis + 1:]
        return np.zeros(out_shape, dtype=DEFAULT_INT if not ashape else _dtype_of(a))
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) when "
                         f"'replace=False'")
    static = dict(shape=shape, replace=bool(replace), axis=axis, n_inputs=n_inputs, mode=_gumbel_mode(mode))
    arrays: tuple = (key,) if not ashape else (key, a)
    if p is not None:
        if _shape_of(p) != (n_inputs,):
            raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]. p has shape "
                             f"{_shape_of(p)} and a.shape[axis] is {n_inputs}.")
        pdtype = _dtype_of(p)
        static["p_dtype"] = _check_width("choice", pdtype if pdtype.kind in "f" else DEFAULT_FLOAT)
        arrays = arrays + (p,)
    static["has_a"] = bool(ashape)
    static["has_p"] = p is not None
    return run("choice", _choice_impl, arrays, static)


def _choice_impl(key: Tracer, *rest: Tracer, shape: tuple[int, ...], replace: bool, axis: int, n_inputs: int,
                 mode: str, has_a: bool, has_p: bool, p_dtype: np.dtype | None = None) -> Tracer:
    rest = list(rest)
    arr = rest.pop(0) if has_a else None
    p = rest.pop(0) if has_p else None
    k0, k1 = key_words(key)
    if p is None:
        if replace:
            ind = _randint_words(key, ops.const(0, DEFAULT_INT), ops.const(n_inputs, DEFAULT_INT), shape, DEFAULT_INT)
            result = ind if arr is None else np.take(arr, ind, axis=axis)
        else:
            source = _arange(n_inputs) if arr is None else arr
            if arr is None or arr.ndim == 1:
                permuted = _shuffle(k0, k1, source, axis)
            else:
                permuted = np.take(source, _shuffle(k0, k1, _arange(n_inputs), 0), axis=axis)
            index = (slice(None),) * axis + (slice(0, math.prod(shape)),)
            result = permuted[index]
    else:
        p = _convert(p, p_dtype)
        if replace:
            p_cuml = np.cumsum(p)
            zero, one = ops.const(0.0, p_dtype), ops.const(1.0, p_dtype)
            r = p_cuml[-1] * (_c(1.0, p_dtype) - _uniform_in(k0, k1, shape, p_dtype, zero, one))
            ind = _convert(np.searchsorted(p_cuml, r), DEFAULT_INT)
        else:
            g = _gumbel(k0, k1, (n_inputs,), p_dtype, mode) + np.log(p)
            ind = _convert(_top_k_indices(g, math.prod(shape)), DEFAULT_INT)
        result = ind if arr is None else np.take(arr, ind, axis=axis)
    out_shape = shape if arr is None else tuple(arr.shape[:axis]) + shape + tuple(arr.shape[axis + 1:])
    return result.reshape(out_shape)
