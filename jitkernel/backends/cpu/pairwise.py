"""NumPy's pairwise summation of a contiguous buffer, compiled once per process.

`jk_pairwise_f32(ptr, n)` / `jk_pairwise_f64(ptr, n)` return exactly what NumPy's
FLOAT_pairwise_sum / DOUBLE_pairwise_sum (numpy/_core/src/umath/loops_utils.h.src) return for
the same n values: below 8 elements a sequential sum from -0.0; up to PW_BLOCKSIZE (128) eight
accumulators r[j] over the strided groups of 8, combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)),
then the remainder in order; above, recursive halving at n2 = n/2 - (n/2) % 8. The 8
accumulators are one 8-lane vector, so the additions and their order are NumPy's.

Nodes whose recursion is a perfect tree of 4 or 8 equal leaves (n % 64 == 0 and n <= 512, or
n % 128 == 0 and n <= 1024) run their leaves side by side: the same additions, but 4 or 8
independent chains instead of one latency-bound chain.

Kernels materialise the values of a NumPy block (or of a subtree of it) into a stack buffer
and call these functions (render.py), so the summation code is compiled once per process, not
into every kernel; each compiled library imports their addresses (`addresses`).
"""
from __future__ import annotations

import threading

import llvmlite.ir as ir

from . import compiler, vector_math
from .types import F32, F64, I32, I64, PTR

LEAF = 128  # NumPy's PW_BLOCKSIZE
SYMBOLS = {"float32": "jk_pairwise_f32", "float64": "jk_pairwise_f64"}
_lock = threading.Lock()


def symbol(acc_dtype_name: str) -> str:
    return SYMBOLS[acc_dtype_name]


def declare(module: ir.Module, acc_type: ir.Type) -> ir.Function:
    name = SYMBOLS["float32" if acc_type == F32 else "float64"]
    if name in module.globals:
        return module.globals[name]
    fn = ir.Function(module, ir.FunctionType(acc_type, [PTR, I64]), name)
    fn.attributes.add("nounwind")
    fn.args[0].add_attribute("noalias")
    return fn


def tree8(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    x = [b.extract_element(v, ir.Constant(I32, j)) for j in range(8)]
    return b.fadd(b.fadd(b.fadd(x[0], x[1]), b.fadd(x[2], x[3])), b.fadd(b.fadd(x[4], x[5]), b.fadd(x[6], x[7])))


def tree(b: ir.IRBuilder, vals: list[ir.Value]) -> ir.Value:
    while len(vals) > 1:
        vals = [b.fadd(vals[i], vals[i + 1]) for i in range(0, len(vals), 2)]
    return vals[0]


def _chains(b: ir.IRBuilder, ty: ir.Type, a: ir.Value, length: ir.Value, k: int) -> list[ir.Value]:
    """k leaves of `length` elements (a multiple of 8) at a, a+length, ...: each leaf's 8
    accumulators as 8 vector lanes, run side by side; returns each leaf's tree8 total. float32
    leaves go two to a 16-lane vector (leaf q in lanes 0-7, leaf q+1 in lanes 8-15): every lane
    still adds its own elements in NumPy's order, with half the vector additions."""
    fn = b.function
    pack = 2 if ty == F32 and k % 2 == 0 else 1
    vec = ir.VectorType(ty, 8 * pack)
    init = ir.Constant(vec, [ir.Constant(ty, -0.0)] * (8 * pack))
    groups = b.lshr(length, ir.Constant(I64, 3))
    pre = b.block
    body = fn.append_basic_block(f"chains{k}")
    after = fn.append_basic_block(f"chains{k}.end")
    b.cbranch(b.icmp_signed("<", ir.Constant(I64, 0), groups), body, after)
    b.position_at_end(body)
    g = b.phi(I64)
    g.add_incoming(ir.Constant(I64, 0), pre)
    rs = [b.phi(vec) for _ in range(k // pack)]
    for r in rs:
        r.add_incoming(init, pre)
    offset = b.shl(g, ir.Constant(I64, 3))
    align = 4 if ty == F32 else 8

    def leaf_load(q: int) -> ir.Value:
        start = offset if q == 0 else b.add(offset, b.mul(length, ir.Constant(I64, q)))
        ptr = b.gep(a, [start], inbounds=True, source_etype=ty)
        return b.load(ptr, typ=ir.VectorType(ty, 8), align=align)

    new = []
    for p, r in enumerate(rs):
        if pack == 1:
            v = leaf_load(p)
        else:
            v = b.shuffle_vector(leaf_load(2 * p), leaf_load(2 * p + 1), ir.Constant(ir.VectorType(I32, 16), list(range(16))))
        new.append(b.fadd(r, v))
    nxt = b.add(g, ir.Constant(I64, 1), flags=("nsw", "nuw"))
    latch = b.block
    g.add_incoming(nxt, latch)
    for r, n in zip(rs, new):
        r.add_incoming(n, latch)
    b.cbranch(b.icmp_signed("<", nxt, groups), body, after)
    b.position_at_end(after)
    phis = []
    for n in new:
        phi = b.phi(vec)
        phi.add_incoming(init, pre)
        phi.add_incoming(n, latch)
        phis.append(phi)
    out = []
    for phi in phis:
        if pack == 1:
            out.append(tree8(b, phi))
            continue
        for half in (0, 1):
            lanes = b.shuffle_vector(phi, phi, ir.Constant(ir.VectorType(I32, 8), list(range(8 * half, 8 * half + 8))))
            out.append(tree8(b, lanes))
    return out


def _define(module: ir.Module, ty: ir.Type) -> None:
    fn = declare(module, ty)
    a, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    leaf = fn.append_basic_block("leaf")
    not_leaf = fn.append_basic_block("not_leaf")
    split = fn.append_basic_block("split")
    b.cbranch(b.icmp_signed("<=", n, ir.Constant(I64, LEAF)), leaf, not_leaf)

    b.position_at_end(leaf)
    m8 = b.and_(n, ir.Constant(I64, -8))
    (res,) = _chains(b, ty, a, m8, 1)
    tail_pre = b.block
    tail = fn.append_basic_block("tail")
    done = fn.append_basic_block("tail.end")
    b.cbranch(b.icmp_signed("<", m8, n), tail, done)
    b.position_at_end(tail)
    i = b.phi(I64)
    acc = b.phi(ty)
    i.add_incoming(m8, tail_pre)
    acc.add_incoming(res, tail_pre)
    x = b.load(b.gep(a, [i], inbounds=True, source_etype=ty), typ=ty)
    acc2 = b.fadd(acc, x)
    i2 = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(i2, tail)
    acc.add_incoming(acc2, tail)
    b.cbranch(b.icmp_signed("<", i2, n), tail, done)
    b.position_at_end(done)
    out = b.phi(ty)
    out.add_incoming(res, tail_pre)
    out.add_incoming(acc2, tail)
    b.ret(out)

    # Perfect trees of 4 and 8 leaves: LEAF*k/2 < n <= LEAF*k and n % (16*k) == 0 (leaves of
    # n/k, no rest), each a straight-line sum of k chains; anything else splits in halves.
    b.position_at_end(not_leaf)
    for leaves, shift in ((4, 2), (8, 3)):
        perfect = fn.append_basic_block(f"tree{leaves}")
        other = fn.append_basic_block(f"not_tree{leaves}") if leaves == 4 else split
        fits = b.and_(b.icmp_unsigned("==", b.and_(n, ir.Constant(I64, 16 * leaves - 1)), ir.Constant(I64, 0)),
                      b.and_(b.icmp_signed(">", n, ir.Constant(I64, leaves // 2 * LEAF)),
                             b.icmp_signed("<=", n, ir.Constant(I64, leaves * LEAF))))
        b.cbranch(fits, perfect, other)
        b.position_at_end(perfect)
        b.ret(tree(b, _chains(b, ty, a, b.lshr(n, ir.Constant(I64, shift)), leaves)))
        b.position_at_end(other)

    half = b.and_(b.lshr(n, ir.Constant(I64, 1)), ir.Constant(I64, -8))
    left = b.call(fn, [a, half])
    right = b.call(fn, [b.gep(a, [half], inbounds=True, source_etype=ty), b.sub(n, half)])
    b.ret(b.fadd(left, right))


def module_ir(triple: str, data_layout: str) -> str:
    module = ir.Module(name="jk_pairwise")
    module.triple = triple
    module.data_layout = data_layout
    for ty in (F32, F64):
        _define(module, ty)
    return str(module)


_library = None  # the linked runtime: kept for the life of the process (kernels call into it)


def addresses() -> dict[str, int]:
    """Addresses of the pairwise functions, compiled for this CPU and linked on first use."""
    global _library
    with _lock:
        if _library is None:
            tm = compiler.shared_target_machine()
            mod = compiler.parse_and_verify(vector_math.prefer_full_width(module_ir(tm.triple, str(tm.target_data))))
            compiler.optimize(mod)
            _library = compiler.JitLibrary(compiler.emit_object(mod), list(SYMBOLS.values()))
        return dict(_library.addresses)
