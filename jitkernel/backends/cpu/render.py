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
from ...fusion.extents import loop_limits
from ...fusion.kernel_ir import (GATHER_BASE, IndexValue, Kernel, KernelProgram, LibraryCall, Literal, Load, Node,
                                 RowKernel, Store, follows_numpy_blocks, postorder)
from ...errors import UnsupportedOperationError
from ...ir import semantics
from . import pairwise as pairwise_rt
from . import render_loops
from ...fusion.loops import is_control, touched_buffers
from .ops import _MATH2, OpLowering
from ...fusion.params import Param, block_kind, constants
from ...fusion.split import kernel_computes
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
    if is_control(kernel):  # a loop or branch: everything its sub-steps touch (roles filtered by the caller)
        return touched_buffers(kernel)
    if isinstance(kernel, RowKernel):
        return {b for p in kernel.phases for b in p.buffers()} - set(kernel.scratch)
    return set(kernel.buffers())


# NumPy's pairwise summation (numpy/_core/src/umath/loops_utils.h.src, pairwise.py); the stack
# of the recursion holds one frame per halving.
PAIRWISE_STACK = 64
# Largest subtree of the pairwise recursion materialised on the stack and summed by
# pairwise.jk_pairwise_* (bytes: 4096 * 8 = 32 KiB per pairwise sum of the loop).
PAIRWISE_SCRATCH = 4096

# Kernel functions with at least this many operations are not inlined into their segment.
NOINLINE_MIN_COMPUTES = 256
# Outer rows added per pass of a sum into memory over the outer loop (KernelRenderer.emit_phase).
JAM = 4


def _computes(phases: list[Kernel]) -> int:
    return sum(kernel_computes(p) for p in phases)


class KernelRenderer:
    def __init__(self, module: ir.Module, kp: KernelProgram, fastmath: bool) -> None:
        self.module, self.kp, self.fastmath = module, kp, fastmath

    # -- index arithmetic ------------------------------------------------------------------
    def aff(self, b: ir.IRBuilder, a: Aff, loops: list[ir.Value]) -> ir.Value:
        total: ir.Value = self.ival(b, a.const)
        for atom, k in a.terms:
            if atom[0] == "i":
                v = loops[atom[1]]
            elif atom[0] == "val":  # a checked run-time start (fusion/dynamic.py)
                v = b.load(self.value_ptrs[atom[1]], typ=I64)
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

    def literal(self, b: ir.IRBuilder, dt: np.dtype, v: object, ops: OpLowering) -> ir.Value:
        """A literal of dtype `dt`: a constant, or a run-time parameter (an int64 slot; floats
        stored as float64 bits) converted by OpLowering.convert, the one place that lowers every
        dtype pair without runtime-library calls (a direct double -> half fptrunc needs
        compiler-rt's __truncdfhf2, which the process does not have; a constant never needs it,
        which is why only shape-generic programs met it)."""
        if not isinstance(v, Param):
            return constant(dt, v)
        raw = self.ival(b, v)
        if v.kind == "float":
            return ops.convert(b.bitcast(raw, F64), np.dtype(np.float64), dt)
        return ops.convert(raw, np.dtype(np.int64), dt)

    # -- expressions -----------------------------------------------------------------------
    def node(self, b: ir.IRBuilder, root: Node, env: dict, memo: dict, ops: OpLowering) -> ir.Value:
        """The LLVM value of `root`, emitting every node it needs that `memo` lacks, arguments
        first (iterative: a body may chain 10^5 operations)."""
        for nd in postorder([root], memo):
            if isinstance(nd, Literal):
                v: ir.Value = self.literal(b, nd.dtype, nd.value, ops)
            elif isinstance(nd, Load) and nd.offset == GATHER_BASE:  # a gather's array: its address
                v = env["bufs"][nd.buffer]
            elif isinstance(nd, Load):
                ptr = b.gep(env["bufs"][nd.buffer], [self.aff(b, nd.offset, env["loops"])], inbounds=True,
                            source_etype=mem_type(nd.dtype))
                v = b.load(ptr, typ=mem_type(nd.dtype))
                if nd.dtype.kind == "b":
                    v = b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
            elif isinstance(nd, IndexValue):
                i = self.aff(b, nd.index, env["loops"])
                v = ops.convert(i, np.dtype(np.int64), nd.dtype)
            elif nd.prim == "take_at":  # x[checked index] (fusion/schedule.py _gather_node)
                ptr = b.gep(memo[nd.args[0]], [memo[nd.args[1]]], inbounds=True, source_etype=mem_type(nd.dtype))
                v = b.load(ptr, typ=mem_type(nd.dtype))
                if nd.dtype.kind == "b":
                    v = b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
            else:
                args = [memo[a] for a in nd.args]
                v = ops.lower(nd.prim, args, [a.dtype for a in nd.args], nd.dtype)
            memo[nd] = v
        return memo[root]

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
    # NumPy's summation order is followed exactly (docs/numpy-support.md, "Reductions"): within
    # one NumPy block (Store.block) a float sum is NumPy's pairwise sum (8 strided accumulators
    # per leaf of at most 128 elements, halving above; pairwise.py), blocks are added in order,
    # products and everything else are sequential. Reassociating would change not only the
    # rounding but the kind of answer (an intermediate overflow gives inf in one order and a
    # finite value in another), so no accumulator carries `reassoc` unless fastmath asks.

    def acc_dtype(self, st: Store) -> np.dtype:
        """Accumulator dtype: float16 sums and products accumulate in float32 within a NumPy
        block and are rounded to float16 between blocks, as NumPy's float16 loops do."""
        return semantics.accumulator_dtype(st.reduce, st.value.dtype)

    def reduce_init(self, st: Store, in_memory: bool = False) -> ir.Constant:
        dt = st.value.dtype if in_memory else self.acc_dtype(st)
        return constant(dt, semantics.reduce_identity(st.reduce, dt))

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

    def widen(self, b: ir.IRBuilder, st: Store, x: ir.Value) -> ir.Value:
        """A reduced value in its accumulator's type."""
        if self.acc_dtype(st) != st.value.dtype:
            return b.fpext(x, reg_type(self.acc_dtype(st)))
        return x

    def combine(self, b: ir.IRBuilder, st: Store, acc: ir.Value, x: ir.Value, ops: OpLowering,
                in_memory: bool = False) -> ir.Value:
        dt = st.value.dtype
        op = st.reduce
        if not in_memory:
            x = self.widen(b, st, x)
        flags = ("fast",) if self.fastmath else ("reassoc", "contract") if st.block == "free" else ()
        if op == "sum":
            return b.fadd(acc, x, flags=flags) if is_float(dt) else (b.or_(acc, x) if dt.kind == "b" else b.add(acc, x))
        if op == "prod":
            return b.fmul(acc, x, flags=flags) if is_float(dt) else (b.and_(acc, x) if dt.kind == "b" else b.mul(acc, x))
        if op == "and":
            return b.and_(acc, x)
        if op == "or":
            return b.or_(acc, x)
        prim = "maximum" if op == "max" else "minimum"
        if in_memory or not is_float(dt):
            # NumPy's elementwise rule, applied in NumPy's (sequential) order.
            return ops.binary(prim, acc, x, dt, dt)
        # A register accumulator: llvm.maximum/minimum propagate NaN and vectorise; which of
        # two equal zeros NumPy keeps is settled after the loop (fix_zero_sign).
        return ops.in_float(dt, [acc, x], lambda a, ty: ops.call_math(_MATH2[prim], ty, a))

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

    # -- NumPy's reduction order -------------------------------------------------------------
    def reduced_extent(self, b: ir.IRBuilder, kernel: Kernel) -> ir.Value:
        total: ir.Value = ir.Constant(I64, 1)
        for n in kernel.domain[len(kernel.kept):]:
            total = b.mul(total, self.ival(b, n))
        return total

    def flat_setter(self, kernel: Kernel, env: dict):
        """set_index(b, t): the reduced loop variables of flat C-order position t."""
        first = len(kernel.kept)

        def set_index(b: ir.IRBuilder, t: ir.Value) -> None:
            rest = t
            for d in range(len(kernel.domain) - 1, first - 1, -1):
                if d == first:
                    env["loops"][d] = rest
                    break
                n = self.ival(b, kernel.domain[d])
                env["loops"][d] = b.urem(rest, n)
                rest = b.udiv(rest, n)
        return set_index

    def emit_blocks(self, b: ir.IRBuilder, kernel: Kernel, env: dict, point, pairwise: list[Store],
                    blocked: list[Store], accs: dict) -> None:
        """The reduced loops of `kernel` in NumPy's order: NumPy blocks (Store.block elements of
        the flattened reduced loops) one after the other, each reduced by reduce_block."""
        block = blocked[0].block
        kind = block_kind(block, kernel)
        if kind == "empty":
            return
        n_kept, last = len(kernel.kept), len(kernel.domain) - 1
        loops = env["loops"]
        if kind == "in-last-loop":
            # The usual case: outer reduced loops in order, NumPy blocks tile the last loop.
            def at(depth: int):
                def emit(bb: ir.IRBuilder, i: ir.Value | None) -> None:
                    if i is not None:
                        loops[depth - 1] = i
                    zero = ir.Constant(I64, 0)
                    if depth < last:
                        lo = self._limits.get(depth, {}).get("lo", zero)
                        self.loop(bb, lo, self.extent(bb, kernel, depth), at(depth + 1), f"i{depth}")
                        return
                    first = zero
                    if self._limits.get(last):  # one block: the loop's run-time range (fusion/extents.py)
                        first = self._limits[last].get("lo", zero)
                        size = bb.sub(self.extent(bb, kernel, last), first)
                        size = _smax(bb, size, zero)
                        count = bb.zext(bb.icmp_signed(">", size, zero), I64)
                    else:
                        size = self.ival(bb, block)
                        count = bb.udiv(self.ival(bb, kernel.domain[last]), size)

                    direct = self.contiguous_sum(kernel, pairwise, env)

                    def one(b2: ir.IRBuilder, q: ir.Value) -> None:
                        self.reduce_block(b2, b2.add(first, b2.mul(q, size)), size, lambda b3, t: loops.__setitem__(last, t),
                                          point, pairwise, blocked, accs, direct)
                    self.loop(bb, ir.Constant(I64, 0), count, one, "blk")
                return emit
            at(n_kept)(b, None)
            return
        # A block spanning several loops (or part of one that is not the last): flat positions.
        size = self.ival(b, block)
        count = b.udiv(self.reduced_extent(b, kernel), size)
        set_index = self.flat_setter(kernel, env)

        def one(bb: ir.IRBuilder, q: ir.Value) -> None:
            self.reduce_block(bb, bb.mul(q, size), size, set_index, point, pairwise, blocked, accs)
        self.loop(b, ir.Constant(I64, 0), count, one, "blk")

    def extent(self, b: ir.IRBuilder, kernel: Kernel, depth: int) -> ir.Value:
        """The extent of loop `depth`: static, or bounded at run time (self._limits)."""
        n = self.ival(b, kernel.domain[depth])
        return _smin(b, n, self._limits[depth]["hi"]) if "hi" in self._limits.get(depth, {}) else n

    def limit_value(self, b: ir.IRBuilder, kernel: Kernel, depth: int, nd: Node, env: dict, ops: OpLowering) -> ir.Value:
        """A run-time loop bound: the invariant value `nd` as i64, within [0, extent]."""
        v = self.node(b, nd, env, {}, ops)
        v = ops.convert(v, nd.dtype, np.dtype(np.int64)) if nd.dtype != np.int64 else v
        zero = ir.Constant(I64, 0)
        v = b.select(b.icmp_signed("<", v, zero), zero, v)
        return _smin(b, v, self.ival(b, kernel.domain[depth]))

    def contiguous_sum(self, kernel: Kernel, pairwise: list[Store], env: dict):
        """A kernel that only sums a buffer read contiguously along its last loop (np.sum(x),
        x.sum(axis=1)): the pairwise function can read the buffer itself, no copy. Returns
        block(b, base) -> the address of the block's first value, or None."""
        if len(kernel.stores) != 1 or len(pairwise) != 1:
            return None
        st = pairwise[0]
        v = st.value
        last = len(kernel.domain) - 1
        if not isinstance(v, Load) or self.acc_dtype(st) != v.dtype or v.offset.coef(last) != 1:
            return None
        if any(atom[0] in ("div", "mod") and last in atom[1].loop_vars() for atom, _ in v.offset.terms):
            return None

        def address(b: ir.IRBuilder, base: ir.Value) -> ir.Value:
            env["loops"][last] = base
            return b.gep(env["bufs"][v.buffer], [self.aff(b, v.offset, env["loops"])], inbounds=True,
                         source_etype=mem_type(v.dtype))
        return address

    def reduce_block(self, b: ir.IRBuilder, base: ir.Value, count: ir.Value, set_index, point,
                     pairwise: list[Store], blocked: list[Store], accs: dict, direct=None) -> None:
        """One NumPy block [base, base + count): float sums pairwise, added to their
        accumulators; everything else sequential; float16 accumulators rounded at the end."""
        if direct is not None:
            (s,) = pairwise
            fn = pairwise_rt.declare(self.module, reg_type(self.acc_dtype(s)))
            total = b.call(fn, [direct(b, base), count])
            acc = b.load(accs[id(s)], typ=reg_type(self.acc_dtype(s)))
            b.store(b.fadd(acc, total), accs[id(s)])
        elif pairwise:
            sums = self.pairwise_sum(b, base, count, set_index, point, pairwise)
            for s in pairwise:
                acc = b.load(accs[id(s)], typ=reg_type(self.acc_dtype(s)))
                b.store(b.fadd(acc, sums[id(s)]), accs[id(s)])
        else:
            def step(bb: ir.IRBuilder, t: ir.Value) -> None:
                set_index(bb, t)
                point(bb)
            self.loop(b, base, b.add(base, count), step, "seq")
        for s in blocked:
            if s.value.dtype.itemsize == 2:
                ty = reg_type(self.acc_dtype(s))
                acc = b.load(accs[id(s)], typ=ty)
                b.store(b.fpext(b.fptrunc(acc, reg_type(s.value.dtype)), ty), accs[id(s)])

    def materialise_node(self, b: ir.IRBuilder, lo: ir.Value, n: ir.Value, set_index, point,
                         stores: list[Store], scratch: dict) -> dict:
        """A subtree of NumPy's pairwise recursion, [lo, lo + n) with n <= PAIRWISE_SCRATCH: the
        body runs in order (every other store of the loop too) and writes the values of the
        pairwise sums to stack buffers, which pairwise.jk_pairwise_* sum as NumPy does."""
        def step(bb: ir.IRBuilder, i: ir.Value) -> None:
            set_index(bb, bb.add(lo, i))
            vals = point(bb)
            for s in stores:
                ty = reg_type(self.acc_dtype(s))
                bb.store(vals[id(s)], bb.gep(scratch[id(s)], [i], inbounds=True, source_etype=ty))
        self.loop(b, ir.Constant(I64, 0), n, step, "pw.values")
        return {id(s): b.call(pairwise_rt.declare(self.module, reg_type(self.acc_dtype(s))), [scratch[id(s)], n])
                for s in stores}

    def pairwise_sum(self, b: ir.IRBuilder, base: ir.Value, count: ir.Value, set_index, point,
                     stores: list[Store]) -> dict:
        """NumPy's recursive pairwise_sum over [base, base + count), run by an explicit stack:
        a node of more than PAIRWISE_SCRATCH elements splits at n2 = n/2 - (n/2) % 8 and
        returns left + right; a smaller node is materialise_node. One body serves every node."""
        fn = b.function
        allocas = self._allocas
        scratch = {id(s): allocas.alloca(reg_type(self.acc_dtype(s)), size=ir.Constant(I64, PAIRWISE_SCRATCH))
                   for s in stores}
        if isinstance(count, ir.Constant) and count.constant <= PAIRWISE_SCRATCH:
            # A compile-time block that fits: one node, no stack (the common row reduction).
            return self.materialise_node(b, base, count, set_index, point, stores, scratch)
        depth = ir.Constant(I64, PAIRWISE_STACK)
        stk_lo = allocas.alloca(I64, size=depth)
        stk_n = allocas.alloca(I64, size=depth)
        stk_state = allocas.alloca(I8, size=depth)  # 0: new, 1: left child running, 2: right child running
        stk_part = {id(s): allocas.alloca(reg_type(self.acc_dtype(s)), size=depth) for s in stores}

        def at(arr: ir.Value, i: ir.Value, ty: ir.Type) -> ir.Value:
            return b.gep(arr, [i], inbounds=True, source_etype=ty)

        zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
        b.store(base, at(stk_lo, zero, I64))
        b.store(count, at(stk_n, zero, I64))
        b.store(ir.Constant(I8, 0), at(stk_state, zero, I8))
        pre = b.block
        head = fn.append_basic_block("pw.head")
        leaf = fn.append_basic_block("pw.node")
        inner = fn.append_basic_block("pw.inner")
        push_left = fn.append_basic_block("pw.left")
        push_right = fn.append_basic_block("pw.right")
        deliver = fn.append_basic_block("pw.deliver")
        parent = fn.append_basic_block("pw.parent")
        left_done = fn.append_basic_block("pw.leftdone")
        right_done = fn.append_basic_block("pw.rightdone")
        done = fn.append_basic_block("pw.done")
        b.branch(head)

        b.position_at_end(head)
        sp = b.phi(I64, name="pw.sp")
        sp.add_incoming(one, pre)
        top = b.sub(sp, one)
        lo = b.load(at(stk_lo, top, I64), typ=I64)
        n = b.load(at(stk_n, top, I64), typ=I64)
        b.cbranch(b.icmp_signed("<=", n, ir.Constant(I64, PAIRWISE_SCRATCH)), leaf, inner)

        b.position_at_end(leaf)
        vals = self.materialise_node(b, lo, n, set_index, point, stores, scratch)
        leaf_end = b.block
        b.branch(deliver)

        b.position_at_end(inner)
        state = b.load(at(stk_state, top, I8), typ=I8)
        half = b.and_(b.lshr(n, one), ir.Constant(I64, -8))
        b.cbranch(b.icmp_unsigned("==", state, ir.Constant(I8, 0)), push_left, push_right)

        for block_, is_left, new_state in ((push_left, True, 1), (push_right, False, 2)):
            b.position_at_end(block_)
            child_lo, child_n = (lo, half) if is_left else (b.add(lo, half), b.sub(n, half))
            b.store(ir.Constant(I8, new_state), at(stk_state, top, I8))
            b.store(child_lo, at(stk_lo, sp, I64))
            b.store(child_n, at(stk_n, sp, I64))
            b.store(ir.Constant(I8, 0), at(stk_state, sp, I8))
            sp.add_incoming(b.add(sp, one), b.block)
            b.branch(head)

        b.position_at_end(deliver)
        dsp = b.phi(I64, name="pw.dsp")  # stack size after popping the finished node
        dsp.add_incoming(top, leaf_end)
        dvals = {}
        for s in stores:
            phi = b.phi(reg_type(self.acc_dtype(s)))
            phi.add_incoming(vals[id(s)], leaf_end)
            dvals[id(s)] = phi
        b.cbranch(b.icmp_signed("==", dsp, zero), done, parent)

        b.position_at_end(parent)
        p = b.sub(dsp, one)
        pstate = b.load(at(stk_state, p, I8), typ=I8)
        b.cbranch(b.icmp_unsigned("==", pstate, ir.Constant(I8, 1)), left_done, right_done)

        b.position_at_end(left_done)
        for s in stores:
            b.store(dvals[id(s)], at(stk_part[id(s)], p, reg_type(self.acc_dtype(s))))
        sp.add_incoming(dsp, left_done)
        b.branch(head)

        b.position_at_end(right_done)
        for s in stores:
            ty = reg_type(self.acc_dtype(s))
            left = b.load(at(stk_part[id(s)], p, ty), typ=ty)
            dvals[id(s)].add_incoming(b.fadd(left, dvals[id(s)]), right_done)
        dsp.add_incoming(p, right_done)
        b.branch(deliver)

        b.position_at_end(done)
        return dvals

    def tree_combine(self, b: ir.IRBuilder, kernel: Kernel, st: Store, env: dict, ops: OpLowering, acc: ir.Value) -> None:
        """Partials of one pairwise sum over power-of-two equal chunks (split_full_reductions):
        NumPy's recursion halves exactly down to the chunks, so they combine as a balanced tree."""
        n_kept = len(kernel.kept)
        vals = []
        for k in range(int(kernel.domain[n_kept])):
            env["loops"][n_kept] = ir.Constant(I64, k)
            vals.append(self.widen(b, st, self.node(b, st.value, env, {}, ops)))
        while len(vals) > 1:
            vals = [b.fadd(vals[i], vals[i + 1]) for i in range(0, len(vals), 2)]
        ty = reg_type(self.acc_dtype(st))
        b.store(b.fadd(b.load(acc, typ=ty), vals[0]), acc)

    def fix_zero_sign(self, b: ir.IRBuilder, kernel: Kernel, st: Store, env: dict, ops: OpLowering, acc: ir.Value) -> None:
        """A float max/min whose result is a zero: NumPy keeps, of equal values, the later one
        (float32/float64) or the first one (float16), so the sign is that of the last (first)
        zero of the reduced values. Rare, so found only then, by a scan that stops at it."""
        dt = st.value.dtype
        ty = reg_type(dt)
        fn = b.function
        scan = fn.append_basic_block("zsign")
        step = fn.append_basic_block("zsign.next")
        found = fn.append_basic_block("zsign.found")
        cont = fn.append_basic_block("zsign.end")
        forward = semantics.max_min_tie_keeps_first(dt)
        total = self.reduced_extent(b, kernel)
        first = ir.Constant(I64, 0) if forward else b.sub(total, ir.Constant(I64, 1))
        b.cbranch(b.fcmp_ordered("==", b.load(acc, typ=ty), ir.Constant(ty, 0.0)), scan, cont)
        pre = b.block
        b.position_at_end(scan)
        k = b.phi(I64, name="zs")
        k.add_incoming(first, pre)
        self.flat_setter(kernel, env)(b, k)
        x = self.node(b, st.value, env, {}, ops)
        b.cbranch(b.fcmp_ordered("==", x, ir.Constant(ty, 0.0)), found, step)
        b.position_at_end(step)
        nxt = b.add(k, ir.Constant(I64, 1 if forward else -1))
        k.add_incoming(nxt, step)
        more = b.icmp_signed("<", nxt, total) if forward else b.icmp_signed(">=", nxt, ir.Constant(I64, 0))
        b.cbranch(more, scan, cont)
        b.position_at_end(found)
        b.store(x, acc)
        b.branch(cont)
        b.position_at_end(cont)

    # -- kernels ---------------------------------------------------------------------------
    def render_kernel(self, kernel: Kernel | RowKernel) -> tuple[ir.Function, list[int]]:
        phases = kernel.phases if isinstance(kernel, RowKernel) else [kernel]
        scratch = kernel.scratch if isinstance(kernel, RowKernel) else {}
        used = sorted(_kernel_buffers(kernel))
        fnty = ir.FunctionType(VOID, [PTR] * len(used) + [I64, I64, PTR, PTR])
        fn = ir.Function(self.module, fnty, kernel.name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        if _computes(phases) >= NOINLINE_MIN_COMPUTES:
            # A large body stays its own function: inlined into the segment, the parts of a
            # split kernel would make one huge function again (fusion/split.py).
            fn.attributes.add("noinline")
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
        self.value_ptrs = env["bufs"]
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
        self._limits = {}
        if first == 0:  # reduced loops that stop at a run-time length (fusion/extents.py)
            kernel, bounds = loop_limits(kernel)
            self._limits = {d: {k: self.limit_value(b, kernel, d, nd, env, ops) for k, nd in lohi.items()}
                            for d, lohi in bounds.items()}
        limits = self._limits
        n_kept = len(kernel.kept)
        in_memory = [s for s in kernel.stores if s.reduce and kernel.n_reduce == 0
                     and s.reduce not in ("argmax", "argmin")]
        for s in in_memory:
            self.fill(b, s, env)
        reduced = [s for s in kernel.stores if s.reduce and s not in in_memory]
        allocas = env["allocas"]
        self._allocas = allocas
        accs = {id(s): allocas.alloca(reg_type(self.acc_dtype(s))) for s in reduced}
        idxs = {id(s): allocas.alloca(I64) for s in reduced if s.reduce in ("argmax", "argmin")}
        exact = not self.fastmath  # fastmath: reassociated accumulators instead of NumPy's order
        tree = [s for s in reduced if s.block == "tree" and exact]
        blocked = [s for s in reduced if follows_numpy_blocks(s) and exact and s not in tree]
        pairwise = [s for s in blocked if s.reduce == "sum"]
        zero_signs = [s for s in reduced if s.reduce in ("max", "min") and is_float(s.value.dtype) and exact]

        def point(bb: ir.IRBuilder) -> dict:
            """The body at the current loop indices: plain stores, in-memory and sequential
            accumulations; returns the values of the pairwise sums for the caller to add."""
            memo: dict = {}
            vals: dict = {}
            for s in kernel.stores:
                if s in tree:
                    continue
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
                elif s in pairwise:
                    vals[id(s)] = self.widen(bb, s, x)
                else:
                    acc = bb.load(accs[id(s)], typ=reg_type(self.acc_dtype(s)))
                    bb.store(self.combine(bb, s, acc, x, ops), accs[id(s)])
            return vals

        jam = (first == 0 and not reduced and len(kernel.domain) == 2 and len(in_memory) == len(kernel.stores)
               and all(s.reduce == "sum" and s.value.dtype.kind == "f" and 0 not in s.offset.loop_vars()
                       for s in in_memory))

        def bounds(bb: ir.IRBuilder, depth: int) -> tuple[ir.Value, ir.Value]:
            lo = env["start"] if depth == 0 else ir.Constant(I64, 0)
            hi = env["end"] if depth == 0 else self.ival(bb, kernel.domain[depth])
            if "hi" in limits.get(depth, {}):
                hi = _smin(bb, hi, limits[depth]["hi"])
            if "lo" in limits.get(depth, {}):
                lo = _smax(bb, lo, limits[depth]["lo"])
            return lo, hi

        def jammed(bb: ir.IRBuilder) -> None:
            """A sum into memory over the outer loop (`x.sum(axis=0)`, the rows of a vector times a
            matrix, fusion's column-like reductions): JAM outer rows per pass of the inner loop,
            each output element loaded and stored once per pass and the rows added in order, so
            the sums are NumPy's bit for bit with a quarter of the memory traffic to the output
            (gemv's unroll-and-jam)."""
            lo, hi = bounds(bb, 0)
            passes = bb.sdiv(_smax(bb, bb.sub(hi, lo), ir.Constant(I64, 0)), ir.Constant(I64, JAM))
            rest = bb.add(lo, bb.mul(passes, ir.Constant(I64, JAM)))

            def one_pass(b2: ir.IRBuilder, q: ir.Value) -> None:
                row = b2.add(lo, b2.mul(q, ir.Constant(I64, JAM)))

                def inner(b3: ir.IRBuilder, j: ir.Value) -> None:
                    env["loops"][1] = j
                    for s in in_memory:
                        env["loops"][0] = row
                        ptr = b3.gep(env["bufs"][s.buffer], [self.aff(b3, s.offset, env["loops"])],
                                     inbounds=True, source_etype=mem_type(s.value.dtype))
                        acc = b3.load(ptr, typ=mem_type(s.value.dtype))
                        for u in range(JAM):
                            env["loops"][0] = b3.add(row, ir.Constant(I64, u)) if u else row
                            x = self.node(b3, s.value, env, {}, ops)
                            acc = self.combine(b3, s, acc, x, ops, in_memory=True)
                        b3.store(acc, ptr)
                lo1, hi1 = bounds(b2, 1)
                self.loop(b2, lo1, hi1, inner, "j1")
            self.loop(bb, ir.Constant(I64, 0), passes, one_pass, "j0")
            self.loop(bb, rest, hi, body_at(1), "i0")

        def body_at(depth: int):
            def emit(bb: ir.IRBuilder, i: ir.Value | None) -> None:
                if i is not None:
                    env["loops"][depth - 1] = i
                if depth == 0 and jam:
                    jammed(bb)
                    return
                if depth == n_kept and reduced:
                    for s in reduced:
                        bb.store(self.reduce_init(s), accs[id(s)])
                        if id(s) in idxs:
                            bb.store(ir.Constant(I64, 0), idxs[id(s)])
                if depth == n_kept and blocked:
                    self.emit_blocks(bb, kernel, env, point, pairwise, blocked, accs)
                elif depth == len(kernel.domain):
                    point(bb)
                else:
                    lo, hi = bounds(bb, depth)
                    self.loop(bb, lo, hi, body_at(depth + 1), f"i{depth}")
                if depth == n_kept and reduced:
                    for s in tree:
                        self.tree_combine(bb, kernel, s, env, ops, accs[id(s)])
                    for s in zero_signs:
                        self.fix_zero_sign(bb, kernel, s, env, ops, accs[id(s)])
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
        # Register and alias buffers of loops are stack slots and swapped pointers, not arrays.
        seg.buffers = sorted(b for b in {b for k in seg.kernels for b in _kernel_buffers(k)}
                             if self.kp.buffers[b].role not in ("register", "alias", "scratch"))
        # Arguments: the arrays, [start, end) for a splittable segment, the status word, and the
        # parameter array when the program has run-time parameters. Each ctypes argument costs
        # tens of nanoseconds on every call, so none is passed that is not needed.
        extra = ([I64, I64] if seg.parallel else []) + [PTR] + ([PTR] if self.has_params else [])
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR] * len(seg.buffers) + extra), seg.name)
        fn.attributes.add("nounwind")
        rest = list(fn.args[len(seg.buffers):])
        start, end = (rest.pop(0), rest.pop(0)) if seg.parallel else (None, None)
        status = rest.pop(0)
        status.add_attribute("noalias")  # a ctypes word of its own: no array aliases it
        params = rest.pop(0) if self.has_params else ir.Constant(PTR, None)
        self.params = params
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ptrs: dict[int, ir.Value] = {}
        for bid, obj in zip(seg.buffers, fn.args):
            slot = b.gep(obj, [ir.Constant(I64, DATA_OFFSET)], inbounds=True, source_etype=I8)
            ptrs[bid] = b.load(slot, typ=PTR)
        render_loops.register_slots(self, b, seg.kernels, ptrs)
        seg.sets_status = False
        seg.range = (start, end)
        render_loops.emit_steps(self, b, seg.kernels, ptrs, status, params, seg)
        b.ret_void()
        return fn


def _smin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _smax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


# Arrays one segment may take: ctypes calls a function of at most 1024 arguments, and a segment
# takes its arrays, [start, end), the status word and the parameter array.
MAX_SEGMENT_BUFFERS = 1000


def segments_of(kp: KernelProgram) -> list[Segment | LibraryCall]:
    """Group consecutive kernels into segments (each taking at most MAX_SEGMENT_BUFFERS
    arrays); library calls stay separate steps."""
    out: list[Segment | LibraryCall] = []
    arrays: set[int] = set()  # the arrays of the last segment
    for i, step in enumerate(kp.steps):
        if isinstance(step, LibraryCall):
            out.append(step)
            continue
        mine = {b for b in _kernel_buffers(step) if kp.buffers[b].role not in ("register", "alias", "scratch")}
        if len(mine) > MAX_SEGMENT_BUFFERS:
            raise UnsupportedOperationError(
                f"step {step.name} reads and writes {len(mine)} arrays; a native call takes at most "
                f"{MAX_SEGMENT_BUFFERS} (ctypes' limit): split the function, or loop instead of unrolling")
        if splittable(step) and _elements(step) >= PARALLEL_MIN_ELEMENTS:
            out.append(Segment(f"segment_{len(out)}", [step], parallel=True, step_index=i))
        elif (out and isinstance(out[-1], Segment) and not out[-1].parallel
              and len(arrays | mine) <= MAX_SEGMENT_BUFFERS):
            out[-1].kernels.append(step)
            arrays |= mine
            continue
        else:
            out.append(Segment(f"segment_{len(out)}", [step], step_index=i))
        arrays = mine
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
