"""The jitkernel IPython extension: `%load_ext jitkernel` (or `%load_ext jitkernel.magics`).

Magics: `%%jit` (cell), `%jit_profile`, `%jit_explain`, `%jit_ir`, `%jit_cache`,
`%jit_backend` (see docs/magics.md). Importing this package imports IPython; `jitkernel`
itself never imports it at module level.
"""
from __future__ import annotations

# Run from the repository root, this folder is importable as the top-level `magics` too: a second copy whose magics and profiler hooks are not the extension's.
# The documented name is jitkernel.magics (pyproject.toml's package-dir), so the folder's own name fails.
if __name__ != "jitkernel.magics":
    raise ImportError(f"{__name__!r} is the repository's magics/ folder imported by its folder name; "
                      "import jitkernel.magics instead (the installed package)", name=__name__)

from typing import Any

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics in `ipython`, subscribe the recompilation diagnostics and start the
    profiler session."""
    from .extension import load
    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics and the event subscriptions."""
    from .extension import unload
    unload(ipython)
