"""How many threads the BLAS under NumPy's matmul uses now, asked of the library itself.

The CPU runtime splits a large matrix product across its own worker threads only when the BLAS
runs on one thread (`OPENBLAS_NUM_THREADS=1`, a sequential build, `threadpoolctl` limits, a Dask
worker's setting): a BLAS with threads of its own already uses the cores, and calling it from
several threads at once would only oversubscribe them. The count is read at each large product
(a C call of about a microsecond), so a limit set while the process runs is seen.

The BLAS libraries are found among the shared objects this process has loaded
(`/proc/self/maps`: NumPy's wheels bundle OpenBLAS as `numpy.libs/libscipy_openblas64_-*.so`;
only that one counts when present, not SciPy's or another package's own BLAS), opened
again without loading anything new, and asked through their own thread-count functions
(OpenBLAS, MKL, BLIS). Where none can be found (no `/proc`, another BLAS), or the OpenBLAS is
a sequential build (which may not be safe to call from two threads at once), the count is
unknown (None) and products are not split.

>>> import numpy as np
>>> count = blas_threads()
>>> count is None or count >= 1
True
"""
from __future__ import annotations

import ctypes
import functools
import os
from typing import Callable

import numpy as np

# Thread-count getters by library, under the names their builds export (OpenBLAS with and
# without the ILP64 suffix and SciPy's prefix, MKL, BLIS).
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads",
            "MKL_Get_Max_Threads", "bli_thread_get_num_threads")
_LIBRARY_MARKS = ("blas", "mkl_rt", "libmkl", "blis")
# OpenBLAS's build kind (0: sequential, 1: pthreads, 2: OpenMP). A sequential build may be
# unsafe to call from two threads at once (unless built with USE_LOCKING, which it does not
# say), so its count is not reported and products are not split.
_PARALLEL = ("scipy_openblas_get_parallel64_", "scipy_openblas_get_parallel",
             "openblas_get_parallel64_", "openblas_get_parallel")


def blas_threads() -> int | None:
    """The largest thread count among the loaded BLAS libraries, or None when none is known."""
    counts = [getter() for getter in _getters()]
    return max(counts) if counts else None


def concurrent_calls_safe() -> bool:
    """Whether LAPACK and BLAS may be called from two threads at once: not with a sequential
    OpenBLAS build (the runtime's stacks and products then run on the calling thread)."""
    return not _libraries()[1]


@functools.cache
def _libraries() -> tuple[tuple[ctypes.CDLL, ...], bool]:
    """The BLAS libraries loaded in this process (once: NumPy loads its BLAS when it is
    imported, before any product runs), and whether one is a sequential OpenBLAS."""
    found, sequential = [], False
    for path in _numpy_blas_paths():
        try:
            # RTLD_NOLOAD: the handle of the copy already in memory, never a new load.
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        except OSError:
            continue
        parallel = next((getattr(library, name) for name in _PARALLEL if hasattr(library, name)), None)
        if parallel is not None:
            parallel.restype, parallel.argtypes = ctypes.c_int, []
            sequential |= parallel() == 0
        found.append(library)
    return tuple(found), sequential


@functools.cache
def _getters() -> tuple[Callable[[], int], ...]:
    """The thread-count functions of the loaded BLAS libraries; none with a sequential OpenBLAS
    (its count is then unknown: products are never split)."""
    libraries, sequential = _libraries()
    if sequential:
        return ()
    found: list[Callable[[], int]] = []
    for library in libraries:
        for name in _GETTERS:
            getter = getattr(library, name, None)
            if getter is not None:
                getter.restype, getter.argtypes = ctypes.c_int, []
                found.append(getter)
                break
    return tuple(found)


def _numpy_blas_paths() -> list[str]:
    """The loaded BLAS libraries NumPy's matmul and linalg call: those NumPy's wheel bundles (in
    `numpy.libs/` or `numpy/`; another package's own BLAS, such as SciPy's, is not the one
    products run on), else every loaded one (NumPy built against a system BLAS)."""
    paths = _loaded_blas_paths()
    home = os.path.dirname(os.path.realpath(np.__file__))
    bundled = [p for p in paths if os.path.realpath(p).startswith((home + os.sep, home + ".libs" + os.sep))]
    return bundled or paths


def _loaded_blas_paths() -> list[str]:
    """Paths of the loaded shared objects whose file names mark a BLAS."""
    try:
        with open("/proc/self/maps") as maps:
            fields = [line.split(maxsplit=5) for line in maps]
    except OSError:
        return []
    paths = {f[5].strip() for f in fields if len(f) == 6}
    return sorted(p for p in paths if p.startswith("/") and ".so" in p
                  and any(mark in os.path.basename(p).lower() for mark in _LIBRARY_MARKS))
