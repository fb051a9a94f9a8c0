"""The emulator's "render only" mode: `CudaEmulatorBackend.compile` renders the program, records
its CudaModule and stops (no compiler run), so that a test runner can learn which programs a
batch of tests will build and compile them all in one `emulator.prebuild` (tests/emulator_suite.py).

The stop is a private BaseException subclass: a test's `pytest.raises(SomeError)` or the
library's own `except Exception` fallbacks never catch it, so the run ends at the first compile.
With `recording(stand_in=True)` the compile returns a stand-in instead (emulator.StandInProgram:
the NumPy reference interpreter's results while recording), so a test runs on through all of
its programs and the suite learns them in one pass.

>>> import numpy as np, jitkernel as jk
>>> with recording() as modules:
...     try:
...         jk.jit(lambda x: x + 1, backend="cuda-emulator")(np.ones(3))
...     except Rendered:
...         pass
>>> len(modules)
1
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator

from ...errors import UnsupportedOperationError

_active = threading.local()


class Rendered(BaseException):
    """Raised by `intercept` while recording: the program was rendered and recorded."""


def intercept(module) -> bool:
    """Called by the emulator's compile after rendering a program not built yet: while a
    `recording()` is active in this thread, records `module`, then raises Rendered (stop mode)
    or returns True (stand-in mode: the compile returns a stand-in that answers without a
    compiler run); returns False when not recording."""
    modules = getattr(_active, "modules", None)
    if modules is None:
        return False
    modules.append(module)
    if getattr(_active, "stand_in", False):
        return True
    raise Rendered(module.name)


def is_recording() -> bool:
    """Whether a `recording()` is active in this thread."""
    return getattr(_active, "modules", None) is not None


@contextlib.contextmanager
def recording(stand_in: bool = False) -> Iterator[list]:
    """Within this block, emulator compiles render and record their CudaModule (the yielded
    list), then raise Rendered instead of building; with `stand_in`, they return a stand-in
    executable instead, whose results (while recording) are the NumPy reference interpreter's,
    so that a test runs on past its first program and records every program it builds in one
    pass (emulator.StandInProgram)."""
    saved = getattr(_active, "modules", None), getattr(_active, "stand_in", False)
    modules: list = []
    _active.modules, _active.stand_in = modules, stand_in
    try:
        yield modules
    finally:
        _active.modules, _active.stand_in = saved


@contextlib.contextmanager
def tag_refusals() -> Iterator[None]:
    """UnsupportedOperationError raised inside this block (scheduling or rendering for CUDA)
    gets `renderer_refusal = True`, so the test suite can tell "the CUDA renderer does not cover
    this step" (a skip on the emulator) from any other error (a failure)."""
    try:
        yield
    except UnsupportedOperationError as e:
        e.renderer_refusal = True
        raise
