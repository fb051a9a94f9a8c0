"""The kernel IR: buffers, loop kernels whose bodies are scalar expression DAGs reading buffers
through index maps, and library calls. Shared by every backend: fusion decisions are made once,
a backend only renders it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir.types import short_dtype
from .index import Aff


@dataclass(frozen=True)
class Buffer:
    """A C-contiguous array the program reads or writes. role: input|const|temp|output, or
    scratch (one row per running row kernel, on its stack; see RowKernel)."""

    id: int
    shape: tuple[int, ...]
    dtype: np.dtype
    role: str
    position: int = -1  # index among the program's inputs, consts or outputs

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __str__(self) -> str:
        return f"%{self.id}:{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"


# -- scalar expression nodes (hashable: equal nodes are computed once per element) --------


@dataclass(frozen=True)
class Load:
    buffer: int
    offset: Aff
    dtype: np.dtype


@dataclass(frozen=True)
class Literal:
    value: Any  # a Python bool/int/float exactly representable in dtype
    dtype: np.dtype


@dataclass(frozen=True)
class Compute:
    """An elementwise primitive applied to argument nodes (inputs have the loop dtypes)."""

    prim: str
    args: tuple
    params: tuple  # sorted (name, value) pairs
    dtype: np.dtype


@dataclass(frozen=True)
class IndexValue:
    """The value of an index expression (iota)."""

    index: Aff
    dtype: np.dtype


Node = Load | Literal | Compute | IndexValue


@dataclass(frozen=True)
class Store:
    """Write `value` to buffer[offset] for every point of the kernel domain; with `reduce`, the
    values over the trailing reduced loops are combined first (argmax/argmin store
    `reduce_index`, the position inside the reduced loops, of the winner). A `reduce` store in
    a kernel without reduced loops accumulates in memory: the buffer is set to the identity
    first, then every point combines into buffer[offset] (offset ignores the reduced axes)."""

    buffer: int
    offset: Aff
    value: Node
    reduce: str | None = None  # sum|prod|max|min|and|or|argmax|argmin
    reduce_index: Aff | None = None
    # NumPy's block of a register reduction: the number of trailing elements of the reduced
    # loops (flattened in C order) that one call of NumPy's inner loop reduces, i.e. the
    # product of the trailing run of reduced axes. NumPy reduces each block alone (pairwise
    # for float sums) and combines blocks in order; renderers follow that order (None: any).
    # "tree": the combine of power-of-two chunk partials of one pairwise sum (a balanced tree).
    block: Any = None

    def with_value(self, value: Node, offset: Aff | None = None, reduce_index: Any = "same") -> "Store":
        """This store with another value (and index maps), every other field kept."""
        return Store(self.buffer, self.offset if offset is None else offset, value, self.reduce,
                     self.reduce_index if reduce_index == "same" else reduce_index, self.block)


def follows_numpy_blocks(st: Store) -> bool:
    """Does this register reduction's result depend on NumPy's order (Store.block)? Float sums
    (pairwise within a block, blocks added in order) and float16 products (accumulated in
    float32 within a block, rounded to float16 between blocks) do; integer and bool
    reductions, max/min and float32/float64 products (sequential) do not."""
    dt = st.value.dtype
    return (st.block is not None and dt.kind == "f"
            and (st.reduce == "sum" or (st.reduce == "prod" and dt.itemsize == 2)))


@dataclass
class Kernel:
    name: str
    domain: tuple[int, ...]  # loop extents, outermost first
    n_reduce: int  # how many trailing loops are reduced
    stores: list[Store]
    graph_ops: list[str] = field(default_factory=list)  # the fused graph equations, as text

    @property
    def kept(self) -> tuple[int, ...]:
        return self.domain[: len(self.domain) - self.n_reduce]

    def loads(self) -> dict[int, list[Aff]]:
        """Every buffer the kernel reads, with the index maps it reads it through."""
        out: dict[int, list[Aff]] = {}
        seen: set[int] = set()
        stack: list = [s.value for s in self.stores]
        while stack:
            nd = stack.pop()
            if id(nd) in seen:
                continue
            seen.add(id(nd))
            if isinstance(nd, Load):
                out.setdefault(nd.buffer, []).append(nd.offset)
            elif isinstance(nd, Compute):
                stack.extend(nd.args)
        return out

    def buffers(self) -> list[int]:
        """Every buffer the kernel reads or writes, sorted."""
        return sorted(set(self.loads()) | {s.buffer for s in self.stores})


def map_affs_by_buffer(kernel: Kernel, f) -> Kernel:
    """Rebuild `kernel` with every index map `a` replaced by `f(buffer id or None, a)`."""
    memo: dict = {}

    def node(nd: Node) -> Node:
        if nd in memo:
            return memo[nd]
        if isinstance(nd, Load):
            r = Load(nd.buffer, f(nd.buffer, nd.offset), nd.dtype)
        elif isinstance(nd, IndexValue):
            r = IndexValue(f(None, nd.index), nd.dtype)
        elif isinstance(nd, Compute):
            r = Compute(nd.prim, tuple(node(a) for a in nd.args), nd.params, nd.dtype)
        else:
            r = nd
        memo[nd] = r
        return r

    stores = [s.with_value(node(s.value), f(s.buffer, s.offset),
                           f(None, s.reduce_index) if s.reduce_index is not None else None) for s in kernel.stores]
    return Kernel(kernel.name, kernel.domain, kernel.n_reduce, stores, kernel.graph_ops)


@dataclass
class RowKernel:
    """Several kernels that share their outer loops (the rows of a softmax, a layer norm, a
    variance): for each outer index, the phases run in order, each over its own inner loops.
    A phase may read what an earlier phase wrote for the same row (row scalars, row
    temporaries). `scratch` buffers are row-local temporaries: one row of storage, private to
    the running kernel (a stack array), indexed without the outer part."""

    name: str
    outer: tuple[int, ...]
    phases: list[Kernel]  # each phase's domain starts with `outer`
    scratch: dict[int, int] = field(default_factory=dict)  # buffer id -> elements per row
    graph_ops: list[str] = field(default_factory=list)

    @property
    def domain(self) -> tuple[int, ...]:
        return self.outer


@dataclass
class LibraryCall:
    """A step run by a library (dot_general through NumPy's BLAS on the CPU)."""

    name: str
    prim: str
    params: dict[str, Any]
    inputs: list[int]
    output: int
    graph_ops: list[str] = field(default_factory=list)


@dataclass
class KernelProgram:
    name: str
    buffers: dict[int, Buffer]
    inputs: list[int]  # buffer per program input
    consts: list[tuple[int, np.ndarray]]  # buffer and value per constant
    outputs: list[int]  # buffer per program output
    steps: list[Kernel | RowKernel | LibraryCall]
    fusion_record: list[dict[str, Any]] = field(default_factory=list)

    def __str__(self) -> str:
        from .printer import format_kernel_program
        return format_kernel_program(self)
