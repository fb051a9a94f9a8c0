"""The CPU backend: kernel IR -> LLVM IR (llvmlite) -> host-tuned O3 -> ORC JIT -> ctypes."""
from __future__ import annotations

from typing import Any

from ... import cache, events
from ..._version import __version__
from ...fusion import schedule
from ...fusion.schedule import unfused_bytes
from ...ir import Program
from . import compiler, vector_math
from .render import Segment, render_module
from .runtime import CpuExecutable


class CpuBackend:
    name = "cpu"

    def compile(self, program: Program, *, name: str, fastmath: bool = False,
                disk_cache: bool = True) -> tuple[Any, dict]:
        t0 = events.clock()
        kp = schedule(program)
        if events.SUBSCRIBERS:
            events.publish(events.FuseEvent(
                name, t0, events.clock() - t0,
                kernels=sum(1 for s in kp.steps if not hasattr(s, "prim")),
                library_calls=sum(1 for s in kp.steps if hasattr(s, "prim")),
                graph_ops=len(program.eqns), groups=kp.fusion_record,
                bytes_unfused=unfused_bytes(program)))
        t1 = events.clock()
        tm = compiler.shared_target_machine()
        module, steps, _ = render_module(kp, tm.triple, str(tm.target_data), fastmath)
        llvm_text = vector_math.annotate(str(module))
        mod = compiler.parse_and_verify(llvm_text)
        if events.SUBSCRIBERS:
            events.publish(events.CodegenEvent(name, t1, events.clock() - t1, "cpu"))
        symbols = [s.name for s in steps if isinstance(s, Segment)]
        t2 = events.clock()
        key = cache.cache_key(llvm_text, compiler.toolchain_fingerprint(), __version__, "O3")
        hit = cache.load(key) if disk_cache and symbols else None
        if hit is not None:
            objects, optimized_text = hit
            if events.SUBSCRIBERS:
                events.publish(events.CacheEvent(name, t2, events.clock() - t2, True, "disk"))
        else:
            if disk_cache and symbols and events.SUBSCRIBERS:
                events.publish(events.CacheEvent(name, t2, 0.0, False, "disk"))
            compiler.optimize(mod)
            optimized_text = str(mod)
            objects = compiler.emit_object(mod) if symbols else b""
            if disk_cache and symbols:
                cache.store(key, objects, optimized_text)
        t3 = events.clock()
        library = compiler.JitLibrary(objects, symbols) if symbols else None
        if events.SUBSCRIBERS:
            events.publish(events.CompileEvent(name, t3 if hit is not None else t2, events.clock() - (t3 if hit is not None else t2), "cpu"))
        executable = CpuExecutable(kp, steps, library)
        executable.unfused_bytes = unfused_bytes(program)
        texts = {
            "kernels": lambda: str(kp),
            "llvm": lambda: optimized_text,
            "llvm-unoptimized": lambda: llvm_text,
            "asm": lambda: compiler.emit_assembly(compiler.parse_and_verify(optimized_text)),
        }
        return executable, texts
