"""Global options (`jk.config.update(name, value)`)."""
from __future__ import annotations

import os
from typing import Any, Callable


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


TRACEBACK_MODES = ("user", "full")


class Config:
    """Engine-wide settings; read them as attributes, change them with `update`.

    >>> import jitkernel as jk
    >>> jk.config.default_backend
    'cpu'
    """

    def __init__(self) -> None:
        # JITKERNEL_BACKEND picks the backend of every function without one of its own; the
        # name is checked when jitkernel is imported (jitkernel/__init__.py), availability at
        # the first call, as for jk.config.update.
        self.default_backend = os.environ.get("JITKERNEL_BACKEND") or "cpu"
        self.explain_recompiles = False  # log every recompilation with its reasons
        self.max_cache_entries = 8  # compiled signatures kept per jitted function
        self.disk_cache = True  # persistent machine-code cache (jitkernel.cache)
        self.dynamic_shapes = True  # a dimension that changes size becomes a run-time parameter
        # Threads for large kernels (outer loop split in ranges): the CPUs this process may use,
        # unless JITKERNEL_THREADS says otherwise (docs/performance.md has the measurements).
        self.threads = int(os.environ.get("JITKERNEL_THREADS", "0")) or _usable_cpus()
        # "user": errors of jitted calls show the user's frames only (jitkernel.tracebacks);
        # "full": every frame, the engine's included (for debugging jitkernel itself).
        self.traceback = "user"
        # An integer argument is a run-time value; when the function cannot be traced that way
        # (it is a shape, a slice bound), trace again with the integers static (api.py).
        self.static_int_fallback = True
        # Seconds an external compiler run (nvcc, the emulator's g++) lasts before a notebook with the
        # IPython extension loaded shows its progress (magics/progress.py); None: never.
        self.compile_progress_after = 1.0
        # A call whose floating results hold a NaN or an infinity made inside raises
        # FloatingPointError naming the operation and the user's line (docs/debugging.md); off,
        # nothing is checked and the generated code is the same.
        self.debug_nans = False

    def update(self, name: str, value: Any) -> None:
        if not hasattr(self, name):
            raise AttributeError(f"unknown jitkernel option {name!r}; options: {sorted(vars(self))}")
        if name == "traceback" and value not in TRACEBACK_MODES:
            raise ValueError(f"jitkernel option 'traceback' must be one of {', '.join(map(repr, TRACEBACK_MODES))}, "
                             f"got {value!r}")
        check = _CHECKS.get(name)
        if check is not None:
            check(value)
        setattr(self, name, value)

    def register_check(self, name: str, check: Callable[[Any], None]) -> None:
        """Have `update(name, value)` call `check(value)` first (it raises for a bad value): the
        layer that owns an option's values registers it (backends: `default_backend`), so
        config reads no layer above it."""
        _CHECKS[name] = check

    def register_option(self, name: str, default: Any, check: Callable[[Any], None] | None = None) -> None:
        """Add option `name` with its `default` (and `check`, as `register_check`): an option
        a layer above config owns (a backend's own setting, `tpu_fusion`), registered when that
        layer is imported, so config reads no layer above it."""
        if not hasattr(self, name):
            setattr(self, name, default)
        if check is not None:
            self.register_check(name, check)


_CHECKS: dict[str, Callable[[Any], None]] = {}


config = Config()
