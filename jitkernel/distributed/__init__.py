"""`jk.jit` over Dask arrays.

A jitted function called with `dask.array.Array` arguments (any leaf of its pytree arguments)
returns Dask arrays, lazily: the function is traced once at the full shapes, the traced program
is partitioned along the chunked axes (partition.py), and every block runs a compiled block
program (worker.py) in a Dask graph (graph.py). Dask is imported only when a Dask array is
passed. docs/distributed.md says what is partitioned how.

>>> import numpy as np, dask.array as da, jitkernel as jk
>>> f = jk.jit(lambda x: np.sin(x) * 2 + x.sum())
>>> x = da.arange(10.0, chunks=4)
>>> y = f(x)                  # a Dask array: nothing computed yet
>>> bool(np.allclose(y.compute(), np.sin(np.arange(10.0)) * 2 + 45))
True
"""
from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from .. import events
from ..config import config
from ..entry import is_jitted, jit
from ..errors import UnsupportedOperationError
from ..pipeline import _optimize
from ..tracebacks import user_stacklevel
from ..tree import tree_flatten, tree_unflatten
from . import control_flow as _control_flow  # noqa: F401 - registers the control-flow letter rules (partition.RULES)
from .graph import build
from .partition import Plan, RechunkWarning, plan as make_plan, warn_rechunks, without_empty_chunks
from .profile import owned_by, register_function
from .effects import tie_effects_to_outputs

__all__ = ["explain", "partitions", "is_dask_array", "RechunkWarning"]

# Per jitted function: the traced, optimised program per signature and the plan per chunking,
# so repeated calls neither trace nor recompile (block programs keep their token).
_TRACED: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
MAX_PLANS = 64


def is_dask_array(x: Any) -> bool:
    """Whether `x` is a dask.array.Array, checked without importing Dask."""
    return type(x).__module__.startswith("dask.") and type(x).__name__ == "Array"


def _placeholder(x: Any) -> np.ndarray:
    """A zero-cost ndarray of `x`'s shape and dtype (zero strides) to trace with."""
    if any(isinstance(n, float) and math.isnan(n) for n in x.shape):
        raise UnsupportedOperationError(
            f"a Dask array of unknown shape {x.shape} (chunk sizes unknown after a boolean index or similar) "
            "cannot be passed to a jitted function: call x.compute_chunk_sizes() first")
    return np.broadcast_to(np.zeros((), x.dtype), x.shape)


def _traced(jitted: Any, args: tuple, kwargs: dict) -> tuple[tuple, list[Any]]:
    """((optimised program, output tree, plans per chunking), dynamic leaves in the program's
    input order), traced at the full shapes for this signature once."""
    swap = lambda t: tree_unflatten(t[1], [_placeholder(x) if is_dask_array(x) else x for x in t[0]])  # noqa: E731
    p_args, p_kwargs = swap(tree_flatten((args, kwargs)))
    dyn = (tuple(a for i, a in enumerate(args) if i not in jitted.static_argnums),
           {k: v for k, v in kwargs.items() if k not in jitted.static_argnames})
    leaves = tree_flatten(dyn)[0]
    sig, _ = jitted._signature(p_args, p_kwargs)
    per_function = _TRACED.setdefault(jitted, {})
    traced = per_function.get(sig.key)
    if traced is None:
        program, out_tree = jitted._trace(sig, p_args, p_kwargs)
        optimized = tie_effects_to_outputs(_optimize(program, jitted.__name__))
        traced = per_function[sig.key] = (optimized, out_tree, {})
        traced[0].written_args, traced[0].written_names = program.written_args, program.written_names
        traced[0].trimmed_outputs, traced[0].int_arg_bounds = program.trimmed_outputs, program.int_arg_bounds
    return traced, leaves


def _traced_or_static_ints(jitted: Any, args: tuple, kwargs: dict) -> tuple[tuple, list[Any]]:
    """`_traced`, traced again with the integer arguments static where tracing them fails
    (`np.zeros(n)`, `a[:, :k]`): the rule of NumPy arguments (api.Jitted._with_static_ints), so
    `f(x_dask, n)` runs where `f(x_numpy, n)` does."""
    try:
        return _traced(jitted, args, kwargs)
    except Exception as first:
        if not config.static_int_fallback or not jitted._int_arguments(args, kwargs):
            raise
        with jitted._lock:
            return jitted._with_static_ints(args, kwargs, first, lambda: _traced(jitted, args, kwargs))


def _prepare(jitted: Any, args: tuple, kwargs: dict) -> tuple[Plan, Any, list[Any]]:
    """(plan, output tree, dynamic leaves in the program's input order)."""
    (program, out_tree, plans), leaves = _traced_or_static_ints(jitted, args, kwargs)
    # Zero-size chunks are dropped (graph.py rechunks the argument to match): see without_empty_chunks.
    chunks = tuple(tuple(without_empty_chunks(tuple(c)) for c in x.chunks) if is_dask_array(x)
                   else tuple((n,) for n in np.shape(x)) for x in leaves)
    partition = plans.get(chunks)
    if partition is None:
        if len(plans) >= MAX_PLANS:
            plans.pop(next(iter(plans)))
        partition = plans[chunks] = make_plan(program, list(chunks), jitted._backend_name(), jitted.fastmath,
                                                    jitted.disk_cache)
    return partition, out_tree, leaves


def call(jitted: Any, args: tuple, kwargs: dict) -> Any:
    """`jitted(*args, **kwargs)` where some argument leaf is a Dask array: Dask arrays back."""
    if events.SUBSCRIBERS:  # profiling: the optimiser's events and the block records name this function
        with owned_by(jitted):
            partition, out_tree, leaves = _prepare(jitted, args, kwargs)
    else:
        partition, out_tree, leaves = _prepare(jitted, args, kwargs)
    for i, dt, lo, hi in partition.program.int_arg_bounds:  # NumPy's OverflowError, at the call as NumPy
        v = int(leaves[i])
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise OverflowError(f"Python integer {v} out of bounds for {dt}")
    warn_rechunks(partition, jitted.__name__, stacklevel=user_stacklevel())
    if events.SUBSCRIBERS:  # profiling: block records name this function object (profile.py)
        register_function(partition, jitted)
    return tree_unflatten(out_tree, build(partition, leaves, jitted._backend_name()))


def explain(f: Any, *args: Any, **kwargs: Any) -> str:
    """How `f` (a jitted function) is partitioned for these Dask arguments: the blockwise
    segments, the tree reductions and every rechunk with its reason.

    >>> import numpy as np, dask.array as da, jitkernel as jk
    >>> print(explain(jk.jit(lambda x: x.sum()), da.ones(8, chunks=4)).splitlines()[0])
    dask partition of <lambda>: 1 blockwise segment(s), 1 tree reduction(s)
    """
    jitted = f if is_jitted(f) else jit(f)
    return _prepare(jitted, args, kwargs)[0].explain()


def partitions(f: Any) -> list[str]:
    """The partition texts (as `explain` prints them) of every chunking `f` was called with on
    Dask arrays, oldest first; `%jit_explain f` shows the latest."""
    per_function = _TRACED.get(f, {})
    return [p.explain() for _, _, plans in per_function.values() for p in plans.values()]
