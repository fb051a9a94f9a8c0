"""Advanced indexing: integer-array and boolean-mask indices (gather and scatter), with
NumPy's rules for where the advanced dimensions go, negative indices and IndexError.

`advanced_getitem(x, index)` is `x[index]`, and `advanced_update(x, index, value)` is the
functional form of `x[index] = value`: it returns the new array and never mutates `x`
(trace/inplace.py writes the result back into `x`'s base). `index` is the tuple the user
wrote, containing at least one array, list or traced array.
"""
from __future__ import annotations

from typing import Any

from ..errors import UnsupportedOperationError

__all__: list[str] = []


def advanced_getitem(x: Any, index: tuple) -> Any:
    raise UnsupportedOperationError(f"advanced (integer-array or boolean) indexing is not supported yet: index {index!r}")


def advanced_update(x: Any, index: tuple, value: Any) -> Any:
    raise UnsupportedOperationError(
        f"assignment through an advanced (integer-array or boolean) index is not supported yet: index {index!r}")
