"""Symbolic dimensions: an array length that is known only when the program runs.

A `SymDim` is an affine form `const + sum(coef * var)` over 0-d integer `Var`s (a loop body's
index, a count computed from data), with the range `[lo, hi]` the tracer proved for it. It may
stand in an `AType.shape` wherever an int may (docs/architecture.md, "Symbolic dimensions").

Equality is structural (same constant, same variables with the same coefficients) and ignores
the range, so `f64[i] + f64[i]` type-checks; hashing is cheap. A `SymDim` refuses to become a
Python int (`int()`, `operator.index()`, `range()`, comparisons): code that needs a static
length fails loudly with `SymbolicDimError` instead of computing with a wrong one.

>>> from jitkernel.ir.program import Var
>>> from jitkernel.ir.types import AType
>>> i = Var(AType((), "int64"))
>>> n = SymDim.of(i, 0, 9)          # the length i, with 0 <= i <= 9
>>> m = n + 1
>>> (m.lo, m.hi), m == 1 + n, m - 1 == n
((1, 10), True, True)
>>> m.evaluate({i: 4})
5
>>> AType((m, 3), "float64").max_shape
(10, 3)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

from ..errors import UnsupportedOperationError


class SymbolicDimError(UnsupportedOperationError, TypeError):
    """A symbolic length was used where a static one is needed (an int, a comparison)."""


@dataclass(frozen=True)
class SymDim:
    """`const + sum(coef * var for var, coef in terms)`, proved to lie in `[lo, hi]`."""

    const: int
    terms: tuple  # ((Var, coef), ...) sorted by Var.id, no zero coefficient, at least one term
    lo: int = field(compare=False)
    hi: int = field(compare=False)

    @staticmethod
    def of(var: Any, lo: int, hi: int) -> "SymDim":
        """The length held by the 0-d integer variable `var`, proved to lie in `[lo, hi]`."""
        if var.aval.shape != () or var.aval.dtype.kind not in "iu":
            raise TypeError(f"a symbolic dimension is a 0-d integer variable, not {var.aval}")
        return SymDim(0, ((var, 1),), int(lo), int(hi))

    @staticmethod
    def make(const: int, terms: Mapping[Any, int] | tuple, lo: int, hi: int) -> "Dim":
        """Normalised constructor: sorts terms, drops zero coefficients, and returns a plain int
        when no variable is left."""
        items = terms.items() if isinstance(terms, Mapping) else terms
        merged: dict = {}
        for var, coef in items:
            merged[var] = merged.get(var, 0) + int(coef)
        kept = tuple(sorted(((v, c) for v, c in merged.items() if c), key=lambda t: t[0].id))
        if not kept:
            return int(const)
        return SymDim(int(const), kept, int(lo), int(hi))

    # -- arithmetic that stays affine ------------------------------------------------------
    def __add__(self, other: "Dim") -> "Dim":
        if isinstance(other, SymDim):
            return SymDim.make(self.const + other.const, self.terms + other.terms,
                               self.lo + other.lo, self.hi + other.hi)
        k = _static(other)
        return SymDim(self.const + k, self.terms, self.lo + k, self.hi + k)

    __radd__ = __add__

    def __neg__(self) -> "SymDim":
        return SymDim(-self.const, tuple((v, -c) for v, c in self.terms), -self.hi, -self.lo)

    def __sub__(self, other: "Dim") -> "Dim":
        return self + (-other)

    def __rsub__(self, other: "Dim") -> "Dim":
        return (-self) + other

    def __mul__(self, other: "Dim") -> "Dim":
        if isinstance(other, SymDim):
            raise SymbolicDimError(f"the product of two symbolic lengths ({self} * {other}) is "
                                   "not affine; jitkernel does not support it")
        k = _static(other)
        if k == 0:
            return 0
        lo, hi = sorted((self.lo * k, self.hi * k))
        return SymDim(self.const * k, tuple((v, c * k) for v, c in self.terms), lo, hi)

    __rmul__ = __mul__

    # -- what it refuses -------------------------------------------------------------------
    def _refuse(self, *_: Any) -> Any:
        raise SymbolicDimError(
            f"the length {self} is known only at run time (between {self.lo} and {self.hi}); "
            f"it cannot be used as a Python int here{_location()}. Slices whose length depends on a "
            "loop index support elementwise math, broadcasting, sums/products/max/min, dot/@ and "
            "assignment, not functions that need the length itself (np.mean, len(), reshape(-1, k))")

    __int__ = __index__ = __float__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = __rmod__ = _refuse

    def __bool__(self) -> bool:
        return True  # a length-valued entry of a shape tuple, never a zero test

    # -- queries ---------------------------------------------------------------------------
    @property
    def variables(self) -> tuple:
        return tuple(v for v, _ in self.terms)

    def evaluate(self, env: Mapping[Any, Any]) -> int:
        """The value when every variable's value is `env[var]` (a 0-d array or an int)."""
        return self.const + sum(c * int(env[v]) for v, c in self.terms)

    def substitute(self, mapping: Mapping[Any, Any]) -> "Dim":
        """The same form with each variable `v` replaced by `mapping.get(v, v)` (a Var, an int
        or another Dim); used when a program's variables are renamed."""
        out: Dim = self.const
        for v, c in self.terms:
            new = mapping.get(v, v)
            out = out + (SymDim(0, ((new, 1),), self.lo, self.hi) * c if _is_var(new) else new * c)
        if isinstance(out, SymDim):
            out = SymDim(out.const, out.terms, self.lo, self.hi)
        return out

    def __str__(self) -> str:
        parts = [f"{'' if c == 1 else '-' if c == -1 else f'{c}*'}v{v.id}" for v, c in self.terms]
        text = "+".join(parts).replace("+-", "-")
        if self.const:
            text += f"{self.const:+d}"
        return text

    __repr__ = __str__


Dim = Union[int, SymDim]


# `file:line: source` of the user's code while a trace runs, else None: set by the trace layer
# (trace/context.py) when it is imported, so that the IR reads no layer above it.
USER_LOCATION: list[Callable[[], str | None]] = []


def _location() -> str:
    """`, at file:line: source` of the user's code while a trace runs, else ''."""
    try:
        where = USER_LOCATION[0]() if USER_LOCATION else None
        return f", at {where}" if where else ""
    except Exception:  # noqa: BLE001 - an error message must not fail
        return ""


def _is_var(x: Any) -> bool:
    return hasattr(x, "aval") and hasattr(x, "id")


def _static(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        try:
            return int(x.__index__())
        except Exception:
            raise SymbolicDimError(f"cannot combine a symbolic length with {x!r}") from None
    return x


def is_symbolic(d: Any) -> bool:
    return isinstance(d, SymDim)


def max_dim(d: Dim) -> int:
    """The largest value the dimension can take (its size when static)."""
    return d.hi if isinstance(d, SymDim) else d


def min_dim(d: Dim) -> int:
    return d.lo if isinstance(d, SymDim) else d


def reshape_axis_map(old: tuple, new: tuple) -> dict[int, int] | None:
    """For a reshape that keeps every symbolic axis whole (static axes regroup between them),
    the new axis of each symbolic old axis; None when the reshape mixes a symbolic axis with
    others."""
    def segments(shape: tuple) -> list:
        segs, static = [], 1
        for ax, d in enumerate(shape):
            if isinstance(d, SymDim):
                segs.append(static)
                segs.append((d, ax))
                static = 1
            else:
                static *= d
        segs.append(static)
        return segs
    a, b = segments(old), segments(new)
    if len(a) != len(b):
        return None
    mapping = {}
    for sa, sb in zip(a, b):
        if isinstance(sa, tuple) != isinstance(sb, tuple):
            return None
        if isinstance(sa, tuple):
            if sa[0] != sb[0]:
                return None
            mapping[sa[1]] = sb[1]
        elif sa != sb:
            return None
    return mapping


def symbolic_broadcast_shapes(*shapes: tuple) -> tuple:
    """NumPy's broadcasting where some lengths are symbolic: a symbolic length meets only 1 or
    an equal (structurally) length. NumPy would also broadcast it when its value happens to be
    1 at run time; we refuse rather than risk a different answer."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(ndim):
        dims = [s[len(s) - ndim + k] for s in shapes if len(s) - ndim + k >= 0]
        kept = [d for d in dims if not (isinstance(d, int) and d == 1)]
        first = kept[0] if kept else 1
        if any(d != first for d in kept):
            raise ValueError("operands could not be broadcast together with shapes "
                             + " ".join("(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
                                        for s in shapes)
                             + " (a length that depends on a loop index meets only 1 or the same length)")
        out.append(first)
    return tuple(out)
