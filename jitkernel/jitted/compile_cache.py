"""Compile-and-cache of a jitted function: the cache of compiled entries per signature,
misses (compile, shape-generic reuse, the retry with static integers), variants per
argument layout, eviction at the cache limit and the recompilation records.
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import events
from ..backends import SHAPE_GENERIC, check_backend, size_probe
from ..config import config
from ..forking import compiling
from ..ir.host_lengths import HOST_LENGTHS
from ..pipeline import Compiled, compile_program, reuse_program
from ..trace.views import layout_strides
from ..tracebacks import user_stacklevel
from .signature import Signature, _with_sizes, signature_diff, size_changes, size_only_change


MAX_RECOMPILATION_RECORDS = 1000  # kept per jitted function (f.recompilations())


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


@dataclass
class Recompilation:
    """One cache miss of a function that already had compiled entries."""

    function: str
    reasons: list[str]
    signature: str
    previous_signature: str
    compile_seconds: float = 0.0
    trace_seconds: float = 0.0

    def __str__(self) -> str:
        return (f"jit: {self.function} recompiled ({'; '.join(self.reasons)}); "
                f"trace {self.trace_seconds * 1e3:.1f} ms, compile {self.compile_seconds * 1e3:.1f} ms")


class CacheLimitWarning(UserWarning):
    """A jitted function reached its limit of compiled entries."""


_log = logging.getLogger("jitkernel")


def _layout_matches(guard: tuple, leaves: list) -> bool:
    return all(layout_strides(leaves[i]) == strides for i, strides in guard)


class CompileCacheMixin:
    """The compiled entries of a function and how a miss fills them. Every change
    to the caches runs under `self._lock`, inside the fork gate (jitkernel/forking.py)."""

    def _backend_name(self) -> str:
        return self.backend or config.default_backend

    def _compile(self, sig: Signature, args: tuple, kwargs: dict, previous: Any = None,
                 traced: tuple | None = None) -> Compiled:
        program, out_tree, trace_seconds = traced or self._traced(sig, args, kwargs)
        t1 = events.clock()
        compiled = compile_program(program, out_tree, self._backend_name(),
                                   name=self.__name__, fastmath=self.fastmath,
                                   disk_cache=self.disk_cache and config.disk_cache, previous=previous)
        compiled.trace_seconds = trace_seconds
        compiled.compile_seconds = events.clock() - t1
        return compiled

    def _closest(self, sig: Signature) -> Signature:
        """The earlier signature with the fewest differences; of equals, the latest compiled
        (what the user most likely changed from)."""
        return min(reversed(self._signatures.values()), key=lambda old: len(signature_diff(old, sig)))

    def _try_dynamic(self, sig: Signature, args: tuple, kwargs: dict) -> tuple[Compiled | None, tuple | None]:
        """Reuse a shape-generic template whose dynamic dimensions cover this signature's
        differences: trace and fuse only, no LLVM compile. Returns (compiled, traced)."""
        traced = None
        for base, dims, template in self._templates:
            changed = size_only_change(base, sig)
            if changed is None or not set(changed) <= dims:
                continue
            traced = traced or self._traced(sig, args, kwargs)
            t0 = events.clock()
            compiled = reuse_program(traced[0], traced[1], self._backend_name(), template, name=self.__name__)
            if compiled is not None:
                compiled.trace_seconds, compiled.compile_seconds = traced[2], events.clock() - t0
                if events.SUBSCRIBERS:
                    events.publish(events.CacheEvent(self.__name__, t0, events.clock() - t0, True, "dynamic",
                                                     sig.describe()))
                return compiled, traced
        return None, traced

    def _dynamic_base(self, sig: Signature, args: tuple, kwargs: dict) -> tuple[Any, list[tuple[str, int]]]:
        """(what the new compile compares its kernels with, the dimensions to make dynamic), or
        (None, []) for a specialised compile.

        The dimensions are every one that some earlier signature, equal up to sizes, has with
        another size, where this call's size is 2 or more: so sizes 1, 2, 3, ... compile twice,
        not once per size, and dimensions that changed one at a time end up dynamic together.
        The comparison is the latest earlier entry that differs in exactly those dimensions, with
        sizes >= 2 on both sides (the latest: a trace that branched on a size's value, as
        `x ** len(x)` takes NumPy's square fast path at 2, differs at the first sizes only). When there is none (the earlier sizes were 0 or 1, or the dimensions
        changed one at a time) it is a probe: the same function traced and fused (no code
        generation, no events) with each of those sizes one larger. The probe runs the user's
        function once more, so it is the second choice."""
        if not config.dynamic_shapes or self._backend_name() not in SHAPE_GENERIC:
            return None, []
        related = [(old, ch) for old in self._signatures.values() if (ch := size_changes(old, sig))]
        dims = {(name, d) for _, ch in related for name, d, _, new in ch if new >= 2}
        if not dims:
            return None, []
        order = {name: i for i, name in enumerate(sig.names)}
        ordered = sorted(dims, key=lambda nd: (order[nd[0]], nd[1]))
        for old, ch in reversed(related):  # the latest first: earlier sizes may have traced differently
            if {(name, d) for name, d, _, _ in ch} == dims and all(min(a, b) >= 2 for _, _, a, b in ch):
                return self._cache[old.key], ordered
        try:
            program, _ = self._trace(_with_sizes(sig, dims, 1), args, kwargs)
            probe = size_probe(program, self._backend_name())
        except Exception:  # e.g. user code that needs these exact sizes: compile specialised
            return None, []
        return (probe, ordered) if probe is not None else (None, [])

    def _miss(self, sig: Signature, args: tuple, kwargs: dict) -> Compiled:
        """Compile (or reuse shape-generic code) for a signature not in the cache. Called with
        the lock held."""
        check_backend(self._backend_name())  # jk.config.default_backend may name one that cannot run
        if events.SUBSCRIBERS:
            events.publish(events.CacheEvent(self.__name__, events.clock(), 0.0, False, "memory", sig.describe(),
                                             function_id=self.function_id))
        compiled, traced = self._try_dynamic(sig, args, kwargs) if self._templates else (None, None)
        if compiled is None:
            previous = self._closest(sig) if self._signatures else None
            base, dims = self._dynamic_base(sig, args, kwargs) if previous is not None else (None, [])
            compiled = self._compile(sig, args, kwargs, base, traced)
            if previous is not None:
                reasons = signature_diff(previous, sig)
                template = getattr(compiled.executable, "template", None)
                if base is not None and template is not None:
                    self._templates.append((sig, set(dims), template))
                    reasons += [f"{name}: dimension {d} is now dynamic (the compiled kernels take its size at "
                                f"run time; later sizes reuse them)" for name, d in dims]
                self._record_recompilation(Recompilation(self.__name__, reasons, sig.describe(), previous.describe(),
                                                         compiled.compile_seconds, compiled.trace_seconds))
        limit = config.max_cache_entries
        if len(self._cache) >= limit:
            if not self._limit_warned:
                self._limit_warned = True
                warnings.warn(f"jitted function {self.__name__!r} reached {limit} cached signatures "
                              f"(jk.config max_cache_entries); the least recently compiled ones are now "
                              f"evicted. Recompilation reasons: f.recompilations()", CacheLimitWarning,
                              stacklevel=user_stacklevel())
            while len(self._cache) >= max(limit, 1):
                self._evict(next(iter(self._cache)))
        self._cache[sig.key] = compiled
        self._signatures[sig.key] = sig
        return compiled

    def _evict(self, key: tuple) -> None:
        """Drop one compiled entry (the lock is held). The fast path forgets every entry: it is
        keyed differently, and is rebuilt by the next calls."""
        del self._cache[key], self._signatures[key]
        self._layouts.pop(key, None)
        self._fast.clear()

    def _record_recompilation(self, rec: Recompilation) -> None:
        self._recompilations.append(rec)
        if events.SUBSCRIBERS:
            events.publish(events.RecompileEvent(self.__name__, events.clock(), rec.compile_seconds + rec.trace_seconds,
                                                 reasons=list(rec.reasons), signature=rec.signature))
        if config.explain_recompiles:
            _log.warning(str(rec))

    def _lookup(self, args: tuple, kwargs: dict) -> tuple[Signature, Compiled, list[np.ndarray]]:
        sig, arrays = self._signature(args, kwargs)
        compiled = self._cache.get(sig.key)  # one dict read: atomic, no lock needed
        if compiled is None:
            # one compile at a time per function; another thread may have done it. The fork
            # gate (jitkernel/forking.py) is entered first: a compile waiting at it holds no lock.
            with compiling(), self._lock:
                compiled = self._cache.get(sig.key)
                if compiled is None:
                    return self._miss_or_static_ints(sig, args, kwargs, arrays)
        if events.SUBSCRIBERS:
            events.publish(events.CacheEvent(self.__name__, events.clock(), 0.0, True, "memory", sig.describe(),
                                             function_id=self.function_id))
        return sig, compiled, arrays

    def _miss_or_static_ints(self, sig: Signature, args: tuple, kwargs: dict, arrays: list) -> tuple:
        """(sig, compiled, arrays) of a miss, traced again with static integers if it fails."""
        try:
            return sig, self._observed_miss(sig, args, kwargs), arrays
        except Exception as first:
            if not config.static_int_fallback or not self._int_arguments(args, kwargs):
                raise
            return self._lookup_with_static_ints(args, kwargs, first)

    def _lookup_with_static_ints(self, args: tuple, kwargs: dict, first: Exception) -> tuple:
        """The function could not be traced with its integer arguments as run-time values (a
        size `np.zeros((n, n))`, a slice bound `a[1:n-1]`, `range(n)` in code that needs it):
        trace it again with them static, as the user would mark them (docs/numpy-support.md,
        "NumPy programs as written"). Called with the lock held."""
        def lookup() -> tuple:
            sig, arrays = self._signature(args, kwargs)
            return sig, self._cache.get(sig.key) or self._observed_miss(sig, args, kwargs), arrays
        return self._with_static_ints(args, kwargs, first, lookup)

    def _with_static_ints(self, args: tuple, kwargs: dict, first: Exception, attempt: Callable[[], Any]) -> Any:
        """`attempt()` with the integer arguments made static, after `first` (the failure with
        them traced). Kept for later calls when that works, so each new value then compiles (or
        reuses shape-generic code); otherwise the second error, the one that remains, is raised.
        The one retrace rule of NumPy arguments (`_lookup_with_static_ints`) and Dask arguments
        (distributed._traced). Called with the lock held."""
        nums, names = self._int_arguments(args, kwargs)
        saved = self.static_argnums, self.static_argnames
        self.static_argnums = saved[0] | nums
        self.static_argnames = saved[1] | names | {self._positional[i] for i in nums if i < len(self._positional)}
        try:
            result = attempt()
        except Exception as second:
            self.static_argnums, self.static_argnames = saved
            if hasattr(second, "add_note"):
                static = ", ".join(sorted(self._arg_name(i) for i in nums) + sorted(names))
                second.add_note(f"(jitkernel traced {self.__name__} again with its integer arguments {static} "
                                f"static, after: {_one_line(first)})")
            raise second from None
        self._fast.clear()  # entries keyed without the integers' values must not be taken any more
        return result

    def _observed_miss(self, sig: Signature, args: tuple, kwargs: dict) -> Compiled:
        """`_miss`, with the entry tagged by this function's id and a failure published."""
        try:
            compiled = _with_host_lengths({}, lambda: self._miss(sig, args, kwargs))
        except BaseException as e:
            if events.SUBSCRIBERS:  # the profiler counts this miss as failed, not as a compile
                events.publish(events.CompileFailedEvent(
                    self.__name__, events.clock(), 0.0, error=_one_line(e), signature=sig.describe(),
                    function_id=self.function_id))
            raise
        compiled.function_id = self.function_id
        return compiled

    def _host_length_variant(self, sig: Signature, compiled: Compiled, changed: Any, args: tuple,
                             kwargs: dict) -> Compiled:
        """The entry of this signature compiled for the host lengths of `compiled` with one of
        them changed (`changed`: ir/host_lengths.HostLengthChanged); it becomes the signature's
        entry, so the next call runs it first."""
        lengths = dict(getattr(compiled, "host_lengths", None) or {})
        lengths[changed.site] = changed.length
        key = tuple(sorted(lengths.items()))
        with compiling(), self._lock:  # the fork gate first, as every compile
            variants = self.__dict__.setdefault("_host_length_variants", {}).setdefault(sig.key, {})
            variant = variants.get(key)
            if variant is None:
                variant = _with_host_lengths(lengths, lambda: self._compile(sig, args, kwargs))
                variant.function_id = self.function_id
                variants[key] = variant
                self._record_recompilation(Recompilation(
                    self.__name__, [f"{changed.where}: length {changed.expected} -> {changed.length} (a length read "
                                    "on the host: the program is compiled for each one)"],
                    sig.describe(), sig.describe(), variant.compile_seconds, variant.trace_seconds))
            if sig.key in self._cache:
                self._cache[sig.key] = variant
            return variant

    def _layout_variant(self, sig: Signature, compiled: Compiled, args: tuple, kwargs: dict, leaves: list) -> Compiled:
        """The entry of this signature traced for these arguments' layouts. Only a program whose
        view-or-copy decisions read an argument's strides has a guard (`x.ravel()` is a view of a
        C-ordered argument and a copy of an F-ordered one); the others serve every layout."""
        if _layout_matches(compiled.program.layout_guard, leaves):
            return compiled
        for variant in self._layouts.get(sig.key, ()):
            if _layout_matches(variant.program.layout_guard, leaves):
                return variant
        with compiling(), self._lock:  # the fork gate first, as every compile
            variants = self._layouts.setdefault(sig.key, [])
            for variant in variants:
                if _layout_matches(variant.program.layout_guard, leaves):
                    return variant
            variant = self._compile(sig, args, kwargs)
            variant.function_id = self.function_id
            variants.append(variant)
            reasons = [f"{sig.names[i]}: strides {strides} -> {layout_strides(leaves[i])} (a reshape or ravel "
                       "of it is a view for one layout and a copy for the other)"
                       for i, strides in compiled.program.layout_guard
                       if layout_strides(leaves[i]) != strides]
            self._record_recompilation(Recompilation(self.__name__, reasons, sig.describe(), sig.describe(),
                                                     variant.compile_seconds, variant.trace_seconds))
            return variant

    def recompilations(self) -> list[Recompilation]:
        """The recompilations of this function so far (the latest MAX_RECOMPILATION_RECORDS), with
        their reasons."""
        with self._lock:
            return list(self._recompilations)

    def cache_size(self) -> int:
        return len(self._cache)

    def entries(self) -> list[tuple[str, Compiled]]:
        """(signature text, compiled entry) for every cached signature, oldest first."""
        with self._lock:
            return [(self._signatures[k].describe(), c) for k, c in self._cache.items()]

    def last_compiled(self) -> Compiled | None:
        """The most recently added compiled entry, or None."""
        with self._lock:
            return next(reversed(self._cache.values()), None)

    def compiled_for(self, *args: Any, **kwargs: Any) -> tuple[str, Compiled]:
        """(signature text, compiled entry) a call with these arguments uses, compiling it if
        needed; publishes no cache event for an existing entry."""
        sig, arrays = self._signature(args, kwargs)
        with compiling(), self._lock:
            compiled = self._cache.get(sig.key)
            if compiled is None:
                sig, compiled, _ = self._miss_or_static_ints(sig, args, kwargs, arrays)
        if compiled.program.layout_guard:
            compiled = self._layout_variant(sig, compiled, args, kwargs, self._dynamic_leaves(args, kwargs))
        return sig.describe(), compiled

    def clear_cache(self) -> None:
        with self._lock:
            self._templates.clear()
            self._aliased.clear()
            for key in list(self._cache):
                self._evict(key)
            self._fast.clear()


def _with_host_lengths(lengths: dict, compile_: Callable[[], Compiled]) -> Compiled:
    """`compile_()` with its trace assuming `lengths` for the lengths read on the host
    (ir/host_lengths.py); the trace adds its first guesses, and the entry keeps them all."""
    token = HOST_LENGTHS.set(lengths)
    try:
        compiled = compile_()
    finally:
        HOST_LENGTHS.reset(token)
    if lengths:
        compiled.host_lengths = lengths
    return compiled
