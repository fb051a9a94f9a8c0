"""LLVM set-up, verification, optimisation (new pass manager, host CPU) and ORC JIT linking.

Facts from the llvmlite 0.50 cookbook that shape this file: `llvm.initialize()` raises, the
legacy pass manager is gone, only a TargetMachine built from the host CPU name and features gives
full-width vectors, ORC (unlike MCJIT) reports unresolved symbols instead of crashing later, and
a ResourceTracker must outlive every function pointer taken from it.

Every LLVM call runs under `_lock`, which `fork` also takes (jitkernel/forking.py), so a child
never inherits LLVM in the middle of a compile. Memory (measured with benchmarks/memory.py):
each module is parsed into its own LLVMContext (freed with it), the module pass manager is
disposed explicitly (llvmlite 0.50's ModulePassManager never frees itself: about 30 KB per
compile), and because a disposed library's JITDylib stays in its LLJIT (about 9 KB each),
libraries are linked into a fresh LLJIT every MODULES_PER_JIT modules; an LLJIT is disposed with
the last of its libraries.
"""
from __future__ import annotations

import functools
import itertools
import threading

import llvmlite.binding as llvm
from llvmlite.binding import newpassmanagers as _npm

from ...errors import CompileError
from ...forking import hold_across_fork

_lock = threading.Lock()
_names = itertools.count()
MODULES_PER_JIT = 64


@functools.lru_cache(maxsize=None)
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def host_target_machine(opt: int = 3) -> llvm.TargetMachine:
    _init()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=opt, reloc="default", codemodel="jitdefault", jit=True)


@functools.lru_cache(maxsize=None)
def shared_target_machine() -> llvm.TargetMachine:
    return host_target_machine()


def parse_and_verify(ir_text: str) -> llvm.ModuleRef:
    """Parse LLVM IR text into a context of its own and run LLVM's verifier; any problem is a
    CompileError, never a crash. The module keeps its context; both go when it is collected."""
    _init()
    with _lock:
        try:
            mod = llvm.parse_assembly(ir_text, context=llvm.create_context())
            mod.verify()
        except RuntimeError as e:
            raise CompileError(f"generated LLVM IR is invalid: {e}") from e
    return mod


def optimize(mod: llvm.ModuleRef, level: int = 3) -> llvm.ModuleRef:
    tm = shared_target_machine()
    with _lock:
        pto = llvm.create_pipeline_tuning_options(speed_level=level)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_interleaving = True
        pto.loop_unrolling = False  # vectorised loops are already interleaved; unrolling doubled compile time (W3 53 -> 21 ms) for no measured run-time gain
        pb = llvm.create_pass_builder(tm, pto)
        mpm = pb.getModulePassManager()
        try:
            mpm.run(mod, pb)
        finally:
            _dispose_pass_manager(mpm)
    return mod


def _dispose_pass_manager(mpm: object) -> None:
    """llvmlite 0.50's ModulePassManager inherits ObjectRef's no-op _dispose first (its MRO puts
    ObjectRef before NewPassManager), so the pipeline is never freed; free it here."""
    if type(mpm)._dispose is llvm.ffi.ObjectRef._dispose and hasattr(_npm, "NewPassManager"):
        _npm.NewPassManager._dispose(mpm)
        mpm.detach()
    else:
        mpm.close()


def module_text(mod: llvm.ModuleRef) -> str:
    with _lock:
        return str(mod)


def emit_object(mod: llvm.ModuleRef) -> bytes:
    with _lock:
        return shared_target_machine().emit_object(mod)


def emit_assembly(mod: llvm.ModuleRef) -> str:
    with _lock:
        return shared_target_machine().emit_assembly(mod)


def toolchain_fingerprint() -> str:
    """What the machine code depends on besides the IR: LLVM, the host CPU and its features."""
    _init()
    return "|".join([".".join(map(str, llvm.llvm_version_info)), llvm.get_process_triple(),
                     llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()])


# -- JIT linking and library lifetime -------------------------------------------------------------

_jit: llvm.LLJIT | None = None  # the LLJIT new libraries are linked into
_jit_modules = 0
_graveyard: list = []  # (tracker, jit) pairs dropped while _lock was held: disposed at the next link


def _jit_for_next_module() -> llvm.LLJIT:
    """The current LLJIT, replaced by a fresh one every MODULES_PER_JIT modules (call with _lock)."""
    global _jit, _jit_modules
    if _jit is None or _jit_modules >= MODULES_PER_JIT:
        _jit, _jit_modules = llvm.create_lljit_compiler(shared_target_machine()), 0
    _jit_modules += 1
    return _jit


def _bury(graves: list) -> None:
    """Dispose trackers, each before its LLJIT (whose last reference may be the pair's)."""
    while graves:
        tracker, jit = graves.pop()
        tracker.close()
        del tracker, jit


def _release(tracker: object, jit: object) -> None:
    """Free a dropped library's machine code now, or at the next link when LLVM is busy (this
    may run from the garbage collector inside a locked LLVM call on this very thread)."""
    _graveyard.append((tracker, jit))
    if _lock.acquire(blocking=False):
        try:
            _bury(_graveyard)
        finally:
            _lock.release()


class JitLibrary:
    """Linked machine code of one module (object code); keeps the ORC resource tracker (and so the
    code) alive, and frees it when collected."""

    def __init__(self, objects: bytes, symbols: list[str], imports: dict[str, int] | None = None) -> None:
        builder = llvm.JITLibraryBuilder().add_object_img(objects)
        for name, address in (imports or {}).items():  # runtime functions the module calls (pairwise.py)
            builder.import_symbol(name, address)
        for s in symbols:
            builder.export_symbol(s)
        try:
            with _lock:
                _bury(_graveyard)
                jit = _jit_for_next_module()
                self._tracker = builder.link(jit, f"jitkernel_{next(_names)}")
                self._jit = jit
        except RuntimeError as e:
            raise CompileError(f"linking the compiled module failed: {e}") from e
        self.addresses = {s: self._tracker[s] for s in symbols}

    def __del__(self) -> None:
        tracker, jit = getattr(self, "_tracker", None), getattr(self, "_jit", None)
        # At interpreter exit this module's globals may already be None: the process frees the
        # machine code (otherwise "'NoneType' object is not callable" for each live library).
        if tracker is not None and _release is not None:
            self._tracker = self._jit = None
            _release(tracker, jit)


def _hold_llvm_across_fork() -> None:
    """A child forked while another thread is inside LLVM would inherit locks held by a thread
    that does not exist there (ours, and llvmlite's own lock around every LLVM call: the child's
    first LLVM call would wait forever). Fork waits until both are free and takes them; parent
    and child each release them afterwards. Through jitkernel.forking, which takes them only
    once no compile is in flight: a fork holding them could otherwise wait for a compile that
    waits for them."""
    llvmlite_lock = llvm.ffi.lib._lock  # an _LLVMLock (re-entrant), taken by every ffi call

    def before() -> None:
        _lock.acquire()
        llvmlite_lock.__enter__()

    def after() -> None:
        llvmlite_lock.__exit__(None, None, None)
        _lock.release()

    hold_across_fork(before, after)


_hold_llvm_across_fork()
