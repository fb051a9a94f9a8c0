"""What the standard asks of an array object and a traced array lacked: `__array_namespace__`,
`device` and `to_device`. Attached to the Tracer class when jitkernel.array_api is imported (the
trace layer never imports the layers above it: docs/architecture.md).

>>> import numpy as np, jitkernel as jk
>>> float(jk.jit(lambda x: x.__array_namespace__().sum(x))(np.arange(3.0)))
3.0
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

from ..trace.tracer import Tracer
from ._device import DEFAULT_DEVICE, check_device

SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def attach(namespace: ModuleType) -> None:
    """Give traced arrays the standard's namespace and device methods."""

    def __array_namespace__(self: Tracer, /, *, api_version: str | None = None) -> ModuleType:
        if api_version is not None and api_version not in SUPPORTED_VERSIONS:
            raise ValueError(f"unsupported array API version {api_version!r}: jitkernel.array_api "
                             f"implements {SUPPORTED_VERSIONS[-1]} (and accepts {', '.join(SUPPORTED_VERSIONS[:-1])})")
        return namespace

    def to_device(self: Tracer, device: Any, /, *, stream: Any = None) -> Tracer:
        check_device(device)
        return self

    Tracer.__array_namespace__ = __array_namespace__
    Tracer.device = property(lambda self: DEFAULT_DEVICE, doc="Where the array lives: the jitted function's device.")
    Tracer.to_device = to_device
