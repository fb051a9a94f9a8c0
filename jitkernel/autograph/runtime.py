"""The helpers converted code calls (`ag__.for_range`, `ag__.if_stmt`, ...). Each runs plain
Python when the values it decides on are concrete and records `jk.lax` control flow when they
are traced. The *state* of a statement is a tuple: the current values of the names it rebinds
and of the arrays it writes in place (transform.py decides which); every helper returns the
new state.

Decisions (docs/numpy-support.md, "Python control flow"):
- a `for` over a static range runs as Python (unrolled into the trace) when it has at most
  `UNROLL_LIMIT` iterations or its body touches no traced value; otherwise it is one loop;
- a loop whose state changes type (a Python scalar that becomes an array's dtype is handled by
  jk.lax) or shape, or whose body needs a concrete index (`lst[i]` of a Python list), is
  unrolled when its range is static, and raises naming the line when it is traced;
- an array written in place in a loop or branch is an explicit carry; after the statement
  the result is written back into the array (`A[...] = new`), so aliases see the update.
"""
from __future__ import annotations

import builtins
import contextvars
import operator
from typing import Any, Callable, Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..numpy._datadep import DataDependent
from ..errors import InPlaceUpdateError, TracerArrayConversionError, TracerError, UnsupportedOperationError
from ..numpy._statistics import raise_if
from ..trace.carry_writes import writable_array
from ..trace.context import is_tracing, user_frame_location
from ..trace.operands import lift
from ..trace.python_int import unchecked_index
from ..trace.tracer import Tracer, _scalar_type_name
from ..tree import tree_flatten, tree_unflatten
from . import conversions
from .iteration import IndexedSequence, iter_enumerate, iter_zip  # noqa: F401  (ag__.iter_zip, ...)
from .callees import call  # noqa: F401  (ag__.call: calls of user functions and creation functions)
from .constant_arrays import (function_call, getitem, make_slice, method_call,  # noqa: F401  (ag__.getitem, ...)
                              store_receiver)

UNROLL_LIMIT = 4  # a static range with at most this many iterations is unrolled
# ... unless the short loops around it, unrolled too, would copy its body more often than this: nested
# short loops multiply (NPBench's scattering_self_energies: six loops of 2-4 trips were 128 copies of
# the inner loops and a 5.9 s first call); past it the short loop is one loop as a long one is.
MAX_UNROLLED_COPIES = 16
_unrolled_copies = contextvars.ContextVar("jitkernel_unrolled_copies", default=1)  # copies of the body being traced
MAX_PEELED = 2  # iterations run as Python before a loop whose state changes type is unrolled
# a static loop whose body cannot be traced with a traced index (a Python list indexed by it, a
# slice whose length depends on it) is unrolled up to this many iterations, else the error stands
UNROLL_FALLBACK_LIMIT = 256

_NUMERIC = (bool, int, float, complex, np.generic, np.ndarray)


# ----------------------------------------------------------------------------- undefined names


class Undefined:
    """The value of a name that is not bound yet (or is bound on one path only). Any use raises
    NameError naming the variable and why, instead of computing with a placeholder."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str = "") -> None:
        self.name, self.why = name, why

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        why = f" ({self.why})" if self.why else ""
        raise NameError(f"name {self.name!r} is not defined{why}")

    __bool__ = __index__ = __int__ = __float__ = __len__ = __iter__ = __call__ = _fail
    __getitem__ = __setitem__ = __array__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _fail
    __neg__ = __pos__ = __abs__ = __invert__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _fail

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._fail()

    def __repr__(self) -> str:
        return f"<undefined {self.name}>"


def undefined(name: str) -> Undefined:
    return Undefined(name)


def ld(read: Callable[[], Any]) -> Any:
    """`read()` (a lambda reading one name), or Undefined when that name is not bound yet."""
    try:
        return read()
    except NameError:
        code = read.__code__
        return Undefined((code.co_freevars + code.co_names + ("?",))[0])


class MaybeBound:
    """A name that a compiled loop or `if` binds on some run-time paths only (first bound in a
    loop body that may run zero times, in one branch of a traced `if`, or the target of a loop
    over a traced range): `value` is a placeholder of the type the construct gives it, `bound`
    a traced bool saying whether the path taken at run time bound it. Converted code reads a
    local name through `read`, which checks `bound` at run time (Python's UnboundLocalError),
    so the placeholder is never returned; a name never read costs nothing. Runtime helpers carry
    it as the pair (value, bound)."""

    __slots__ = ("value", "bound", "name")

    def __init__(self, value: Any, bound: Any, name: str) -> None:
        self.value, self.bound, self.name = value, bound, name

    def __repr__(self) -> str:
        return f"<maybe bound {self.name}>"

    def __getattr__(self, attr: str) -> Any:
        # (a read `read` did not see: a nested function's free variable) the checked value
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(_checked(self), attr)


def _checked_operator(op: str) -> Callable:
    def apply(self: MaybeBound, *args: Any) -> Any:
        return getattr(_checked(self), op)(*args)
    apply.__name__ = op
    return apply


for _op in ("add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow matmul rmatmul "
            "neg pos abs invert lt le gt ge eq ne and rand or ror xor rxor getitem bool index int float len "
            "iter").split():
    setattr(MaybeBound, f"__{_op}__", _checked_operator(f"__{_op}__"))
MaybeBound.__hash__ = object.__hash__  # (identity, as before __eq__ was defined)


def _unbound_message(name: str) -> str:
    return f"cannot access local variable {name!r} where it is not associated with a value ({_at()})"


def read(value: Any, name: str) -> Any:
    """A read of the local `name` in converted code: its value, checked at run time where a
    compiled construct bound it on some paths only (MaybeBound). A name a concrete construct left
    unbound (a static range of no iteration) raises Python's UnboundLocalError while tracing:
    every call with those static values takes that path."""
    if isinstance(value, MaybeBound):
        return _checked(value)
    if isinstance(value, Undefined):
        raise UnboundLocalError(_unbound_message(name))
    return value


def _checked(value: MaybeBound) -> Any:
    if not _traced(value.bound):
        if not value.bound:
            raise UnboundLocalError(_unbound_message(value.name))
        return value.value
    unbound, message = jnp.logical_not(value.bound), _unbound_message(value.name)
    if isinstance(value.value, DataDependent):  # (checked through its count, which every use reads)
        v = value.value
        return DataDependent(v.padded, _raise_unbound(v.count, unbound, message), v.origin)
    leaves, tree = tree_flatten(value.value)
    return tree_unflatten(tree, [_raise_unbound(x, unbound, message) for x in leaves])


def _raise_unbound(leaf: Any, unbound: Tracer, message: str) -> Any:
    """`leaf` after a run-time check of `unbound`, keeping a Python scalar's weak type."""
    t = leaf if _traced(leaf) else lift(unbound._ctx, leaf)
    out = raise_if(t, unbound, "UnboundLocalError", message)
    weak = t.weak if _traced(leaf) else (type(leaf) if type(leaf) in (bool, int, float, complex) else None)
    return Tracer(out._ctx, out.ir_var, weak) if weak is not None else out


# ----------------------------------------------------------------------------- truth values


def _at() -> str:
    """Where the user's code is, for messages: `file:line` and the source line in backticks, so
    the text after it never runs into the line's own punctuation (`if t > 0:`)."""
    where = user_frame_location()
    file_line, sep, source = where.partition(": ")
    return f"{file_line} (`{source}`)" if sep else where


def _traced(x: Any) -> bool:
    return isinstance(x, Tracer)


def _truth(x: Tracer) -> Tracer:
    """Python's truth test of a traced value, as a traced bool 0-d (NumPy's rule: one element)."""
    if x.size != 1:
        what = "an empty array is" if x.size == 0 else "an array with more than one element is"
        raise ValueError(f"The truth value of {what} ambiguous. Use a.any() or a.all() ({user_frame_location()})")
    x = jnp.reshape(x, ()) if x.shape else x
    return x if x.dtype == np.bool_ else jnp.not_equal(x, 0)


def not_(x: Any) -> Any:
    """`not x`."""
    if not _traced(x):
        return not x
    return jnp.logical_not(_truth(x))


def and_(first: Any, *rest: Callable[[], Any]) -> Any:
    """`a and b and ...` with Python's short circuit. Once a traced operand decides, the result
    is a traced bool (the operands' truth values): what `if`/`while` tests need."""
    value = first
    for k, nxt in enumerate(rest):
        if _traced(value):
            return lax.cond(_truth(value), lambda: _truth_of(and_(nxt(), *rest[k + 1:])), lambda: False)
        if not value:
            return value
        value = nxt()
    return value


def or_(first: Any, *rest: Callable[[], Any]) -> Any:
    """`a or b or ...` with Python's short circuit (a traced bool once a traced operand decides)."""
    value = first
    for k, nxt in enumerate(rest):
        if _traced(value):
            return lax.cond(_truth(value), lambda: True, lambda: _truth_of(or_(nxt(), *rest[k + 1:])))
        if value:
            return value
        value = nxt()
    return value


_COMPARISONS = {"Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge, "Eq": operator.eq,
                "NotEq": operator.ne, "Is": operator.is_, "IsNot": operator.is_not, "In": lambda a, b: a in b,
                "NotIn": lambda a, b: a not in b}


def compare_chain(left: Any, *pairs: tuple[str, Callable[[], Any]]) -> Any:
    """`a < b < c ...`: each comparison in turn, each operand evaluated once, stopping at the
    first false one, as Python does; once a result is traced, the rest joins it with `and_`."""
    result: Any = True
    for k, (op, right_fn) in enumerate(pairs):
        right = right_fn()
        value = _COMPARISONS[op](left, right)
        if _traced(value) or _traced(result):
            rest = pairs[k + 1:]
            following = (lambda r=right, rest=rest: compare_chain(r, *rest)) if rest else None
            first = value if not _traced(result) else and_(result, lambda v=value: v)
            return and_(first, following) if following else first
        if not value:
            return value
        result, left = value, right
    return result


def operand(decided_by: Any, value: Any) -> Any:
    """A later operand of `and`/`or` (or a later comparison of a chain) rewritten as statements
    (walrus.py): its value, or its truth value once a traced operand `decided_by` decided, as
    and_ / or_ give."""
    return _truth_of(value) if _traced(decided_by) else value


def _truth_of(x: Any) -> Any:
    return _truth(x) if _traced(x) else bool(x)


def guard(*flags: Any) -> Any:
    """`not (flag1 or flag2 ...)` for the break/continue/return flags of a converted loop."""
    if not any(_traced(f) for f in flags):
        return not any(flags)
    result = None
    for f in flags:
        t = _truth(f) if _traced(f) else bool(f)
        result = t if result is None else jnp.logical_or(result, t)
    return jnp.logical_not(result)


# ----------------------------------------------------------------------------- builtins


def builtin_call(fn: Any, *args: Any) -> Any:
    """`max(...)` / `min(...)`: Python's own on concrete values; on traced scalars the same fold
    Python does (`max(a, b)` is `b if b > a else a`, so a NaN first argument is kept and a NaN
    later one is skipped), as a select whose dtype is the operands' NumPy promotion. `len(v)` of
    a data-dependent value (x[mask], np.unique(x)): its traced length, which Python's len()
    cannot return. `int(x)` / `float(x)` of a traced scalar in a compiled loop body or branch: a
    traced value (conversions.py)."""
    if conversions.converts(fn, args):
        return conversions.convert(fn, args[0])
    if fn is builtins.len and len(args) == 1 and getattr(type(args[0]), "_jk_datadep", False):
        return args[0].shape[0]
    if fn is not builtins.max and fn is not builtins.min:
        return fn(*args)
    items = list(args[0]) if len(args) == 1 and _iterable(args[0]) else list(args)
    if not any(_traced(x) for x in items):
        return fn(*args)
    if not items:
        return fn(*args)  # Python's error for an empty sequence
    better = jnp.greater if fn is builtins.max else jnp.less
    result = items[0]
    for x in items[1:]:
        for v in (x, result):
            if _traced(v) and v.size != 1:
                raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() "
                                 f"or a.all() ({fn.__name__}() of traced arrays at {_at()}; use "
                                 f"np.{'maximum' if fn is builtins.max else 'minimum'} for elementwise results)")
        result = jnp.where(better(x, result), x, result)
    return _python_scalar_kind(result, items)


def _python_scalar_kind(result: Tracer, items: list[Any]) -> Tracer:
    """`max`/`min` of Python scalars is one of them, a Python scalar: the select (strong, as
    np.where's) gets their widest kind back, so `min(v, 3) * 2**61` stays Python-int arithmetic,
    checked for overflow (trace/python_int.py), instead of wrapping as an int64."""
    kinds = [x.weak if _traced(x) else type(x) for x in items]
    order = [bool, int, float]
    if not all(k in order for k in kinds):
        return result
    return Tracer(result._ctx, result.ir_var, max(kinds, key=order.index))


def _iterable(x: Any) -> bool:
    return isinstance(x, (list, tuple)) or (_traced(x) and x.ndim >= 1)


# ----------------------------------------------------------------------------- captured arrays


class CapturedArrayWriteError(InPlaceUpdateError, TracerArrayConversionError):
    """A write into a NumPy array captured from outside a jitted function (a global, a closure
    variable, an attribute), found while tracing."""


def check_captured_write(obj: Any, text: str) -> None:
    """Before `G[...] = v` (or `G[...] op= v`) where `G` is not a local of the function: a NumPy
    array captured from outside would be written once, while tracing, not on every call."""
    if is_tracing() and isinstance(obj, np.ndarray):
        raise CapturedArrayWriteError(
            f"a value is stored into a NumPy array captured from outside the jitted function (`{text}`: a "
            f"global, a closure variable or an attribute) at {_at()}. The write would happen "
            "once, while tracing, not on every call. Pass the array as an argument (the jitted function then "
            f"updates the caller's array), or write into a copy ({text} = {text}.copy()).")


# ----------------------------------------------------------------------------- state


class _Unreachable(Exception):
    """A branch of a tail `if` returns a name that is never bound on its path."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn


class _Changed(Exception):
    """Raised from inside a traced body when its state changes kind or shape: the caller
    unrolls (static range) or reports (traced). `outputs` is the body's state."""

    def __init__(self, why: str, outputs: tuple = ()) -> None:
        super().__init__(why)
        self.why, self.outputs = why, outputs


class _KindChanged(_Changed, UnsupportedOperationError):
    """A traced `if` whose branch turns an array into a data-dependent selection (or back), which
    the other branch leaves as it was: the branches cannot be merged. Inside a loop over a
    static range the loop runs that iteration as Python and tries again (the first iteration of
    `z = z[mask]` in a loop); elsewhere it is the user's error."""


def _is_dynamic(value: Any) -> bool:
    """A state value that is passed through jk.lax: arrays, numbers, pytrees of them (and a
    MaybeBound, carried as its pair; a data-dependent value, carried as its padded buffer and
    count)."""
    if isinstance(value, (Tracer, MaybeBound, DataDependent) + _NUMERIC):
        return True
    if isinstance(value, (tuple, list, dict)):
        leaves, _ = tree_flatten(value)
        return bool(leaves) and all(isinstance(x, (Tracer,) + _NUMERIC) for x in leaves)
    return False


def _static_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, Undefined) or isinstance(b, Undefined):
        return isinstance(a, Undefined) and isinstance(b, Undefined)
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:
        return False


def _shape_of(leaf: Any) -> tuple:
    return tuple(leaf.shape) if isinstance(leaf, Tracer) else np.shape(leaf)


def _dtype_of(leaf: Any) -> Any:
    if isinstance(leaf, Tracer):
        return leaf.weak or leaf.dtype
    return type(leaf) if type(leaf) in (bool, int, float, complex) else np.asarray(leaf).dtype


class _State:
    """A statement's state split into the values jk.lax carries (dynamic) and the ones that
    must come out as they went in (static: Undefined, None, strings, functions...)."""

    def __init__(self, values: Sequence[Any], names: Sequence[str]) -> None:
        self.values, self.names = tuple(values), tuple(names)
        self.dynamic = [k for k, v in enumerate(self.values) if _is_dynamic(v)]
        # names bound on some run-time paths only: carried as (value, bound)
        self.maybe = {k for k, v in enumerate(self.values) if isinstance(v, MaybeBound)}

    def carry(self, values: Sequence[Any] | None = None) -> tuple:
        values = self.values if values is None else values
        return tuple(_bound_pair(values[k]) if k in self.maybe else _carried(values[k]) for k in self.dynamic)

    def rebuild(self, carry: Sequence[Any]) -> tuple:
        out = list(self.values)
        for k, v in zip(self.dynamic, carry):
            out[k] = (MaybeBound(_uncarried(self.values[k].value, v[0]), v[1], self.names[k]) if k in self.maybe
                      else _uncarried(self.values[k], v))
        return tuple(out)

    def check(self, out: Any, kind_changes: bool = True) -> tuple:
        """The body's output state, checked against this one: raises _Changed when a static value
        changed, an undefined name became defined, or a carried value changed structure or shape
        (dtype changes of Python scalars are jk.lax's business)."""
        if not isinstance(out, tuple) or len(out) != len(self.values):
            raise _Changed("the state changed length")
        dyn = set(self.dynamic)
        out = tuple(_as_maybe(v, self.names[k]) if k in self.maybe and _is_dynamic(v) else v
                    for k, v in enumerate(out))
        for k, (before, after) in enumerate(zip(self.values, out)):
            if k in self.maybe:
                if not isinstance(after, MaybeBound):
                    raise _Changed(f"`{self.names[k]}` changes from {_describe(before)} to {_describe(after)}", out)
                before, after = before.value, after.value
            elif isinstance(after, MaybeBound):  # bound before, maybe bound after: a kind change
                raise _Changed(f"`{self.names[k]}` changes from {_describe(before)} to {_describe(after)}", out)
            if k not in dyn:
                if not _static_equal(before, after):
                    raise _Changed(f"`{self.names[k]}` changes from {_describe(before)} to {_describe(after)}", out)
                continue
            if not _is_dynamic(after) or isinstance(before, DataDependent) != isinstance(after, DataDependent):
                raise _Changed(f"`{self.names[k]}` changes from {_describe(before)} to {_describe(after)}", out)
            if isinstance(before, DataDependent):
                if (before.maximum, before.rest, before.dtype) != (after.maximum, after.rest, after.dtype):
                    raise _Changed(f"`{self.names[k]}` changes from {_describe(before)} to {_describe(after)}", out)
                continue
            lb, tb = tree_flatten(before)
            la, ta = tree_flatten(after)
            if tb != ta:
                raise _Changed(f"`{self.names[k]}` changes structure from {tb} to {ta}", out)
            for x, y in zip(lb, la):
                if _shape_of(x) != _shape_of(y):
                    raise _Changed(f"`{self.names[k]}` changes shape from {_shape_of(x)} to {_shape_of(y)}", out)
                dx, dy = _dtype_of(x), _dtype_of(y)
                if kind_changes and dx != dy and not isinstance(dx, type) and not isinstance(dy, type):
                    # (a Python scalar taking an array's dtype is settled by jk.lax)
                    raise _Changed(f"`{self.names[k]}` changes dtype from {dx} to {dy}", out)
        return out


def _carried(v: Any) -> Any:
    """A state value as jk.lax carries it: a data-dependent value as (padded buffer, count), whose
    shapes are static (the buffer keeps its largest length while the count changes)."""
    return (v.padded, v.count) if isinstance(v, DataDependent) else v


def _uncarried(like: Any, v: Any) -> Any:
    """The state value of a carry `v` whose value before the statement was `like`."""
    return DataDependent(v[0], v[1], like.origin) if isinstance(like, DataDependent) else v


def _bound_pair(v: Any) -> tuple:
    """A MaybeBound (or a value bound on this path) as the pair jk.lax carries."""
    v = _as_maybe(v, "")
    return _carried(v.value), v.bound


def _as_maybe(v: Any, name: str) -> MaybeBound:
    return v if isinstance(v, MaybeBound) else MaybeBound(v, np.True_, name)


def _unbound_placeholder(bound_value: Any, name: str) -> Any:
    """The value, before a compiled construct, of a name it binds on some paths: zeros of the
    type the construct gives it, not bound. The conversion's own flags and return values (ag__*)
    are read only where they are bound: plain zeros."""
    if isinstance(bound_value, MaybeBound):
        bound_value = bound_value.value
    if isinstance(bound_value, DataDependent):
        # (concrete zeros, as for arrays: the placeholder is made inside one branch's trace and
        # used by the next attempt; it is only ever carried, which lifts it)
        zeros = DataDependent(np.zeros(bound_value.padded.shape, bound_value.dtype), np.int64(0), bound_value.origin)
        return zeros if name.startswith("ag__") else MaybeBound(zeros, np.False_, name)
    leaves, tree = tree_flatten(bound_value)
    zeros = tree_unflatten(tree, [_zeros_like_output(x) for x in leaves])
    return zeros if name.startswith("ag__") else MaybeBound(zeros, np.False_, name)


def _describe(v: Any) -> str:
    if isinstance(v, MaybeBound):
        return f"bound on some paths only ({_describe(v.value)})"
    if isinstance(v, Undefined):
        return "undefined"
    if isinstance(v, Tracer):
        return f"an array {v.aval}"
    if isinstance(v, DataDependent):
        return f"a data-dependent {v.dtype} selection of at most {v.maximum} rows"
    return f"a {type(v).__name__}"


def _zeros_like_output(leaf: Any) -> Any:
    """A placeholder initial value of the type a body gives a name it first binds."""
    if isinstance(leaf, Tracer):
        if leaf.weak is not None:
            return leaf.weak(0)
        return np.zeros(leaf.shape, leaf.dtype)
    if type(leaf) in (bool, int, float, complex):
        return type(leaf)(0)
    return np.zeros_like(np.asarray(leaf))


# ----------------------------------------------------------------------------- aliasing and closures


def _closure_values(fns: Sequence[Callable]) -> list[tuple[str, Any]]:
    """(name, value) of every variable of an enclosing scope the functions read."""
    found = []
    for fn in fns:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                found.append((name, cell.cell_contents))
            except ValueError:  # an empty cell: not bound yet
                pass
    return found


def _tracers_in(value: Any) -> list[Tracer]:
    if isinstance(value, Tracer):
        return [value]
    if isinstance(value, DataDependent):
        return [value.padded, value.count]
    if isinstance(value, IndexedSequence):  # enumerate/zip of traced arrays: the arrays it reads
        return [t for x in value.sources for t in _tracers_in(x)]
    if isinstance(value, (list, tuple, dict)):
        try:
            return [x for x in tree_flatten(value)[0] if isinstance(x, Tracer)]
        except Exception:
            return []
    return []


def _same_memory(a: Tracer, b: Tracer) -> bool:
    """Whether two traced arrays are views of one memory (trace/memory.py Memory)."""
    ma, mb = getattr(a, "_mem", None), getattr(b, "_mem", None)
    return ma is not None and ma is mb


def _check_aliases(what: str, fns: Sequence[Callable], state: _State, written: Sequence[str]) -> None:
    """A written carry must not share memory with another array the statement reads: the body
    would read that array's value from before the statement (a stale view), not NumPy's."""
    if not written:
        return
    targets = [(n, v) for n, v in zip(state.names, state.values) if n in written and writable_array(v)]
    if not targets:
        return
    others = [(n, t) for n, v in _closure_values(fns) for t in _tracers_in(v)]
    others += [(n, t) for n, v in zip(state.names, state.values) for t in _tracers_in(v)]
    for wname, w in targets:
        for oname, o in others:
            # (the same object under another name, `y = x`, is the same array: stale as well)
            if oname != wname and (o is w or _same_memory(o, w)):
                raise UnsupportedOperationError(
                    f"the {what} at {_at()} writes into `{wname}` and reads `{oname}`, which shares "
                    f"memory with it (a view, or the same array under two names): inside a compiled {what} "
                    f"`{oname}` would keep its value from before the {what}. Index `{wname}` directly instead, "
                    f"or copy `{oname}` first ({oname} = {oname}.copy()).")


def _python_containers(fns: Sequence[Callable]) -> list[tuple[str, Any, Any]]:
    """(name, container, snapshot) of the lists, dicts and sets the functions can reach."""
    found = []
    for name, value in _closure_values(fns):
        if isinstance(value, list):
            found.append((name, value, list(value)))
        elif isinstance(value, (dict, set)):
            found.append((name, value, value.copy()))
    return found


def _changed_containers(snapshots: list[tuple[str, Any, Any]]) -> list[str]:
    changed = []
    for name, container, before in snapshots:
        same = len(container) == len(before) and (
            all(a is b for a, b in zip(container, before)) if isinstance(container, list) else container == before)
        if not same:
            changed.append(name)
            if isinstance(container, list):
                container[:] = before
            else:
                container.clear()
                container.update(before)
    return changed


def _write_back(state: _State, result: tuple, in_place: set[int], written: Sequence[str]) -> tuple:
    """Arrays written in place in the body: write the loop's result into the original array
    (`A[...] = new`, so its aliases and the caller's argument see it) and keep the name bound
    to it."""
    out = list(result)
    for k in in_place:
        original = state.values[k]
        if state.names[k] in written and writable_array(original) and original is not out[k] and _traced(out[k]):
            original[...] = out[k]
            out[k] = original
        elif (state.names[k] in written and isinstance(original, DataDependent) and original is not out[k]
              and isinstance(out[k], DataDependent)):
            # (`np.logical_not(m, m)` in the body: every name of that selection sees the new values)
            original.padded, original.count, original.dense = out[k].padded, out[k].count, None
            out[k] = original
    return tuple(out)


def _in_place_positions(state: _State, out: tuple) -> set[int]:
    """Positions whose body output is the body's input object itself (written in place or
    untouched), as opposed to a name rebound to a new value."""
    return {k for k in state.dynamic if out[k] is state.values[k]}


def _start_values(st: _State, inputs: tuple) -> dict[int, Any]:
    """The value each traced input of a body or branch holds before it runs (`_rebound_after_write`)."""
    return {k: inputs[k].ir_var for k in st.dynamic if _traced(inputs[k])}


def _rebound_after_write(st: _State, inputs: tuple, start: dict[int, Any], out: tuple) -> str | None:
    """The name of a state array the body or branch writes into in place and then binds to a
    new array (`a[:, 0] = 1; a = a * 2`), where the array from before the statement can be seen
    after it (an argument, which the caller sees; a view or an array with views): in Python
    that write reaches the array from before only on a loop's first iteration, or on the branch
    taken, which the compiled statement's carried value, the new array, does not express."""
    for k in st.dynamic:
        x = inputs[k]
        if not _traced(x) or out[k] is x or x.ir_var is start.get(k):
            continue
        original = st.values[k]
        if _traced(original) and original._mem is None:
            continue  # a fresh array nothing else sees: the write is lost in Python as well
        return st.names[k]
    return None


class _Rebound(_Changed):
    """A loop body writes a state array in place, then rebinds its name (`_rebound_after_write`):
    a static range runs the first iteration as Python and the rest as one loop, in which the
    array from before is a fresh one; any other loop reports `error()`."""

    def __init__(self, name: str) -> None:
        super().__init__(f"`{name}` is written in place and then bound to a new array")
        self.name = name

    def error(self) -> UnsupportedOperationError:
        n = self.name
        return UnsupportedOperationError(
            f"the loop at {_at()} writes into `{n}` in place and then binds `{n}` to a new array: in Python "
            f"the first iteration writes the array from before the loop (which the caller or another name "
            f"sees) and the later ones the arrays the body made, which one compiled loop whose trip count is "
            f"known only at run time does not express. Write into a copy (`{n} = {n}.copy()` before the loop) "
            f"or keep the name bound to the array.")


# ----------------------------------------------------------------------------- if


def _refuse(unsupported: str | None, what: str, compiled: str) -> None:
    """`unsupported` (a `raise` or `try` statement, transform.py) inside `what` ("an `if` on a
    traced value"), which compiles to `compiled` ("`if`", "loop") deciding at run time."""
    if unsupported:
        raise UnsupportedOperationError(
            f"{unsupported} inside {what} at {_at()}: the compiled {compiled} decides at run time, but Python "
            "would run that statement while tracing, once. Move it out of the loop or branch, or make the value "
            "it depends on static (static_argnames), or use jk.jit(f, autograph=False).")


def if_stmt(pred: Any, true_fn: Callable, false_fn: Callable, state: tuple, names: tuple, written: tuple,
            mode: str, unsupported: str | None = None) -> Any:
    """`if pred: ... else: ...` over `state`. mode "stmt": returns the new state; "return": the
    value the taken branch returns (a tail `if` whose branches return)."""
    if not _traced(pred):
        return (true_fn if pred else false_fn)(state)
    _refuse(unsupported, "an `if` on a traced value", "`if`")
    st = _State(state, names)
    _check_aliases("if statement", (true_fn, false_fn), st, written)
    plan: dict[str, Any] = {}
    in_place: list[set[int]] = []

    # A tail `if` returns from the function, but the arrays its branches wrote in place must
    # still reach their bases (an argument, an alias): the branches also return them.
    returned_writes = [k for k in st.dynamic if names[k] in written and writable_array(st.values[k])]

    def branch(fn: Callable) -> Callable:
        def run(*carry: Any) -> Any:
            inputs = st.rebuild(carry)
            start_values = _start_values(st, inputs)
            out = fn(inputs)
            rebound = (_rebound_after_write(st, inputs, start_values, out)
                       if mode != "return" and isinstance(out, tuple) and len(out) == len(st.values) else None)
            if rebound is not None:
                raise UnsupportedOperationError(
                    f"the `if` on a traced value at {_at()} writes into `{rebound}` in place and then binds "
                    f"`{rebound}` to a new array: the compiled `if` carries the new array, so the write into the "
                    f"array from before the `if`, which the caller or another name sees, would be lost. Write "
                    f"into a copy (`{rebound} = {rebound}.copy()` first) or keep the name bound to the array.")
            if mode == "return":
                if isinstance(out, Undefined):
                    raise _Unreachable(fn)  # it returns a value never bound: Python cannot take it
                if out is None or not _is_dynamic(out):
                    raise UnsupportedOperationError(
                        f"the traced `if` at {_at()} returns {_describe(out)} from one branch; "
                        "both branches of an `if` on a traced value must return arrays or numbers of one type")
                return out, tuple(inputs[k] for k in returned_writes)
            in_place.append(_in_place_positions(_State(inputs, names), out))
            return tuple(_branch_output(st, out, plan, names))
        return run

    pred_t = _truth(pred)
    for _ in range(3):
        try:
            result = lax.cond(pred_t, branch(true_fn), branch(false_fn), *st.carry())
            break
        except _Changed as changed:
            if isinstance(changed, _KindChanged):
                raise
            plan = changed.outputs  # the names bound by one branch only: trace again with placeholders
            in_place.clear()
        except _Unreachable as unreachable:
            # (`if ret: return rv` after a loop whose `return` never ran: rv is unbound exactly when
            # ret is False) the other branch is the only one Python can take
            return (false_fn if unreachable.fn is true_fn else true_fn)(state)
    else:  # pragma: no cover - the plan settles after one retry
        raise UnsupportedOperationError(f"the traced `if` at {_at()} could not be converted")
    if mode == "return":
        value, writes = result
        for k, new in zip(returned_writes, writes):
            st.values[k][...] = new
        return value
    return _merge_branches(st, result, plan, set.intersection(*in_place) if in_place else set(), written, names)


def _branch_output(st: _State, out: tuple, plan: dict, names: tuple) -> list:
    """The carried part of a branch's output state. A name bound on some paths only (unbound
    before the `if` and bound by one branch, or a MaybeBound in either branch) is carried as
    (value, bound): in the branch that leaves it unbound, zeros of the type the other gives it
    and bound False, so a later read raises Python's UnboundLocalError at run time (`read`)."""
    if not isinstance(out, tuple) or len(out) != len(st.values):
        raise UnsupportedOperationError("internal: a branch returned a state of the wrong length")
    fill, maybe = plan.get("fill", {}), plan.get("maybe", st.maybe)
    out = tuple(fill[k] if k in fill and isinstance(v, Undefined) else v for k, v in enumerate(out))
    seen = plan.setdefault("outputs", [])
    seen.append(out)
    if len(seen) == 2 and "maybe" not in plan:
        _plan_maybe_bound(st, seen, maybe, names)
    carried = []
    for k, v in enumerate(out):
        if k in maybe:
            carried.append(_bound_pair(v))
        elif _is_dynamic(v):
            if isinstance(v, DataDependent) != isinstance(st.values[k], DataDependent) and _is_dynamic(st.values[k]):
                raise _KindChanged(
                    f"the traced `if` at {_at()} changes `{names[k]}` from {_describe(st.values[k])} to "
                    f"{_describe(v)} in one branch: a branch taken at run time cannot change whether a value's "
                    "length is data-dependent")
            carried.append(_carried(v))
        elif not _static_equal(v, st.values[k]):
            raise UnsupportedOperationError(
                f"the traced `if` at {_at()} sets `{names[k]}` to {_describe(v)}, which is not "
                "an array or a number: a branch taken at run time can only change arrays and numbers")
    return carried


def _plan_maybe_bound(st: _State, seen: list, maybe: set, names: tuple) -> None:
    """After both branches ran once: raises _Changed with the plan (the placeholders of names one
    branch leaves unbound, the positions carried as (value, bound)) when it differs from the
    one the branches ran with."""
    fill, new_maybe = {}, set(maybe)
    for k, (a, b) in enumerate(zip(*seen)):
        if isinstance(a, MaybeBound) or isinstance(b, MaybeBound):
            new_maybe.add(k)
        if _is_dynamic(a) == _is_dynamic(b):
            continue
        defined, other = (a, b) if _is_dynamic(a) else (b, a)
        if not isinstance(other, Undefined) or not isinstance(st.values[k], Undefined):
            raise UnsupportedOperationError(
                f"the traced `if` at {_at()} makes `{names[k]}` {_describe(defined)} in one "
                f"branch and {_describe(other)} in the other; a branch taken at run time can only change "
                "arrays and numbers")
        fill[k] = _unbound_placeholder(defined, names[k])
        if isinstance(fill[k], MaybeBound):
            new_maybe.add(k)
    if fill or new_maybe != maybe:
        raise _Changed("branches bind different names", {"fill": fill, "maybe": new_maybe})


def _merge_branches(st: _State, result: tuple, plan: dict, in_place: set[int], written: tuple, names: tuple) -> tuple:
    first = plan["outputs"][-1]
    maybe = plan.get("maybe", st.maybe)
    out = list(st.values)
    it = iter(result)
    for k in range(len(st.values)):
        if k in maybe:
            value, bound = next(it)
            like = first[k].value if isinstance(first[k], MaybeBound) else first[k]
            out[k] = MaybeBound(_uncarried(like, value), bound, names[k])
        elif _is_dynamic(first[k]):
            out[k] = _uncarried(first[k], next(it))
    return _write_back(st, tuple(out), in_place & set(st.dynamic), written)


def if_exp(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """`a if pred else b`: only the chosen side is evaluated when `pred` is concrete; both are
    traced (and one selected at run time) when it is traced."""
    if not _traced(pred):
        return true_fn() if pred else false_fn()
    return lax.cond(_truth(pred), true_fn, false_fn)


# ----------------------------------------------------------------------------- loops


def _touches_traced(fns: Sequence[Callable], state: tuple) -> bool:
    """Whether the state or anything the functions read from enclosing scopes (two levels of
    closures deep) is traced."""
    if any(_tracers_in(v) for v in state):
        return True
    values = _closure_values(fns)
    nested = [v for _, v in values if hasattr(v, "__code__") and getattr(v, "__closure__", None)]
    values += _closure_values(nested)
    return any(_tracers_in(v) for _, v in values)


_LOOP_HELPERS = frozenset({"for_range", "for_iter", "while_stmt"})


def _holds_loop(body: Callable) -> bool:
    """Whether a converted loop body holds a loop statement itself (its code, or a function
    defined in it, calls a loop helper). Such a short loop is not unrolled: each copy would
    copy the inner loop, whose compiled code costs far more than the trips unrolling saves (NPBench
    scattering_self_energies: 16 copies of a native loop nest, 50 s of LLVM for a 0.5 ms kernel)."""
    codes = [getattr(body, "__code__", None)]
    while codes:
        code = codes.pop()
        if code is None:
            continue
        if _LOOP_HELPERS & set(code.co_names):
            return True
        codes += [c for c in code.co_consts if hasattr(c, "co_names")]
    return False


def _flag_index(names: tuple, brk: str | None) -> int | None:
    return names.index(brk) if brk is not None and brk in names else None


def for_range(range_fn: Any, args: tuple, body: Callable, target: Any, state: tuple, names: tuple,
              written: tuple, brk: str | None, unsupported: str | None = None) -> tuple[Any, tuple]:
    """`for i in range(*args): state = body(i, state)`, stopping when the state's flag `brk` is
    set. Returns (the loop variable's final value, the final state)."""
    if range_fn is not builtins.range or not is_tracing():
        return _python_for(range_fn(*args), body, target, state, names, brk)
    static = all(not _traced(a) for a in args)
    if static:
        r = range(*args)
        copies = _unrolled_copies.get() * len(r)
        short = len(r) <= UNROLL_LIMIT and copies <= MAX_UNROLLED_COPIES and not _holds_loop(body)
        if short or not _touches_traced((body,), state) or unsupported:
            token = _unrolled_copies.set(max(copies, 1))
            try:  # (a try/raise body runs as Python)
                return _python_for(r, body, target, state, names, brk, written)
            finally:
                _unrolled_copies.reset(token)
        return _static_traced_for(r, body, target, state, names, written, brk)
    _refuse(unsupported, "a loop whose range is traced", "loop")
    bounds = _range_bounds(args)
    return _traced_for(bounds, body, target, state, names, written, brk, static_range=None)


def for_iter(iterable: Any, body: Callable, target: Any, state: tuple, names: tuple, written: tuple,
             brk: str | None, unsupported: str | None = None) -> tuple[Any, tuple]:
    """`for x in iterable: state = body(x, state)`. Over a traced array it is
    `for i in range(len(a)): x = a[i]` (one loop with a traced index, NumPy's iteration over
    the first axis); any other iterable runs as Python. Returns (x's final value, the state)."""
    indexed = isinstance(iterable, IndexedSequence)  # enumerate/zip of traced arrays (iteration.py)
    if not ((indexed or (_traced(iterable) and iterable.ndim >= 1)) and is_tracing()):
        return _python_for(iterable, body, target, state, names, brk)
    n = len(iterable) if indexed else iterable.shape[0]

    def item(i: Any) -> Any:
        return iterable.item(i) if indexed else iterable[i]

    def element_body(i: Any, st: tuple) -> tuple:
        # (reads `iterable` itself: _touches_traced sees the traced arrays in its closure)
        return body(iterable.item(i) if indexed else iterable[i], st)

    index, state = for_range(builtins.range, (n,), element_body, Undefined("the index"), state, names, written,
                             brk, unsupported)
    if isinstance(index, Undefined):  # no iteration ran: the name keeps its value, as in Python
        return target, state
    if isinstance(index, MaybeBound):  # (a length known at run time only) maybe no iteration ran
        if isinstance(target, Undefined):
            return MaybeBound(item(index.value), index.bound, target.name), state
        index = index.value
    return item(index), state


def _python_for(iterable: Any, body: Callable, target: Any, state: tuple, names: tuple,
                brk: str | None, written: tuple = ()) -> tuple[Any, tuple]:
    flag = _flag_index(names, brk)
    for k, i in enumerate(iterable):
        target = i
        state = body(i, state)
        if flag is not None:
            if _traced(state[flag]) and isinstance(iterable, range):
                # a `break` under a traced condition: the remaining iterations are one loop
                rest = iterable[k + 1:]
                if not len(rest):
                    break
                return _traced_for(_static_bounds(rest), body, target, state, names, written, brk,
                                   static_range=rest)
            if not _traced(state[flag]) and state[flag]:
                break
    return target, state


def _static_bounds(r: range) -> tuple:
    return r.start, r.stop, r.step, len(r)


def _range_bounds(args: tuple) -> tuple:
    """(start, stop, step, trip count) of range(*args) with traced values among them. A traced
    step of 0 raises Python's ValueError at run time (a trip count of 0 would be a silent
    wrong answer)."""
    for a in args:
        if _traced(a) and (a.ndim != 0 or a.dtype.kind not in "iub"):
            raise _range_argument_error(a)
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    else:
        start, stop, step = (tuple(args) + (1,))[:3]
    start, stop, step = (_as_int(_fits_int64(x)) for x in (start, stop, step))
    if not _traced(step) and step == 0:
        raise ValueError("range() arg 3 must not be zero")
    if _traced(step):
        step = _as_weak_int(raise_if(step, step == 0, "ValueError",
                                     f"range() arg 3 must not be zero ({user_frame_location()})"))
    return start, stop, step, _trip_count(start, stop, step)


def _range_argument_error(a: Tracer) -> TypeError:
    """Python's TypeError for range() of a value that is not an integer (a float, an array)."""
    if a.ndim == 0 and a.scalar:
        why = f"'{_scalar_type_name(a)}' object cannot be interpreted as an integer"
    else:
        why = "only integer scalar arrays can be converted to a scalar index"
    return TypeError(f"{why} (range() of a traced {a.aval} at {user_frame_location()})")


def _fits_int64(x: Any) -> Any:
    """A traced uint64 range() argument, checked at run time to fit the int64 the loop index is
    computed in: past 2**63 - 1 the index would wrap to negative values (Python's ints do not)."""
    if not (_traced(x) and x.dtype == np.uint64):
        return x
    return raise_if(x, x > np.uint64(np.iinfo(np.int64).max), "OverflowError",
                    f"a range() argument is larger than 2**63 - 1 (at {_at()}); jitkernel computes "
                    "the loop index as an int64")


def _trip_count(start: Any, stop: Any, step: Any) -> Any:
    """len(range(start, stop, step)) for int64 bounds, one of them traced, step != 0. Computed
    in uint64 as (|stop - start| - 1) // |step| + 1: the distance between two int64 values and
    the magnitude of any int64 step fit in uint64, so no bound (up to +-2**63) overflows the way
    `stop - start + step - 1` would. A static step of +-1 keeps int64 `stop - start` where it is
    positive, which wraps only past 2**63 - 1 iterations (a loop that never ends anyway)."""
    if not _traced(step):
        lo, hi = (start, stop) if step > 0 else (stop, start)
        if abs(step) == 1:
            return _as_weak_int(jnp.where(hi > lo, unchecked_index(hi, lo, -1), 0))  # hi - lo, wrapping
        distance = _wrapping_difference(hi, lo)  # exact where the range is not empty
        count = jnp.where(hi > lo, (distance - np.uint64(1)) // np.uint64(abs(step)) + np.uint64(1), np.uint64(0))
        return _as_weak_int(jnp.astype(count, np.int64))
    up = step > 0
    distance = jnp.where(up, _wrapping_difference(stop, start), _wrapping_difference(start, stop))
    magnitude = jnp.where(up, _wrapping_difference(step, 0), _wrapping_difference(0, step))
    nonempty = jnp.where(up, stop > start, stop < start)
    safe = jnp.where(magnitude == 0, np.uint64(1), magnitude)  # (a zero step has raised already)
    count = jnp.where(nonempty, (distance - np.uint64(1)) // safe + np.uint64(1), np.uint64(0))
    return _as_weak_int(jnp.astype(count, np.int64))


def _wrapping_difference(a: Any, b: Any) -> Any:
    """`a - b` of two int64 values as uint64, modulo 2**64 (Python ints are reduced first, so
    no NumPy scalar overflows while tracing)."""
    if not _traced(a) and not _traced(b):
        return np.uint64((a - b) % 2**64)
    return _as_uint64(a) - _as_uint64(b)


def _as_uint64(v: Any) -> Any:
    """An int64 bound's bits as uint64 (two's complement), so differences wrap exactly. The
    traced value is cast as an int64 array, not as a Python int (whose cast to uint64 would
    check, at the call, that the argument is not negative)."""
    return jnp.astype(Tracer(v._ctx, v.ir_var, None), np.uint64) if _traced(v) else np.uint64(v % 2**64)


def _as_int(x: Any) -> Any:
    if _traced(x):
        return _as_weak_int(x if x.dtype == np.int64 else jnp.astype(x, np.int64))
    return int(x)


def _as_weak_int(t: Tracer) -> Tracer:
    """An int64 traced value that computes like a Python int (weak type)."""
    return Tracer(t._ctx, t.ir_var, int)


def _static_traced_for(r: range, body: Callable, target: Any, state: tuple, names: tuple, written: tuple,
                       brk: str | None) -> tuple[Any, tuple]:
    """A static range as one loop; when the state changes type or shape (or the body needs the
    concrete index), the first iterations run as Python and, failing that, the whole loop."""
    peeled = 0
    while True:
        snapshots = _python_containers((body,))
        try:
            return _traced_for(_static_bounds(r), body, target, state, names, written, brk, static_range=r,
                               snapshots=snapshots)
        except (_Changed, _ContainerChanged) as e:
            _changed_containers(snapshots)
            if peeled >= MAX_PEELED or len(r) == 0:
                if len(r) > UNROLL_FALLBACK_LIMIT:
                    # Unrolling thousands of bodies made programs that LLVM could not compile
                    # (a crash in its optimiser, or more than ctypes' 1024 call arguments).
                    raise _TracedLoopError(
                        e.why if isinstance(e, _Changed) else "a Python container changes",
                        f"unrolling its {len(r)} iterations would exceed {UNROLL_FALLBACK_LIMIT}",
                        " (a value whose length depends on the data, such as x[mask], cannot be carried "
                        "from one iteration to the next: use it within the iteration)") from None
                return _python_for(r, body, target, state, names, brk, written)
        except (TracerError, UnsupportedOperationError):
            # The body needs a concrete index (lst[i], a length that depends on i): unroll a
            # short static loop as Python; a long one reports why it cannot be one loop.
            _changed_containers(snapshots)
            if len(r) > UNROLL_FALLBACK_LIMIT:
                raise
            return _python_for(r, body, target, state, names, brk, written)
        # run one iteration as Python and try the rest as a loop again
        flag = _flag_index(names, brk)
        target, state = r[0], body(r[0], state)
        r, peeled = r[1:], peeled + 1
        if flag is not None and not _traced(state[flag]) and state[flag]:
            return target, state
        if len(r) <= UNROLL_LIMIT:
            return _python_for(r, body, target, state, names, brk, written)


class _ContainerChanged(Exception):
    pass


def _traced_for(bounds: tuple, body: Callable, target: Any, state: tuple, names: tuple, written: tuple,
                brk: str | None, static_range: range | None, snapshots: list | None = None) -> tuple[Any, tuple]:
    start, stop, step, trip = bounds
    st = _State(state, names)
    _check_aliases("loop", (body,), st, written)
    snapshots = _python_containers((body,)) if snapshots is None else snapshots
    flag = _flag_index(names, brk)
    in_place: list[set[int]] = []
    for attempt in range(3):
        def run_body(i: Any, carry: tuple) -> tuple:
            inputs = st.rebuild(carry)
            start_values = _start_values(st, inputs)
            token = _unrolled_copies.set(1)  # a loop body is traced once
            try:
                out = st.check(body(i, inputs), kind_changes=static_range is not None)
            finally:
                _unrolled_copies.reset(token)
            rebound = _rebound_after_write(st, inputs, start_values, out)
            if rebound is not None:
                # a static range runs the first iteration as Python, then the rest as one loop
                raise _Rebound(rebound)
            in_place.append(_in_place_positions(_State(inputs, names), out))
            return st.carry(out)

        try:
            if flag is None:
                # (a leading 0 keeps the carry non-empty: an equation always has an output)
                if _traced(step) or step != 1:
                    _, carry = lax.fori_loop(0, trip, lambda j, c: (0, run_body(unchecked_index(start, j, step), c[1])),
                                             (0, st.carry()))
                else:
                    _, carry = lax.fori_loop(start, stop, lambda i, c: (0, run_body(i, c[1])), (0, st.carry()))
                count = trip
            else:
                fpos = st.dynamic.index(flag) if flag in st.dynamic else None
                if fpos is None:
                    raise _Changed("the break flag is not carried")

                def cond(c: tuple) -> Any:
                    j, carry = c
                    return jnp.logical_and(j < trip, jnp.logical_not(_truth_or_const(carry[fpos])))

                def step_body(c: tuple) -> tuple:
                    j, carry = c
                    if static_range is not None:
                        _note_trip_range(j, static_range)
                    return unchecked_index(j, 1, 1), run_body(unchecked_index(start, j, step), carry)
                count, carry = lax.while_loop(cond, step_body, (0, st.carry()))
            break
        except _Changed as changed:
            if isinstance(changed, _Rebound) and static_range is None:
                raise changed.error() from None
            values = _first_bound_as_zeros(st, changed)
            if values is None:
                raise _TracedLoopError(changed.why) if static_range is None else changed
            st = _State(values, names)
    else:  # pragma: no cover
        raise _TracedLoopError("the loop state did not settle")
    grown = _changed_containers(snapshots)
    if grown:
        if static_range is not None:
            raise _ContainerChanged()
        raise UnsupportedOperationError(
            f"the loop at {_at()} changes the Python container `{grown[0]}` (e.g. list.append), "
            "but its trip count is only known at run time, so the loop is compiled and runs its body once "
            "while tracing. Write into an array instead (out = np.empty(n); out[i] = ...), or make the range "
            "static (a shape, or a static argument).")
    result = _write_back(st, st.rebuild(carry), set.intersection(*in_place[-1:]) if in_place else set(), written)
    return _final_index(start, step, count, target), result


def _note_trip_range(trip: Any, r: range) -> None:
    """The trip counter of a loop over a static range that may stop early (a `break` or
    `return`: a while loop) is in [0, len(r) - 1] on every trip that runs the body: recorded as
    a loose range (numpy/_dynamic.py linear_form), so the index `start + trip * step` has a known
    range and slices of loop-index length (`A[k:, k]`) work there as in a fori_loop."""
    ctx = getattr(trip, "_ctx", None)
    if _traced(trip) and len(r) and hasattr(ctx, "loose_ranges"):
        ctx.loose_ranges[trip.ir_var] = (0, len(r) - 1)


def _first_bound_as_zeros(st: _State, changed: _Changed) -> list | None:
    """The state with every name the body binds for the first time (undefined before the loop)
    started as a MaybeBound: zeros of the type the body gives it, not bound; or None if nothing
    like that changed. A read where no iteration bound it raises UnboundLocalError at run time
    (`read`), so the placeholder is never observed."""
    if not changed.outputs:
        return None
    values, found = list(st.values), False
    for k, (before, after) in enumerate(zip(st.values, changed.outputs)):
        if isinstance(before, Undefined) and _is_dynamic(after):
            values[k] = _unbound_placeholder(after, st.names[k])
            found = True
    return values if found else None


def _truth_or_const(x: Any) -> Any:
    return _truth(x) if _traced(x) else bool(x)


class _TracedLoopError(UnsupportedOperationError):
    def __init__(self, why: str, instead: str = "its trip count is only known at run time (a static range "
                                                "would be unrolled)", hint: str = "") -> None:
        super().__init__(f"the loop at {_at()} cannot be compiled as one loop: {why} from one "
                         f"iteration to the next, and {instead}. Give the variable its final type and shape "
                         f"before the loop{hint}.")


def _final_index(start: Any, step: Any, count: Any, prior: Any) -> Any:
    """The loop variable after the loop: the last index run, or its value before the loop when
    no iteration ran."""
    if not _traced(count):
        return prior if count == 0 else start + (count - 1) * step
    last = unchecked_index(start, unchecked_index(count, -1, 1), step)
    if isinstance(prior, Undefined):
        # no iteration: Python's name stays unbound (UnboundLocalError where it is read)
        return MaybeBound(last, count > 0, prior.name)
    if isinstance(prior, MaybeBound):
        return MaybeBound(_final_index(start, step, count, prior.value), jnp.logical_or(count > 0, prior.bound),
                          prior.name)
    if not isinstance(prior, (Tracer, bool, int, float, complex, np.number, np.bool_)):
        return last  # (None, a string: not a run-time value; a known gap where no iteration ran)
    # a number of another type before the loop (`i = 0.5`) stays where no iteration ran: the
    # result has the promoted dtype (Python's value, as a float where Python has an int)
    t = jnp.where(count > 0, last, prior)
    return Tracer(t._ctx, t.ir_var, int) if isinstance(prior, int) or (_traced(prior) and prior.weak is int) else t


def while_stmt(cond: Callable, body: Callable, state: tuple, names: tuple, written: tuple,
               brk: str | None, unsupported: str | None = None) -> tuple:
    """`while cond(state): state = body(state)`, stopping when the flag `brk` is set. Iterations
    run as Python while the condition is concrete; from the first traced one, the rest is one
    loop."""
    flag = _flag_index(names, brk)
    while True:
        if flag is not None and not _traced(state[flag]) and state[flag]:
            return state
        test = cond(state)
        if _traced(test) or (flag is not None and _traced(state[flag])):
            _refuse(unsupported, "a `while` loop on a traced condition", "loop")
            return _traced_while(cond, body, state, names, written, flag)
        if not test:
            return state
        state = body(state)


def _traced_while(cond: Callable, body: Callable, state: tuple, names: tuple, written: tuple,
                  flag: int | None) -> tuple:
    st = _State(state, names)
    _check_aliases("loop", (cond, body), st, written)
    snapshots = _python_containers((cond, body))
    in_place: list[set[int]] = []
    for attempt in range(3):
        def run_cond(carry: tuple) -> Any:
            inputs = st.rebuild(carry)
            test = _truth_or_const(cond(inputs))
            if flag is not None:
                test = jnp.logical_and(jnp.logical_not(_truth_or_const(inputs[flag])), test)
            return test

        def run_body(carry: tuple) -> tuple:
            inputs = st.rebuild(carry)
            start_values = _start_values(st, inputs)
            out = st.check(body(inputs), kind_changes=False)
            rebound = _rebound_after_write(st, inputs, start_values, out)
            if rebound is not None:
                raise _Rebound(rebound)
            in_place.append(_in_place_positions(_State(inputs, names), out))
            return st.carry(out)
        try:
            _, carry = lax.while_loop(lambda c: run_cond(c[1]), lambda c: (0, run_body(c[1])), (0, st.carry()))
            break
        except _Changed as changed:
            if isinstance(changed, _Rebound):
                raise changed.error() from None
            values = _first_bound_as_zeros(st, changed)
            if values is None:
                raise _TracedLoopError(changed.why)
            st = _State(values, names)
    else:  # pragma: no cover
        raise _TracedLoopError("the loop state did not settle")
    grown = _changed_containers(snapshots)
    if grown:
        raise UnsupportedOperationError(
            f"the `while` loop at {_at()} changes the Python container `{grown[0]}` (e.g. "
            "list.append), but its condition is traced, so the loop is compiled and runs its body once while "
            "tracing. Write into an array of a fixed size instead.")
    return _write_back(st, st.rebuild(carry), set.intersection(*in_place[-1:]) if in_place else set(), written)
