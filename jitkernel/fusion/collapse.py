"""Loop-nest simplification of scheduled kernels: size-1 loops vanish and neighbouring loops of
the same kind merge into one wherever every index map stays as simple (fewer, longer loops for
LLVM to vectorise)."""
from __future__ import annotations

from typing import Any

from . import index as ix
from .index import Aff
from .kernel_ir import IndexValue, Kernel, Load, RowKernel, map_affs_by_buffer, postorder


def _map_affs(kernel: Kernel, f) -> Kernel:
    return map_affs_by_buffer(kernel, lambda _bid, a: f(a))


def _all_affs(kernel: Kernel) -> list[Aff]:
    out: list[Aff] = []
    for st in kernel.stores:
        out.append(st.offset)
        if st.reduce_index is not None:
            out.append(st.reduce_index)
    for nd in postorder(st.value for st in kernel.stores):
        if isinstance(nd, Load):
            out.append(nd.offset)
        elif isinstance(nd, IndexValue):
            out.append(nd.index)
    return out


def _nonlinear_count(kernel: Kernel) -> int:
    return sum(len([t for t in a.terms if t[0][0] != "i"]) for a in _all_affs(kernel))


def collapse_step(step: Any) -> Any:
    if isinstance(step, Kernel):
        return collapse_kernel(step)
    if isinstance(step, RowKernel):
        step.phases = [collapse_kernel(p, first=len(step.outer)) for p in step.phases]
    return step


def collapse_kernel(kernel: Kernel, first: int = 0) -> Kernel:
    """Drop size-1 loops and merge adjacent loops of the same kind (kept/reduced) whenever every
    index map stays as simple: `(a, b)` contiguous loops become one loop of `a*b`. Loops before
    `first` (a row kernel's shared outer loops) are left alone."""
    # 1. size-1 loops vanish.
    while True:
        # Inside a row kernel a reduction keeps at least one reduced loop: without one it would
        # become a memory-accumulated reduction, whose fill pass covers the whole buffer.
        ones = [d for d, n in enumerate(kernel.domain) if n == 1 and d >= first
                and not (first and kernel.n_reduce == 1 and d >= len(kernel.kept))]
        if not ones:
            break
        d = ones[0]
        domain = kernel.domain[:d] + kernel.domain[d + 1:]
        n_reduce = kernel.n_reduce - (1 if d >= len(kernel.kept) else 0)
        mapping = {j: (ix.const(0) if j == d else ix.var(j - 1 if j > d else j)) for j in range(len(kernel.domain))}
        kernel = _map_affs(Kernel(kernel.name, domain, n_reduce, kernel.stores, kernel.graph_ops),
                           lambda a, m=mapping, e=domain: ix.substitute(a, m, e))
    # 2. merge neighbours, innermost pairs first.
    changed = True
    while changed:
        changed = False
        n_kept = len(kernel.kept)
        for d in range(len(kernel.domain) - 2, first - 1, -1):
            if (d < n_kept) != (d + 1 < n_kept):
                continue
            inner = kernel.domain[d + 1]
            domain = kernel.domain[:d] + (kernel.domain[d] * inner,) + kernel.domain[d + 2:]
            mapping = {}
            for j in range(len(kernel.domain)):
                if j == d:
                    mapping[j] = ix.floordiv(ix.var(d), inner, domain)
                elif j == d + 1:
                    mapping[j] = ix.mod(ix.var(d), inner, domain)
                elif j > d + 1:
                    mapping[j] = ix.var(j - 1)
            n_reduce = kernel.n_reduce - (1 if d >= n_kept else 0)
            candidate = _map_affs(Kernel(kernel.name, domain, n_reduce, kernel.stores, kernel.graph_ops),
                                  lambda a, m=mapping, e=domain: ix.substitute(a, m, e))
            if _nonlinear_count(candidate) <= _nonlinear_count(kernel):
                kernel, changed = candidate, True
                break
    return kernel
