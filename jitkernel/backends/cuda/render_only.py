"""The emulator's "render only" mode: `CudaEmulatorBackend.compile` renders the program, records
its CudaModule and stops (no compiler run), so that a test runner can learn which programs a
batch of tests will build and compile them all in one `emulator.prebuild` (tests/emulator_suite.py).

The stop is a private BaseException subclass: a test's `pytest.raises(SomeError)` or the
library's own `except Exception` fallbacks never catch it, so the run ends at the first compile.

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


def intercept(module) -> None:
    """Called by the emulator's compile after rendering: records `module` and raises Rendered
    while a `recording()` is active in this thread; does nothing otherwise."""
    modules = getattr(_active, "modules", None)
    if modules is not None:
        modules.append(module)
        raise Rendered(module.name)


@contextlib.contextmanager
def recording() -> Iterator[list]:
    """Within this block, emulator compiles render and record their CudaModule (the yielded
    list), then raise Rendered instead of building."""
    saved = getattr(_active, "modules", None)
    _active.modules = modules = []
    try:
        yield modules
    finally:
        _active.modules = saved


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
