"""The standard's `fft` extension: NumPy 2's `numpy.fft` functions (traced arrays route to
jitkernel.numpy's fft step). The transforms keep a complex64 input complex64 and a float32
input float32/complex64, as the standard requires (NumPy 2 does the same).

>>> import numpy as np
>>> fft(np.ones(4, np.complex64)).dtype, fftfreq(4, d=0.5).tolist()
(dtype('complex64'), [0.0, 0.5, -1.0, -0.5])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._device import check_device


def fft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return np.fft.fft(x, n=n, axis=axis, norm=norm)


def ifft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return np.fft.ifft(x, n=n, axis=axis, norm=norm)


def fftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    return np.fft.fftn(x, s=s, axes=axes, norm=norm)


def ifftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    return np.fft.ifftn(x, s=s, axes=axes, norm=norm)


def rfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return np.fft.rfft(x, n=n, axis=axis, norm=norm)


def irfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return np.fft.irfft(x, n=n, axis=axis, norm=norm)


def rfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    return np.fft.rfftn(x, s=s, axes=axes, norm=norm)


def irfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Any:
    return np.fft.irfftn(x, s=s, axes=axes, norm=norm)


def hfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return np.fft.hfft(x, n=n, axis=axis, norm=norm)


def ihfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
    return np.fft.ihfft(x, n=n, axis=axis, norm=norm)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    out = np.fft.fftfreq(n, d=d)
    return out if dtype is None else out.astype(dtype)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    check_device(device)
    out = np.fft.rfftfreq(n, d=d)
    return out if dtype is None else out.astype(dtype)


def fftshift(x: Any, /, *, axes: Any = None) -> Any:
    return np.fft.fftshift(x, axes=axes)


def ifftshift(x: Any, /, *, axes: Any = None) -> Any:
    return np.fft.ifftshift(x, axes=axes)


__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
