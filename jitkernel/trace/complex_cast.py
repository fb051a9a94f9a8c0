"""Complex -> real casts: NumPy drops the imaginary part and warns (ComplexWarning). In a
jitted function the warning is issued once, when the cast is traced (docs/numpy-support.md
"Complex numbers"), attributed to the user's line; calls of the compiled function do not warn."""
from __future__ import annotations

import warnings

import numpy as np

from .frames import user_frame


def warn_complex_cast(t: object, dtype: np.dtype) -> None:
    """Issue NumPy's ComplexWarning for casting traced `t` (complex) to real `dtype`."""
    if np.dtype(dtype) == np.bool_:
        return  # NumPy casts complex to bool (a nonzero test) without a warning
    message = "Casting complex values to real discards the imaginary part"
    frame = user_frame(2)
    if frame is None:
        warnings.warn(message, np.exceptions.ComplexWarning, stacklevel=2)
        return
    warnings.warn_explicit(message, np.exceptions.ComplexWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=frame.f_globals.get("__name__"), registry=frame.f_globals.setdefault("__warningregistry__", {}))
