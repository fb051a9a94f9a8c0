"""The one device name the namespace knows: "cpu", as NumPy's namespace spells it.

Where a jitted program runs is chosen by `jk.jit(backend=...)`, not by the arrays: inside a trace
every array is on the jitted function's device, and the namespace's `device=` arguments accept
None, "cpu" or an array's own `.device`, and refuse anything else (ValueError).

>>> check_device("cpu") is None
True
"""
from __future__ import annotations

from typing import Any

DEFAULT_DEVICE = "cpu"


def check_device(device: Any) -> None:
    """Accept the devices this namespace can place arrays on (None means the default)."""
    if device is None or device == DEFAULT_DEVICE:
        return
    raise ValueError(f"unsupported device {device!r}: jitkernel's array API namespace has one device, "
                     f"{DEFAULT_DEVICE!r} (choose where compiled code runs with jk.jit(backend=...))")
