"""Warnings that name the cell: `Cell In[2], line 3: CacheLimitWarning: ...`, as IPython's own
tracebacks do, instead of ipykernel's temporary file (`/tmp/ipykernel_4711/2793.py:3: ...`).

Python prints a warning as `file:line: Category: message` and the source line. A warning whose
line is in a cell's code (jitkernel's own, issued at the user's line with `stacklevel`, and
anyone else's) gets the cell's name instead of the file (jitkernel.tracebacks.describe_location);
other warnings are formatted as before. The extension installs the formatter while it is loaded.
"""
from __future__ import annotations

import linecache
import warnings
from typing import Any, Callable

from jitkernel.tracebacks import cell_name, describe_location

Formatter = Callable[..., str]


class CellWarningFormat:
    """`warnings.formatwarning` that names cells; `install()` / `uninstall()` put it in place
    and restore the formatter it replaced (if nobody replaced it meanwhile)."""

    def __init__(self) -> None:
        self._previous: Formatter | None = None

    def __call__(self, message: Any, category: type[Warning], filename: str, lineno: int,
                 line: str | None = None) -> str:
        previous = self._previous or warnings.formatwarning
        if cell_name(filename) is None:
            return previous(message, category, filename, lineno, line)
        text = f"{describe_location(filename, lineno)}: {category.__name__}: {message}\n"
        source = linecache.getline(filename, lineno) if line is None else line
        return text + (f"  {source.strip()}\n" if source and source.strip() else "")

    def install(self) -> None:
        if self._previous is None:
            self._previous = warnings.formatwarning
            warnings.formatwarning = self

    def uninstall(self) -> None:
        if self._previous is not None:
            if warnings.formatwarning is self:
                warnings.formatwarning = self._previous
            self._previous = None
