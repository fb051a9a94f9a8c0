"""Index expressions of the kernel IR: integer linear combinations of loop variables and of
floor-division / modulo atoms, simplified with the loop ranges.

Movement ops become these maps: broadcast drops a variable, transpose permutes, slice scales and
shifts, reshape divides and takes remainders, which the range rules below usually remove again
(`(b*i + j) // b == i` when 0 <= j < b; `b*(e // b) + e % b == e`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

# An atom is ("i", d) for loop variable d, ("div"|"mod", Aff, c), or ("val", buffer, lo, hi): the
# run-time value of a 0-d int64 buffer known to lie in [lo, hi] (a checked dynamic start,
# fusion/dynamic.py).
Atom = tuple


@dataclass(frozen=True)
class Aff:
    """sum(coef * atom) + const, with terms sorted and coefficients non-zero."""

    terms: tuple[tuple[Atom, int], ...] = ()
    const: int = 0

    def __post_init__(self) -> None:
        # Nesting of `//` and `%` atoms, computed once from the (already built) inner maps.
        object.__setattr__(self, "depth", max((atom[1].depth + 1 for atom, _ in self.terms if atom[0] in ("div", "mod")),
                                              default=0))

    def __str__(self) -> str:
        parts = []
        for atom, c in self.terms:
            a = _atom_str(atom)
            parts.append(a if c == 1 else f"{c}*{a}")
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def loop_vars(self) -> set[int]:
        out: set[int] = set()
        for atom, _ in self.terms:
            if atom[0] == "i":
                out.add(atom[1])
            elif atom[0] != "val":
                out |= atom[1].loop_vars()
        return out

    def coef(self, d: int) -> int:
        for atom, c in self.terms:
            if atom == ("i", d):
                return c
        return 0

    def has_nonlinear(self) -> bool:
        return any(atom[0] != "i" for atom, _ in self.terms)


def _atom_str(atom: Atom) -> str:
    if atom[0] == "i":
        return f"i{atom[1]}"
    if atom[0] == "val":
        return f"%{atom[1]}[0]"
    op = "//" if atom[0] == "div" else "%"
    return f"({atom[1]} {op} {atom[2]})"


def var(d: int) -> Aff:
    return Aff(((("i", d), 1),), 0)


def const(c: int) -> Aff:
    return Aff((), int(c))


def _normalize(terms: dict, c: int) -> Aff:
    terms = {a: k for a, k in terms.items() if k != 0}
    # b*(e // b) + (e % b) == e: fold such pairs back into e (repeatedly: nested reshapes).
    changed = True
    while changed:
        changed = False
        for atom, k in list(terms.items()):
            if atom[0] == "div":
                e, b = atom[1], atom[2]
                m = ("mod", e, b)
                km = terms.get(m, 0)
                if km and k == km * b:
                    del terms[atom], terms[m]
                    for a2, k2 in e.terms:
                        terms[a2] = terms.get(a2, 0) + km * k2
                    c += km * e.const
                    terms = {a: v for a, v in terms.items() if v != 0}
                    changed = True
                    break
    return Aff(tuple(sorted(terms.items(), key=lambda t: repr(t[0]))), int(c))


def add(*xs: Aff) -> Aff:
    terms: dict = {}
    c = 0
    for x in xs:
        for a, k in x.terms:
            terms[a] = terms.get(a, 0) + k
        c += x.const
    return _normalize(terms, c)


def scale(x: Aff, k: int) -> Aff:
    if k == 0:
        return const(0)
    return Aff(tuple((a, c * k) for a, c in x.terms), x.const * k)


def value_range(x: Aff, extents: Sequence[int]) -> tuple[int, int]:
    """Inclusive bounds of x when loop variable d ranges over [0, extents[d])."""
    lo = hi = x.const
    for atom, k in x.terms:
        a_lo, a_hi = _atom_range(atom, extents)
        lo += min(k * a_lo, k * a_hi)
        hi += max(k * a_lo, k * a_hi)
    return lo, hi


def _atom_range(atom: Atom, extents: Sequence[int]) -> tuple[int, int]:
    if atom[0] == "i":
        return 0, max(extents[atom[1]] - 1, 0)
    if atom[0] == "val":
        return atom[2], atom[3]
    e_lo, e_hi = value_range(atom[1], extents)
    if atom[0] == "div":
        return e_lo // atom[2], e_hi // atom[2]
    return (e_lo, e_hi) if 0 <= e_lo and e_hi < atom[2] else (0, atom[2] - 1)


def _split(x: Aff, c: int) -> tuple[Aff, Aff]:
    """x == c*q + r where q holds the terms divisible by c."""
    q_terms, r_terms = {}, {}
    for a, k in x.terms:
        if k % c == 0:
            q_terms[a] = k // c
        else:
            r_terms[a] = k
    return _normalize(q_terms, x.const // c), _normalize(r_terms, x.const % c)


def floordiv(x: Aff, c: int, extents: Sequence[int]) -> Aff:
    if c == 0:  # only in maps of empty arrays, which are never evaluated
        return const(0)
    if c == 1:
        return x
    q, r = _split(x, c)
    lo, hi = value_range(r, extents)
    if 0 <= lo and hi < c:
        return q
    return Aff(((("div", x, c), 1),), 0)


def mod(x: Aff, c: int, extents: Sequence[int]) -> Aff:
    if c in (0, 1):
        return const(0)
    lo, hi = value_range(x, extents)
    if 0 <= lo and hi < c:
        return x
    _, r = _split(x, c)
    lo, hi = value_range(r, extents)
    if 0 <= lo and hi < c:
        return r
    return Aff(((("mod", x, c), 1),), 0)


def substitute(x: Aff, mapping: Mapping[int, Aff], extents: Sequence[int]) -> Aff:
    """Replace loop variables by expressions (`extents` are the ranges of the new variables)."""
    parts = [const(x.const)]
    for atom, k in x.terms:
        if atom[0] == "i":
            parts.append(scale(mapping.get(atom[1], var(atom[1])), k))
        elif atom[0] == "val":
            parts.append(Aff(((atom, k),), 0))
        else:
            inner = substitute(atom[1], mapping, extents)
            f = floordiv if atom[0] == "div" else mod
            parts.append(scale(f(inner, atom[2], extents), k))
    return add(*parts)


def linearize(index: Sequence[Aff], shape: Sequence[int]) -> Aff:
    """Element offset of a multi-index into a C-contiguous array of `shape`."""
    parts, stride = [], 1
    for ix, n in zip(reversed(index), reversed(shape)):
        parts.append(scale(ix, stride))
        stride *= n
    return add(*parts) if parts else const(0)


def unravel(linear: Aff, shape: Sequence[int], extents: Sequence[int]) -> list[Aff]:
    """Multi-index into a C-contiguous array of `shape` from an element offset."""
    out, stride = [], 1
    strides = []
    for n in reversed(shape):
        strides.append(stride)
        stride *= n
    for n, s in zip(shape, reversed(strides)):
        out.append(mod(floordiv(linear, s, extents), n, extents))
    return out
