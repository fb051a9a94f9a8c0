"""Control steps (fusion/loops.py) as LLVM control flow inside one native segment.

`emit_steps` emits a list of steps at the builder's position: a kernel is a call of its function,
a `LoopStep` a loop whose body calls the body's kernels, a `BranchStep` a `switch`. Array carries
are double-buffered by swapping two pointers (phis of the loop header); register carries, the loop
index and the body's 0-d temporaries are stack slots of the segment (`ptrs` maps them to allocas
made in the entry block), which SROA/mem2reg promote to registers once the kernels are inlined.
"""
from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from ...fusion.loops import BranchStep, LoopStep, touched_buffers
from .types import I1, I32, I64, I8, PTR, mem_type


def _nbytes(r, b: ir.IRBuilder, bid: int) -> ir.Value:
    buf = r.kp.buffers[bid]
    size: ir.Value = ir.Constant(I64, buf.dtype.itemsize)
    for n in buf.shape:
        size = b.mul(size, r.ival(b, n))
    return size


def _memcpy(r, b: ir.IRBuilder, dst: ir.Value, src: ir.Value, nbytes: ir.Value) -> None:
    fn = r.module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
    b.call(fn, [dst, src, nbytes, ir.Constant(I1, 0)])


def _load_i64(r, b: ir.IRBuilder, ptr: ir.Value, dt: np.dtype) -> ir.Value:
    """A 0-d integer (or bool) buffer's value as i64."""
    v = b.load(ptr, typ=mem_type(dt))
    width = mem_type(dt).width
    if width == 64:
        return v
    return b.sext(v, I64) if dt.kind == "i" else b.zext(v, I64)


def _copy_value(r, b: ir.IRBuilder, dst: ir.Value, src: ir.Value, bid: int) -> None:
    """Copy a carry's value: one element (a register carry) or the whole buffer."""
    buf = r.kp.buffers[bid]
    if not buf.shape:
        ty = mem_type(buf.dtype)
        b.store(b.load(src, typ=ty), dst)
    else:
        _memcpy(r, b, dst, src, _nbytes(r, b, bid))


def emit_steps(r, b: ir.IRBuilder, steps: list, ptrs: dict, status: ir.Value, params: ir.Value, seg) -> None:
    for step in steps:
        if isinstance(step, LoopStep):
            _emit_loop(r, b, step, ptrs, status, params, seg)
        elif isinstance(step, BranchStep):
            _emit_branch(r, b, step, ptrs, status, params, seg)
        else:
            _emit_kernel(r, b, step, ptrs, status, params, seg)


def _uses(fn: ir.Function, arg: ir.Argument) -> bool:
    """Does any instruction of `fn` read `arg`? (Kernels are leaves: they call only libm and
    intrinsics, so a direct operand is the only way to reach the status word.)"""
    return any(arg in getattr(ins, "operands", ()) for bb in fn.blocks for ins in bb.instructions)


def _emit_kernel(r, b, kernel, ptrs, status, params, seg) -> None:
    kfn, used = r.render_kernel(kernel)
    seg.sets_status |= _uses(kfn, kfn.args[len(used) + 2])
    r.params = params
    if seg.parallel:  # the caller chooses the range of the outer loop
        lo, hi = seg.range
    else:
        lo = ir.Constant(I64, 0)
        hi = r.ival(b, kernel.domain[0]) if kernel.domain else ir.Constant(I64, 1)
    b.call(kfn, [ptrs[bid] for bid in used] + [lo, hi, status, params])


def _init_carries(r, b, step: LoopStep, ptrs: dict) -> None:
    for c in step.carries:
        if c.spare is None and not c.in_place:
            _copy_value(r, b, ptrs[c.cur], ptrs[c.init], c.out)
        elif c.init != c.out:
            _copy_value(r, b, ptrs[c.out], ptrs[c.init], c.out)


def _emit_loop(r, b: ir.IRBuilder, step: LoopStep, ptrs: dict, status, params, seg) -> None:
    fn = b.function
    arrays = [c for c in step.carries if c.spare is not None]
    registers = [c for c in step.carries if c.spare is None and not c.in_place]
    for c in step.carries:
        if c.in_place:  # updated in the output buffer itself: no second buffer, no swap
            ptrs[c.cur] = ptrs[c.out]
    if step.kind == "fori":
        lo = _load_i64(r, b, ptrs[step.lower], r.kp.buffers[step.lower].dtype)
        hi = _load_i64(r, b, ptrs[step.upper], r.kp.buffers[step.upper].dtype)
    _init_carries(r, b, step, ptrs)
    pre = b.block
    head = fn.append_basic_block(f"{step.name}.head")
    body = fn.append_basic_block(f"{step.name}.body")
    done = fn.append_basic_block(f"{step.name}.exit")
    b.branch(head)
    b.position_at_end(head)
    cur_phi, nxt_phi = {}, {}
    for c in arrays:
        cur_phi[c.cur] = p = b.phi(PTR, name=f"{step.name}.cur")
        p.add_incoming(ptrs[c.out], pre)
        nxt_phi[c.nxt] = q = b.phi(PTR, name=f"{step.name}.nxt")
        q.add_incoming(ptrs[c.spare], pre)
    for c in arrays:
        ptrs[c.cur], ptrs[c.nxt] = cur_phi[c.cur], nxt_phi[c.nxt]
    if step.kind == "fori":
        i = b.phi(I64, name=f"{step.name}.i")
        i.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", i, hi), body, done)
    else:
        emit_steps(r, b, step.cond, ptrs, status, params, seg)
        flag = b.load(ptrs[step.cond_out], typ=I8)
        # A run-time error flagged in the status word (a traced index out of bounds, in the
        # condition or the body) stops the loop: the call raises NumPy's error after the run, and
        # the clamped value that was read must not keep the loop going (`while x[i] > 0: i += 1`
        # ran forever once i passed the end).
        ok = b.icmp_unsigned("==", b.load(status, typ=I32), ir.Constant(I32, 0))
        b.cbranch(b.and_(b.icmp_unsigned("!=", flag, ir.Constant(I8, 0)), ok), body, done)
    b.position_at_end(body)
    if step.kind == "fori":
        idt = r.kp.buffers[step.index].dtype
        ty = mem_type(idt)
        b.store(i if ty.width == 64 else b.trunc(i, ty), ptrs[step.index])
    emit_steps(r, b, step.body, ptrs, status, params, seg)
    for c in registers:
        _copy_value(r, b, ptrs[c.cur], ptrs[c.nxt], c.out)
    latch = b.block
    for c in arrays:
        cur_phi[c.cur].add_incoming(nxt_phi[c.nxt], latch)
        nxt_phi[c.nxt].add_incoming(cur_phi[c.cur], latch)
    if step.kind == "fori":
        i.add_incoming(b.add(i, ir.Constant(I64, 1), flags=("nsw",)), latch)
    b.branch(head)
    b.position_at_end(done)
    for c in registers:
        _copy_value(r, b, ptrs[c.out], ptrs[c.cur], c.out)
    for c in arrays:
        # The last iteration's value is in `out` or in the spare, by the parity of the trip count.
        moved = fn.append_basic_block(f"{step.name}.copyout")
        after = fn.append_basic_block(f"{step.name}.after")
        final = cur_phi[c.cur]
        b.cbranch(b.icmp_unsigned("!=", final, ptrs[c.out]), moved, after)
        b.position_at_end(moved)
        _copy_value(r, b, ptrs[c.out], final, c.out)
        b.branch(after)
        b.position_at_end(after)


def _emit_branch(r, b: ir.IRBuilder, step: BranchStep, ptrs: dict, status, params, seg) -> None:
    fn = b.function
    n = len(step.branches)
    k = _load_i64(r, b, ptrs[step.index], r.kp.buffers[step.index].dtype)
    # lax.switch's rule: the index is clamped to the branch range.
    k = b.select(b.icmp_signed("<", k, ir.Constant(I64, 0)), ir.Constant(I64, 0), k)
    k = b.select(b.icmp_signed(">", k, ir.Constant(I64, n - 1)), ir.Constant(I64, n - 1), k)
    blocks = [fn.append_basic_block(f"{step.name}.b{j}") for j in range(n)]
    merge = fn.append_basic_block(f"{step.name}.end")
    sw = b.switch(k, blocks[-1])
    for j in range(n - 1):
        sw.add_case(ir.Constant(I64, j), blocks[j])
    for j, steps in enumerate(step.branches):
        b.position_at_end(blocks[j])
        emit_steps(r, b, steps, ptrs, status, params, seg)
        b.branch(merge)
    b.position_at_end(merge)


def register_slots(r, allocas: ir.IRBuilder, steps: list, ptrs: dict) -> None:
    """A stack slot for every register buffer of the segment's steps (loop carries and indices,
    checked dynamic starts)."""
    for step in steps:
        for bid in sorted(touched_buffers(step)):
            buf = r.kp.buffers[bid]
            if buf.role == "register" and bid not in ptrs:
                ptrs[bid] = allocas.alloca(mem_type(buf.dtype), name=f"reg{bid}")
