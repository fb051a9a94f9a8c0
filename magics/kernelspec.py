"""The "Python 3 (jitkernel)" kernelspec: this Python, with the extension loaded at start.

The kernel fails to start (instead of starting without the magics) when the extension cannot
be loaded: `--InteractiveShellApp.reraise_ipython_extension_failures=True`.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

KERNEL_NAME = "jitkernel"
DISPLAY_NAME = "Python 3 (jitkernel)"
EXTRA_ARGUMENTS = ["--ext=jitkernel", "--InteractiveShellApp.reraise_ipython_extension_failures=True"]
PYTHON_ARGUMENTS = ["-Xfrozen_modules=off"]  # ipykernel's debugger warns about frozen modules otherwise


def install_kernelspec(name: str = KERNEL_NAME, *, user: bool = False, prefix: str | os.PathLike | None = None,
                       display_name: str = DISPLAY_NAME) -> Path:
    """Write the kernelspec and install it: into `prefix`/share/jupyter/kernels (default:
    `sys.prefix`, i.e. this virtual environment), or the per-user directory with `user=True`.
    Returns the installed kernelspec directory."""
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager

    if user and prefix is not None:
        raise ValueError("choose either user=True or a prefix")
    with tempfile.TemporaryDirectory() as tmp:
        path = write_kernel_spec(
            Path(tmp) / name,
            overrides={"display_name": display_name, "metadata": {"debugger": True}},
            extra_arguments=list(EXTRA_ARGUMENTS), python_arguments=list(PYTHON_ARGUMENTS))
        where = None if user else str(prefix if prefix is not None else sys.prefix)
        installed = KernelSpecManager().install_kernel_spec(path, kernel_name=name, user=user, prefix=where)
    return Path(installed)


def kernels_dir(prefix: str | os.PathLike | None = None) -> Path:
    """`prefix`/share/jupyter/kernels (default prefix: `sys.prefix`)."""
    return Path(prefix if prefix is not None else sys.prefix) / "share" / "jupyter" / "kernels"


def is_current(spec_dir: Path) -> bool:
    """Whether `spec_dir/kernel.json` starts this Python with the extension arguments."""
    try:
        argv = json.loads((spec_dir / "kernel.json").read_text())["argv"]
    except (OSError, ValueError, KeyError):
        return False
    return bool(argv) and os.path.realpath(argv[0]) == os.path.realpath(sys.executable) and all(
        a in argv for a in EXTRA_ARGUMENTS)


def ensure_kernelspec(name: str = KERNEL_NAME, prefix: str | os.PathLike | None = None) -> Path:
    """The kernelspec directory in `prefix` (default `sys.prefix`), installed or refreshed when
    missing or pointing at another Python."""
    spec_dir = kernels_dir(prefix) / name
    if not is_current(spec_dir):
        spec_dir = install_kernelspec(name, prefix=prefix)
    return spec_dir
