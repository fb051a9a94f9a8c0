"""Device arrays on the TPU: `jk.devices("tpu")`, `jk.device_put(x, tpu)`, and the results of
`backend="tpu"` functions, which stay on the chip as `jk.DeviceArray`s until `np.asarray`.

A `TpuDevice` is a jitkernel `Device` (platform "tpu") backed by one of JAX's TPU devices; its
runtime (`JaxRuntime`) uploads and downloads through JAX. A `TpuArray` is a `jk.DeviceArray`
whose buffer is a `jax.Array`: dispatch is asynchronous (a call returns before the chip is
done), `block_until_ready()` waits for this array, converting to NumPy waits and copies.
Buffers are never written after the call that made them: an argument a function writes in place
takes the call's new buffer (`_assign`), as on the GPU.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator

import numpy as np

from ... import events
from ...device_array import Device, DeviceArray


@dataclasses.dataclass(frozen=True)
class TpuDevice(Device):
    """One TPU chip (core) as JAX sees it. `kind` is JAX's `device_kind` ("TPU v5 lite")."""

    backing: Any = dataclasses.field(default=None, compare=False, hash=False, repr=False)

    def __repr__(self) -> str:
        return f"TpuDevice(id={self.id})"

    def __deepcopy__(self, memo: dict) -> "TpuDevice":
        return self  # a device is not copied

    @property
    def label(self) -> str:
        return f"TPU {self.id}"

    @property
    def device_kind(self) -> str:
        return self.kind

    def runtime(self) -> "JaxRuntime":
        return JaxRuntime(self.backing)

    def put(self, x: Any) -> "TpuArray":
        """`jk.device_put(x, tpu)`: `x` in this TPU's memory."""
        return put(x, self)


class JaxRuntime:
    """Transfers between this process's memory and one JAX device, with the transfer events the
    profiler shows (bytes, time)."""

    def __init__(self, device: Any) -> None:
        self.device = device

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JaxRuntime) and other.device == self.device

    def __hash__(self) -> int:
        return hash(self.device)

    def upload(self, host: np.ndarray, producer: str = "") -> Any:
        import jax  # optional dependency
        t0 = events.clock()
        with jax.enable_x64(True):  # float64 stays float64
            buffer = jax.device_put(host, self.device)
        _publish_transfer(producer, t0, host.nbytes, "host->device", str(self.device))
        return buffer

    def download(self, buffer: Any, shape: tuple, dtype: np.dtype, producer: str = "") -> np.ndarray:
        t0 = events.clock()
        host = np.array(buffer, dtype=dtype).reshape(shape)
        _publish_transfer(producer, t0, host.nbytes, "device->host", str(self.device))
        return host

    def synchronize(self) -> None:
        import jax  # optional dependency
        jax.effects_barrier()


def _publish_transfer(producer: str, t0: float, nbytes: int, direction: str, device: str) -> None:
    if events.SUBSCRIBERS:
        events.publish(events.TransferEvent(producer or "device_put", t0, events.clock() - t0, direction=direction,
                                            nbytes=nbytes, device=device))


class TpuArray(DeviceArray):
    """A `jk.DeviceArray` in a TPU's memory (its buffer a `jax.Array`)."""

    def __deepcopy__(self, memo: dict) -> "TpuArray":
        # jax buffers are immutable (a write takes a new buffer: _assign), so a copy may share
        # this one; the device is the same device.
        return TpuArray._wrap(self._buffer, self.shape, self.dtype, self.device, self._producer)

    def _leading(self, n: int) -> "TpuArray":
        shape = (int(n),) + self.shape[1:]
        return TpuArray._wrap(self._buffer[: int(n)], shape, self.dtype, self.device, self._producer)

    def _jk_buffer_on(self, runtime: Any) -> Any:
        return self._buffer if runtime == self.device.runtime() else None

    def block_until_ready(self) -> "TpuArray":
        """Wait until the computation that makes this array is done; returns the array."""
        self._buffer.block_until_ready()
        return self

    def _assign(self, value: Any) -> None:
        if isinstance(value, TpuArray) and value.device == self.device \
                and value.shape == self.shape and value.dtype == self.dtype:
            self._buffer = value._buffer
            return
        host = np.asarray(np.asarray(value), self.dtype).reshape(self.shape)
        self._buffer = self.device.runtime().upload(np.ascontiguousarray(host), "write-back")

    @property
    def __cuda_array_interface__(self) -> dict:
        raise AttributeError("__cuda_array_interface__: a TPU array is not in GPU memory")

    def __repr__(self) -> str:
        values = np.array2string(np.asarray(self), separator=", ", prefix="DeviceArray(")
        return f"DeviceArray({values}, dtype={self.dtype.name}, device={self.device!r})"


_EMULATED: list[TpuDevice] = []  # emulate_tpu(): a TPU device backed by JAX's CPU device


@contextlib.contextmanager
def emulate_tpu() -> Iterator[TpuDevice]:
    """Within the block, `jk.devices("tpu")` is one TPU device backed by JAX's CPU device, and
    `backend="tpu"` compiles for it: the device-array path (results on the device, asynchronous
    dispatch, write-back by buffer) runs without a chip, as the tests run it.

    >>> import numpy as np, jitkernel as jk
    >>> with emulate_tpu() as tpu:
    ...     d = jk.jit(lambda x: x * 2, backend="tpu")(jk.device_put(np.ones(3, np.float32), tpu))
    ...     type(d).__name__, float(np.asarray(d).sum())
    ('TpuArray', 6.0)
    """
    import jax  # optional dependency
    device = TpuDevice(0, "tpu", "emulated TPU (JAX's CPU device)", backing=jax.devices("cpu")[0])
    _EMULATED.append(device)
    try:
        yield device
    finally:
        _EMULATED.remove(device)


def tpu_devices() -> list[TpuDevice]:
    """The TPU devices JAX finds (opening the chip the first time: about 15 s); [] without JAX
    or without a TPU. Inside `emulate_tpu()`, the emulated one."""
    if _EMULATED:
        return [_EMULATED[-1]]
    try:
        import jax  # optional dependency
        found = jax.devices("tpu")
    except (ImportError, RuntimeError):
        return []
    return [TpuDevice(i, "tpu", d.device_kind, backing=d) for i, d in enumerate(found)]


def put(x: Any, device: TpuDevice) -> TpuArray:
    """`x` copied into the TPU's memory: a TpuArray (one already there is returned as it is)."""
    if isinstance(x, TpuArray) and x.device == device:
        return x
    host = np.asarray(x)
    if not host.dtype.isnative:
        host = host.astype(host.dtype.newbyteorder("="))
    host = np.ascontiguousarray(host)
    return TpuArray(device.runtime().upload(host, "device_put"), host.shape, host.dtype, device, "device_put")
