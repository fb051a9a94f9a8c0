"""Render a KernelProgram as an LLVM module.

Each kernel becomes an internal function taking its buffers as `noalias` pointers (outputs and
temporaries are fresh allocations and inputs are only read, so no two written pointers alias)
plus the [start, end) range of its outermost loop. Consecutive kernels between library calls
form one exported `segment_<n>(ptr %buffers, ptr %status)` function: one native call per
segment, whatever the number of kernels in it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from ...fusion.index import Aff
from ...fusion.kernel_ir import (IndexValue, Kernel, KernelProgram, LibraryCall, Literal, Load, Node,
                                 RowKernel, Store)
from .ops import OpLowering
from ...fusion.params import Param, constants
from .types import F32, F64, I64, I8, PTR, VOID, constant, is_float, is_signed, mem_type, reg_type


# Offset of `data` in NumPy's PyArrayObject (after the 16-byte PyObject header); part of NumPy's
# ABI and checked once at import by runtime.py.
DATA_OFFSET = 16


@dataclass
class Segment:
    name: str
    kernels: list[Kernel | RowKernel]
    buffers: list[int] = field(default_factory=list)  # argument order of the native function
    parallel: bool = False  # one kernel whose outer loop may be split across threads
    has_params: bool = False  # takes the run-time parameter array
    step_index: int = -1  # position of its (first) kernel in KernelProgram.steps
    sets_status: bool = True  # may write the status word (False: the runtime passes none and checks none)

# Kernels at least this large (elements in the loop nest) get a segment of their own whose
# outer loop the runtime may split across threads.
PARALLEL_MIN_ELEMENTS = 1 << 18


def _elements(kernel: Kernel | RowKernel) -> int:
    domains = [p.domain for p in kernel.phases] if isinstance(kernel, RowKernel) else [kernel.domain]
    total = 0
    for d in domains:
        n = 1
        for e in d:
            n *= e if isinstance(e, int) else PARALLEL_MIN_ELEMENTS
        total += n
    return total


def splittable(kernel: Kernel | RowKernel) -> bool:
    """Can disjoint ranges of the outer loop run concurrently? Yes when the outer loop is not a
    reduced one and no store accumulates in memory (its fill pass covers the whole buffer)."""
    if not kernel.domain:
        return False
    if isinstance(kernel, RowKernel):
        return True
    if any(s.reduce for s in kernel.stores) and kernel.n_reduce == 0:
        return False
    return len(kernel.kept) >= 1


def _kernel_buffers(kernel: Kernel | RowKernel) -> set[int]:
    if isinstance(kernel, RowKernel):
        return {b for p in kernel.phases for b in p.buffers()} - set(kernel.scratch)
    return set(kernel.buffers())


WIDE_SUM_THRESHOLD = 1 << 16


class KernelRenderer:
    def __init__(self, module: ir.Module, kp: KernelProgram, fastmath: bool) -> None:
        self.module, self.kp, self.fastmath = module, kp, fastmath
        self._reduced_elements = 0

    # -- index arithmetic ------------------------------------------------------------------
    def aff(self, b: ir.IRBuilder, a: Aff, loops: list[ir.Value]) -> ir.Value:
        total: ir.Value = self.ival(b, a.const)
        for atom, k in a.terms:
            if atom[0] == "i":
                v = loops[atom[1]]
            else:
                inner = self.aff(b, atom[1], loops)
                c = self.ival(b, atom[2])
                v = b.udiv(inner, c) if atom[0] == "div" else b.urem(inner, c)
            term = v if k == 1 else b.mul(v, self.ival(b, k))
            total = term if (isinstance(total, ir.Constant) and total.constant == 0) else b.add(total, term)
        return total

    # -- run-time parameters (shape-generic kernels) --------------------------------------------
    def ival(self, b: ir.IRBuilder, v: object) -> ir.Value:
        """An i64 constant, or the value of a run-time parameter slot."""
        if isinstance(v, Param):
            slot = b.gep(self.params, [ir.Constant(I64, v.index)], inbounds=True, source_etype=I64)
            return b.load(slot, typ=I64)
        return ir.Constant(I64, int(v))

    def literal(self, b: ir.IRBuilder, dt: np.dtype, v: object) -> ir.Value:
        if not isinstance(v, Param):
            return constant(dt, v)
        raw = self.ival(b, v)
        if v.kind == "float":
            f = b.bitcast(raw, F64)
            return b.fptrunc(f, reg_type(dt)) if dt.kind == "f" and dt.itemsize < 8 else (
                f if dt.kind == "f" else b.fptosi(f, reg_type(dt)))
        if dt.kind == "f":
            return b.sitofp(raw, reg_type(dt))
        if dt.kind == "b":
            return b.icmp_unsigned("!=", raw, ir.Constant(I64, 0))
        return b.trunc(raw, reg_type(dt)) if reg_type(dt).width < 64 else raw

    # -- expressions -----------------------------------------------------------------------
    def node(self, b: ir.IRBuilder, nd: Node, env: dict, memo: dict, ops: OpLowering) -> ir.Value:
        if nd in memo:
            return memo[nd]
        if isinstance(nd, Literal):
            v: ir.Value = self.literal(b, nd.dtype, nd.value)
        elif isinstance(nd, Load):
            ptr = b.gep(env["bufs"][nd.buffer], [self.aff(b, nd.offset, env["loops"])], inbounds=True,
                        source_etype=mem_type(nd.dtype))
            v = b.load(ptr, typ=mem_type(nd.dtype))
            if nd.dtype.kind == "b":
                v = b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
        elif isinstance(nd, IndexValue):
            i = self.aff(b, nd.index, env["loops"])
            v = ops.convert(i, np.dtype(np.int64), nd.dtype)
        else:
            args = [self.node(b, a, env, memo, ops) for a in nd.args]
            v = ops.lower(nd.prim, args, [a.dtype for a in nd.args], nd.dtype)
        memo[nd] = v
        return v

    def store(self, b: ir.IRBuilder, buffer: int, offset: Aff, value: ir.Value, dt: np.dtype, env: dict) -> None:
        ptr = b.gep(env["bufs"][buffer], [self.aff(b, offset, env["loops"])], inbounds=True, source_etype=mem_type(dt))
        if dt.kind == "b":
            value = b.zext(value, I8)
        b.store(value, ptr)

    # -- loops -----------------------------------------------------------------------------
    def loop(self, b: ir.IRBuilder, lo: ir.Value, hi: ir.Value, body, name: str) -> None:
        """for (i = lo; i < hi; ++i) body(b, i): guarded, rotated, phi-based (vectoriser-friendly)."""
        fn = b.function
        pre = b.block
        loop_bb = fn.append_basic_block(f"{name}.body")
        exit_bb = fn.append_basic_block(f"{name}.exit")
        b.cbranch(b.icmp_signed("<", lo, hi), loop_bb, exit_bb)
        b.position_at_end(loop_bb)
        i = b.phi(I64, name=name)
        i.add_incoming(lo, pre)
        body(b, i)
        nxt = b.add(i, ir.Constant(I64, 1), flags=("nsw", "nuw"))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, hi), loop_bb, exit_bb)
        b.position_at_end(exit_bb)

    # -- reductions ------------------------------------------------------------------------
    def acc_dtype(self, st: Store) -> np.dtype:
        """Accumulator dtype: float16 sums/products accumulate in float32, and float32 sums of
        more than WIDE_SUM_THRESHOLD elements in float64. A vectorised reassociated sum keeps one
        partial sum per lane (64 here) instead of NumPy's pairwise tree: over short rows each lane
        adds few terms, over long ones the wider accumulator keeps it as accurate as NumPy's."""
        dt = st.value.dtype
        if dt == np.float16 and st.reduce in ("sum", "prod"):
            return np.dtype(np.float32)
        if dt == np.float32 and st.reduce == "sum" and self._reduced_elements > WIDE_SUM_THRESHOLD:
            return np.dtype(np.float64)
        return dt

    def reduce_init(self, st: Store, in_memory: bool = False) -> ir.Constant:
        dt = st.value.dtype if in_memory else self.acc_dtype(st)
        op = st.reduce
        if op in ("sum", "or"):
            return constant(dt, 0)
        if op in ("prod", "and"):
            return constant(dt, 1)
        big = op in ("min", "argmin")
        if is_float(dt):
            return constant(dt, float("inf") if big else float("-inf"))
        if dt.kind == "b":
            return constant(dt, 1 if big else 0)
        info = np.iinfo(dt)
        return constant(dt, info.max if big else info.min)

    def fill(self, b: ir.IRBuilder, st: Store, env: dict) -> None:
        """buffer[:] = identity of the reduction (memory-accumulated reductions)."""
        buf = self.kp.buffers[st.buffer]
        size: ir.Value = ir.Constant(I64, 1)
        for n in buf.shape:
            size = b.mul(size, self.ival(b, n))
        init = self.reduce_init(st, in_memory=True)
        value = b.zext(init, I8) if st.value.dtype.kind == "b" else init

        def body(bb: ir.IRBuilder, i: ir.Value) -> None:
            bb.store(value, bb.gep(env["bufs"][st.buffer], [i], inbounds=True, source_etype=mem_type(st.value.dtype)))
        self.loop(b, ir.Constant(I64, 0), size, body, "fill")

    def combine(self, b: ir.IRBuilder, st: Store, acc: ir.Value, x: ir.Value, ops: OpLowering,
                in_memory: bool = False) -> ir.Value:
        dt = st.value.dtype
        op = st.reduce
        if not in_memory and self.acc_dtype(st) != dt:
            x = b.fpext(x, reg_type(self.acc_dtype(st)))
        flags = ("fast",) if self.fastmath else ("reassoc",)
        if op == "sum":
            return b.fadd(acc, x, flags=flags) if is_float(dt) else (b.or_(acc, x) if dt.kind == "b" else b.add(acc, x))
        if op == "prod":
            return b.fmul(acc, x, flags=flags) if is_float(dt) else (b.and_(acc, x) if dt.kind == "b" else b.mul(acc, x))
        if op == "and":
            return b.and_(acc, x)
        if op == "or":
            return b.or_(acc, x)
        # max / min: NaN-propagating for floats, as NumPy's maximum.reduce
        return ops.binary("maximum" if op == "max" else "minimum", acc, x, dt, dt)

    def arg_better(self, b: ir.IRBuilder, st: Store, acc: ir.Value, x: ir.Value) -> ir.Value:
        """argmax/argmin: strictly better (first occurrence wins), and the first NaN wins."""
        dt = st.value.dtype
        op = ">" if st.reduce == "argmax" else "<"
        if is_float(dt):
            if dt.itemsize == 2:
                acc, x = b.fpext(acc, F32), b.fpext(x, F32)
            better = b.fcmp_ordered(op, x, acc)
            nan_x = b.fcmp_unordered("uno", x, x)
            acc_ok = b.fcmp_ordered("ord", acc, acc)
            return b.or_(better, b.and_(nan_x, acc_ok))
        cmp = b.icmp_signed if is_signed(dt) else b.icmp_unsigned
        return cmp(op, x, acc)

    # -- kernels ---------------------------------------------------------------------------
    def render_kernel(self, kernel: Kernel | RowKernel) -> tuple[ir.Function, list[int]]:
        phases = kernel.phases if isinstance(kernel, RowKernel) else [kernel]
        scratch = kernel.scratch if isinstance(kernel, RowKernel) else {}
        used = sorted(_kernel_buffers(kernel))
        fnty = ir.FunctionType(VOID, [PTR] * len(used) + [I64, I64, PTR, PTR])
        fn = ir.Function(self.module, fnty, kernel.name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        for arg in fn.args[: len(used)]:
            arg.add_attribute("noalias")
        start, end, status, params = fn.args[len(used):]
        params.add_attribute("noalias")
        self.params = params
        # Allocas live in their own first block so that SROA/mem2reg promote them.
        allocas = ir.IRBuilder(fn.append_basic_block("entry"))
        body = fn.append_basic_block("start")
        b = ir.IRBuilder(body)
        ops = OpLowering(self.module, b, status, self.fastmath)
        env = {"bufs": dict(zip(used, fn.args)), "loops": [None] * max(len(p.domain) for p in phases),
               "allocas": allocas, "start": start, "end": end}
        for bid, row_size in scratch.items():
            buf = self.kp.buffers[bid]
            env["bufs"][bid] = allocas.alloca(mem_type(buf.dtype), size=self.ival(allocas, row_size))
        if isinstance(kernel, RowKernel):
            n_outer = len(kernel.outer)

            def outer_at(depth: int):
                def emit(bb: ir.IRBuilder, i: ir.Value | None) -> None:
                    if i is not None:
                        env["loops"][depth - 1] = i
                    if depth == n_outer:
                        for phase in phases:
                            self.emit_phase(bb, phase, env, ops, n_outer)
                        return
                    lo = start if depth == 0 else ir.Constant(I64, 0)
                    hi = end if depth == 0 else self.ival(bb, kernel.outer[depth])
                    self.loop(bb, lo, hi, outer_at(depth + 1), f"r{depth}")
                return emit
            outer_at(0)(b, None)
        else:
            self.emit_phase(b, kernel, env, ops, 0)
        b.ret_void()
        allocas.branch(body)
        return fn, used

    def emit_phase(self, b: ir.IRBuilder, kernel: Kernel, env: dict, ops: OpLowering, first: int) -> None:
        """Emit the loops of `kernel` from depth `first` on (outer loops, if any, are bound)."""
        ops.b = b
        n_kept = len(kernel.kept)
        # A run-time extent may be large: treat it so (wide accumulators).
        self._reduced_elements = int(np.prod([n if isinstance(n, int) else WIDE_SUM_THRESHOLD + 1
                                              for n in kernel.domain[n_kept:]], dtype=np.int64))
        in_memory = [s for s in kernel.stores if s.reduce and kernel.n_reduce == 0
                     and s.reduce not in ("argmax", "argmin")]
        for s in in_memory:
            self.fill(b, s, env)
        reduced = [s for s in kernel.stores if s.reduce and s not in in_memory]
        allocas = env["allocas"]
        accs = {id(s): allocas.alloca(reg_type(self.acc_dtype(s))) for s in reduced}
        idxs = {id(s): allocas.alloca(I64) for s in reduced if s.reduce in ("argmax", "argmin")}

        def body_at(depth: int):
            def emit(bb: ir.IRBuilder, i: ir.Value | None) -> None:
                if i is not None:
                    env["loops"][depth - 1] = i
                if depth == n_kept and reduced:
                    for s in reduced:
                        bb.store(self.reduce_init(s), accs[id(s)])
                        if id(s) in idxs:
                            bb.store(ir.Constant(I64, 0), idxs[id(s)])
                if depth == len(kernel.domain):
                    memo: dict = {}
                    for s in kernel.stores:
                        x = self.node(bb, s.value, env, memo, ops)
                        if not s.reduce:
                            self.store(bb, s.buffer, s.offset, x, s.value.dtype, env)
                        elif s in in_memory:
                            ptr = bb.gep(env["bufs"][s.buffer], [self.aff(bb, s.offset, env["loops"])],
                                         inbounds=True, source_etype=mem_type(s.value.dtype))
                            acc = bb.load(ptr, typ=mem_type(s.value.dtype))
                            if s.value.dtype.kind == "b":
                                acc = bb.icmp_unsigned("!=", acc, ir.Constant(I8, 0))
                            self.store(bb, s.buffer, s.offset, self.combine(bb, s, acc, x, ops, in_memory=True),
                                       s.value.dtype, env)
                        elif id(s) in idxs:
                            acc = bb.load(accs[id(s)], typ=reg_type(s.value.dtype))
                            better = self.arg_better(bb, s, acc, x)
                            bb.store(bb.select(better, x, acc), accs[id(s)])
                            k = self.aff(bb, s.reduce_index, env["loops"])
                            old = bb.load(idxs[id(s)], typ=I64)
                            bb.store(bb.select(better, k, old), idxs[id(s)])
                        else:
                            acc = bb.load(accs[id(s)], typ=reg_type(self.acc_dtype(s)))
                            bb.store(self.combine(bb, s, acc, x, ops), accs[id(s)])
                else:
                    lo = env["start"] if depth == 0 else ir.Constant(I64, 0)
                    hi = env["end"] if depth == 0 else self.ival(bb, kernel.domain[depth])
                    self.loop(bb, lo, hi, body_at(depth + 1), f"i{depth}")
                if depth == n_kept and reduced:
                    for s in reduced:
                        if id(s) in idxs:
                            result = bb.load(idxs[id(s)], typ=I64)
                        else:
                            result = bb.load(accs[id(s)], typ=reg_type(self.acc_dtype(s)))
                            if self.acc_dtype(s) != s.value.dtype:
                                result = bb.fptrunc(result, reg_type(s.value.dtype))
                        dt = np.dtype(np.int64) if id(s) in idxs else s.value.dtype
                        self.store(bb, s.buffer, s.offset, result, dt, env)
            return emit

        body_at(first)(b, None)

    def render_segment(self, seg: Segment) -> ir.Function:
        """`segment_N(PyArrayObject* b0, ..., i32* status)`: reads each array's data pointer
        itself (field `data` at offset DATA_OFFSET), so a call from Python passes only `id()`s."""
        seg.buffers = sorted({b for k in seg.kernels for b in _kernel_buffers(k)})
        # Arguments: the arrays, [start, end) for a splittable segment, the status word, and the
        # parameter array when the program has run-time parameters. Each ctypes argument costs
        # tens of nanoseconds on every call, so none is passed that is not needed.
        extra = ([I64, I64] if seg.parallel else []) + [PTR] + ([PTR] if self.has_params else [])
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR] * len(seg.buffers) + extra), seg.name)
        fn.attributes.add("nounwind")
        rest = list(fn.args[len(seg.buffers):])
        start, end = (rest.pop(0), rest.pop(0)) if seg.parallel else (None, None)
        status = rest.pop(0)
        params = rest.pop(0) if self.has_params else ir.Constant(PTR, None)
        self.params = params
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ptrs: dict[int, ir.Value] = {}
        for bid, obj in zip(seg.buffers, fn.args):
            slot = b.gep(obj, [ir.Constant(I64, DATA_OFFSET)], inbounds=True, source_etype=I8)
            ptrs[bid] = b.load(slot, typ=PTR)
        seg.sets_status = False
        for kernel in seg.kernels:
            kfn, used = self.render_kernel(kernel)
            seg.sets_status |= _uses(kfn, kfn.args[len(used) + 2])
            self.params = params
            if seg.parallel:  # the caller chooses the range of the outer loop
                lo, hi = start, end
            else:
                lo = ir.Constant(I64, 0)
                hi = self.ival(b, kernel.domain[0]) if kernel.domain else ir.Constant(I64, 1)
            b.call(kfn, [ptrs[bid] for bid in used] + [lo, hi, status, params])
        b.ret_void()
        return fn


def _uses(fn: ir.Function, arg: ir.Argument) -> bool:
    """Does any instruction of `fn` read `arg`? (Kernels are leaves: they call only libm and
    intrinsics, so a direct operand is the only way to reach the status word.)"""
    return any(arg in getattr(ins, "operands", ()) for bb in fn.blocks for ins in bb.instructions)


def segments_of(kp: KernelProgram) -> list[Segment | LibraryCall]:
    """Group consecutive kernels into segments; library calls stay separate steps."""
    out: list[Segment | LibraryCall] = []
    for i, step in enumerate(kp.steps):
        if isinstance(step, LibraryCall):
            out.append(step)
        elif splittable(step) and _elements(step) >= PARALLEL_MIN_ELEMENTS:
            out.append(Segment(f"segment_{len(out)}", [step], parallel=True, step_index=i))
        elif out and isinstance(out[-1], Segment) and not out[-1].parallel:
            out[-1].kernels.append(step)
        else:
            out.append(Segment(f"segment_{len(out)}", [step], step_index=i))
    return out


def render_module(kp: KernelProgram, triple: str, data_layout: str, fastmath: bool) -> tuple[ir.Module, list]:
    """The LLVM module of a KernelProgram and its step list (segments and library calls)."""
    module = ir.Module(name=kp.name)
    module.triple = triple
    module.data_layout = data_layout
    renderer = KernelRenderer(module, kp, fastmath)
    renderer.has_params = any(isinstance(v, Param) for v in constants(kp)[1])
    steps = segments_of(kp)
    for step in steps:
        if isinstance(step, Segment):
            step.has_params = renderer.has_params
            renderer.render_segment(step)
    return module, steps
