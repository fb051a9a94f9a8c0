"""`__array_namespace_info__()`: what the namespace supports (capabilities, devices, dtypes).

>>> info = __array_namespace_info__()
>>> info.default_dtypes()["real floating"], info.capabilities()["boolean indexing"]
(dtype('float64'), True)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._device import DEFAULT_DEVICE, check_device
from ._dtypes import DTYPES

_KINDS = {"bool": ("bool",), "signed integer": ("int8", "int16", "int32", "int64"),
          "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
          "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
          "real floating": ("float32", "float64"), "complex floating": ("complex64", "complex128"),
          "numeric": tuple(n for n in DTYPES if n != "bool")}


class Info:
    """The standard's inspection object (one per call of `__array_namespace_info__`)."""

    def capabilities(self) -> dict[str, Any]:
        # Boolean-mask indexing and data-dependent shapes (unique_*, nonzero) are supported inside
        # jit as jitkernel.numpy supports them (docs/numpy-support.md, data-dependent shapes).
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        return DEFAULT_DEVICE

    def devices(self) -> list[str]:
        return [DEFAULT_DEVICE]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        check_device(device)
        return {"real floating": DTYPES["float64"], "complex floating": DTYPES["complex128"],
                "integral": DTYPES["int64"], "indexing": DTYPES["int64"]}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        check_device(device)
        if kind is None:
            return dict(DTYPES)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        names: dict[str, np.dtype] = {}
        for k in kinds:
            if isinstance(k, str):
                if k not in _KINDS:
                    raise ValueError(f"unknown dtype kind {k!r}: one of {sorted(_KINDS)}")
                names.update({n: DTYPES[n] for n in _KINDS[k]})
            else:
                names.update({n: d for n, d in DTYPES.items() if d == np.dtype(k)})
        return {n: d for n, d in DTYPES.items() if n in names}


def __array_namespace_info__() -> Info:
    """The namespace's inspection object."""
    return Info()
