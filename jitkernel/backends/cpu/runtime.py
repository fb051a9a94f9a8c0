"""The CPU executable: buffers, native segments and library steps, with as little Python per
call as possible (measured: a 10-element call costs about a microsecond here).

Native segments receive the arrays' `id()`s and read each data pointer themselves, which costs
nothing, where `ndarray.ctypes.data` costs about 2 µs per array. An output or temporary array is
reused by the next call only when nothing but the executable still references it (the caller
dropped it, no other call is using it), which avoids page faults on large fresh arrays without
ever aliasing a live result; a concurrent call sees the extra reference and allocates its own.
"""
from __future__ import annotations

import ctypes
import functools
import operator
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from ...config import config
from ...fusion.kernel_ir import KernelProgram, LibraryCall
from ...ir.primitives import dot_general_numpy
from .ops import STATUS_MESSAGES
from .render import DATA_OFFSET, Segment


def _check_data_offset() -> None:
    probe = np.arange(3.0)
    if ctypes.c_void_p.from_address(id(probe) + DATA_OFFSET).value != probe.ctypes.data:
        raise ImportError(f"NumPy's array layout is not the expected one (data pointer not at offset "
                          f"{DATA_OFFSET}); this NumPy build is not supported by the CPU backend")


_check_data_offset()
_getrefcount = sys.getrefcount


def _free_refcount() -> int:
    """getrefcount of an array referenced only by a list slot and the local being tested."""
    holder = [np.empty(1)]
    prev = holder[0]
    return _getrefcount(prev)


_FREE_REFCOUNT = _free_refcount()


class CpuExecutable:
    """Runs a KernelProgram. Inputs may have any strides (non-contiguous ones are copied to C
    order first); outputs are fresh (or provably unreferenced) C-contiguous arrays.

    The per-call code is generated Python, specialised to this program (buffers are locals, no
    loops over steps): the same trick `collections.namedtuple` uses, for the same reason."""

    def __init__(self, kp: KernelProgram, steps: list, library: object, params: np.ndarray | None = None) -> None:
        self.kp = kp
        self._library = library  # keeps the machine code alive as long as this executable
        self._status_word = ctypes.c_int32(0)
        # Run-time parameters of shape-generic kernels (unused slot when specialised).
        self.params = np.zeros(1, np.int64) if params is None else np.ascontiguousarray(params, np.int64)
        self._last: list = [None] * (max(kp.buffers, default=-1) + 1)  # reusable arrays, by buffer id
        self.source, namespace = self._generate(kp, steps, library)
        exec(compile(self.source, f"<jitkernel executable {kp.name}>", "exec"), namespace)
        self.run = namespace["run"]
        self.run_single = namespace.get("run_single")

    def _generate(self, kp: KernelProgram, steps: list, library: object) -> tuple[str, dict]:
        """The runner's source and the namespace it runs in."""
        ns: dict = {"np": np, "empty": np.empty, "getrefcount": _getrefcount, "FREE": _FREE_REFCOUNT,
                    "last": self._last, "status": self._status_word, "raise_status": self._raise_status,
                    "to_c": _to_c_order, "dot_general": dot_general_numpy}
        lines = ["def run(arrays):"]
        for i, bid in enumerate(kp.inputs):
            dt = np.dtype(kp.buffers[bid].dtype.str)
            ns[f"dt{bid}"] = dt
            lines.append(f"    b{bid} = arrays[{i}]")
            lines.append(f"    if (b{bid}.dtype is not dt{bid} and b{bid}.dtype != dt{bid}) or not b{bid}.flags.c_contiguous:")
            lines.append(f"        b{bid} = to_c(b{bid}, dt{bid})")
        for bid, c in kp.consts:
            ns[f"b{bid}"] = np.array(c, order="C")
        library_outputs = {st.output for st in steps if isinstance(st, LibraryCall)}
        for b in kp.buffers.values():
            if b.role in ("temp", "output") and b.id not in library_outputs:
                ns[f"shape{b.id}"], ns[f"dt{b.id}"] = b.shape, b.dtype
                lines.append(f"    b{b.id} = last[{b.id}]")
                lines.append(f"    if b{b.id} is None or getrefcount(b{b.id}) != FREE:")
                lines.append(f"        b{b.id} = last[{b.id}] = empty(shape{b.id}, dt{b.id})")
        status_addr = ctypes.addressof(self._status_word)
        for n, step in enumerate(steps):
            if isinstance(step, Segment):
                range_types = [ctypes.c_int64, ctypes.c_int64] if step.parallel else []
                param_types = [ctypes.c_void_p] if step.has_params else []
                ns[f"seg{n}"] = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(step.buffers)), *range_types,
                                                 ctypes.c_void_p, *param_types)(library.addresses[step.name])
                args = ", ".join(f"id(b{b})" for b in step.buffers)
                params = f", {self.params.ctypes.data}" if step.has_params else ""
                if step.parallel:
                    kernel = kp.steps[step.step_index]
                    ns["split"] = _run_split
                    params_tuple = f"({self.params.ctypes.data},)" if step.has_params else "()"
                    lines.append(f"    split(seg{n}, ({args},), {int(kernel.domain[0])}, {params_tuple}, status)")
                else:
                    lines.append(f"    seg{n}({args}, {status_addr}{params})")
            else:
                if step.prim != "dot_general":
                    raise NotImplementedError(step.prim)
                ns[f"params{n}"] = step.params
                a, b_ = step.inputs
                lines.append(f"    b{step.output} = dot_general(b{a}, b{b_}, **params{n})")
                out = kp.buffers[step.output]
                if step.output in kp.outputs:
                    lines.append(f"    if b{step.output}.dtype != dt_lib{n} or not b{step.output}.flags.c_contiguous:")
                    lines.append(f"        b{step.output} = to_c(b{step.output}, dt_lib{n})")
                    ns[f"dt_lib{n}"] = out.dtype
        lines.append("    if status.value:")
        lines.append("        raise_status()")
        body = "\n".join(lines[1:])
        # run returns the list of outputs; run_single the first output itself.
        source = lines[0] + "\n" + body + "\n    return [" + ", ".join(f"b{b}" for b in kp.outputs) + "]\n"
        if kp.outputs:
            source += "def run_single(arrays):\n" + body + f"\n    return b{kp.outputs[0]}\n"
        return source, ns

    def __call__(self, arrays: list | tuple) -> list[np.ndarray]:
        return self.run(arrays)

    def _raise_status(self) -> None:
        code = self._status_word.value
        self._status_word.value = 0
        for bit, (exc, msg) in STATUS_MESSAGES.items():
            if code & bit:
                raise exc(msg)


_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def _run_split(seg: Callable, ids: tuple, outer: int, params: tuple, status: ctypes.c_int32) -> None:
    """Run a segment's outer loop in `config.threads` contiguous ranges. ctypes releases the GIL
    during each native call, so the ranges run in parallel; each has its own status word."""
    global _pool, _pool_size
    threads = min(config.threads, outer)
    if threads <= 1:
        seg(*ids, 0, outer, ctypes.addressof(status), *params)
        return
    if _pool is None or _pool_size != threads:
        _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="jitkernel")
        _pool_size = threads
    words = (ctypes.c_int32 * threads)()
    bounds = [outer * t // threads for t in range(threads + 1)]
    base = ctypes.addressof(words)
    futures = [_pool.submit(seg, *ids, bounds[t], bounds[t + 1], base + 4 * t, *params) for t in range(1, threads)]
    seg(*ids, bounds[0], bounds[1], base, *params)
    for f in futures:
        f.result()
    status.value |= functools.reduce(operator.or_, words, 0)


def _to_c_order(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.array(a, dtype=dt, order="C")
