"""Executing a notebook headless in a kernel started from a given kernelspec directory."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def pinned_manager_class(kernels_dir: str | os.PathLike) -> type:
    """An AsyncKernelManager class that looks kernelspecs up only in `kernels_dir` (so a
    same-named spec elsewhere on the Jupyter path cannot shadow it). nbclient creates, and
    therefore also shuts down, the manager itself."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    directory = str(kernels_dir)

    class PinnedKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("kernel_spec_manager", KernelSpecManager(kernel_dirs=[directory]))
            super().__init__(**kwargs)

    return PinnedKernelManager


def execute_notebook(path: str | os.PathLike, kernel_name: str, kernels_dir: str | os.PathLike,
                     cwd: str | os.PathLike | None = None, timeout: int = 300,
                     kernel_log: str | os.PathLike | None = None) -> Any:
    """Execute the notebook at `path` in kernel `kernel_name` from `kernels_dir`, in `cwd`
    (default: the notebook's folder), and return the executed `NotebookNode`. The kernel's
    stderr goes to `kernel_log` when given. A failing cell raises
    `nbclient.exceptions.CellExecutionError`, with the partly executed notebook as its `nb`."""
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name,
                            kernel_manager_class=pinned_manager_class(kernels_dir),
                            resources={"metadata": {"path": str(cwd if cwd is not None else path.parent)}})
    try:
        if kernel_log is None:
            client.execute()
        else:
            with open(kernel_log, "w") as log:
                client.execute(stderr=log)
    except Exception as e:
        e.nb = nb  # type: ignore[attr-defined]  # the outputs up to the failing cell
        raise
    return nb


def cell_outputs(nb: Any, tag: str) -> list[dict]:
    """The outputs of the cells tagged `tag` (in `metadata.tags`)."""
    out: list[dict] = []
    for cell in nb.cells:
        if tag in cell.get("metadata", {}).get("tags", []):
            out += cell.get("outputs", [])
    return out
