"""Indices that are traced scalars (a loop counter, a value read from an array): `a[i]`,
`a[i, i]`, `a[i:i + k]`, with NumPy's rules applied at run time (negative indices wrap, slice
bounds clamp, an out-of-bounds integer raises IndexError).

`dynamic_getitem(x, index)` is `x[index]`; `dynamic_update(x, index, value)` is the functional
form of `x[index] = value` (returns the new array; trace/inplace.py writes it back into `x`'s
base). `index` is the tuple the user wrote, with at least one traced scalar and no arrays.
"""
from __future__ import annotations

from typing import Any

from ..errors import UnsupportedOperationError

__all__: list[str] = []


def dynamic_getitem(x: Any, index: tuple) -> Any:
    raise UnsupportedOperationError(f"indexing with a traced scalar is not supported yet: index {index!r}")


def dynamic_update(x: Any, index: tuple, value: Any) -> Any:
    raise UnsupportedOperationError(f"assignment through a traced scalar index is not supported yet: index {index!r}")
