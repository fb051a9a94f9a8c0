"""Dispatch of a call of a jitted function: the warm fast path (one dict read keyed by the
arguments' shapes and dtypes, no lock), else the checked path (tracers, Dask and sharded
arrays, the cache lookup, layout and aliasing variants), and the registration of fast
entries after a checked call.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..config import config
from ..device_array import DeviceArray as _DeviceArray
from ..sharding import call as sharded_call
from ..pipeline import DEVICE_ARRAY_BACKENDS, AliasedArguments, CheckedPathNeeded, Compiled, same_array_positions
from ..trace import Tracer
from ..trace.views import layout_strides
from ..tracebacks import hide_engine_frames
from ..tree import tree_flatten
from .sequence_hint import add_sequence_hint
from .debug_nans import check_call, checked_entry
from .signature import _PY_SCALAR_DTYPES, NUMPY_SCALAR_TYPES, Signature, _ndarray
from .write_back import _guarded_by_globals, _restore_byteorder
from ..ir.host_lengths import HostLengthChanged

# runs of one call with new host lengths before the last one's error stands
_HOST_LENGTH_ATTEMPTS = 256


def _guarded_by_layout(entry: Callable[[tuple], Any], guard: tuple) -> Callable[[tuple], Any]:
    """A fast entry that runs only on arguments of the layout its program was traced for; any
    other layout takes the checked path (Jitted._layout_variant)."""
    def guarded(args: tuple) -> Any:
        for i, strides in guard:
            if layout_strides(args[i]) != strides:
                raise CheckedPathNeeded
        return entry(args)
    return guarded


class DispatchMixin:
    """`__call__`: the fast path, else `_call`, the checked path."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            # Fast path: positional arrays and Python scalars, keyed by (shape, dtype) / type.
            try:
                # Exact ndarrays only (subclasses take the checked slow path); keyed by the dtype
                # itself, so a byte-swapped array never takes a native entry.
                # A jk.DeviceArray is keyed apart from an ndarray of its shape (only a device
                # backend registers it; a host backend's entry would not copy it back first).
                # (Any backend's device array: a jk.DeviceArray or a subclass, keyed by its type.)
                if len(args) == 1:
                    a = args[0]
                    key = (a.shape, a.dtype) if type(a) is _ndarray else \
                        (a.shape, a.dtype, type(a)) if isinstance(a, _DeviceArray) else type(a)
                else:
                    key = tuple([(a.shape, a.dtype) if type(a) is _ndarray else
                                 (a.shape, a.dtype, type(a)) if isinstance(a, _DeviceArray) else type(a)
                                 for a in args])
                entry = self._fast[key]
            except (KeyError, TypeError, AttributeError):
                # Static integer arguments (a size `n`): entries keyed by their values too.
                entry = self._fast.get(valued_key(args, self.static_argnums)) if self.static_argnums else None
            if entry is not None:
                try:  # lock-free: one dict read above; a try costs nothing until something raises
                    return entry(args)
                except AliasedArguments:
                    pass  # the same array passed twice to a function that writes: _call's variant
                except HostLengthChanged:
                    pass  # a length read on the host changed: _call compiles for it
                except BaseException as e:
                    hide_engine_frames(e)
                    raise
        try:
            return self._call(args, kwargs)
        except BaseException as e:
            add_sequence_hint(e, self.fun, args, kwargs)  # f([1, 2, 3]): "pass np.asarray(x)" first
            hide_engine_frames(e)  # the user's frames only (jk.config "traceback")
            raise  # a bare raise does not add this frame back

    def _call(self, args: tuple, kwargs: dict) -> Any:
        all_leaves = tree_flatten((args, kwargs))[0]
        if any(isinstance(leaf, Tracer) for leaf in all_leaves):
            # Called on traced values inside another jitted function: inline into that trace.
            return self._function_to_trace()(*args, **kwargs)
        if any(getattr(type(leaf), "_jk_sharded", False) for leaf in all_leaves):
            # sharded in: sharded out, via the Dask path
            return sharded_call(self, args, kwargs)
        if any(type(leaf).__module__.startswith("dask.") for leaf in all_leaves):
            # Dask arrays in: lazy Dask arrays out (docs/distributed.md); the partitioner is imported
            # on the first call with a Dask array, not by every `import jitkernel`
            from ..distributed import call
            return call(self, args, kwargs)
        sig, compiled, arrays = self._lookup(args, kwargs)
        leaves = None
        if compiled.program.layout_guard:
            leaves = self._dynamic_leaves(args, kwargs)
            compiled = self._layout_variant(sig, compiled, args, kwargs, leaves)
        if compiled.program.written_args or compiled.program.output_views \
                or getattr(compiled.program, "byteorder_sources", None):
            leaves = self._dynamic_leaves(args, kwargs)  # the caller's own arrays: written ones are copied back
        if compiled.program.written_args:
            same = same_array_positions(leaves)
            if same is not None:  # f(a, a) writing an argument: a variant with one Memory for both
                return self._call_aliased(sig, args, kwargs, arrays, leaves, same)
            aliases = self._global_aliases(compiled, leaves)
            if aliases:  # f(G) where f writes its argument and reads the global G
                return self._call_with_globals(sig, args, kwargs, arrays, leaves, aliases)
        result, compiled = self._run_with_host_lengths(sig, compiled, args, kwargs, arrays, leaves)
        if getattr(compiled.program, "byteorder_sources", None):
            result = _restore_byteorder(result, compiled, leaves)
        if config.debug_nans:
            check_call(self, compiled, args, kwargs, result)
        if not kwargs:
            self._register_fast(args, compiled, sig)
        return result

    def _run_with_host_lengths(self, sig: Signature, compiled: Compiled, args: tuple, kwargs: dict, arrays: Any,
                               leaves: Any) -> tuple[Any, Compiled]:
        """(result, the entry that gave it): `compiled` run, and when a length read on the host
        differs from the one it was compiled for (ir/host_lengths.py), the variant compiled for
        the new lengths (kept per signature), run again. The failed run returned and wrote
        nothing."""
        seen: set = set()
        while True:
            try:
                return compiled(arrays, leaves), compiled
            except HostLengthChanged as changed:
                # each run settles one more site (an unrolled loop has one per iteration); a length
                # seen before in this call would not settle (a trace that changes with it): raise
                if (changed.site, changed.length) in seen or len(seen) >= _HOST_LENGTH_ATTEMPTS:
                    raise
                seen.add((changed.site, changed.length))
                compiled = self._host_length_variant(sig, compiled, changed, args, kwargs)

    def _register_fast(self, args: tuple, compiled: Compiled, sig: Signature) -> None:
        if any(isinstance(i, str) for _, i in getattr(compiled.program, "byteorder_sources", ())):
            return  # a result in a byte order the function asked for: set by _restore_byteorder
        key: list = []
        scalars: list = []
        statics = self.static_argnums
        for i, a in enumerate(args):
            if i in statics:
                if type(a) not in STATIC_INT_TYPES:
                    return  # other static values (strings, tuples, floats) take the checked path
                key.append((type(a), a))  # keyed by value; not an input of the program
            elif type(a) is _ndarray:
                if not a.dtype.isnative:
                    return  # byte-swapped inputs take the slow path (_restore_byteorder)
                key.append((a.shape, a.dtype))
                scalars.append(None)
            elif type(a) in _PY_SCALAR_DTYPES:
                key.append(type(a))
                scalars.append(_PY_SCALAR_DTYPES[type(a)])
            elif type(a) in NUMPY_SCALAR_TYPES:  # np.float64(1.5): passed as a 0-d array, as the checked path does
                key.append(type(a))
                scalars.append(a.dtype)
            elif isinstance(a, _DeviceArray) and compiled.backend in DEVICE_ARRAY_BACKENDS:
                key.append((a.shape, a.dtype, type(a)))  # used where it is (device.put)
                scalars.append(None)
            else:
                return
        entry = compiled.fast_entry(scalars, sig.describe())
        if config.debug_nans:  # (switching the option clears every warm entry: api.py)
            entry = checked_entry(self, compiled, entry)
        if compiled.program.layout_guard:
            entry = _guarded_by_layout(entry, compiled.program.layout_guard)
        if compiled.program.written_args and (self._captured.names or self._captured.cells):
            # (names, not the arrays they hold now: a global may be bound to an array later)
            entry = _guarded_by_globals(entry, self._captured, tuple(i for i, _ in compiled.program.written_args))
        fast_key: Any = key[0] if len(key) == 1 else tuple(key)
        if statics:
            entry = _without_statics(entry, tuple(i for i in range(len(args)) if i not in statics))
            fast_key = ("static", *key)
        with self._lock:
            if self._cache.get(sig.key) is compiled:  # not evicted by another thread meanwhile
                self._fast[fast_key] = entry


# The static argument values a warm entry may be keyed by: integers and booleans, whose equal
# values have equal bits within one type (0.0 and -0.0 are equal floats of different bits).
STATIC_INT_TYPES = frozenset({int, bool} | {t for t in NUMPY_SCALAR_TYPES if issubclass(t, (np.integer, np.bool_))})


def valued_key(args: tuple, statics: frozenset) -> tuple | None:
    """The warm-entry key of a call with static arguments: the arrays' shapes and dtypes, the
    scalars' types, and each static integer's type and value; None when a static argument is
    not an integer (such calls take the checked path)."""
    key: list = ["static"]
    for i, a in enumerate(args):
        if i in statics:
            if type(a) not in STATIC_INT_TYPES:
                return None
            key.append((type(a), a))
        elif type(a) is _ndarray:
            key.append((a.shape, a.dtype))
        elif isinstance(a, _DeviceArray):
            key.append((a.shape, a.dtype, type(a)))
        else:
            key.append(type(a))
    return tuple(key)


def _without_statics(entry: Callable[[tuple], Any], dynamic: tuple[int, ...]) -> Callable[[tuple], Any]:
    """An entry taking every positional argument, passing the program its dynamic ones only."""
    def entry_with_statics(args: tuple) -> Any:
        return entry(tuple([args[i] for i in dynamic]))
    return entry_with_statics
