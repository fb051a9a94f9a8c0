"""The CPU executable: allocates buffers, calls compiled segments and library steps in order."""
from __future__ import annotations

import ctypes

import numpy as np

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from ...ir.primitives import dot_general_numpy
from .ops import STATUS_MESSAGES
from .render import Segment

SEGMENT_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class CpuExecutable:
    """Runs a KernelProgram. Inputs may have any strides (non-contiguous ones are copied to C
    order first); outputs are fresh C-contiguous arrays."""

    def __init__(self, kp: KernelProgram, steps: list, library: object) -> None:
        self.kp = kp
        self._library = library  # keeps the machine code alive as long as this executable
        self._steps = []
        for step in steps:
            if isinstance(step, Segment):
                self._steps.append(("segment", SEGMENT_SIGNATURE(library.addresses[step.name])))
            else:
                self._steps.append(("library", step))
        n = len(kp.buffers)
        self._n = n
        self._allocs = [(b.id, b.shape, b.dtype) for b in kp.buffers.values() if b.role in ("temp", "output")]
        self._inputs = list(kp.inputs)
        self._consts = [(bid, np.array(c, order="C")) for bid, c in kp.consts]
        self._outputs = list(kp.outputs)
        self._input_dtypes = [kp.buffers[b].dtype for b in kp.inputs]

    def __call__(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        bufs: list = [None] * self._n
        for bid, a, dt in zip(self._inputs, arrays, self._input_dtypes):
            if not a.flags.c_contiguous or a.dtype != dt:
                a = np.array(a, dtype=dt, order="C")
            bufs[bid] = a
        for bid, c in self._consts:
            bufs[bid] = c
        for bid, shape, dt in self._allocs:
            bufs[bid] = np.empty(shape, dt)
        status = np.zeros(1, np.int32)
        addresses = np.zeros(self._n, np.uintp)
        filled = False
        for kind, step in self._steps:
            if kind == "segment":
                if not filled:
                    addresses[:] = [b.ctypes.data for b in bufs]
                    filled = True
                step(addresses.ctypes.data, status.ctypes.data)
            else:
                self._run_library(step, bufs)
                filled = False
        if status[0]:
            for code, (exc, msg) in STATUS_MESSAGES.items():
                if status[0] & code:
                    raise exc(msg)
        return [bufs[b] for b in self._outputs]

    @staticmethod
    def _run_library(step: LibraryCall, bufs: list) -> None:
        if step.prim != "dot_general":
            raise NotImplementedError(step.prim)
        with np.errstate(all="ignore"):
            result = dot_general_numpy(bufs[step.inputs[0]], bufs[step.inputs[1]], **step.params)
        out = bufs[step.output]
        out[...] = result
