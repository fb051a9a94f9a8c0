"""Fusion: graph Program -> KernelProgram (loops with index maps, and library calls)."""
from .kernel_ir import Buffer, Compute, IndexValue, Kernel, KernelProgram, LibraryCall, Literal, Load, Store
from .schedule import schedule
from . import printer  # noqa: F401  (registers the text form of a KernelProgram)

__all__ = ["schedule", "Buffer", "Compute", "IndexValue", "Kernel", "KernelProgram", "LibraryCall",
           "Literal", "Load", "Store"]
