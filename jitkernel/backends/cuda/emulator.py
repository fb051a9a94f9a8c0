"""`backend="cuda-emulator"`: the CUDA translation unit compiled for the host and run on NumPy
arrays (docs/gpu.md, "The emulator").

The very source nvcc compiles (render.py) is compiled by the host C++ compiler after the shim
header (shim.py), with one `jk_launch_<kernel>(grid, block, args)` wrapper per kernel, into a
shared library. Libraries are cached by the hash of their source and compiler: in memory for
the process, and on disk under JITKERNEL_CACHE_DIR (cuda-emulator/<hash>.so). `prebuild`
compiles the kernels of many programs as a few libraries (parallel chunks of one compiler run
each, for a test module). Every build `-include`s the shim + prelude precompiled once
(emulator_pch.py), so g++ parses only the kernels.

`batch_build()` is `prebuild` for code that does not know its programs in advance: the calls in
the block record the modules they would build (answered meanwhile by the NumPy reference
interpreter), and leaving the block builds them all at once (recording.py, docs/gpu.md "Batch
builds").
"""
from __future__ import annotations

import contextlib
import ctypes
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ... import cache, events
from ..._version import __version__
from ...compile_progress import compiling
from ...errors import BackendUnavailableError, CompileError, UnsupportedOperationError
from ...fusion import KernelProgram
from ...fusion.params import constants, parameter_values, parametrize, varying_positions
from ...ir import Program
from ..base import Backend
from ..status import StatusWord, raise_status
from ...interpreter import eval_program
from .executor import ProgramRunner
from .complex_ops import complex_results, pack_arguments
from .launch import CudaModule, Launch
from .library_steps import BODY_LIBRARY_PRIMS
from .nvcc import ptx
from .render import render_program
from .schedule import schedule_program
from .shape_template import CudaTemplate
from .prelude import PRELUDE
from .shim import SHIM
from . import emulator_pch
from .recording import RenderedOnly, intercept, is_recording, record_modules  # noqa: F401 (public here)

CXX_FLAGS = ["-std=c++20", "-O0", "-shared", "-fPIC", "-pthread", "-ffp-contract=off", "-fno-fast-math",
             "-fno-strict-aliasing", "-w"]

_lock = threading.Lock()
_libraries: dict[str, ctypes.CDLL] = {}  # source hash -> loaded library (this process)


@dataclass(frozen=True)
class LaunchPolicy:
    """Launch shapes. The emulator's are small on purpose: several blocks of two warps each, so
    grid-stride loops, the cross-warp combine and stage two of whole reductions all run even
    at test sizes. Any block size that is a multiple of 32 gives the same results."""

    block: int = 64
    max_grid: int = 3


def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise BackendUnavailableError("backend 'cuda-emulator' needs a host C++20 compiler (g++); none found on PATH")
    return cxx


def _compiler_version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else cxx


_version_memo: dict[str, str] = {}


def _kernel_params(source: str) -> dict[str, list[str]]:
    """The parameter types of every `extern "C" __global__` kernel in `source`."""
    out = {}
    for m in re.finditer(r'extern "C" __global__ void (\w+)\(\s*(.*?)\)\s*\{', source, re.S):
        params = [p.strip() for p in m.group(2).split(",")]
        out[m.group(1)] = [re.sub(r"\s+\w+$", "", p) for p in params]
    return out


def launchers(kernels_text: str) -> str:
    """A host wrapper per kernel: `jk_launch_<name>(grid, block, args)` with args an array of
    pointers (to the buffers, or to the value of a scalar argument). The kernel is called from a
    plain static function of the argument array (jk_emu::launch_fn): a lambda per kernel would
    instantiate a std::function per kernel, which took most of g++'s time."""
    lines = []
    for name, types in _kernel_params(kernels_text).items():
        args = []
        for i, ty in enumerate(types):
            if "*" in ty:
                args.append(f"({ty})a[{i}]")
            else:
                base = ty.replace("const ", "")
                args.append(f"*({base}*)a[{i}]")
        lines.append(f"static void jk_body_{name}(void** a) {{ {name}({', '.join(args)}); }}")
        lines.append(f'extern "C" void jk_launch_{name}(unsigned g, unsigned b, void** a) '
                     f"{{ jk_emu::launch_fn(g, b, jk_body_{name}, a); }}")
    return "\n".join(lines) + "\n"


HEAD = SHIM + PRELUDE  # the start of every host source: precompiled once (emulator_pch.py)


def _host_source(prelude: str, kernel_texts: list[str]) -> str:
    body = "\n".join(kernel_texts)
    if prelude.endswith(PRELUDE):  # the renderer's comment line moves after the fixed head
        prelude = PRELUDE + prelude[: -len(PRELUDE)]
    return SHIM + prelude + body + "\n/* ---- host launch wrappers ---- */\n" + launchers(body)


def _build(source: str, name: str, disk_cache: bool = True) -> ctypes.CDLL:
    """The loaded host library of `source`: from this process's memory, the disk cache, or a
    compiler run (stored in the disk cache when `disk_cache`)."""
    cxx = compiler()
    version = _version_memo.get(cxx) or _version_memo.setdefault(cxx, _compiler_version(cxx))
    key = cache.cache_key(source, version, " ".join(CXX_FLAGS), __version__, "cuda-emulator")
    with _lock:
        if key in _libraries:
            return _libraries[key]
    # compiled outside the lock, so that prebuild's chunks run in parallel; two threads that
    # race on one key both compile it (the rename makes that safe) and the first load wins.
    # A cached library is loaded only after its size and SHA-256 match the record stored with
    # it (cache.load_file): a truncated one would SIGBUS the process that maps it.
    relative = f"{cache.EMULATOR_FOLDER}/{key}.so"
    target = cache.load_file(relative) if disk_cache else None
    if events.SUBSCRIBERS and disk_cache:
        events.publish(events.CacheEvent(name, events.clock(), 0.0, target is not None, "disk"))
    if target is None:
        t0 = events.clock()
        with compiling(name, "cuda-emulator", os.path.basename(cxx)):  # progress (magics/progress.py)
            target = _compile(cxx, source, relative if disk_cache else None, name)
        if events.SUBSCRIBERS:
            events.publish(events.CompileEvent(name, t0, events.clock() - t0, "cuda-emulator"))
    with _lock:
        return _libraries.setdefault(key, ctypes.CDLL(str(target)))


def _compile(cxx: str, source: str, relative: str | None, name: str) -> Path:
    """Compile `source` in a scratch folder of this process and store the library in the cache
    as `relative` (cache.store_file: a fresh temporary name renamed into place, so concurrent
    processes never load half a library, with its size and SHA-256 recorded); the scratch file
    when `relative` is None or the cache cannot take it. Errors become CompileError with the
    compiler's message and the saved source."""
    work = Path(tempfile.mkdtemp(prefix="jk-cuda-emu-"))
    src = work / f"{re.sub(r'[^0-9A-Za-z_]', '_', name)}.cpp"
    version = _version_memo.get(cxx) or _version_memo.setdefault(cxx, _compiler_version(cxx))
    head = emulator_pch.header_for(cxx, version, CXX_FLAGS, HEAD) if source.startswith(HEAD) else None
    src.write_text(source[len(HEAD):] if head else source)
    out = work / "lib.so"
    include = ["-include", str(head)] if head else []
    proc = subprocess.run([cxx, *CXX_FLAGS, *include, str(src), "-o", str(out)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise CompileError(f"the host compiler rejected the emulated CUDA source of {name} (saved at {src}"
                           + (f", after -include {head}" if head else "") + "):\n"
                           + proc.stderr[-4000:])
    stored = cache.store_file(relative, out) if relative is not None else None
    if stored is None:
        return out  # no disk cache, or an unwritable one: the library is used from its scratch folder
    shutil.rmtree(work, ignore_errors=True)
    return stored


def library(module: CudaModule, disk_cache: bool = True) -> ctypes.CDLL:
    """The host library of one rendered program (a prebuilt bundle holding it, or a build)."""
    tagged = _prebuilt.get(module.tag)
    if tagged is not None:
        return tagged
    return _build(_host_source(module.prelude, [module.kernels]), module.name, disk_cache)


_prebuilt: dict[str, ctypes.CDLL] = {}


def prebuild(modules: list[CudaModule], disk_cache: bool = True, workers: int | None = None) -> None:
    """Compile the kernels of many programs as host libraries, used by every later run of those
    programs in this process: one compiler run per chunk of about CHUNK_CHARS of kernel text,
    `workers` (default: the CPU count) of them in parallel. Kernel names carry a hash of their
    program's source (render.py), so programs never collide in one library."""
    todo = list({m.tag: m for m in modules if m.tag not in _prebuilt}.values())
    if not todo:
        return
    chunks = _chunks(todo, workers or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=min(len(chunks), workers or os.cpu_count() or 1)) as pool:
        libs = list(pool.map(lambda chunk: _build(_host_source(chunk[0].prelude, [m.kernels for m in chunk]),
                                                  f"bundle_of_{len(chunk)}", disk_cache), chunks))
    for chunk, lib in zip(chunks, libs):
        for m in chunk:
            _prebuilt[m.tag] = lib


@contextlib.contextmanager
def batch_build(disk_cache: bool = True, workers: int | None = None) -> Iterator[list[CudaModule]]:
    """Record the CUDA modules the emulator calls in this block would build, then build them all
    in one `prebuild` (one compiler run per chunk, chunks in parallel) when the block ends.

    Inside the block, a call whose program is not built yet answers with the NumPy reference
    interpreter's results (a stand-in: StandInProgram), so the code runs on to all of its
    programs; after it, every call of those programs (the same jitted functions included) runs
    the emulated kernels. The yielded list holds the recorded modules. A block that raises
    builds nothing; a build that fails raises the compiler's error (the programs can still be
    built one by one by calling them again).

    >>> import numpy as np, jitkernel as jk
    >>> fns = [jk.jit(lambda x: x * 1.75 + 0.5, backend="cuda-emulator"),
    ...        jk.jit(lambda x: x * 2.25 - 0.5, backend="cuda-emulator")]  # two programs: two modules
    >>> with batch_build() as modules:
    ...     _ = [f(np.ones(3)) for f in fns]
    >>> len(modules), float(fns[1](np.ones(3)).sum())
    (2, 5.25)
    """
    with record_modules(stand_in=True) as modules:
        yield modules
    if modules:
        prebuild(modules, disk_cache=disk_cache, workers=workers)


CHUNK_CHARS = 400_000  # kernel text per compiler run of prebuild: g++ slows down on larger units


def _chunks(modules: list[CudaModule], workers: int) -> list[list[CudaModule]]:
    """`modules` in consecutive groups: at least one per worker when there is enough text (the
    compiler runs go in parallel), more when a group would exceed CHUNK_CHARS."""
    total = sum(len(m.kernels) for m in modules)
    limit = max(1, min(CHUNK_CHARS, -(-total // workers)))
    out: list[list[CudaModule]] = [[]]
    size = 0
    for m in modules:
        if out[-1] and size + len(m.kernels) > limit:
            out.append([])
            size = 0
        out[-1].append(m)
        size += len(m.kernels)
    return out


def _no_buffer(device: Any) -> None:
    return None


class EmulatorDevice:
    """The `executor.Device` of the emulator: buffers are C-contiguous NumPy arrays, kernels
    are the `jk_launch_<kernel>` host wrappers of a loaded library, the status word is the CPU
    backend's `StatusWord`. Launch shapes come from a `LaunchPolicy`."""

    name = "cuda-emulator"

    def __init__(self, lib: ctypes.CDLL | None = None, policy: LaunchPolicy | None = None) -> None:
        self.policy = policy or LaunchPolicy()
        self._libs: list[ctypes.CDLL] = [] if lib is None else [lib]
        self._fns: dict[str, Any] = {}

    def load(self, module: CudaModule, disk_cache: bool = True) -> None:
        """Make the kernels of `module` launchable here (its host library, built or cached)."""
        lib = library(module, disk_cache)
        if all(lib is not other for other in self._libs):
            self._libs.append(lib)

    def _kernel(self, kernel: str) -> Any:
        """The host wrapper of `kernel`, typed on first use (any step kind's kernels)."""
        fn = self._fns.get(kernel)
        if fn is None:
            lib = next((lib for lib in reversed(self._libs) if hasattr(lib, f"jk_launch_{kernel}")), None)
            if lib is None:
                raise KeyError(f"kernel {kernel} is not loaded on the emulator device (EmulatorDevice.load)")
            fn = getattr(lib, f"jk_launch_{kernel}")
            fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p]
            fn.restype = None
            self._fns[kernel] = fn
        return fn

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def put(self, value: Any, shape: tuple[int, ...], dtype: np.dtype, function: str = "") -> np.ndarray:
        buffer = getattr(value, "_jk_buffer_on", _no_buffer)(self)
        if buffer is not None and value.dtype == dtype and value.size == math.prod(shape):
            return buffer.reshape(shape)  # a DeviceArray of this device: no copy
        if not events.SUBSCRIBERS:
            return np.ascontiguousarray(np.asarray(value), dtype=dtype).reshape(shape)
        t0 = events.clock()
        out = np.ascontiguousarray(np.asarray(value), dtype=dtype).reshape(shape)
        events.publish(events.TransferEvent(function, t0, events.clock() - t0, direction="host->device",
                                            nbytes=out.nbytes, device=self.name))
        return out

    def download(self, buffer: np.ndarray, shape: tuple[int, ...], dtype: np.dtype, function: str = "") -> np.ndarray:
        """A host copy of `buffer` (the emulator's "device->host transfer")."""
        t0 = events.clock()
        out = np.array(buffer, dtype, order="C").reshape(shape)
        if events.SUBSCRIBERS:
            events.publish(events.TransferEvent(function, t0, events.clock() - t0, direction="device->host",
                                                nbytes=out.nbytes, device=self.name))
        return out

    def synchronize(self) -> None:
        """Nothing to wait for: emulated launches run to completion."""

    def upload(self, host: np.ndarray, function: str = "") -> np.ndarray:
        t0 = events.clock()
        out = np.array(host, order="C")
        if events.SUBSCRIBERS:
            events.publish(events.TransferEvent(function, t0, events.clock() - t0, direction="host->device",
                                                nbytes=out.nbytes, device=self.name))
        return out

    def copy(self, buffer: np.ndarray) -> np.ndarray:
        return buffer.copy()

    def view(self, buffer: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """The same memory as another shape and dtype of its byte size (complex DeviceArrays)."""
        return buffer.reshape(-1).view(dtype).reshape(shape)

    def launch_shape(self, launch: Launch) -> tuple[int, int]:
        p = self.policy
        if launch.kind == "final":
            return 1, p.block
        if launch.kind == "rows":
            return max(1, min(launch.items, p.max_grid)), p.block
        if launch.kind == "warp_rows":  # one warp per item
            return max(1, min(-(-launch.items // (p.block // 32)), p.max_grid)), p.block
        return max(1, min(-(-launch.items // p.block), p.max_grid)), p.block

    def launch(self, kernel: str, grid: int, block: int, args: Sequence[Any], timed: bool = False) -> float | None:
        keep = []  # scalars passed by value live until the launch returns
        ptrs = (ctypes.c_void_p * len(args))()
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                ptrs[i] = a.ctypes.data
            elif isinstance(a, StatusWord):
                ptrs[i] = a.addr
            else:
                v = np.array(a)
                keep.append(v)
                ptrs[i] = v.ctypes.data
        if not timed:
            self._kernel(kernel)(grid, block, ptrs)
            return None
        t0 = events.clock()
        self._kernel(kernel)(grid, block, ptrs)
        return events.clock() - t0  # the timing handle is the wall time itself

    def elapsed(self, handles: Sequence[float]) -> list[float]:
        return list(handles)

    def new_status(self) -> StatusWord:
        return StatusWord()

    # -- what control-flow steps need (flow.py) -------------------------------------------------
    def copy_into(self, dst: np.ndarray, src: np.ndarray) -> None:
        """The first dst.nbytes bytes of src into dst (a whole buffer, or a data-dependent
        result's leading rows: DeviceArray._leading)."""
        np.copyto(dst, src.reshape(-1)[:dst.size].reshape(dst.shape), casting="no")

    def read_scalar(self, buffer: np.ndarray) -> Any:
        return buffer.reshape(-1)[0].item()

    def write_scalar(self, buffer: np.ndarray, value: Any) -> None:
        buffer.reshape(-1)[0] = np.asarray(value, buffer.dtype)

    def check_status(self, word: StatusWord) -> None:
        if word.value:
            raise_status(word)  # NumPy's exception and message, as on the CPU backend


class EmulatedProgram:
    """Runs a rendered KernelProgram on the emulator device (executor.ProgramRunner): NumPy
    arrays in, NumPy arrays out."""

    def __init__(self, kp: KernelProgram, module: CudaModule, lib: ctypes.CDLL, policy: LaunchPolicy,
                 params: np.ndarray | None = None) -> None:
        self.kp, self.module, self.policy = kp, module, policy
        self.template: CudaTemplate | None = None  # set when shape-generic (dynamic_params.py)
        self.device = EmulatorDevice(lib, policy)
        self.runner = ProgramRunner(kp, module, self.device, params)

    def __call__(self, arrays: list) -> list[np.ndarray]:
        # complex arguments and results are views of the float (..., 2) buffers (complex_ops.py)
        return complex_results(self.kp, self.runner.run(pack_arguments(self.kp, arrays)))

    def shape(self, launch: Launch) -> tuple[int, int]:
        return self.device.launch_shape(launch)


class StandInProgram:
    """What the emulator's compile returns for a program recorded with stand-ins (`batch_build`,
    `record_modules(stand_in=True)`): while recording, the program's results computed by the
    NumPy reference interpreter, so that the code goes on to its next programs without a
    compiler run; called when no recording is active (a jitted function kept past the block),
    the emulated program itself, built then (or found built by the batch): a stand-in never
    answers for the emulator outside a recording. It offers no shape-generic template (a later
    size compiles)."""

    template = None

    def __init__(self, program: Program, kp: KernelProgram, module: CudaModule, policy: LaunchPolicy,
                 params: np.ndarray | None, disk_cache: bool) -> None:
        self.program, self.kp, self.module, self.policy = program, kp, module, policy
        self.params, self.disk_cache = params, disk_cache
        self.emulated: EmulatedProgram | None = None

    def __call__(self, arrays: list) -> list[np.ndarray]:
        if is_recording():
            return [np.array(o, order="C", copy=True) for o in eval_program(self.program, arrays)]
        if self.emulated is None:
            lib = library(self.module, self.disk_cache)
            self.emulated = EmulatedProgram(self.kp, self.module, lib, self.policy, self.params)
        return self.emulated(arrays)


class CudaEmulatorBackend(Backend):
    """Renders with the CUDA renderer and runs the translation unit on the host."""

    name = "cuda-emulator"
    shape_generic = True
    body_library_steps = BODY_LIBRARY_PRIMS

    @classmethod
    def check_available(cls, name: str) -> None:
        compiler()  # BackendUnavailableError without a host C++ compiler

    def __init__(self, policy: LaunchPolicy | None = None) -> None:
        self.policy = policy or LaunchPolicy()

    def compile(self, program: Program, *, name: str, fastmath: bool = False, disk_cache: bool = True,
                previous: Any = None) -> tuple[Any, dict]:
        """Render and build `program`. With `previous` (an earlier signature's executable that
        differs in sizes only), the constants that differ become run-time parameters (kernel
        argument jk_params) and the result is a template later sizes reuse (dynamic_params.py)."""
        with _tag_refusals():
            kp = schedule_program(program, name)
            generic, positions, structure, values = shape_generic(kp, previous)
            t0 = events.clock()
            module, generic, positions = render_shape_generic(kp, generic, positions)
        if events.SUBSCRIBERS:
            events.publish(events.CodegenEvent(name, t0, events.clock() - t0, self.name))
        params = parameter_values(values, positions) if positions else None
        if module.tag not in _prebuilt and intercept(module):  # recording for a batch build
            return StandInProgram(program, kp, module, self.policy, params, disk_cache), texts(generic, module)
        lib = library(module, disk_cache)
        run = EmulatedProgram(kp, module, lib, self.policy, params)
        txt = texts(generic, module)
        if positions:
            run.template = CudaTemplate(structure, values, positions, module.source, lib, txt)
        return run, txt

    def reuse(self, program: Program, template: CudaTemplate, *, name: str) -> tuple[Any, dict] | None:
        """Run `program` on a template's library when its shape-generic rendering is the same
        source text (no compiler run); None otherwise (the caller compiles)."""
        kp = schedule_program(program, name)
        fitted = template.fit(kp)
        if fitted is None:
            return None
        module, values = fitted
        run = EmulatedProgram(kp, module, template.compiled, self.policy, parameter_values(values, template.positions))
        run.template = template
        return run, template.texts


@contextlib.contextmanager
def _tag_refusals() -> Iterator[None]:
    """UnsupportedOperationError raised inside this block (scheduling or rendering for CUDA)
    gets `renderer_refusal = True`, so that a caller can tell "the CUDA renderer does not cover
    this step" from an error of the program itself (the test suite skips the former)."""
    try:
        yield
    except UnsupportedOperationError as e:
        e.renderer_refusal = True
        raise


def shape_generic(kp: KernelProgram, previous: Any) -> tuple[KernelProgram, list[int], tuple, list]:
    """(program to render, parameter positions, structure, constant values) of `kp`: shape
    generic where `previous` (an executable of the same function) has the same structure."""
    structure, values = constants(kp)
    old = getattr(previous, "kp", None)
    if old is None:
        return kp, [], structure, values
    old_structure, old_values = constants(old)
    if old_structure != structure:
        return kp, [], structure, values
    positions = varying_positions(old_values, values)
    return (parametrize(kp, positions) if positions else kp), positions, structure, values


def render_shape_generic(kp: KernelProgram, generic: KernelProgram, positions: list[int]) -> tuple:
    """(module, program, positions): the shape-generic program's module, or `kp`'s own with no
    run-time parameters where a step has no run-time-extent form in the renderer (a matmul's
    tiles, a complex reduction): that signature compiles for its sizes instead of failing."""
    if positions:
        try:
            return render_program(generic), generic, positions
        except UnsupportedOperationError:
            pass
    return render_program(kp), kp, []


def texts(kp: KernelProgram, module: CudaModule) -> dict:
    return {"kernels": lambda: str(kp), "cuda": lambda: module.source, "ptx": lambda: ptx(module.source)}

