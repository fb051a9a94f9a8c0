"""The CPU backend: kernel IR -> LLVM IR (llvmlite) -> host-tuned O3 -> ORC JIT -> ctypes."""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from ... import cache, events
from ..._version import __version__
from ...errors import CompileError
from ...fusion import KernelProgram
from ...fusion.params import compatible, constants, parameter_values, parametrize, varying_positions
from ...ir import Program
from ...tracebacks import user_stacklevel
from ..base import Backend
from . import compiler, pairwise, vector_math
from .control_flow import library_impl
from .matvec_pairs import pair_matvecs
from .render import Segment, render_module
from .runtime import CpuExecutable


@dataclass
class Template:
    """Machine code of a shape-generic kernel program, reusable by every program with the same
    structure (see jitkernel.fusion.params)."""

    structure: tuple
    values: list
    positions: list[int]
    steps: list
    library: Any
    texts: dict


class CpuBackend(Backend):
    name = "cpu"
    shape_generic = True

    def compile(self, program: Program, *, name: str, fastmath: bool = False,
                disk_cache: bool = True, previous: Any = None) -> tuple[Any, dict]:
        """Compile `program`. With `previous` (the executable of an earlier signature that
        differs in sizes only), constants that differ between the two kernel programs become
        run-time parameters and the result is a reusable template."""
        kp = self.schedule(program, name)
        structure, values = constants(kp)
        positions: list[int] = []
        generic = kp
        same_structure = False
        if previous is not None and getattr(previous, "kp", None) is not None:
            old_structure, old_values = constants(previous.kp)
            if old_structure == structure:
                same_structure = True
                positions = varying_positions(old_values, values)
                if positions:
                    generic = parametrize(kp, positions)
        steps, library, texts = self._codegen(generic, name, fastmath, disk_cache)
        executable = CpuExecutable(kp, steps, library, parameter_values(values, positions),
                                   library_impl=_LIBRARY_IMPL)
        # A template also when nothing varies: a size change that leaves the kernel program
        # identical (the changed argument is not read, or only its dtype matters) is reused
        # by later sizes as well; `compatible` then demands every constant equal.
        executable.template = (Template(structure, values, positions, steps, library, texts)
                               if positions or same_structure else None)
        return executable, texts

    def reuse(self, program: Program, template: Template, *, name: str) -> tuple[Any, dict] | None:
        """Run `program` on a template's machine code when its kernel program has the same
        structure; None when it does not (the caller compiles instead)."""
        kp = self.schedule(program, name)
        structure, values = constants(kp)
        if not compatible(template.structure, template.values, template.positions, structure, values):
            return None
        executable = CpuExecutable(kp, template.steps, template.library, parameter_values(values, template.positions),
                                   library_impl=_LIBRARY_IMPL)
        executable.template = template
        return executable, template.texts

    def _codegen(self, kp: KernelProgram, name: str, fastmath: bool, disk_cache: bool) -> tuple[list, Any, dict]:
        t1 = events.clock()
        tm = compiler.shared_target_machine()
        module, steps = render_module(kp, tm.triple, str(tm.target_data), fastmath)
        steps = pair_matvecs(kp, steps)
        llvm_text = vector_math.annotate(str(module))
        mod = compiler.parse_and_verify(llvm_text)
        if events.SUBSCRIBERS:
            events.publish(events.CodegenEvent(name, t1, events.clock() - t1, "cpu"))
        symbols = [s.name for s in steps if isinstance(s, Segment)]
        t2 = events.clock()
        key = cache.cache_key(llvm_text, compiler.toolchain_fingerprint(), __version__, "O3")
        runtime = pairwise.addresses() if "jk_pairwise_" in llvm_text else None
        hit = cache.load(key, owner=name) if disk_cache and symbols else None
        loaded = events.clock()
        library = None
        if hit is not None:
            objects, optimized_text = hit
            library = _link_cached(key, objects, symbols, runtime)  # (its time is the CompileEvent's)
            hit = hit if library is not None else None
        if hit is not None:
            if events.SUBSCRIBERS:
                events.publish(events.CacheEvent(name, t2, loaded - t2, True, "disk"))
        else:
            if disk_cache and symbols and events.SUBSCRIBERS:
                events.publish(events.CacheEvent(name, t2, 0.0, False, "disk"))
            compiler.optimize(mod)
            optimized_text = compiler.module_text(mod)
            objects = compiler.emit_object(mod) if symbols else b""
            if disk_cache and symbols:
                cache.store(key, objects, optimized_text, owner=name)
        if library is None and symbols:
            library = compiler.JitLibrary(objects, symbols, runtime)
        if events.SUBSCRIBERS:
            began = loaded if hit is not None else t2
            events.publish(events.CompileEvent(name, began, events.clock() - began, "cpu"))
        texts = {
            "kernels": lambda: str(kp),
            "llvm": lambda: optimized_text,
            "llvm-unoptimized": lambda: llvm_text,
            "asm": lambda: compiler.emit_assembly(compiler.parse_and_verify(optimized_text)),
        }
        return steps, library, texts


_unlinkable_warned = False


def _link_cached(key: str, objects: bytes, symbols: list[str], runtime: dict | None) -> Any:
    """The linked library of a cached entry's object code, or None when it does not link (an
    entry of another LLVM that kept the same fingerprint, say): the entry is deleted, so that the
    caller's recompile replaces it, instead of failing the same way on every run; warned once."""
    global _unlinkable_warned
    try:
        return compiler.JitLibrary(objects, symbols, runtime)
    except CompileError as e:
        cache.discard(key)
        if not _unlinkable_warned:
            _unlinkable_warned = True
            warnings.warn(f"jitkernel: an entry of the persistent compile cache did not link ({e}); it was "
                          f"deleted and the function recompiled", cache.DiskCacheWarning, stacklevel=user_stacklevel())
        return None


def _compile_sub_program(program: Program) -> Callable[[list], list]:
    """Machine code for one sub-program of a control-flow step (already optimised with its
    enclosing program): a function from the input arrays to the output arrays."""
    executable, _ = CpuBackend().compile(program, name=program.name)
    return executable.run


# The function of every library step: control flow drives sub-programs compiled by this backend.
_LIBRARY_IMPL = functools.partial(library_impl, compile_sub_program=_compile_sub_program)
