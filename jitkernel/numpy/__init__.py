"""`jitkernel.numpy`: NumPy's names for traced code. Inside a jitted function these record
primitives; outside one (no Tracer among the arguments) they call NumPy itself.

>>> import numpy as np, jitkernel as jk, jitkernel.numpy as jnp
>>> jk.jit(lambda x: jnp.tanh(x).sum(axis=0))(np.ones((2, 3), np.float32)).dtype
dtype('float32')
"""
import sys as _sys

from ._ufuncs import UFUNC_FUNCTIONS as _UFUNCS, apply_ufunc as apply_ufunc, around, clip, isnat, positive, round, where
from ._reductions import all, amax, amin, any, argmax, argmin, max, mean, min, prod, std, sum, var
from ._shape import (astype, atleast_1d, atleast_2d, atleast_3d, broadcast_arrays, broadcast_to,
                     concat, concatenate, expand_dims, flip, hstack, moveaxis, permute_dims, ravel, reshape,
                     squeeze, stack, swapaxes, transpose, vstack)
from ._linalg import dot, inner, matmul, outer, vdot
from ._creation import (arange, array, asanyarray, asarray, ascontiguousarray, asfortranarray, copy,
                        empty, empty_like, eye, full, full_like, identity, linspace, ones, ones_like, zeros, zeros_like)

globals().update(_UFUNCS)
abs = _UFUNCS["absolute"]  # noqa: A001
true_divide = _UFUNCS["divide"]
pow = _UFUNCS["power"]  # noqa: A001
mod = _UFUNCS["remainder"]
acos, asin, atan, atan2 = _UFUNCS["arccos"], _UFUNCS["arcsin"], _UFUNCS["arctan"], _UFUNCS["arctan2"]
acosh, asinh, atanh = _UFUNCS["arccosh"], _UFUNCS["arcsinh"], _UFUNCS["arctanh"]
bitwise_not = bitwise_invert = _UFUNCS["invert"]
bitwise_left_shift, bitwise_right_shift = _UFUNCS["left_shift"], _UFUNCS["right_shift"]

__all__ = [
        "abs", "true_divide", "pow", "mod", "acos", "asin", "atan", "atan2", "acosh", "asinh",
        "atanh", "bitwise_not", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift",
        "around", "clip", "isnat", "positive", "round", "where",
        "all", "amax", "amin", "any", "argmax", "argmin", "max", "mean", "min", "prod", "std",
        "sum", "var",
        "astype", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "broadcast_to",
        "concat",
        "concatenate", "expand_dims", "flip", "hstack", "moveaxis", "permute_dims", "ravel",
        "reshape", "squeeze", "stack", "swapaxes", "transpose", "vstack",
        "dot", "inner", "matmul", "outer", "vdot",
        "arange", "array", "asanyarray", "asarray", "ascontiguousarray", "asfortranarray", "copy",
        "empty", "empty_like", "eye", "full", "full_like",
        "identity", "linspace", "ones", "ones_like", "zeros", "zeros_like",
]
__all__ += list(_UFUNCS)
__all__.sort()

# Modules that each export their own `__all__` (one line per module, so work on different
# functions never edits the same line).
from . import _advanced, _dynamic  # noqa: E402
from . import _matrix, _manipulation, _statistics  # noqa: E402
from . import _inplace  # noqa: E402
from . import _linalg_lib  # noqa: E402
from . import _sorting, _cumulative  # noqa: E402
from . import _einsum  # noqa: E402
from . import _fft  # noqa: E402
from . import _signal  # noqa: E402
from . import _complex  # noqa: E402
from . import _datadep  # noqa: E402
from . import _ufuncs_float  # noqa: E402
from . import _ufuncs_integer  # noqa: E402
from . import _vector_products  # noqa: E402
from . import _function_base  # noqa: E402
from . import _splitting  # noqa: E402
from . import _joining  # noqa: E402
from . import _index_grids  # noqa: E402
from . import _flat_indices  # noqa: E402
from . import _fill_diagonal  # noqa: E402
from . import _vector_algebra  # noqa: E402
from . import _reshaping  # noqa: E402
from . import _sequences  # noqa: E402
from . import _conversion_checks  # noqa: E402
from . import _closeness, _ufunclike, _choice  # noqa: E402
from . import _differences  # noqa: E402
from . import _bessel, _ordering  # noqa: E402
from . import _nan_order_statistics  # noqa: E402
from . import _histogram_edges  # noqa: E402
from . import _linalg_tensor  # noqa: E402
from . import _bits  # noqa: E402
from . import _apply  # noqa: E402
from . import _histogram_nd  # noqa: E402
from . import _polynomial  # noqa: E402
from . import _stride_tricks  # noqa: E402
from . import _datadep_sets  # noqa: E402
_EXTENSION_MODULES = (
    _advanced,
    _dynamic,
    _linalg_lib,
    _sorting,
    _cumulative,
    _einsum,
    _fft,
    _signal,
    _matrix,
    _manipulation,
    _statistics,
    _inplace,
    _complex,
    _datadep,
    _ufuncs_float,
    _ufuncs_integer,
    _vector_products,
    _function_base,
    _splitting,
    _joining,
    _index_grids,
    _flat_indices,
    _fill_diagonal,
    _vector_algebra,
    _reshaping,
    _sequences,
    _conversion_checks,
    _closeness, _ufunclike, _choice,
    _differences,
    _bessel, _ordering,
    _nan_order_statistics,
    _histogram_edges,
    _linalg_tensor,
    _bits,
    _apply,
    _histogram_nd,
    _polynomial,
    _stride_tricks,
    _datadep_sets,
)
for _module in _EXTENSION_MODULES:
    globals().update({_n: getattr(_module, _n) for _n in _module.__all__})
    __all__ = sorted(set(__all__) | set(_module.__all__))


def _unsupported_rows() -> list:
    from .support_table import unsupported_rows  # the table probes NumPy: built on first use
    return unsupported_rows()


def _unsupported_reason(name: str) -> str | None:
    from .support_table import reason_of  # why the table says a function is refused
    return reason_of(name)


# What the trace layer calls (a Tracer's ndarray methods, in-place updates, scalar stores):
# registered here so that jitkernel.trace never imports jitkernel.numpy (trace/numpy_api.py).
from . import _dispatch, _dynamic, _indexing, _shape, _strided_dynamic, _ufuncs  # noqa: E402
from ..trace.numpy_api import NUMPY as _TRACE_NUMPY  # noqa: E402
_TRACE_NUMPY.register(
    namespace=_sys.modules[__name__], datadep=_datadep, dispatch=_dispatch,
    getitem=_indexing.getitem, index_kind=_indexing.index_kind, reshape=_shape.reshape, view_of=_shape.view_of,
    dynamic_update=_strided_dynamic.traced_update, advanced_update=_advanced.advanced_update, put=_advanced.put,
    raise_if=_statistics.raise_if, apply_ufunc=_ufuncs.apply_ufunc, select_by_exponent=_ufuncs.select_by_exponent,
    ufunc_at=_advanced.ufunc_at, as_strided=_stride_tricks.as_strided,
    holds_traced_strided=_strided_dynamic.holds_traced_strided,
    apply_ufunc_protocol=_dispatch.apply_ufunc_protocol, apply_function_protocol=_dispatch.apply_function_protocol,
    unsupported_rows=_unsupported_rows, unsupported_reason=_unsupported_reason, value_range=_dynamic.value_range)
