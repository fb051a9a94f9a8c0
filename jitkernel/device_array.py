"""Device arrays on GPU devices (docs/gpu.md, "Device arrays and synchronisation").

A `GpuDevice` is one entry of `jk.devices()` after the CPU device: platform "gpu", one per CUDA
device when PyCUDA, the driver and a device exist. Its *runtime* is the `executor.Device` that
owns its memory and runs kernels: `pycuda_device.PyCudaDevice` for a real GPU (created on first
use), or any other executor device given explicitly (the tests back a GpuDevice with the
emulator device, so that everything above the thin PyCUDA layer runs without a GPU).

A `DeviceArray` holds one buffer of that runtime, its shape and dtype. Launches are
asynchronous; converting to NumPy (`np.asarray(d)`, `repr`, `float(d)`, indexing) waits for the
work that produced the buffer and copies it back; `block_until_ready()` only waits. Buffers are
never written after the call that made them: an argument that a function writes in place gets
the call's new buffer (`_assign`), so other arrays sharing the old one keep their values.

>>> import numpy as np, jitkernel as jk
>>> jk.devices()[0]
CpuDevice(id=0)
>>> [d for d in jk.devices() if d.platform == "gpu"] == jk.device_array.gpu_devices()
True
"""
from __future__ import annotations

import contextlib
import math
import dataclasses
import operator
from typing import Any, Callable

import numpy as np

from .backends.cuda import missing_for_cuda
from .errors import BackendUnavailableError

__all__ = ["Device", "DeviceArray", "GpuDevice", "gpu_devices", "put", "emulate_gpu"]


@dataclasses.dataclass(frozen=True)
class Device:
    """One device: `platform` "cpu" (this process's memory) or "dask-worker" (`address`);
    GPUs are `device_array.GpuDevice` (platform "gpu")."""
    id: int
    platform: str
    kind: str
    address: str | None = None
    client: Any = dataclasses.field(default=None, compare=False, hash=False, repr=False)

    def __repr__(self) -> str:
        if self.platform == "cpu":
            return f"CpuDevice(id={self.id})"
        return f"DaskWorkerDevice(id={self.id}, address={self.address!r})"

    @property
    def label(self) -> str:
        """A short name for pictures: "CPU 0", "worker 1"."""
        return f"CPU {self.id}" if self.platform == "cpu" else f"worker {self.id}"


@dataclasses.dataclass(frozen=True)
class GpuDevice(Device):
    """One GPU. `kind` is the device's name (`"NVIDIA H200"`), as JAX's `device_kind`;
    `backing`: an explicit runtime (tests), else the PyCUDA runtime of CUDA device `id`."""

    backing: Any = dataclasses.field(default=None, compare=False, hash=False, repr=False)

    def __repr__(self) -> str:
        return f"CudaDevice(id={self.id})"

    @property
    def label(self) -> str:
        return f"GPU {self.id}"

    @property
    def device_kind(self) -> str:
        return self.kind

    def runtime(self) -> Any:
        """The executor device that owns this GPU's memory (created on first use)."""
        if self.backing is not None:
            return self.backing
        runtime = _RUNTIMES.get(self.id)
        if runtime is None:
            from .backends.cuda.pycuda_device import PyCudaDevice  # imports PyCUDA (optional)
            runtime = _RUNTIMES.setdefault(self.id, PyCudaDevice(self.id))
        return runtime


_RUNTIMES: dict[int, Any] = {}  # CUDA ordinal -> PyCudaDevice (one context each, this process)
_GPUS: list[GpuDevice] | None = None


def gpu_devices() -> list[GpuDevice]:
    """One GpuDevice per CUDA device; [] where PyCUDA, the driver or a device is missing
    (`backends.cuda.missing_for_cuda()` says which). The driver is initialised only when the
    cheap checks pass; the list is computed once per process."""
    global _GPUS
    if _GPUS is None:
        _GPUS = _probe_gpus()
    return list(_GPUS)


def _probe_gpus() -> list[GpuDevice]:
    if missing_for_cuda():
        return []
    try:
        import pycuda.driver as drv
        drv.init()
        return [GpuDevice(i, "gpu", drv.Device(i).name()) for i in range(drv.Device.count())]
    except (ImportError, RuntimeError):  # pycuda.driver.Error is a RuntimeError
        return []


@contextlib.contextmanager
def emulate_gpu(policy: Any = None) -> Any:
    """Within the block, the GPU devices are one emulated GPU (kind "cuda-emulator": its memory
    is host memory, its kernels run on the CUDA emulator), so `jk.devices()`, `jk.device_put`,
    DeviceArrays and `backend="cuda"` work without a GPU: for tests of code written for one.

    >>> import numpy as np, jitkernel as jk
    >>> from jitkernel.device_array import emulate_gpu
    >>> with emulate_gpu() as gpu:
    ...     d = jk.device_put(np.arange(3.0), gpu)
    ...     jk.devices()[1], d.device, np.asarray(d).tolist()
    (CudaDevice(id=0), CudaDevice(id=0), [0.0, 1.0, 2.0])
    """
    global _GPUS
    from .backends.cuda.emulator import EmulatorDevice  # the emulator: only when one is asked for
    saved = _GPUS
    gpu = GpuDevice(0, "gpu", "cuda-emulator", backing=EmulatorDevice(policy=policy))
    _GPUS = [gpu]
    try:
        yield gpu
    finally:
        _GPUS = saved


def default_gpu() -> GpuDevice:
    """The first GPU, or BackendUnavailableError saying what this machine lacks."""
    gpus = gpu_devices()
    if not gpus:
        missing = missing_for_cuda() or ["the CUDA driver found no device (cuInit failed)"]
        raise BackendUnavailableError(f"backend 'cuda' needs a CUDA GPU: {'; '.join(missing)}")
    return gpus[0]


class DeviceArray:
    """An array in a GPU's memory: `shape`, `dtype`, `device`; `np.asarray(d)` copies it back
    (waiting for the launches that compute it), `block_until_ready()` waits without copying.

    >>> import numpy as np, jitkernel as jk
    >>> from jitkernel.device_array import emulate_gpu
    >>> with emulate_gpu() as gpu:
    ...     d = jk.device_put(np.ones((2, 3), np.float32), gpu)
    ...     d.shape, d.dtype, d.block_until_ready() is d, float(np.asarray(d).sum())
    ((2, 3), dtype('float32'), True, 6.0)
    """

    _jk_device_array = True
    __array_priority__ = 100  # NumPy binary ops defer to our operators

    def __init__(self, buffer: Any, shape: tuple[int, ...], dtype: Any, device: GpuDevice,
                 producer: str = "") -> None:
        self._buffer = buffer
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.device = device
        self._producer = producer  # the function whose call made it (events of later copies)

    @classmethod
    def _wrap(cls, buffer: Any, shape: tuple[int, ...], dtype: np.dtype, device: GpuDevice,
              producer: str = "") -> "DeviceArray":
        """A DeviceArray of a result whose shape (a tuple of ints) and dtype are already checked
        (runtime.DeviceProgram, once per output per call: the warm dispatch)."""
        d = object.__new__(cls)
        d._buffer, d.shape, d.dtype, d.device, d._producer = buffer, shape, dtype, device, producer
        return d

    def _leading(self, n: int) -> "DeviceArray":
        """A fresh DeviceArray of the first `n` rows, copied on the device (a data-dependent
        result trimmed to its count: pipeline.trim_outputs)."""
        shape = (int(n),) + self.shape[1:]
        runtime = self.device.runtime()
        out = runtime.alloc(shape, self.dtype)
        runtime.copy_into(out, self._buffer)
        return DeviceArray._wrap(out, shape, self.dtype, self.device, self._producer)

    # -- what it is ---------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # exact Python ints (np.prod costs microseconds a call)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def devices(self) -> set[GpuDevice]:
        return {self.device}

    def _jk_buffer_on(self, runtime: Any) -> Any:
        """This array's buffer when it lives on `runtime`, else None (executor.Device.put)."""
        return self._buffer if self.device.runtime() is runtime else None

    # -- synchronisation and copies -------------------------------------------------------------
    def block_until_ready(self) -> "DeviceArray":
        """Wait until the launches that compute this array are done; returns the array."""
        self.device.runtime().synchronize()
        return self

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a DeviceArray lives in device memory: converting it to NumPy always copies")
        host = self.device.runtime().download(self._buffer, self.shape, self.dtype, self._producer)
        return host if dtype is None else host.astype(dtype, copy=False)

    def _assign(self, value: "DeviceArray") -> None:
        """Take the new value of an argument the function wrote (pipeline.Compiled.write_back):
        the result's buffer when it is on this device with this shape and dtype, else a copy."""
        if isinstance(value, DeviceArray) and value.device.runtime() is self.device.runtime() \
                and value.shape == self.shape and value.dtype == self.dtype:
            self._buffer = value._buffer
            return
        host = np.asarray(np.asarray(value), self.dtype).reshape(self.shape)
        self._buffer = put(host, self.device)._buffer

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA array interface (version 3) of a GPU buffer, so CuPy, Numba and PyTorch read
        it without a copy; it waits for the launches first. Not on an emulated GPU."""
        if not hasattr(self._buffer, "allocation"):  # pycuda_device.DeviceBuffer only
            raise AttributeError("__cuda_array_interface__: this DeviceArray is not in GPU memory")
        self.block_until_ready()
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (int(self._buffer), False),
                "strides": None, "version": 3}

    def copy(self) -> np.ndarray:
        return np.array(self)

    def tolist(self) -> Any:
        return np.asarray(self).tolist()

    def item(self, *args: Any) -> Any:
        return np.asarray(self).item(*args)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, tuple) and key == ():
            return self  # `o[()]` on a 0-d result (Compiled.finish) keeps it on the device
        return np.asarray(self)[key]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Any:
        return iter(np.asarray(self))

    def __float__(self) -> float:
        return float(np.asarray(self))

    def __int__(self) -> int:
        return int(np.asarray(self))

    def __index__(self) -> int:
        return operator.index(np.asarray(self)[()])

    def __bool__(self) -> bool:
        return bool(np.asarray(self))

    def __repr__(self) -> str:
        values = np.array2string(np.asarray(self), separator=", ", prefix="DeviceArray(")
        return f"DeviceArray({values}, dtype={self.dtype.name}, device={self.device!r})"


def _host_operator(op: Callable[..., Any], reflected: bool = False) -> Callable[..., Any]:
    """A NumPy operator on the host copy (arithmetic on device arrays is NumPy's, on the host:
    jit the expression to keep it on the device)."""
    if reflected:
        return lambda self, other: op(np.asarray(other), np.asarray(self))
    return lambda self, other: op(np.asarray(self), np.asarray(other))


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift"):
    _op = getattr(operator, _name + ("_" if _name in ("and", "or") else ""))
    setattr(DeviceArray, f"__{_name}__", _host_operator(_op))
    setattr(DeviceArray, f"__r{_name}__", _host_operator(_op, reflected=True))
for _name in ("lt", "le", "eq", "ne", "gt", "ge"):
    setattr(DeviceArray, f"__{_name}__", _host_operator(getattr(operator, _name)))
DeviceArray.__hash__ = None  # type: ignore[assignment]  # arrays are unhashable, as in NumPy
DeviceArray.__neg__ = lambda self: -np.asarray(self)  # type: ignore[attr-defined]
DeviceArray.__abs__ = lambda self: abs(np.asarray(self))  # type: ignore[attr-defined]


def is_device_array(x: Any) -> bool:
    return getattr(type(x), "_jk_device_array", False)


def put(x: Any, device: GpuDevice) -> DeviceArray:
    """`x` copied into `device`'s memory (`jk.device_put(x, gpu)`): a DeviceArray. A DeviceArray
    already there is returned as it is; one on another device goes through the host."""
    if is_device_array(x) and x.device == device and x.device.runtime() is device.runtime():
        return x
    host = np.asarray(x)
    if not host.dtype.isnative:
        host = host.astype(host.dtype.newbyteorder("="))
    host = np.ascontiguousarray(host)
    buffer = device.runtime().upload(host, "device_put")
    return DeviceArray(buffer, host.shape, host.dtype, device, "device_put")
