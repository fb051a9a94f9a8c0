"""The PyCUDA runtime of `backend="cuda"` (docs/gpu.md, "The PyCUDA runtime"); imported only
when that backend or a GPU device is used.

Two parts:
- `cubin_for(source, arch)`: one nvcc run per translation unit (nvcc.py), kept in the persistent
  cache (jitkernel/cache.py) under a key of source, nvcc version, architecture, options and
  jitkernel version. A corrupt entry fails its checksum, is deleted and rebuilt. No driver is
  needed, so this part is tested on machines without a GPU.
- `PyCudaDevice(ordinal)`: the `executor.Device` of one GPU: the device's primary context, one
  stream (every copy and launch is asynchronous on it), memory from a
  `pycuda.tools.DeviceMemoryPool`, cubins loaded with `module_from_buffer` and kept per context,
  launches through `prepared_async_call`, grid sizes from the SM count, kernel times from CUDA
  events while the profiler listens. Kept thin: everything above it (the step loop, device
  arrays, events) runs on the emulator device in the tests.

>>> from jitkernel.backends.cuda.pycuda_device import launch_format
>>> launch_format(["const float*", "long long", "unsigned int*"])
'PqP'
"""
from __future__ import annotations

import atexit
import math
import subprocess
import threading
from typing import Any, Sequence

import numpy as np

from ... import cache, events
from ..._version import __version__
from ...compile_progress import compiling
from ...errors import CompileError
from ..status import StatusWord, raise_status
from . import nvcc
from .emulator import _kernel_params
from .launch import CudaModule, Launch

NVCC_OPTIONS = ("-O3",)
_version_lock = threading.Lock()
_nvcc_versions: dict[str, str] = {}


def nvcc_version(path: str) -> str:
    """The last line of `nvcc --version` (the release and build), once per process."""
    with _version_lock:
        if path not in _nvcc_versions:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, check=False).stdout
            _nvcc_versions[path] = out.strip().splitlines()[-1] if out.strip() else path
        return _nvcc_versions[path]


def cubin_key(source: str, arch: str) -> str:
    """The persistent-cache key of the cubin of `source` for `arch`."""
    path = nvcc.find_nvcc()
    if path is None:
        nvcc.cubin("", arch)  # BackendUnavailableError naming the missing nvcc
    return cache.cache_key(source, nvcc_version(path), arch, " ".join(NVCC_OPTIONS), __version__, "cuda-cubin")


def cubin_for(source: str, arch: str, name: str = "program", disk_cache: bool = True) -> bytes:
    """The cubin of `source` for `arch` (`sm_90`): from the persistent cache, or one nvcc run
    (stored). nvcc's errors are `jk.CompileError` with its message and the saved source.

    Publishes a disk `CacheEvent` (hit or miss) and, for an nvcc run, a `CompileEvent`."""
    key = cubin_key(source, arch)
    entry = cache.load(key, owner=name) if disk_cache else None
    if disk_cache and events.SUBSCRIBERS:
        events.publish(events.CacheEvent(name, events.clock(), 0.0, entry is not None, "disk"))
    if entry is not None:
        return entry[0]
    t0 = events.clock()
    with compiling(name, "cuda", "nvcc"):  # progress while it runs (a notebook shows it: magics/progress.py)
        data = nvcc.cubin(source, arch, NVCC_OPTIONS)
    if events.SUBSCRIBERS:
        events.publish(events.CompileEvent(name, t0, events.clock() - t0, "cuda"))
    if not data.startswith(b"\x7fELF"):
        raise CompileError(f"nvcc produced no cubin for {name} (arch {arch})")
    if disk_cache:
        cache.store(key, data, source, owner=name, backend="cuda")
    return data


_FORMATS = {"long long": "q", "unsigned long long": "Q", "int": "i", "unsigned int": "I", "unsigned": "I",
            "float": "f", "double": "d", "long": "q", "unsigned long": "Q", "short": "h", "char": "b", "bool": "?"}


def launch_format(param_types: Sequence[str]) -> str:
    """The `Function.prepare` format of a kernel's parameter types: pointers "P", scalars their
    struct letter."""
    out = []
    for ty in param_types:
        if "*" in ty:
            out.append("P")
            continue
        base = " ".join(ty.replace("const", "").split())
        if base not in _FORMATS:
            raise CompileError(f"kernel parameter type {ty!r} has no launch format (pycuda_device._FORMATS)")
        out.append(_FORMATS[base])
    return "".join(out)


class DeviceBuffer:
    """One pooled allocation, its shape and dtype; `int(b)` is its device pointer."""

    __slots__ = ("allocation", "shape", "dtype", "nbytes")

    def __init__(self, allocation: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.allocation, self.shape, self.dtype = allocation, tuple(shape), np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __int__(self) -> int:
        return int(self.allocation)


def _in_context(method: Any) -> Any:
    """Run `method` with the device's context current: it stays pushed on the thread that
    created the device (popped at exit); another thread pushes and pops it around the call, so
    no thread ends with a context on its stack (PyCUDA aborts the process then)."""
    def wrapper(self: "PyCudaDevice", *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == self._owner:
            return method(self, *args, **kwargs)
        self.context.push()
        try:
            return method(self, *args, **kwargs)
        finally:
            self._drv.Context.pop()
    wrapper.__name__, wrapper.__doc__ = method.__name__, method.__doc__
    return wrapper


class PyCudaDevice:
    """The `executor.Device` of CUDA device `ordinal` through PyCUDA (module docstring)."""

    def __init__(self, ordinal: int = 0) -> None:
        import pycuda.driver as drv
        from pycuda.tools import DeviceMemoryPool
        drv.init()
        self._drv = drv
        self.cu_device = drv.Device(ordinal)
        self.name = self.cu_device.name()
        major, minor = self.cu_device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.sm_count = self.cu_device.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        self.context = self.cu_device.retain_primary_context()  # shared with CuPy/JAX in this process
        # The context stays current on the main thread (popped at exit); any other thread pushes
        # and pops it around each operation (_in_context).
        self._kept = threading.current_thread() is threading.main_thread()
        self._owner = threading.get_ident() if self._kept else None  # where it stays current
        self.context.push()
        try:
            self.stream = drv.Stream()
            self.pool = DeviceMemoryPool()
            self._modules: dict[str, Any] = {}  # cubin key -> loaded module (this context)
            self._functions: dict[str, Any] = {}  # kernel name -> prepared function
            # the status word, in the StatusWord layout of the CPU runtime
            self._status = DeviceBuffer(self.pool.allocate(32), (32,), np.dtype(np.uint8))
            drv.memset_d8(int(self._status), 0, 32)
        finally:
            if not self._kept:
                drv.Context.pop()
        if self._kept:
            atexit.register(self.close)

    # -- modules ----------------------------------------------------------------------------
    @_in_context
    def load(self, module: CudaModule, disk_cache: bool = True) -> None:
        """Compile (or take from the cache) and load `module`'s cubin, once per context."""
        key = cubin_key(module.source, self.arch)
        if key in self._modules:
            return
        image = cubin_for(module.source, self.arch, module.name, disk_cache)
        loaded = self._drv.module_from_buffer(image)
        for kernel, types in _kernel_params(module.kernels).items():
            self._functions[kernel] = loaded.get_function(kernel).prepare(launch_format(types))
        self._modules[key] = loaded

    # -- memory -----------------------------------------------------------------------------
    @_in_context
    def alloc(self, shape: tuple[int, ...], dtype: np.dtype) -> DeviceBuffer:
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        return DeviceBuffer(self.pool.allocate(max(nbytes, 1)), shape, dtype)  # 0 bytes is an error in CUDA

    @_in_context
    def upload(self, host: np.ndarray, function: str = "") -> Any:
        host = np.ascontiguousarray(host)
        buffer = self.alloc(host.shape, host.dtype)
        if host.nbytes:
            t0 = events.clock()
            self._drv.memcpy_htod_async(int(buffer), host, self.stream)
            if events.SUBSCRIBERS:
                self.stream.synchronize()  # the copy's own time, for the transfer phase
                events.publish(events.TransferEvent(function, t0, events.clock() - t0, direction="host->device",
                                                    nbytes=host.nbytes, device=self.name))
        return buffer

    def put(self, value: Any, shape: tuple[int, ...], dtype: np.dtype, function: str = "") -> Any:
        buffer = getattr(value, "_jk_buffer_on", _no_buffer)(self)
        if buffer is not None and value.dtype == dtype and value.size == math.prod(shape):
            return buffer  # a DeviceArray on this GPU: no copy (C order: any shape of its size)
        host = np.ascontiguousarray(np.asarray(value), dtype=dtype).reshape(shape)
        return self.upload(host, function)

    @_in_context
    def copy(self, buffer: Any) -> Any:
        out = self.alloc(buffer.shape, buffer.dtype)
        if buffer.nbytes:
            self._drv.memcpy_dtod_async(int(out), int(buffer), buffer.nbytes, self.stream)
        return out

    def view(self, buffer: DeviceBuffer, shape: tuple[int, ...], dtype: np.dtype) -> DeviceBuffer:
        """The same allocation as another shape and dtype of its byte size (complex DeviceArrays)."""
        out = DeviceBuffer(buffer.allocation, shape, dtype)
        if out.nbytes != buffer.nbytes:
            raise ValueError(f"a view of {buffer.nbytes} bytes as {shape} {np.dtype(dtype)} ({out.nbytes} bytes)")
        return out

    @_in_context
    def download(self, buffer: Any, shape: tuple[int, ...], dtype: np.dtype, function: str = "") -> np.ndarray:
        host = np.empty(shape, dtype)
        t0 = events.clock()
        if host.nbytes:
            self._drv.memcpy_dtoh_async(host, int(buffer), self.stream)
        self.stream.synchronize()
        if events.SUBSCRIBERS:
            events.publish(events.TransferEvent(function, t0, events.clock() - t0, direction="device->host",
                                                nbytes=host.nbytes, device=self.name))
        return host

    @_in_context
    def synchronize(self) -> None:
        self.stream.synchronize()

    # -- launches -----------------------------------------------------------------------------
    def launch_shape(self, launch: Launch) -> tuple[int, int]:
        """256 threads a block (any kernel's register use fits); enough blocks to fill every SM
        several times over (grid-stride loops take the rest), one block for the final stage of
        a whole reduction (it combines at most 4 partials per SM)."""
        block = getattr(launch, "block_size", 0) or 256  # a tile kernel is written for its own block
        if launch.kind == "final":
            return 1, block
        if launch.kind in ("rows", "tiles"):
            return max(1, min(launch.items, 16 * self.sm_count)), block
        if launch.kind == "warp_rows":  # one warp per item, as many blocks as "rows" at most
            return max(1, min(-(-launch.items // (block // 32)), 16 * self.sm_count)), block
        if launch.kind == "partial":
            return max(1, min(-(-launch.items // block), 4 * self.sm_count)), block
        return max(1, min(-(-launch.items // block), 32 * self.sm_count)), block

    @_in_context
    def launch(self, kernel: str, grid: int, block: int, args: Sequence[Any], timed: bool = False) -> Any:
        values = [a if isinstance(a, np.generic) else int(a) for a in args]
        fn = self._functions[kernel]
        if not timed:
            fn.prepared_async_call((grid, 1), (block, 1, 1), self.stream, *values)
            return None
        start, end = self._drv.Event(), self._drv.Event()
        start.record(self.stream)
        fn.prepared_async_call((grid, 1), (block, 1, 1), self.stream, *values)
        end.record(self.stream)
        return start, end

    @_in_context
    def elapsed(self, handles: Sequence[Any]) -> list[float]:
        if handles:
            handles[-1][1].synchronize()
        return [start.time_till(end) * 1e-3 for start, end in handles]

    # -- what control-flow steps need (flow.py; the emulator device has the same) ------------
    @_in_context
    def copy_into(self, dst: DeviceBuffer, src: DeviceBuffer) -> None:
        """The first dst.nbytes bytes of src into dst (on the stream)."""
        if dst.nbytes:
            self._drv.memcpy_dtod_async(int(dst), int(src), dst.nbytes, self.stream)

    @_in_context
    def read_scalar(self, buffer: DeviceBuffer) -> Any:
        """The first element (waits for the launches before it: a loop condition)."""
        host = np.empty(1, buffer.dtype)
        self._drv.memcpy_dtoh_async(host, int(buffer), self.stream)
        self.stream.synchronize()
        return host[0].item()

    @_in_context
    def write_scalar(self, buffer: DeviceBuffer, value: Any) -> None:
        host = np.asarray([value], buffer.dtype)
        self._drv.memcpy_htod(int(buffer), host)  # synchronous: `host` is a temporary

    # -- status word ------------------------------------------------------------------------
    def new_status(self) -> Any:
        return self._status  # zero unless a call set it, and such a call resets it (check_status)

    @_in_context
    def check_status(self, word: Any) -> None:
        """Wait for the call and raise NumPy's exception if a kernel set the status word."""
        host = StatusWord()
        raw = np.empty(32, np.uint8)
        self._drv.memcpy_dtoh_async(raw, int(word), self.stream)
        self.stream.synchronize()
        if not raw.any():
            return
        self._drv.memset_d8(int(word), 0, 32)
        import ctypes
        ctypes.memmove(ctypes.addressof(host), raw.ctypes.data, 32)
        raise_status(host)

    def close(self) -> None:
        """Release held memory and pop the context (at exit, on the main thread)."""
        if self.context is None or not self._kept:
            return
        try:
            self.stream.synchronize()
            self.pool.stop_holding()
            self.context.pop()  # as pycuda.autoprimaryctx does at exit
            from pycuda.tools import clear_context_caches
            clear_context_caches()
        except Exception:  # noqa: BLE001 (the driver may already be shutting down)
            pass
        self.context = None


def _no_buffer(device: Any) -> None:
    return None
