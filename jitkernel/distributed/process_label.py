"""Which process a block task runs in, as errors and profile records name it: the
dask.distributed worker (name, address) or, elsewhere, the process and thread.

>>> where().startswith("process ")  # not inside a dask.distributed worker
True
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any


def dask_worker() -> Any:
    """The dask.distributed Worker running this task, or None (no distributed, not in a worker)."""
    if "distributed" not in sys.modules:
        return None
    from distributed import get_worker  # optional dependency: only once something imported it
    try:
        return get_worker()
    except ValueError:
        return None


def worker_label(w: Any) -> str:
    """`worker 0 tcp://127.0.0.1:40211` (the name only where it is not the address)."""
    name = str(w.name)
    return f"worker {w.address}" if name == w.address else f"worker {name} {w.address}"


def where() -> str:
    """This process as a worker label: `worker <name> <address> pid <pid>` on a dask.distributed
    worker, `process <pid> thread <name>` elsewhere (used by errors and records)."""
    w = dask_worker()
    if w is not None:
        return f"{worker_label(w)} pid {os.getpid()}"
    return f"process {os.getpid()} thread {threading.current_thread().name}"
