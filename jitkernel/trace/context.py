"""Trace contexts: record primitive applications on Tracers into a Program."""
from __future__ import annotations

import contextlib
import threading
import warnings
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import AType, Eqn, Program, Var, check_dtype, primitives, symdim
# The user's line (frames.py); the layers above the trace read it here.
from .active import _traces, current_context, is_tracing  # noqa: F401 (the layers above import them here)
from .frames import user_frame, user_frame_location
from .memory import Memory
from .tracer import Tracer


class _EquationLocations(threading.local):
    """While `recording_locations()` runs in this thread: the user's `file:line: source` of every
    equation any trace records (debug_nans names the line that made a NaN, jitted/debug_nans.py).
    None otherwise: ordinary traces record nothing."""

    def __init__(self) -> None:
        self.table: dict[Eqn, str] | None = None


_locations = _EquationLocations()


@contextlib.contextmanager
def recording_locations() -> Iterator[dict[Eqn, str]]:
    """Record the user's line of each equation traced inside the block (nested traces too)."""
    saved, _locations.table = _locations.table, {}
    try:
        yield _locations.table
    finally:
        _locations.table = saved



# Movement primitives whose NumPy counterparts (reshape, transpose, basic slicing,
# broadcast_to) return views of their input. Reshape may copy in NumPy (non-contiguous input);
# treating it as a view is the conservative choice for the in-place checks.
# real/imag: NumPy's z.real and z.imag are views of z's memory (writes go through, views.py).
VIEW_PRIMITIVES = frozenset({"reshape", "transpose", "slice", "broadcast_in_dim", "real", "imag"})

# Attributes an ndarray subclass may define without changing what NumPy computes on it:
# construction, metadata propagation, pickling and printing.
_PLAIN_SUBCLASS_ATTRIBUTES = frozenset({
    "__new__", "__init__", "__array_finalize__", "__reduce__", "__reduce_ex__", "__setstate__",
    "__repr__", "__str__", "__format__", "__class_getitem__", "__init_subclass__", "__getstate__",
    "__copy__", "__deepcopy__", "__sizeof__"})
_subclass_verdicts: dict[type, str | None] = {np.ndarray: None, np.memmap: None}


def _semantic_overrides(cls: type) -> str | None:
    """Names of the ndarray attributes that `cls` (or a base between it and ndarray, memmap
    excepted) overrides in a way that can change results; None for a plain-data subclass."""
    overridden: list[str] = []
    for base in cls.__mro__:
        if base in (np.ndarray, np.memmap, object):
            continue
        overridden += sorted(name for name in vars(base)
                             if hasattr(np.ndarray, name) and name not in _PLAIN_SUBCLASS_ATTRIBUTES
                             and name not in ("__module__", "__doc__", "__dict__", "__weakref__",
                                              "__slots__", "__qualname__"))
    overridden = list(dict.fromkeys(overridden))
    return None if not overridden else ", ".join(overridden[:6]) + (", ..." if len(overridden) > 6 else "")


def check_array_subclass(cls: type, where: str) -> None:
    """Reject ndarray subclasses whose NumPy semantics differ from ndarray's (np.matrix: `*` is
    a matrix product; masked arrays: reductions skip masked elements; anything overriding
    __array_ufunc__, __array_function__, __array_wrap__, operators or methods). Plain-data
    subclasses (np.memmap, subclasses that only add construction or metadata) are ndarrays to
    jitkernel. Raises TypeError naming the type."""
    verdict = _subclass_verdicts.get(cls, "")
    if verdict == "":
        verdict = _subclass_verdicts[cls] = _semantic_overrides(cls)
    if verdict is not None:
        raise TypeError(
            f"{where}: jitkernel cannot compile NumPy operations on a {cls.__module__}.{cls.__qualname__}, an "
            f"ndarray subclass that changes NumPy's semantics (it overrides {verdict}); jitkernel would "
            "treat it as a plain ndarray and could return a different result. Pass np.asarray(x) if "
            "plain-array semantics are what you want (see docs/numpy-support.md, 'Array subclasses').")


def _warn_at_user_line(err: str, flag: int) -> None:
    """np.errstate(call=...) callback while tracing: NumPy's floating-point warning, attributed
    to the user's line (NumPy warns from the innermost Python frame, often a jitkernel file)."""
    frame = user_frame(1)
    message = f"{err} encountered (NumPy, while tracing)"  # NumPy passes "overflow", "divide by zero", ...
    if frame is None:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        return
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    # No module_globals: with them linecache asks the module's __loader__ for the source, and
    # some loaders raise instead (`python -c`: BuiltinImporter, "'__main__' is not a built-in
    # module"); the file name and line are enough for the warning to point at the user's line.
    warnings.warn_explicit(message, RuntimeWarning, frame.f_code.co_filename, frame.f_lineno,
                           frame.f_globals.get("__name__"), registry)


def user_line_warnings() -> Any:
    """While tracing, NumPy's floating-point warnings (errstate "warn") point at the user's line;
    "raise", "ignore" and the user's own np.errstate inside the function are kept. np.errstate is
    context-local, so other threads are unaffected."""
    modes = {k: ("call" if v == "warn" else v) for k, v in np.geterr().items()}
    return np.errstate(call=_warn_at_user_line, **modes)


class TraceContext:
    """Collects equations while a function runs on Tracers."""

    # A context made by jk.lax for a sub-function has its enclosing context as `parent`
    # (trace/subtrace.py); `closed` once its function has been traced.
    parent: "TraceContext | None" = None
    closed = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[np.ndarray] = []
        self._const_ids: dict[int, Var] = {}
        self._keepalive: list[Any] = []
        self._input_index: dict[Var, int] = {}
        # (input index, dtype, lowest, highest): the values a Python int argument may take;
        # None where NumPy accepts any value on that side (see weak_int_cast).
        self.int_arg_bounds: list[tuple[int, np.dtype, int | None, int | None]] = []
        self.pending_conversion_error: Exception | None = None  # see tracer.conversion_error
        self.argument_memories: list = []  # trace/views.py Memory of each array argument
        # result Var -> the Var whose dtype, byte order included, NumPy gives it (keep_byteorder),
        # or the byte order itself ('>' or '<'): a byte-swapped argument's (swapped_input), or the
        # one the user asked for (request_byteorder)
        self.byteorder_of: dict[Var, Var | str] = {}
        self.byteorders_seen = False  # any order recorded: `.dtype` may differ from the native one

    def __enter__(self) -> "TraceContext":
        _traces.stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _traces.stack.remove(self)

    def new_input(self, aval: AType, weak: type | None = None) -> "Tracer":
        v = Var(aval)
        self._input_index[v] = len(self.invars)
        self.invars.append(v)
        t = Tracer(self, v, weak)
        if weak is None:
            # The caller's array: a write makes its final value a hidden output, copied back
            # into the caller's array after the call (trace_program, Compiled.write_back).
            t._mem = Memory(argument=True, ctx=self, value=v, index=len(self.invars) - 1)
            self.argument_memories.append(t._mem)
            t.scalar = False
        return t

    def const(self, value: Any, dtype: np.dtype | None = None) -> "Tracer":
        """Lift a concrete value (NumPy array or scalar) into the program as a constant."""
        if isinstance(value, Tracer):
            raise TypeError("const() of a Tracer")
        if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
            check_array_subclass(type(value), "a NumPy array used inside the jitted function")
        arr = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
        if dtype is not None and isinstance(value, np.ndarray) and value.dtype != dtype:
            arr = value.astype(dtype)
        check_dtype(arr.dtype, "a constant")
        order = None if arr.dtype.isnative else arr.dtype.byteorder  # kept in native order, read as NumPy's
        if order:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        key = id(value) if isinstance(value, np.ndarray) and dtype is None else None
        if key is not None and key in self._const_ids:
            return Tracer(self, self._const_ids[key])
        # A private C-ordered copy: the program keeps the value it saw at trace time, and the
        # user's array is not touched (np.ascontiguousarray would also turn 0-d into 1-d).
        arr = np.array(arr, order="C", copy=True)
        arr.flags.writeable = False
        v = Var(AType(arr.shape, arr.dtype))
        self.constvars.append(v)
        self.consts.append(arr)
        if order:
            self.byteorder_of[v] = order
            self.byteorders_seen = True
        if key is not None:
            self._const_ids[key] = v
            self._keepalive.append(value)  # ids stay unique while the trace runs
        return Tracer(self, v)

    def weak_int_cast(self, var: Var, dtype: np.dtype, check_below: bool = True, check_above: bool = True) -> None:
        """Record that input `var` (a Python int argument) is cast to integer `dtype`, where
        NumPy raises OverflowError for a value outside the dtype's range (arithmetic, bitwise
        ops, shifts, maximum/minimum). A side not checked is one where NumPy accepts any value
        (np.clip's bound that cannot clip); comparisons and np.where never get here."""
        info = np.iinfo(dtype)
        lo = info.min if check_below else None
        hi = info.max if check_above else None
        # A Python int argument is an int64 already (larger ones are rejected): nothing to check.
        if (lo is None or lo <= -(1 << 63)) and (hi is None or hi >= (1 << 63) - 1):
            return
        if var in self._input_index:  # a dict: this runs once per operation on such an input
            self.int_arg_bounds.append((self._input_index[var], np.dtype(dtype), lo, hi))

    def bind(self, prim: str, inputs: Sequence["Tracer"], **params: Any) -> list["Tracer"]:
        """Append `prim(*inputs, **params)`; the shape rule raises NumPy-style errors."""
        innermost = _traces.stack[-1] if _traces.stack else self
        if innermost is not self and innermost.encloses(self):
            # Inside a jk.lax sub-function every operation is recorded there, even one whose
            # inputs are all outer values (trace/subtrace.py captures them).
            return innermost.bind(prim, inputs, **params)
        for t in inputs:
            if not isinstance(t, Tracer) or t._ctx is not self:
                if isinstance(t, Tracer) and t._ctx.closed:
                    raise t._ctx._leak_error()  # a value of a finished jk.lax sub-trace
                raise UnsupportedOperationError(
                    f"{self.name}: a value traced by another jitted function leaked into this one")
        in_vars = [t.ir_var for t in inputs]
        out_avals = primitives.infer_avals(prim, [v.aval for v in in_vars], params)
        outs = [Var(a) for a in out_avals]
        eqn = Eqn(prim, in_vars, outs, dict(params))
        self.eqns.append(eqn)
        if _locations.table is not None:
            _locations.table[eqn] = user_frame_location()
        results = [Tracer(self, o) for o in outs]
        if prim in VIEW_PRIMITIVES:
            # NumPy returns a view here: the result is a view of its input's base (writes
            # through either are seen by both; see trace/views.py).
            results[0].share_memory_with(inputs[0], prim, params)
        return results

    def encloses(self, other: "TraceContext") -> bool:
        """Whether `other` is this context or one it is nested in (jk.lax sub-traces)."""
        ctx: TraceContext | None = self
        while ctx is not None:
            if ctx is other:
                return True
            ctx = ctx.parent
        return False

    def bind1(self, prim: str, *inputs: "Tracer", **params: Any) -> "Tracer":
        return self.bind(prim, inputs, **params)[0]

    def program(self, outvars: list[Var]) -> Program:
        program = Program(list(self.invars), list(self.constvars), list(self.consts), list(self.eqns),
                          outvars, self.name)
        program.int_arg_bounds = sorted(set(self.int_arg_bounds), key=lambda t: (t[0], t[1].str, str(t[2:])))
        program.byteorder_sources = self._byteorder_sources(outvars)
        return program

    def byteorder_origin(self, t: Any) -> Var:
        """The Var whose byte order `t` has to NumPy: the argument itself for the argument, a
        view of it or its value after writes (its Memory is the argument's), else t's value."""
        mem = getattr(t, "_mem", None)
        if mem is not None and mem.argument and mem.ctx is self:
            return self.invars[mem.index]
        return t.ir_var

    def keep_byteorder(self, result: Any, source: Any) -> Any:
        """Record that NumPy gives `result` the dtype of `source` byte order included (a copy,
        gather, sort, `zeros_like`, ... of a '>f8' argument is '>f8'; arithmetic is native).
        Kernels compute in native order; the call restores the order (_byteorder_sources).
        Returns `result`; tuples keep it in their first element (np.unique's values)."""
        if isinstance(result, tuple) and result:
            self.keep_byteorder(result[0], source)
            return result
        data = getattr(result, "padded", None) if getattr(type(result), "_jk_datadep", False) else result
        if isinstance(data, Tracer) and isinstance(source, Tracer) and data._ctx is self and source._ctx is self \
                and data.dtype == source.dtype:
            origin, var = self.byteorder_origin(source), data.ir_var
            if origin is not var and var not in self._input_index:  # an argument keeps its own order
                self.byteorder_of[var] = origin
        return result

    def swapped_input(self, var: Var, order: str) -> None:
        """The argument `var` arrived in the non-native byte order `order` (kernels read it
        native): `x.dtype` in the user's code reads the argument's own dtype, as in NumPy, and
        outputs that are the argument, its views or copies return in that order."""
        self.byteorder_of[var] = order
        self.byteorders_seen = True

    def request_byteorder(self, result: Any, dtype: Any) -> Any:
        """The user asked for `dtype` (np.zeros(n, '>f8'), astype, asarray, full, *_like): the
        result computes natively (check_dtype) and is returned in the requested byte order, as
        NumPy returns it. Returns `result`."""
        if dtype is None or not isinstance(result, Tracer) or result._ctx is not self:
            return result
        dt = np.dtype(dtype)
        if not dt.isnative:
            self.byteorder_of[result.ir_var] = dt.byteorder
            self.byteorders_seen = True
        return result

    def byteorder_differs(self, t: Any, dtype: Any) -> bool:
        """Whether `dtype` (given by the user, not None) differs from `t.dtype` as the user reads
        it only in byte order: NumPy then converts (a copy), where natively nothing changes."""
        dt = np.dtype(dtype)
        if dt.kind not in "biufc" or (dt.isnative and not self.byteorders_seen):
            return False
        return dt != self.user_dtype(t) and dt.newbyteorder("=") == t.ir_var.aval.dtype

    def user_dtype(self, t: Any) -> np.dtype:
        """`t.dtype` as the user's code reads it: the byte order NumPy would give `t` (its
        argument's for the argument, its views and copies; the requested one for a created
        array) on t's dtype; native otherwise."""
        dt = t.ir_var.aval.dtype
        root = self._byteorder_root(self.byteorder_origin(t), self._views())
        return dt.newbyteorder(root) if isinstance(root, str) and dt.itemsize > 1 else dt

    def _views(self) -> dict[Var, Var]:
        return {e.outputs[0]: e.inputs[0] for e in self.eqns if e.prim in VIEW_PRIMITIVES}

    def _byteorder_root(self, v: Var, view_of: dict[Var, Var]) -> Var | str:
        """The Var (or requested byte order) whose byte order NumPy gives `v`: through views
        and keep_byteorder's records."""
        seen = set()
        while isinstance(v, Var) and (v in view_of or v in self.byteorder_of) and v not in seen:
            seen.add(v)
            v = self.byteorder_of[v] if v in self.byteorder_of else view_of[v]
        return v

    def carry_byteorder(self, old: Var | None, new: Var) -> None:
        """A write gave an array the new value `new`: it keeps the byte order its old value had
        (a copy of an argument, `a.copy()`, holds the argument's own Var until written)."""
        if old is None or old is new:
            return
        if old in self.byteorder_of:
            self.byteorder_of[new] = self.byteorder_of[old]
        elif old in self._input_index:
            self.byteorder_of[new] = old

    def _byteorder_sources(self, outvars: list[Var]) -> tuple[tuple[int, int | str], ...]:
        """(output index, input index) for each output that is an input, a copy of one or a view
        of one (reshape, transpose, slicing, broadcast_to), or a result NumPy gives the input's
        dtype (keep_byteorder: gathers, sorts, `*_like`, the argument after writes): NumPy
        returns those in the input's byte order (a '>i2' argument returned as-is stays '>i2');
        every computed result is native. An output whose order is recorded itself (a byte-swapped
        argument's, swapped_input; one the user asked for, request_byteorder) has that order in
        place of the input index. The caller restores the
        order (Jitted.__call__). 0-d outputs are left out: they are returned as NumPy scalars,
        which are always native (docs/numpy-support.md)."""
        view_of = self._views()
        position = {v: i for i, v in enumerate(self.invars)}
        sources: list[tuple[int, int | str]] = []
        for k, v in enumerate(outvars):
            if not v.aval.shape:
                continue
            root = self._byteorder_root(v, view_of)
            if isinstance(root, str):
                sources.append((k, root))
            elif root in position and self.invars[position[root]].aval.shape is not None:
                sources.append((k, position[root]))
        return tuple(sources)


def _user_location_while_tracing() -> str | None:
    return user_frame_location() if current_context() is not None else None


# The IR's error messages name the user's line (ir/symdim.py); the IR does not import the trace.
symdim.USER_LOCATION[:] = [_user_location_while_tracing]
