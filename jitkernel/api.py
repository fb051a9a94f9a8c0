"""The public entry points: `jit`, `make_ir` and the objects they return."""
from __future__ import annotations

import collections
import functools
import inspect
import itertools
import logging
import os
import struct
import threading
import types
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import events
from .backends import SHAPE_GENERIC, check_backend, size_probe
from .config import config
from .device_array import DeviceArray as _DeviceArray
from .forking import compile_section, compiling
from .ir import AType, Program, check_dtype
from .pipeline import (DEVICE_ARRAY_BACKENDS, AliasedArguments, CheckedPathNeeded, Compiled, compile_program,
                       reuse_program, same_array, same_array_positions, shares_memory)
from .trace import trace_program
from .trace.views import argument_strides, c_strides
from .tracebacks import hide_engine_frames, user_stacklevel
from .trace.context import check_array_subclass
from .tree import TreeDef, tree_flatten, tree_unflatten

_ndarray = np.ndarray
_PY_SCALAR_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64),
                     complex: np.dtype(np.complex128)}
MAX_RECOMPILATION_RECORDS = 1000  # kept per jitted function (f.recompilations())
_FUNCTION_IDS = itertools.count(1)  # Jitted.function_id: events of same-named functions stay apart


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


NUMPY_SCALAR = "numpy scalar"  # the fourth entry of the spec of a NumPy scalar argument


def _leaf_spec(leaf: Any, where: str) -> tuple:
    """The cache-key entry of one dynamic argument leaf."""
    if isinstance(leaf, (bool, int, float, complex)) and not isinstance(leaf, np.generic):
        t = bool if isinstance(leaf, bool) else int if isinstance(leaf, int) else float if isinstance(leaf, float) else complex
        return ("py", t)
    if isinstance(leaf, (np.ndarray, np.generic)):
        if type(leaf) is not _ndarray and isinstance(leaf, _ndarray):
            check_array_subclass(type(leaf), where)  # np.matrix, masked arrays: TypeError
        # Byte-swapped data (">f4" on a little-endian host) is the same dtype to NumPy's rules.
        dt = leaf.dtype if leaf.dtype.isnative else leaf.dtype.newbyteorder("=")
        if isinstance(leaf, np.generic):
            # A NumPy scalar is not a 0-d array to NumPy: it is immutable (`s += 1` rebinds) and
            # setitem stores it by value (np.float64(300.7) into int8 raises): traced as one.
            return ("array", check_dtype(dt, where), (), NUMPY_SCALAR)
        return ("array", check_dtype(dt, where), tuple(leaf.shape))
    if getattr(type(leaf), "_jk_device_array", False):  # jk.DeviceArray: passed on without a copy
        return ("array", check_dtype(leaf.dtype, where), leaf.shape)
    if isinstance(leaf, (list, tuple)) or (hasattr(leaf, "__array__") or hasattr(leaf, "__array_interface__")):
        # (Lists and tuples are pytrees; one arrives here only inside an unregistered container.)
        raise TypeError(f"{where}: jitkernel cannot pass a {type(leaf).__name__} to a jitted function: pass an "
                        "array (np.asarray(...)), or mark the argument static (static_argnums / static_argnames)")
    raise TypeError(f"{where}: jitkernel cannot pass a value of type {type(leaf).__name__} to a jitted "
                    "function; pass arrays, scalars or pytrees of them, or mark the argument static")


def _leaf_array(leaf: Any, spec: tuple) -> np.ndarray:
    if spec[0] == "py":
        if spec[1] is int and not (-2**63 <= leaf < 2**63):
            # A Python int argument is traced as an int64 (NEP 50's default integer); NumPy
            # would take a larger one into a uint64 or object array, which this is not.
            raise OverflowError(f"Python integer {leaf} out of bounds for int64: a Python int argument of a "
                                "jitted function is passed as an int64; pass np.uint64(v) for values up to "
                                "2**64 - 1, or mark the argument static (static_argnames)")
        return np.asarray(leaf, dtype=_PY_SCALAR_DTYPES[spec[1]])
    if getattr(type(leaf), "_jk_device_array", False):
        return leaf  # the cuda backend uses its buffer; other backends convert it (np.asarray)
    return np.asarray(leaf, dtype=spec[1])  # a copy in native byte order only when it is not


def give_argument_layout(tracer: Any, leaf: Any) -> None:
    """Give an argument's Tracer the caller's real strides, which decide whether its reshape and
    ravel are views (trace/views.py); C order, the default of every traced array, needs none."""
    if tracer._mem is None or getattr(leaf, "shape", None) != tracer.shape:
        return  # a Python scalar, or a probe trace at other sizes (Jitted._dynamic_base)
    strides = argument_strides(leaf)
    if strides is not None and strides != c_strides(tracer.shape):
        tracer._strides = strides


def _layout_matches(guard: tuple, leaves: list) -> bool:
    return all(getattr(leaves[i], "strides", None) == strides for i, strides in guard)


def _guarded_by_layout(entry: Callable[[tuple], Any], guard: tuple) -> Callable[[tuple], Any]:
    """A fast entry that runs only on arguments of the layout its program was traced for; any
    other layout takes the checked path (Jitted._layout_variant)."""
    def guarded(args: tuple) -> Any:
        for i, strides in guard:
            if args[i].strides != strides:
                raise CheckedPathNeeded
        return entry(args)
    return guarded


class CapturedNames:
    """The names a function's code reads from its globals or closure (nested functions and
    comprehensions included), to find the NumPy arrays it reads that way at each call: an
    argument it writes may be one of them (`def f(a): a += 1; return G.sum()` called as f(G)).
    The code is read on first use (a global may be bound after the function is decorated)."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn
        self._names: tuple[str, ...] | None = None
        self.cells: dict[str, Any] = {}
        self.globals: dict[str, Any] = {}
        if isinstance(fn, types.FunctionType):
            self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
            self.globals = fn.__globals__

    @property
    def names(self) -> tuple[str, ...]:
        if self._names is None:
            self._names = _global_names(self._fn) if isinstance(self._fn, types.FunctionType) else ()
        return self._names

    def arrays(self) -> list[tuple[str, np.ndarray]]:
        """(name, array) of each NumPy array those names hold now."""
        found = []
        for name, cell in self.cells.items():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, np.ndarray):
                found.append((name, value))
        for name in self.names:
            value = self.globals.get(name)
            if isinstance(value, np.ndarray):
                found.append((name, value))
        return found


def _global_names(fn: types.FunctionType) -> tuple[str, ...]:
    """The global names fn's code (and the code nested in it) loads."""
    import dis
    names: set[str] = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"))
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return tuple(sorted(names))


def _bound_names(fn: Any, aliases: tuple) -> tuple[Any, Callable[[Callable[[int], Any]], None]]:
    """`fn` (a plain function) whose global or closure names in `aliases` ((name, leaf index))
    will read the Tracer of that argument leaf instead of the caller's array, in a namespace of
    its own (a copy of its globals, new cells: the module's globals are never changed), and the
    function that binds them once the Tracers exist."""
    closure_names = fn.__code__.co_freevars
    names = dict(aliases)
    namespace = dict(fn.__globals__)
    cells = {name: types.CellType() for name in names if name in closure_names}
    closure = tuple(cells.get(name, cell) for name, cell in zip(closure_names, fn.__closure__ or ()))
    new = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, closure or None)
    new.__kwdefaults__ = fn.__kwdefaults__

    def bind(tracer_of_leaf: Callable[[int], Any]) -> None:
        for name, i in names.items():
            if name in cells:
                cells[name].cell_contents = tracer_of_leaf(i)
            else:
                namespace[name] = tracer_of_leaf(i)
    return new, bind


def _guarded_by_globals(entry: Callable[[tuple], Any], captured: CapturedNames, written: tuple) -> Callable[[tuple], Any]:
    """A fast entry of a function that writes arguments and reads arrays from its globals or
    closure: a call where a written argument shares memory with one of them takes the checked
    path (Jitted._global_aliases)."""
    def guarded(args: tuple) -> Any:
        for _, array in captured.arrays():
            for i in written:
                if isinstance(args[i], np.ndarray) and np.may_share_memory(array, args[i]):
                    raise CheckedPathNeeded
        return entry(args)
    return guarded


def static_key(value: Any) -> Any:
    """The cache key of a static argument's value: two values share a compiled entry only when
    traced code cannot tell them apart. `==` is not enough (`0.0 == -0.0`, `1 == 1.0 == True`,
    `np.float32(1) == 1.0`), so the key holds the exact type and, for floats and complex
    numbers, the bits (a NaN matches itself bit for bit); tuples and frozensets are keyed
    element by element, NumPy scalars by dtype and bytes.

    >>> static_key(0.0) == static_key(-0.0), static_key(1) == static_key(True)
    (False, False)
    >>> static_key((1, float("nan"))) == static_key((1, float("nan")))
    True
    """
    t = type(value)
    if isinstance(value, np.generic):  # before float: np.float64 is a float subclass
        return (t, value.dtype.str, value.tobytes())
    if isinstance(value, float):
        return (t, struct.pack("<d", value))
    if isinstance(value, complex):
        return (t, struct.pack("<dd", value.real, value.imag))
    if isinstance(value, tuple):
        return (t, tuple(static_key(v) for v in value))
    if isinstance(value, frozenset):
        return (t, frozenset(static_key(v) for v in value))
    return (t, value)


def _value_bits(value: Any) -> str:
    """The bits that tell equal-looking static values apart, for diagnostics."""
    if isinstance(value, np.generic):
        return f"{value.dtype}:{value.tobytes().hex()}"
    if isinstance(value, float):
        return "0x" + struct.pack(">d", value).hex()
    if isinstance(value, complex):
        return f"({_value_bits(value.real)}, {_value_bits(value.imag)})"
    if isinstance(value, (tuple, frozenset)):
        return "(" + ", ".join(_value_bits(v) for v in value) + ")"
    return repr(value)


def _static_change(old: Any, new: Any) -> str:
    """`3 -> 4`; when the reprs agree, what differs (`nan -> nan (bits 0x7ff8... -> 0xfff8...)`)."""
    a, b = repr(old), repr(new)
    if a != b:
        return f"{a} -> {b}"
    if type(old) is not type(new):
        return f"{a} ({type(old).__name__}) -> {b} ({type(new).__name__})"
    return f"{a} -> {b} (bits {_value_bits(old)} -> {_value_bits(new)})"


def _restore_byteorder(result: Any, compiled: Compiled, leaves: list) -> Any:
    """Give outputs that are an input, a copy or a view of one (program.byteorder_sources) that
    input's byte order, as NumPy does: kernels compute in native order, so a '>i2' argument
    returned as-is would otherwise come back '<i2'."""
    swapped = {i: leaf.dtype for i, leaf in enumerate(leaves)
               if isinstance(leaf, _ndarray) and not leaf.dtype.isnative}
    if not swapped:
        return result
    outs, out_tree = tree_flatten(result, namedtuples=True)
    for k, i in compiled.program.byteorder_sources:
        # (k past the outputs: a hidden output, the written argument's final value)
        if i in swapped and k < len(outs) and isinstance(outs[k], _ndarray):
            # the input's byte order on the output's own dtype (`.real` of '>c16' is '>f8'); a
            # returned view of the argument has it already (copy=False keeps it that view)
            outs[k] = outs[k].astype(outs[k].dtype.newbyteorder(swapped[i].byteorder), copy=False)
    return tree_unflatten(out_tree, outs)


class Signature:
    """How one call's arguments key the cache: tree structure, per-leaf (dtype, shape) or Python
    scalar type, and the static arguments' values (by `static_key`: type and bits, not `==`)."""

    __slots__ = ("key", "treedef", "specs", "statics", "static_keys", "names")

    def __init__(self, treedef: TreeDef, specs: tuple, statics: tuple, names: tuple) -> None:
        self.treedef, self.specs, self.statics, self.names = treedef, specs, statics, names
        self.static_keys = tuple((k, static_key(v)) for k, v in statics)
        self.key = (treedef, specs, self.static_keys)

    def describe(self) -> str:
        parts = []
        for name, spec in zip(self.names, self.specs):
            if spec[0] == "py":
                parts.append(f"{name}: {spec[1].__name__}")
            else:
                parts.append(f"{name}: {spec[1]}{list(spec[2])}")
        parts += [f"{k}={v!r}" for k, v in self.statics]
        return ", ".join(parts)


def _describe_spec(spec: tuple) -> tuple[str, str]:
    if spec[0] == "py":
        return "python scalar", spec[1].__name__
    return "array", f"{spec[1]}{spec[2]}"


def signature_diff(old: Signature, new: Signature) -> list[str]:
    """Why `new` missed the cache, relative to `old`, in NumPy notation, one reason per argument:
    `x: shape (1000,) -> (2000,)`, `x: dtype float32 -> float64`, `n: static value 3 -> 4`."""
    if old.treedef != new.treedef or old.names != new.names:
        return [f"argument tree structure changed: {old.treedef} -> {new.treedef}"]
    reasons = []
    for name, a, b in zip(new.names, old.specs, new.specs):
        if a == b:
            continue
        if a[0] == b[0] == "array":
            if a[1] != b[1]:
                reasons.append(f"{name}: dtype {a[1]} -> {b[1]}")
            if a[2] != b[2]:
                reasons.append(f"{name}: shape {a[2]} -> {b[2]}")
            if a[3:] != b[3:]:
                reasons.append(f"{name}: {'a NumPy scalar' if a[3:] else 'a 0-d array'} -> "
                               f"{'a NumPy scalar' if b[3:] else 'a 0-d array'}")
        elif a[0] == b[0] == "py":
            reasons.append(f"{name}: Python scalar type {a[1].__name__} -> {b[1].__name__}")
        else:
            ka, va = _describe_spec(a)
            kb, vb = _describe_spec(b)
            reasons.append(f"{name}: {ka} {va} -> {kb} {vb}")
    old_static, new_static = dict(old.statics), dict(new.statics)
    old_keys, new_keys = dict(old.static_keys), dict(new.static_keys)
    for k in sorted(set(old_static) | set(new_static)):
        if k not in old_static or k not in new_static:
            reasons.append(f"{k}: static argument {'added' if k in new_static else 'removed'}")
        elif old_keys[k] != new_keys[k]:
            reasons.append(f"{k}: static value {_static_change(old_static[k], new_static[k])}")
    return reasons or ["signature changed"]


def size_changes(old: Signature, new: Signature) -> list[tuple[str, int, int, int]] | None:
    """(argument, axis, old size, new size) for every size that differs, when nothing else does
    (same tree, dtypes, ranks, Python scalar types and static values); None otherwise, and
    None when nothing differs."""
    if old.treedef != new.treedef or old.names != new.names or old.static_keys != new.static_keys:
        return None
    changes = []
    for name, a, b in zip(new.names, old.specs, new.specs):
        if a == b:
            continue
        if a[0] != "array" or b[0] != "array" or a[1] != b[1] or len(a[2]) != len(b[2]):
            return None
        changes += [(name, d, x, y) for d, (x, y) in enumerate(zip(a[2], b[2])) if x != y]
    return changes or None


def size_only_change(old: Signature, new: Signature) -> list[tuple[str, int]] | None:
    """The (argument, axis) pairs whose sizes differ when nothing else does, or None. None too
    when a differing size is 0 or 1 on either side: a shape-generic entry never serves those
    (a size-1 dimension broadcasts, a size-0 one empties the computation)."""
    changes = size_changes(old, new)
    if changes is None or any(min(x, y) < 2 for _, _, x, y in changes):
        return None
    return [(name, d) for name, d, _, _ in changes]


def _with_sizes(sig: Signature, dims: set[tuple[str, int]], bump: int) -> Signature:
    """`sig` with the sizes of `dims` increased by `bump` (a probe signature, see Jitted._dynamic_base)."""
    specs = []
    for name, spec in zip(sig.names, sig.specs):
        if spec[0] == "array" and any(n == name for n, _ in dims):
            spec = (spec[0], spec[1], tuple(s + bump if (name, d) in dims else s for d, s in enumerate(spec[2])),
                    *spec[3:])
        specs.append(spec)
    return Signature(sig.treedef, tuple(specs), sig.statics, sig.names)


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


class Lowered:
    """A traced, optimised and compiled function for one signature; `as_text(stage)` shows it."""

    STAGES = ("ir", "optimized", "kernels", "llvm", "asm", "cuda")
    # Needs nvcc, so not among the stages every lowered function shows (docs/gpu.md).
    DEVICE_STAGES = ("ptx",)

    def __init__(self, compiled: Compiled) -> None:
        self.compiled = compiled

    def as_text(self, stage: str = "optimized") -> str:
        """Text of a stage: "ir" (traced), "optimized", "kernels" (fused), "llvm", "asm" (CPU
        backend), "cuda" (the CUDA translation unit, any backend), "ptx" (nvcc's PTX of it)."""
        if stage not in self.STAGES and stage not in self.DEVICE_STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(self.STAGES)}")
        return self.compiled.text(stage)

    def __str__(self) -> str:
        return self.as_text("kernels")


_INSTANCES: "weakref.WeakSet[Jitted]" = weakref.WeakSet()


def _new_locks_in_child() -> None:
    """A forked child has only the forking thread: a lock that another thread of the parent held
    (compiling, say) would never be released there. Every function gets a fresh one."""
    for jitted in list(_INSTANCES):
        jitted._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)


class Jitted:
    """A function compiled on first call for each new argument signature.

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

    # -- signature -----------------------------------------------------------------------
    def _arg_name(self, i: int) -> str:
        return self._positional[i] if i < len(self._positional) else f"args[{i}]"

    def _signature(self, args: tuple, kwargs: dict) -> tuple[Signature, list[np.ndarray]]:
        dyn_args = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        statics = tuple((self._arg_name(i), args[i]) for i in sorted(self.static_argnums) if i < len(args))
        given = {k: v for k, v in kwargs.items() if k in self.static_argnames}
        for i, p in enumerate(self._positional):
            # A static parameter left at its default keys the cache by that default value.
            if p in self.static_argnames and i >= len(args) and p not in given:
                default = next(q.default for q in self._params if q.name == p)
                if default is not inspect.Parameter.empty:
                    given[p] = default
        statics += tuple(sorted(given.items()))
        for k, v in statics:
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"{self.__name__}: static argument {k} must be hashable, got "
                                f"{type(v).__name__}") from None
        leaves, treedef = tree_flatten((dyn_args, dyn_kwargs))
        names = self._leaf_names(dyn_args, dyn_kwargs)
        specs = tuple(_leaf_spec(leaf, f"{self.__name__} argument {n}") for leaf, n in zip(leaves, names))
        arrays = [_leaf_array(leaf, s) for leaf, s in zip(leaves, specs)]
        return Signature(treedef, specs, statics, tuple(names)), arrays

    def _leaf_names(self, dyn_args: tuple, dyn_kwargs: dict) -> list[str]:
        names: list[str] = []

        def walk(node: Any, path: str) -> None:
            if node is None:
                return
            if isinstance(node, (tuple, list)) and not hasattr(node, "_fields"):
                for i, c in enumerate(node):
                    walk(c, f"{path}[{i}]")
            elif isinstance(node, dict):
                for k in sorted(node):
                    walk(node[k], f"{path}[{k!r}]")
            else:
                names.append(path)

        dyn_positions = [i for i in range(len(dyn_args) + len(self.static_argnums)) if i not in self.static_argnums]
        for i, a in zip(dyn_positions, dyn_args):
            walk(a, self._arg_name(i))
        for k in sorted(dyn_kwargs):
            walk(dyn_kwargs[k], k)
        return names

    # -- tracing and compiling -------------------------------------------------------------
    @compile_section
    def _trace(self, sig: Signature, args: tuple, kwargs: dict, same: tuple[int, ...] | None = None,
               globals_as: tuple = ()) -> tuple[Program, TreeDef]:
        """Trace for `sig`. `same[j]` (an aliased call, see _call_aliased) is the first leaf that
        is the same array as leaf j: those leaves get one Tracer, and the program one input."""
        in_specs = [(AType(s[2], s[1]), None) if s[0] == "array" else (AType((), _PY_SCALAR_DTYPES[s[1]]), s[1])
                    for s in sig.specs]
        numpy_scalars = [s[3:] == (NUMPY_SCALAR,) for s in sig.specs]
        if same is not None:
            in_specs = [spec for j, spec in enumerate(in_specs) if same[j] == j]
            numpy_scalars = [k for j, k in enumerate(numpy_scalars) if same[j] == j]
        leaves = self._dynamic_leaves(args, kwargs)
        leaf_of = sorted(set(same)) if same is not None else list(range(len(leaves)))

        fun = self._function_to_trace()
        bind = None
        if globals_as:  # `globals_as` names read the argument's Tracer (_call_with_globals)
            fun, bind = _bound_names(fun, globals_as)

        def build_args(tracers: list) -> tuple[tuple, dict]:
            if bind is not None:
                bind(lambda i: tracers[leaf_of.index(i)])
            for k, t in enumerate(tracers):
                give_argument_layout(t, leaves[leaf_of[k]])
            for t, is_numpy_scalar in zip(tracers, numpy_scalars):
                if is_numpy_scalar:
                    t.scalar = True  # immutable, stored by value (see _leaf_spec)
            if same is not None:
                position = {leaf: k for k, leaf in enumerate(sorted(set(same)))}
                tracers = [tracers[position[same[j]]] for j in range(len(same))]
            dyn_args, dyn_kwargs = tree_unflatten(sig.treedef, tracers)
            dyn_args, dyn_kwargs = self._read_only_containers(dyn_args, dyn_kwargs)
            it = iter(dyn_args)
            full_args = tuple(args[i] if i in self.static_argnums else next(it) for i in range(len(args)))
            full_kwargs = dict(dyn_kwargs)
            full_kwargs.update({k: v for k, v in kwargs.items() if k in self.static_argnames})
            return full_args, full_kwargs

        program, out_tree = trace_program(fun, self.__name__, in_specs, build_args)
        program.layout_guard = tuple((leaf_of[i], getattr(leaves[leaf_of[i]], "strides", None))
                                     for i in program.layout_args)
        names = sig.names if same is None else [n for j, n in enumerate(sig.names) if same[j] == j]
        program.written_names = tuple(names[i] for i, _ in program.written_args)
        return program, out_tree

    def _dynamic_leaves(self, args: tuple, kwargs: dict) -> list:
        """The caller's own argument leaves, in the order of the program's inputs."""
        dyn = (tuple(a for i, a in enumerate(args) if i not in self.static_argnums),
               {k: v for k, v in kwargs.items() if k not in self.static_argnames})
        return tree_flatten(dyn)[0]

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
            reasons = [f"{sig.names[i]}: strides {strides} -> {getattr(leaves[i], 'strides', None)} (a reshape or ravel "
                       "of it is a view for one layout and a copy for the other)"
                       for i, strides in compiled.program.layout_guard
                       if getattr(leaves[i], "strides", None) != strides]
            self._record_recompilation(Recompilation(self.__name__, reasons, sig.describe(), sig.describe(),
                                                     variant.compile_seconds, variant.trace_seconds))
            return variant

    def _function_to_trace(self) -> Callable[..., Any]:
        """`fun` with its Python control flow converted (jitkernel/autograph), once; `fun`
        itself with autograph=False or when its source is not available."""
        if not self.autograph:
            return self.fun
        if self._converted is None:
            from .autograph import convert
            self._converted = convert(self.fun) or self.fun
        return self._converted

    def _traced(self, sig: Signature, args: tuple, kwargs: dict) -> tuple[Program, TreeDef, float]:
        t0 = events.clock()
        program, out_tree = self._trace(sig, args, kwargs)
        t1 = events.clock()
        if events.SUBSCRIBERS:
            events.publish(events.TraceEvent(self.__name__, t0, t1 - t0, sig.describe(), writes=program.written_names))
        return program, out_tree, t1 - t0

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

    def _int_arguments(self, args: tuple, kwargs: dict) -> tuple[set[int], set[str]] | None:
        """(positions, keyword names) of the top-level integer arguments (Python ints, NumPy
        integer scalars) that are not static; None when there are none."""
        def is_int(a: Any) -> bool:
            return isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))
        nums = {i for i, a in enumerate(args) if is_int(a) and i not in self.static_argnums}
        names = {k for k, a in kwargs.items() if is_int(a) and k not in self.static_argnames}
        return (nums, names) if nums or names else None

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
            compiled = self._miss(sig, args, kwargs)
        except BaseException as e:
            if events.SUBSCRIBERS:  # the profiler counts this miss as failed, not as a compile
                events.publish(events.CompileFailedEvent(
                    self.__name__, events.clock(), 0.0, error=_one_line(e), signature=sig.describe(),
                    function_id=self.function_id))
            raise
        compiled.function_id = self.function_id
        return compiled

    def recompilations(self) -> list[Recompilation]:
        """The recompilations of this function so far (the latest MAX_RECOMPILATION_RECORDS), with
        their reasons."""
        with self._lock:
            return list(self._recompilations)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            # Fast path: positional arrays and Python scalars, keyed by (shape, dtype) / type.
            try:
                # Exact ndarrays only (subclasses take the checked slow path); keyed by the dtype
                # itself, so a byte-swapped array never takes a native entry.
                # A jk.DeviceArray is keyed apart from an ndarray of its shape (only a device
                # backend registers it; a host backend's entry would not copy it back first).
                if len(args) == 1:
                    a = args[0]
                    key = (a.shape, a.dtype) if type(a) is _ndarray else \
                        (a.shape, a.dtype, _DeviceArray) if type(a) is _DeviceArray else type(a)
                else:
                    key = tuple([(a.shape, a.dtype) if type(a) is _ndarray else
                                 (a.shape, a.dtype, _DeviceArray) if type(a) is _DeviceArray else type(a) for a in args])
                entry = self._fast[key]
            except (KeyError, TypeError, AttributeError):
                pass
            else:
                try:  # lock-free: one dict read above; a try costs nothing until something raises
                    return entry(args)
                except AliasedArguments:
                    pass  # the same array passed twice to a function that writes: _call's variant
                except BaseException as e:
                    hide_engine_frames(e)
                    raise
        try:
            return self._call(args, kwargs)
        except BaseException as e:
            hide_engine_frames(e)  # the user's frames only (jk.config "traceback")
            raise  # a bare raise does not add this frame back

    def _call(self, args: tuple, kwargs: dict) -> Any:
        from .trace import Tracer
        all_leaves = tree_flatten((args, kwargs))[0]
        if any(isinstance(leaf, Tracer) for leaf in all_leaves):
            # Called on traced values inside another jitted function: inline into that trace.
            return self._function_to_trace()(*args, **kwargs)
        if any(getattr(type(leaf), "_jk_sharded", False) for leaf in all_leaves):
            from .sharding import call as sharded_call  # sharded in: sharded out, via the Dask path
            return sharded_call(self, args, kwargs)
        if any(type(leaf).__module__.startswith("dask.") for leaf in all_leaves):
            from .distributed import call  # Dask arrays in: lazy Dask arrays out (docs/distributed.md)
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
        result = compiled(arrays, leaves)
        if getattr(compiled.program, "byteorder_sources", None):
            result = _restore_byteorder(result, compiled, leaves)
        if not kwargs and not self.static_argnums:
            self._register_fast(args, compiled, sig)
        return result

    def _aliased_variant(self, pattern: tuple, leaves: list, sig: Signature, args: tuple, kwargs: dict,
                         **trace_options: Any) -> Compiled:
        """The variant of `sig` traced with `trace_options` (an aliasing pattern: `same` or
        `globals_as`), cached per pattern and argument layout (as _layout_variant); compiled under
        the fork gate, then the function's lock, as every compile."""
        key = (sig.key, *pattern, tuple(getattr(leaf, "strides", None) for leaf in leaves))
        compiled = self._aliased.get(key)
        if compiled is None:
            with compiling(), self._lock:
                compiled = self._aliased.get(key)
                if compiled is None:
                    program, out_tree = self._trace(sig, args, kwargs, **trace_options)
                    compiled = compile_program(program, out_tree, self._backend_name(), name=self.__name__,
                                               fastmath=self.fastmath, disk_cache=self.disk_cache and config.disk_cache)
                    compiled.function_id = self.function_id
                    self._aliased[key] = compiled
        return compiled

    def _call_aliased(self, sig: Signature, args: tuple, kwargs: dict, arrays: list, leaves: list,
                      same: tuple[int, ...]) -> Any:
        """Run a function that writes its arguments on arguments of which some are the exact same
        array (`f(a, a)`): traced again with one Tracer (one Memory) per distinct array, so a
        write through one name is seen through the other, as in NumPy. Cached per pattern; not
        on the fast path."""
        compiled = self._aliased_variant((same,), leaves, sig, args, kwargs, same=same)
        distinct = sorted(set(same))
        result = compiled([arrays[i] for i in distinct], [leaves[i] for i in distinct])
        if getattr(compiled.program, "byteorder_sources", None):
            result = _restore_byteorder(result, compiled, [leaves[i] for i in distinct])
        return result

    def _global_aliases(self, compiled: Compiled, leaves: list) -> tuple:
        """(name, leaf index) of each array the function reads as a global or closure variable
        that is an argument it writes (the same array), so that those reads see the writes as in
        NumPy. An array that only partly overlaps a written argument is refused."""
        captured = self._captured.arrays()
        if not captured:
            return ()
        aliases = []
        for i, _ in compiled.program.written_args:
            leaf = leaves[i]
            if not isinstance(leaf, np.ndarray):
                continue
            for name, array in captured:
                if array is leaf or same_array(array, leaf):
                    aliases.append((name, i))
                elif shares_memory(array, leaf):
                    from .errors import UnsupportedOperationError
                    raise UnsupportedOperationError(
                        f"{self.__name__}: argument {self._leaf_name(compiled, i)!r}, which the function writes, "
                        f"shares memory with {name!r}, an array the function reads as a global or closure "
                        f"variable, without being the same array: its reads of {name!r} would not see the writes "
                        f"as in NumPy. Pass {name!r} as an argument too (or a copy of one of them).")
        return tuple(sorted(set(aliases)))

    def _leaf_name(self, compiled: Compiled, i: int) -> str:
        names = dict(zip((k for k, _ in compiled.program.written_args), compiled.program.written_names))
        return names.get(i, f"args[{i}]")

    def _call_with_globals(self, sig: Signature, args: tuple, kwargs: dict, arrays: list, leaves: list,
                           aliases: tuple) -> Any:
        """Run a function that writes an argument which it also reads as a global or closure
        array (`def f(a): a += 1; return G.sum()` called as `f(G)`): traced with that name bound
        to the argument's Tracer, so its reads see the writes. Cached per pattern and layout;
        not on the fast path."""
        compiled = self._aliased_variant(("globals", aliases), leaves, sig, args, kwargs, globals_as=aliases)
        result = compiled(arrays, leaves)
        if getattr(compiled.program, "byteorder_sources", None):
            result = _restore_byteorder(result, compiled, leaves)
        return result

    def _read_only_containers(self, dyn_args: tuple, dyn_kwargs: dict) -> tuple[tuple, dict]:
        """The rebuilt argument pytrees with their dicts and lists read-only, each named as the
        user wrote it (a mutation would be lost: trace/container_arguments.py)."""
        from .trace.container_arguments import guard_containers
        dyn_positions = [i for i in range(len(dyn_args) + len(self.static_argnums)) if i not in self.static_argnums]
        args = tuple(guard_containers(a, self._arg_name(i), self.__name__) for i, a in zip(dyn_positions, dyn_args))
        kwargs = {k: guard_containers(v, k, self.__name__) for k, v in dyn_kwargs.items()}
        return args, kwargs

    def _register_fast(self, args: tuple, compiled: Compiled, sig: Signature) -> None:
        key: list = []
        scalars: list = []
        for a in args:
            if type(a) is _ndarray:
                if not a.dtype.isnative:
                    return  # byte-swapped inputs take the slow path (_restore_byteorder)
                key.append((a.shape, a.dtype))
                scalars.append(None)
            elif type(a) in _PY_SCALAR_DTYPES:
                key.append(type(a))
                scalars.append(_PY_SCALAR_DTYPES[type(a)])
            elif type(a) is _DeviceArray and compiled.backend in DEVICE_ARRAY_BACKENDS:
                key.append((a.shape, a.dtype, _DeviceArray))  # used where it is (device.put)
                scalars.append(None)
            else:
                return
        entry = compiled.fast_entry(scalars, sig.describe())
        if compiled.program.layout_guard:
            entry = _guarded_by_layout(entry, compiled.program.layout_guard)
        if compiled.program.written_args and (self._captured.names or self._captured.cells):
            # (names, not the arrays they hold now: a global may be bound to an array later)
            entry = _guarded_by_globals(entry, self._captured, tuple(i for i, _ in compiled.program.written_args))
        with self._lock:
            if self._cache.get(sig.key) is compiled:  # not evicted by another thread meanwhile
                self._fast[key[0] if len(key) == 1 else tuple(key)] = entry

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Trace and compile for these arguments (or reuse the cached entry) without running."""
        try:
            sig, compiled, _ = self._lookup(args, kwargs)
            if compiled.program.layout_guard:
                compiled = self._layout_variant(sig, compiled, args, kwargs, self._dynamic_leaves(args, kwargs))
        except BaseException as e:
            hide_engine_frames(e)
            raise
        return Lowered(compiled)

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

    def __repr__(self) -> str:
        return f"<jitted function {self.__qualname__}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __reduce__(self) -> tuple:
        """Pickled by reference to its module-level name where it has one, else by value (its
        function and jit options), as Numba's and JAX's jitted functions: multiprocessing and
        Dask's processes scheduler can send it (jitkernel/pickling.py)."""
        from .pickling import reduce_jitted
        return reduce_jitted(self)


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
