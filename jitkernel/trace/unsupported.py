"""NumPy functions the support table lists as unsupported raise at the user's call.

NumPy's dispatch protocols only see a traced array passed where the function dispatches on it.
Any other call of an unsupported function runs NumPy itself on the trace-time values: with
static arguments (`np.indices((2, 3))`, `np.tril_indices(n)`) its result becomes a constant
that fails later with a message that names something else (a write of traced values into it);
with a traced value where NumPy wants an int (`np.tri(n)` of a traced `n`) NumPy's conversion
fails without naming the function. So, while a thread traces, every function the table
(numpy/support_table.py) lists as unsupported, in `numpy`, `numpy.linalg` and `numpy.fft`, is
replaced by a wrapper that raises UnsupportedOperationError naming `numpy.<name>` and the
user's line when the user's code calls it; called from anywhere else (NumPy's and jitkernel's
own code, other threads) it calls NumPy. The functions on dtypes and Python objects
(np.result_type, np.issubdtype, ...) are exempt: the table documents them as "call it on
static values", which is what they are for. Installed and restored like trace/creation.py
(trace/patching.py); other spellings (`from numpy import indices`) are checked by
autograph/callees.py through `refuse_unsupported`.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable

from ..errors import UnsupportedOperationError
from .context import current_context, user_frame_location
from .numpy_api import NUMPY
from .creation import _called_by_user
from .patching import ModulePatches

# The support table's reason for the functions that stay callable on static values.
_EXEMPT_REASONS = ("dtypes and Python objects",)

# (module, name, original, reason) of every unsupported function, with the registry size it
# was computed for (register_function can add implementations later).
_cache: tuple[int, list[tuple[Any, str, Callable, str]]] | None = None
_wrappers: dict[int, Callable] = {}
_originals: dict[int, tuple[str, str]] = {}  # id(original) -> (qualified name, reason)


def unsupported_functions() -> list[tuple[Any, str, Callable, str]]:
    """(module, name, NumPy's function, reason) for every function the support table lists as
    unsupported and that is not exempt."""
    global _cache
    _dispatch = NUMPY.dispatch
    unsupported_rows = NUMPY.unsupported_rows
    key = len(_dispatch._REGISTERED)
    if _cache is None or _cache[0] != key:
        rows = [row for row in unsupported_rows() if not row[3].startswith(_EXEMPT_REASONS)]
        _cache = (key, rows)
        _originals.clear()
        _originals.update({id(f): (f"{m.__name__}.{n}", why) for m, n, f, why in rows})
    return _cache[1]


def _error(qualified: str, reason: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"{qualified} is not supported inside a jitted function ({reason}), at {user_frame_location()}. "
        "Compute it outside the function and pass the result as an argument (or read it as a global); "
        "docs/numpy-support-table.md lists what is supported.")


def _refusing(module: Any, name: str, original: Callable, reason: str) -> Callable:
    qualified = f"{module.__name__}.{name}"

    @functools.wraps(original)
    def refuse(*args: Any, **kwargs: Any) -> Any:
        if current_context() is None or not _called_by_user(sys._getframe(1), name):
            return original(*args, **kwargs)
        raise _error(qualified, reason)
    refuse.__jitkernel_original__ = original  # type: ignore[attr-defined]
    if hasattr(original, "_implementation"):  # NumPy's dispatcher attribute, read by other libraries
        refuse._implementation = original._implementation  # type: ignore[attr-defined]
    return refuse


_targets_cache: tuple[int, list[tuple[Any, str, Callable]]] | None = None


def _targets() -> list[tuple[Any, str, Callable]]:
    """(module, name, wrapper) to install, made once (a trace starts often: keep it cheap)."""
    global _targets_cache
    rows = unsupported_functions()
    if _targets_cache is None or _targets_cache[0] != id(rows):
        targets = []
        for module, name, original, reason in rows:
            if getattr(getattr(module, name, None), "__jitkernel_original__", None) is not None:
                continue  # replaced already (by trace/creation.py)
            wrapper = _wrappers.get(id(original))
            if wrapper is None:
                wrapper = _wrappers[id(original)] = _refusing(module, name, original, reason)
            targets.append((module, name, wrapper))
        _targets_cache = (id(rows), targets)
    return _targets_cache[1]


def refuse_unsupported(f: Any) -> None:
    """Raise for a call of an unsupported NumPy function reached by another spelling than
    `np.<name>` (`from numpy import indices`), which the module patch cannot see; called by
    autograph/callees.py for the routed calls of converted code while tracing."""
    if not _originals:
        unsupported_functions()
    found = _originals.get(id(getattr(f, "__jitkernel_original__", f)))
    if found is not None:
        raise _error(*found)


_patches = ModulePatches(_targets)
install, uninstall = _patches.install, _patches.uninstall
