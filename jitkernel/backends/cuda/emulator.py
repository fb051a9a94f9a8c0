"""`backend="cuda-emulator"`: the CUDA translation unit compiled for the host and run on NumPy
arrays (docs/gpu.md, "The emulator").

The very source nvcc compiles (render.py) is compiled by the host C++ compiler after the shim
header (shim.py), with one `jk_launch_<kernel>(grid, block, args)` wrapper per kernel, into a
shared library. Libraries are cached by the hash of their source and compiler: in memory for
the process, and on disk under JITKERNEL_CACHE_DIR (cuda-emulator/<hash>.so). `prebuild`
compiles the kernels of many programs as one library (one compiler run for a test module).
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ... import cache, events
from ..._version import __version__
from ...errors import BackendUnavailableError, CompileError
from ...fusion import KernelProgram
from ...fusion.params import constants, parameter_values, parametrize, varying_positions
from ...ir import Program
from ..cpu.runtime import StatusWord
from ..cpu.runtime import _raise_status as raise_status
from . import flow
from .dynamic_params import CudaTemplate
from .render import CudaModule, Launch, render_program
from .shim import SHIM

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
    pointers (to the buffers, or to the value of a scalar argument)."""
    lines = []
    for name, types in _kernel_params(kernels_text).items():
        args = []
        for i, ty in enumerate(types):
            if "*" in ty:
                args.append(f"({ty})a[{i}]")
            else:
                base = ty.replace("const ", "")
                args.append(f"*({base}*)a[{i}]")
        lines.append(f'extern "C" void jk_launch_{name}(unsigned g, unsigned b, void** a) '
                     f"{{ jk_emu::launch(g, b, [=] {{ {name}({', '.join(args)}); }}); }}")
    return "\n".join(lines) + "\n"


def _host_source(prelude: str, kernel_texts: list[str]) -> str:
    body = "\n".join(kernel_texts)
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
        target = cache.disk_cache_dir() / "cuda-emulator" / f"{key}.so"
        if events.SUBSCRIBERS and disk_cache:
            events.publish(events.CacheEvent(name, events.clock(), 0.0, target.exists(), "disk"))
        if not (disk_cache and target.exists()):
            t0 = events.clock()
            target = _compile(cxx, source, target if disk_cache else None, name)
            if events.SUBSCRIBERS:
                events.publish(events.CompileEvent(name, t0, events.clock() - t0, "cuda-emulator"))
        _libraries[key] = ctypes.CDLL(str(target))
        return _libraries[key]


def _compile(cxx: str, source: str, target: Path | None, name: str) -> Path:
    """Compile `source` into `target` (through a temporary file renamed into place, so that
    concurrent processes never load half a library), or into a scratch file when `target` is
    None. Errors become CompileError with the compiler's message and the saved source."""
    work = Path(tempfile.mkdtemp(prefix="jk-cuda-emu-"))
    src = work / f"{re.sub(r'[^0-9A-Za-z_]', '_', name)}.cpp"
    src.write_text(source)
    out = work / "lib.so"
    proc = subprocess.run([cxx, *CXX_FLAGS, str(src), "-o", str(out)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CompileError(f"the host compiler rejected the emulated CUDA source of {name} (saved at {src}):\n"
                           + proc.stderr[-4000:])
    if target is None:
        return out
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(out, tmp)
        os.replace(tmp, target)
    except OSError:
        return out  # an unwritable cache: the library is used from its scratch folder
    shutil.rmtree(work, ignore_errors=True)
    return target


def library(module: CudaModule, disk_cache: bool = True) -> ctypes.CDLL:
    """The host library of one rendered program (a prebuilt bundle holding it, or a build)."""
    tagged = _prebuilt.get(module.tag)
    if tagged is not None:
        return tagged
    return _build(_host_source(module.prelude, [module.kernels]), module.name, disk_cache)


_prebuilt: dict[str, ctypes.CDLL] = {}


def prebuild(modules: list[CudaModule], disk_cache: bool = True) -> None:
    """Compile the kernels of many programs as one host library (one compiler run), used by
    every later run of those programs in this process. Kernel names carry a hash of their
    program's source (render.py), so programs never collide in one library."""
    todo = {m.tag: m for m in modules if m.tag not in _prebuilt}
    if not todo:
        return
    lib = _build(_host_source(modules[0].prelude, [m.kernels for m in todo.values()]),
                 f"bundle_of_{len(todo)}", disk_cache)
    for tag in todo:
        _prebuilt[tag] = lib


class EmulatedProgram:
    """Runs a rendered KernelProgram: allocates its buffers as NumPy arrays, launches each
    kernel through its host wrapper, returns the outputs."""

    def __init__(self, kp: KernelProgram, module: CudaModule, lib: ctypes.CDLL, policy: LaunchPolicy,
                 params: np.ndarray | None = None) -> None:
        self.kp, self.module, self.policy = kp, module, policy
        self._lib = lib
        self.template = None  # a CudaTemplate when shape-generic (dynamic_params.py)
        # The run-time parameters of a shape-generic program (kernel argument jk_params).
        self.params = np.zeros(1, np.int64) if params is None else np.ascontiguousarray(params, np.int64)
        self._fns = {launch.name: getattr(lib, f"jk_launch_{launch.name}") for launch in flow.iter_launches(module.launches)}
        for fn in self._fns.values():
            fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p]
            fn.restype = None
        self._consts = {bid: np.ascontiguousarray(np.asarray(c, kp.buffers[bid].dtype)) for bid, c in kp.consts}

    def __call__(self, arrays: list) -> list[np.ndarray]:
        kp = self.kp
        bufs: dict[int, np.ndarray] = dict(self._consts)
        for bid, a in zip(kp.inputs, arrays):
            b = kp.buffers[bid]
            bufs[bid] = np.ascontiguousarray(np.asarray(a), dtype=np.dtype(b.dtype.str)).reshape(b.shape)
        for b in kp.buffers.values():
            if b.id not in bufs:
                bufs[b.id] = np.empty(b.shape, b.dtype)
        status = StatusWord()
        _HostDevice(self, bufs, status).run_plans(self.module.launches)
        if status.value:
            raise_status(status)  # NumPy's exception and message, as on the CPU backend
        # Outputs are fresh arrays (an output may be an input or constant buffer itself).
        outs = []
        for bid in kp.outputs:
            arr = bufs[bid]
            outs.append(arr.copy() if bid in kp.inputs or any(bid == c for c, _ in kp.consts) else arr)
        return outs

    def run_launches(self, launches: list[Launch], bufs: dict, status: StatusWord) -> None:
        """The launches of one step, in order, with the step's work buffers."""
        work: dict[tuple, np.ndarray] = {}
        parts = 1
        for launch in launches:
            grid, block = self.shape(launch)
            for bid, dt, per_row in launch.scratch:
                work[("scratch", bid)] = np.empty(grid * per_row, dt)
            if launch.kind == "partial":
                parts = grid
                for k, acc, has_pos in launch.work:
                    work[(k, "val")] = np.empty(grid, acc)
                    if has_pos:
                        work[(k, "pos")] = np.empty(grid, np.int64)
            self._launch(launch, grid, block, bufs, work, parts, status)

    def shape(self, launch: Launch) -> tuple[int, int]:
        p = self.policy
        if launch.kind == "final":
            return 1, p.block
        if launch.kind == "rows":
            return max(1, min(launch.items, p.max_grid)), p.block
        return max(1, min(-(-launch.items // p.block), p.max_grid)), p.block

    def _launch(self, launch: Launch, grid: int, block: int, bufs: dict, work: dict, parts: int,
                status: StatusWord) -> None:
        keep = []
        ptrs = (ctypes.c_void_p * len(launch.params))()
        for i, what in enumerate(launch.params):
            if what[0] == "buf":
                ptrs[i] = bufs[what[1]].ctypes.data
            elif what[0] == "work":
                ptrs[i] = work[(what[1], what[2])].ctypes.data
            elif what[0] == "scratch":
                ptrs[i] = work[what].ctypes.data
            elif what[0] == "params":
                ptrs[i] = self.params.ctypes.data
            elif what[0] == "parts":
                v = ctypes.c_longlong(parts)
                keep.append(v)
                ptrs[i] = ctypes.addressof(v)
            else:
                ptrs[i] = status.addr
        self._fns[launch.name](grid, block, ptrs)


class CudaEmulatorBackend:
    """Renders with the CUDA renderer and runs the translation unit on the host."""

    name = "cuda-emulator"

    def __init__(self, policy: LaunchPolicy | None = None) -> None:
        self.policy = policy or LaunchPolicy()

    def compile(self, program: Program, *, name: str, fastmath: bool = False, disk_cache: bool = True,
                previous: Any = None) -> tuple[Any, dict]:
        """Render and build `program`. With `previous` (an earlier signature's program that
        differs in sizes only), the constants that differ become run-time parameters (kernel
        argument jk_params) and the result is a template later sizes reuse (dynamic_params.py)."""
        from . import schedule_program
        kp = schedule_program(program, name)
        generic, positions, structure, values = shape_generic(kp, previous)
        t0 = events.clock()
        module = render_program(generic)
        if events.SUBSCRIBERS:
            events.publish(events.CodegenEvent(name, t0, events.clock() - t0, self.name))
        lib = library(module, disk_cache)
        run = EmulatedProgram(kp, module, lib, self.policy, parameter_values(values, positions))
        txt = texts(generic, module)
        if positions:
            run.template = CudaTemplate(structure, values, positions, module.source, lib, txt)
        return run, txt

    def reuse(self, program: Program, template: CudaTemplate, *, name: str) -> tuple[Any, dict] | None:
        """Run `program` on a template's library when its shape-generic rendering is the same
        source text (no compiler run); None otherwise (the caller compiles)."""
        from . import schedule_program
        kp = schedule_program(program, name)
        generic = template.generic_program(kp)
        if generic is None:
            return None
        module = render_program(generic)  # launches carry this program's sizes
        if module.source != template.source:
            return None
        structure, values = constants(kp)
        run = EmulatedProgram(kp, module, template.compiled, self.policy, parameter_values(values, template.positions))
        run.template = template
        return run, template.texts


def shape_generic(kp: KernelProgram, previous: Any) -> tuple[KernelProgram, list[int], tuple, list]:
    """(program to render, parameter positions, structure, constant values) of `kp`: shape
    generic where `previous` (an executable of the same function) has the same structure."""
    structure, values = constants(kp)
    old = getattr(previous, "kp", None)
    if old is None:
        return kp, [], structure, values
    try:
        old_structure, old_values = constants(old)
    except Exception:  # noqa: BLE001  (an earlier program the walker cannot read: no template)
        return kp, [], structure, values
    if old_structure != structure:
        return kp, [], structure, values
    positions = varying_positions(old_values, values)
    return (parametrize(kp, positions) if positions else kp), positions, structure, values


class _HostDevice:
    """flow.Device over the emulator's NumPy buffers."""

    def __init__(self, program: EmulatedProgram, bufs: dict, status: StatusWord) -> None:
        self.program, self.bufs, self.status = program, bufs, status

    def run_plans(self, plans: list) -> None:
        for plan in plans:
            if isinstance(plan, (flow.LoopPlan, flow.BranchPlan)):
                flow.run_control(plan, self)
            else:
                self.program.run_launches(plan, self.bufs, self.status)

    def copy(self, dst: int, src: int) -> None:
        np.copyto(self.bufs[dst], self.bufs[src].reshape(self.bufs[dst].shape), casting="no")

    def read_scalar(self, bid: int) -> Any:
        return self.bufs[bid].reshape(-1)[0].item()

    def write_scalar(self, bid: int, value: Any) -> None:
        a = self.bufs[bid]
        a.reshape(-1)[0] = flow.numpy_scalar(value, a.dtype)


def texts(kp: KernelProgram, module: CudaModule) -> dict:
    from .nvcc import ptx
    return {"kernels": lambda: str(kp), "cuda": lambda: module.source, "ptx": lambda: ptx(module.source)}

