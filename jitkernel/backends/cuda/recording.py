"""Recording the CUDA modules the emulator would build, instead of building them: the first
half of the emulator's batch build (`emulator.batch_build`, docs/gpu.md "Batch builds").

While `record_modules()` is active in a thread, each emulator compile of a program not built yet
renders the program, appends its CudaModule to the recorded list and then either
- returns a stand-in (`stand_in=True`, emulator.StandInProgram): the call answers with the NumPy
  reference interpreter's results, so the code goes on to its next programs and one pass
  records them all; or
- stops (`stand_in=False`): raises `RenderedOnly`, a BaseException, so neither a caller's
  `except Exception` nor the library's own fallbacks catch it and the block ends at its first
  compile.

>>> import numpy as np, jitkernel as jk
>>> with record_modules(stand_in=False) as modules:
...     try:
...         jk.jit(lambda x: x + 1, backend="cuda-emulator")(np.ones(3))
...     except RenderedOnly:
...         pass
>>> len(modules)
1
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

_active = threading.local()


class RenderedOnly(BaseException):
    """Raised by a compile inside `record_modules(stand_in=False)`: the program was rendered and
    recorded, not built. A BaseException so that `except Exception` does not swallow it."""


def intercept(module: Any) -> bool:
    """Called by the emulator's compile after rendering a program not built yet: while recording
    in this thread, records `module`, then raises RenderedOnly (stop mode) or returns True (the
    compile returns a stand-in); returns False when not recording."""
    modules = getattr(_active, "modules", None)
    if modules is None:
        return False
    modules.append(module)
    if getattr(_active, "stand_in", False):
        return True
    raise RenderedOnly(module.name)


def is_recording() -> bool:
    """Whether a `record_modules()` is active in this thread."""
    return getattr(_active, "modules", None) is not None


@contextlib.contextmanager
def record_modules(stand_in: bool = True) -> Iterator[list]:
    """Within this block (this thread), emulator compiles of programs not built yet render and
    record their CudaModule into the yielded list instead of running the host compiler; with
    `stand_in` the calls answer with the NumPy reference interpreter's results, otherwise the
    first such compile raises RenderedOnly. Blocks nest: the inner one records apart."""
    saved = getattr(_active, "modules", None), getattr(_active, "stand_in", False)
    modules: list = []
    _active.modules, _active.stand_in = modules, stand_in
    try:
        yield modules
    finally:
        _active.modules, _active.stand_in = saved
