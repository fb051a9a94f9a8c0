"""The public entry points: `jit`, `make_ir` and the objects they return.

`Jitted` composes the jobs of a jitted function from jitkernel/jitted/ (one module each); the
names those modules define that users and the engine import from here are re-exported.
"""
from __future__ import annotations

import collections
import functools
import inspect
import itertools
import os
import threading
import weakref
from typing import Any, Callable, Sequence

from .backends import check_backend
from .config import config
from .entry import register_jitted
from .ir import Program
from .jitted.compile_cache import (MAX_RECOMPILATION_RECORDS, CacheLimitWarning, CompileCacheMixin,  # noqa: F401
                                   Recompilation)
from .jitted.dispatch import DispatchMixin
from .jitted.signature import (NUMPY_SCALAR, Signature, SignatureMixin, signature_diff, size_changes,  # noqa: F401
                               size_only_change)
from .tree import static_key  # noqa: F401  (re-exported: users and tests import it from here)
from .jitted.staging import Lowered, StagingMixin  # noqa: F401
from .jitted.tracing import TracingMixin, give_argument_layout  # noqa: F401
from .jitted.write_back import CapturedNames, WriteBackMixin  # noqa: F401
from .pickling import reduce_jitted
from .pipeline import Compiled
from .tracebacks import hide_engine_frames

_FUNCTION_IDS = itertools.count(1)  # Jitted.function_id: events of same-named functions stay apart


_INSTANCES: "weakref.WeakSet[Jitted]" = weakref.WeakSet()


def _new_locks_in_child() -> None:
    """A forked child has only the forking thread: a lock that another thread of the parent held
    (compiling, say) would never be released there. Every function gets a fresh one."""
    for jitted in list(_INSTANCES):
        jitted._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)


def _debug_nans_switched(value: Any) -> None:
    """`jk.config.update("debug_nans", ...)`: a bool; every function's warm entries are dropped,
    so that the next calls take the checked path and register entries that check (or not)."""
    if not isinstance(value, bool):
        raise ValueError(f"jitkernel option 'debug_nans' must be True or False, got {value!r}")
    for jitted in list(_INSTANCES):
        with jitted._lock:
            jitted._fast.clear()


config.register_check("debug_nans", _debug_nans_switched)


class Jitted(DispatchMixin, CompileCacheMixin, TracingMixin, SignatureMixin, WriteBackMixin, StagingMixin):
    """A function compiled on first call for each new argument signature.

    The class holds the state (options, caches, lock) and composes one mixin per job
    (jitkernel/jitted/): dispatch (`__call__`, the warm fast path), compile-and-cache (misses,
    shape-generic reuse, layout variants, recompilation records), tracing, the signature of a
    call, write-back of written arguments that alias (`f(a, a)`, `f(G)`) and staging (`lower`).
    Mixins rather than collaborating objects: the jobs share this one state, the engine and
    the tools call the private methods on the function itself (`f._lookup`, `f._trace`,
    `f._with_static_ints`), and the warm call stays one dict read on `self`.

    >>> import numpy as np, jitkernel as jk
    >>> @jk.jit
    ... def f(x, y):
    ...     return np.sin(x) * y + 1
    >>> f(np.zeros(3, np.float32), 2.0)
    array([1., 1., 1.], dtype=float32)
    """

    def __init__(self, fun: Callable[..., Any], static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (), backend: str | None = None,
                 fastmath: bool = False, name: str | None = None, disk_cache: bool = True,
                 autograph: bool = True) -> None:
        self.fun = fun
        self.autograph = bool(autograph)
        self._converted: Callable[..., Any] | None = None  # fun with its control flow converted (autograph)
        self.function_id = next(_FUNCTION_IDS)
        self.__name__ = name or getattr(fun, "__name__", "function")
        self.__qualname__ = getattr(fun, "__qualname__", self.__name__)
        self.__doc__ = getattr(fun, "__doc__", None)
        self.__wrapped__ = fun
        try:
            if backend is not None:
                check_backend(backend)  # an explicit backend that cannot run fails here, not at the first call
        except BaseException as e:
            hide_engine_frames(e)
            raise
        self.backend = backend
        self.fastmath = bool(fastmath)
        self.disk_cache = bool(disk_cache)
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        try:
            self._params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            self._params = []
        positional = [p.name for p in self._params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        nums = tuple(n % len(positional) if n < 0 and positional else n for n in nums)
        self.static_argnums = frozenset(nums) | frozenset(positional.index(n) for n in names if n in positional)
        self.static_argnames = frozenset(names) | frozenset(positional[i] for i in nums if 0 <= i < len(positional))
        self._positional = positional
        self._cache: dict[tuple, Compiled] = {}  # insertion order = least recently compiled first
        self._signatures: dict[tuple, Signature] = {}
        # The latest recompilations only: a function recompiled in a loop for hours must not grow
        # without bound (each record is about 1 KB).
        self._recompilations: collections.deque[Recompilation] = collections.deque(maxlen=MAX_RECOMPILATION_RECORDS)
        self._limit_warned = False
        self._fast: dict[tuple, Callable] = {}
        self._templates: list[tuple[Signature, set, Any]] = []  # shape-generic machine code
        self._aliased: dict[tuple, Compiled] = {}  # variants for the same array passed twice (_call_aliased)
        # Variants of a signature for other argument layouts, where a reshape or ravel of an
        # argument is a view for one layout and a copy for another (_layout_variant).
        self._layouts: dict[tuple, list[Compiled]] = {}
        self._captured = CapturedNames(fun)  # arrays read as globals or closure variables
        # Guards every change to the caches above (compiles of this function run one at a time);
        # the warm fast path only reads `_fast` and takes no lock.
        self._lock = threading.RLock()
        _INSTANCES.add(self)

    def __repr__(self) -> str:
        return f"<jitted function {self.__qualname__}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __reduce__(self) -> tuple:
        """Pickled by reference to its module-level name where it has one, else by value (its
        function and jit options), as Numba's and JAX's jitted functions: multiprocessing and
        Dask's processes scheduler can send it (jitkernel/pickling.py)."""
        return reduce_jitted(self)


# transforms, random, distributed and pickling make jitted functions through jitkernel.entry
register_jitted(Jitted)


def jit(fun: Callable[..., Any] | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), backend: str | None = None,
        fastmath: bool = False, disk_cache: bool = True, autograph: bool = True) -> Any:
    """Compile `fun` on first call for each argument signature (usable with or without arguments).

    backend: "cpu" (LLVM, the default), "interpret" (the NumPy reference interpreter) or
        "cuda-emulator" (the CUDA translation unit run on the host: docs/gpu.md) or "cuda" (an
        NVIDIA GPU through PyCUDA; returns jk.DeviceArray; elsewhere BackendUnavailableError
        saying which of PyCUDA, the driver and a device is missing).
    fastmath: allow LLVM's fast-math rewrites on every float op (see docs/numpy-support.md).
    disk_cache: reuse machine code from the persistent cache (jitkernel.cache) across processes.
    autograph: convert Python `for i in range(...)`, `while` and `if` on traced values into
    compiled loops and branches (jitkernel.autograph); False traces the function as written.

    >>> import numpy as np, jitkernel as jk
    >>> @jk.jit(static_argnums=1)
    ... def power_sum(x, n):
    ...     return (x ** n).sum()
    >>> float(power_sum(np.arange(4.0), 2))
    14.0
    """
    try:
        if backend is not None:
            check_backend(backend)  # fails where the backend is named, `@jk.jit(backend=...)` included
    except BaseException as e:
        hide_engine_frames(e)
        raise

    def wrap(f: Callable[..., Any]) -> Jitted:
        return Jitted(f, static_argnums=static_argnums, static_argnames=static_argnames,
                      backend=backend, fastmath=fastmath, disk_cache=disk_cache, autograph=autograph)
    return wrap if fun is None else wrap(fun)


def make_ir(fun: Callable[..., Any], static_argnums: int | Sequence[int] = (),
            static_argnames: str | Sequence[str] = ()) -> Callable[..., Program]:
    """Return a function that traces `fun` for the given arguments and returns its Program.

    >>> import numpy as np, jitkernel as jk
    >>> print(jk.make_ir(lambda x: np.exp(x) + 1.0)(np.zeros(2, np.float32)))
    program <lambda>(a: f32[2]) {
      const b: f32[] = 1.0
      c: f32[2] = exp a
      d: f32[2] = broadcast_in_dim[broadcast_dimensions=() shape=(2,)] b
      e: f32[2] = add c d
      return (e)
    }
    """
    jitted = fun if isinstance(fun, Jitted) else Jitted(fun, static_argnums, static_argnames)

    def traced(*args: Any, **kwargs: Any) -> Program:
        try:
            sig, _ = jitted._signature(args, kwargs)
            return jitted._trace(sig, args, kwargs)[0]
        except BaseException as e:
            hide_engine_frames(e)
            raise
    return traced
