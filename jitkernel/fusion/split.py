"""Cap the size of one generated function: a kernel whose body computes more than
`MAX_KERNEL_COMPUTES` operations per element is split into several kernels over the same loops.

LLVM's optimiser and code generator are superlinear in the size of a function (measured in
docs/performance.md, "Compile time against program size"): a 10^5-operation loop body would
take minutes. The body's operations are cut, in evaluation order, into consecutive parts of at
most the cap; a value one part computes and a later part reads is stored to a temporary over the
kernel's whole loop nest (all loops, reduced ones included) and loaded back. Every part but the
last is an elementwise kernel; the last one keeps the original stores (and reductions). Loads,
literals and index values are repeated in each part that uses them rather than stored.
"""
from __future__ import annotations

from typing import Any

from . import index as ix
from .kernel_ir import Buffer, Compute, Kernel, KernelProgram, Load, Node, Store, postorder

# Operations per loop body. Chosen by measurement (docs/performance.md): below this, LLVM's O3 and
# code generation cost a constant ~0.1-0.2 ms per operation; above a few thousand the cost per
# operation grows with the function's size.
MAX_KERNEL_COMPUTES = 1000


def kernel_computes(kernel: Kernel) -> int:
    """Distinct operations one point of the kernel's loop nest evaluates."""
    return sum(1 for nd in postorder(s.value for s in kernel.stores) if type(nd) is Compute)


def split_large_kernels(kp: KernelProgram, cap: int | None = None) -> KernelProgram:
    """Replace every Kernel step with more than `cap` (default MAX_KERNEL_COMPUTES, read at
    call time) operations by parts of at most `cap`."""
    cap = MAX_KERNEL_COMPUTES if cap is None else cap
    steps: list[Any] = []
    next_id = [max(kp.buffers, default=-1) + 1]  # new temporaries' ids, without a scan per kernel
    for step in kp.steps:
        if isinstance(step, Kernel) and kernel_computes(step) > cap:
            steps.extend(_split(kp, step, cap, next_id))
        else:
            steps.append(step)
    kp.steps = steps
    return kp


def _split(kp: KernelProgram, kernel: Kernel, cap: int, next_id: list[int]) -> list[Kernel]:
    order = postorder(s.value for s in kernel.stores)
    computes = [nd for nd in order if type(nd) is Compute]
    part_of = {id(nd): i // cap for i, nd in enumerate(computes)}
    last = (len(computes) - 1) // cap
    # Values read by a later part than the one computing them get a temporary.
    exported: dict[int, Node] = {}
    for nd in computes:
        for a in nd.args:
            if type(a) is Compute and part_of[id(a)] < part_of[id(nd)]:
                exported[id(a)] = a
    for st in kernel.stores:
        if type(st.value) is Compute and part_of[id(st.value)] < last:
            exported[id(st.value)] = st.value
    offset = ix.linearize([ix.var(d) for d in range(len(kernel.domain))], kernel.domain)
    temp: dict[int, int] = {}
    for key, nd in exported.items():
        bid = next_id[0]
        kp.buffers[bid] = Buffer(bid, tuple(kernel.domain), nd.dtype, "temp")
        temp[key], next_id[0] = bid, bid + 1

    def arg(a: Node, part: int, built: dict[int, Node]) -> Node:
        if type(a) is not Compute:
            return a
        if part_of[id(a)] == part:
            return built[id(a)]
        return Load(temp[id(a)], offset, a.dtype)

    parts: list[list[Compute]] = [[] for _ in range(last + 1)]
    for nd in computes:
        parts[part_of[id(nd)]].append(nd)
    out: list[Kernel] = []
    for p, members in enumerate(parts):
        built: dict[int, Node] = {}
        for nd in members:
            built[id(nd)] = Compute(nd.prim, tuple(arg(a, p, built) for a in nd.args), nd.params, nd.dtype)
        if p < last:
            stores = [Store(temp[id(nd)], offset, built[id(nd)]) for nd in members if id(nd) in temp]
            out.append(Kernel(f"{kernel.name}_part{p}", kernel.domain, 0, stores, []))
        else:
            stores = [s.with_value(arg(s.value, p, built)) for s in kernel.stores]
            out.append(Kernel(kernel.name, kernel.domain, kernel.n_reduce, stores, kernel.graph_ops))
    return out
