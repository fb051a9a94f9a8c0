"""The passes over a scheduled KernelProgram, in their order: the same for a whole program
(fusion/schedule.py) and for a loop body or branch (fusion/schedule_control.py)."""
from __future__ import annotations

from .collapse import collapse_step
from .kernel_ir import KernelProgram
from .rows import fuse_rows, merge_siblings, split_full_reductions
from .split import split_large_kernels


def fuse_kernels(kp: KernelProgram) -> KernelProgram:
    """Row kernels and merged siblings, collapsed loop nests, split full reductions and bounded
    kernel sizes.

    >>> fuse_kernels(KernelProgram("empty", {}, [], [], [], [])).steps
    []
    """
    kp = fuse_rows(merge_siblings(kp))
    kp.steps = [collapse_step(step) for step in kp.steps]
    kp = merge_siblings(kp)  # loops that only became equal once collapsed (x.sum() with argmin)
    kp = split_full_reductions(kp)
    return split_large_kernels(kp)  # bound the size of one LLVM function
