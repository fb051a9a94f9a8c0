"""The kernel IR: buffers, loop kernels whose bodies are scalar expression DAGs reading buffers
through index maps, and library calls. Shared by every backend: fusion decisions are made once,
a backend only renders it."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

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


def _value_key(value: Any) -> Any:
    """Equality of literal values: floats by bit pattern (0.0 and -0.0 differ, NaN equals
    itself), and the Python type counts (True and 1 and 1.0 are three literals)."""
    if isinstance(value, float):
        return (float, struct.pack("<d", value))
    return (type(value), value)


@dataclass(frozen=True, eq=False)
class Literal:
    value: Any  # a Python bool/int/float exactly representable in dtype
    dtype: np.dtype

    def _key(self) -> tuple:
        return (_value_key(self.value), self.dtype)

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is Literal and self._key() == other._key())

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True, eq=False)
class Compute:
    """An elementwise primitive applied to argument nodes (inputs have the loop dtypes).

    Equality is shallow: the same primitive, params and dtype applied to the *same* argument
    objects. Comparing whole DAGs structurally would cost time proportional to their size on
    every dictionary lookup (quadratic over a kernel, exponential on shared subexpressions)
    and recurse once per level. The builders (`Interner`) share equal argument nodes, which
    makes shallow equality structural. The hash is computed once, from the arguments' hashes.
    """

    prim: str
    args: tuple
    params: tuple  # sorted (name, value) pairs
    dtype: np.dtype

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.prim, self.params, self.dtype,
                                                tuple(hash(a) for a in self.args))))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not Compute or self._hash != other._hash:
            return False
        return (self.prim == other.prim and self.params == other.params and self.dtype == other.dtype
                and len(self.args) == len(other.args)
                and all(a is b or (type(a) is not Compute and a == b) for a, b in zip(self.args, other.args)))

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:  # not recursive: bodies can be hundreds of thousands of nodes deep
        return f"Compute({self.prim!r}, <{len(self.args)} args>, {self.params!r}, {self.dtype!r})"


@dataclass(frozen=True)
class IndexValue:
    """The value of an index expression (iota)."""

    index: Aff
    dtype: np.dtype


Node = Load | Literal | Compute | IndexValue


def postorder(roots: Iterable[Node], done: Any = ()) -> list[Node]:
    """Every node reachable from `roots` once (by identity), each after its arguments, in the
    order a left-to-right recursive walk would finish them; nodes in `done` (a container of
    nodes, e.g. a memo) and what only they reach are left out. Iterative: a body may be a
    chain of a hundred thousand operations."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen or root in done:
            continue
        seen.add(id(root))
        stack: list[tuple[Node, int]] = [(root, 0)]
        while stack:
            nd, i = stack[-1]
            args = nd.args if type(nd) is Compute else ()
            while i < len(args) and (id(args[i]) in seen or args[i] in done):
                i += 1
            if i < len(args):
                stack[-1] = (nd, i + 1)
                seen.add(id(args[i]))
                stack.append((args[i], 0))
            else:
                stack.pop()
                order.append(nd)
    return order


class Interner:
    """Shares equal nodes while a body is built: once the arguments of every node are the
    canonical objects, shallow equality (Compute.__eq__) is structural equality, so equal
    nodes are one object and are computed once per element."""

    def __init__(self) -> None:
        self._table: dict[Node, Node] = {}

    def __call__(self, nd: Node) -> Node:
        return self._table.setdefault(nd, nd)


def rebuild(roots: Iterable[Node], leaf: Callable[[Node], Node],
            compute: Callable[[Compute, tuple], Node] | None = None) -> dict[int, Node]:
    """Rebuild the DAGs under `roots` bottom-up without recursion: `leaf(nd)` gives the new
    node of a Load/Literal/IndexValue, `compute(nd, new_args)` that of a Compute (default: the
    same operation on the new arguments). Returns id(old node) -> new node; equal new nodes
    are shared (Interner)."""
    intern = Interner()
    new: dict[int, Node] = {}
    for nd in postorder(roots):
        if type(nd) is Compute:
            args = tuple(new[id(a)] for a in nd.args)
            r = compute(nd, args) if compute is not None else (
                nd if all(a is b for a, b in zip(args, nd.args)) else Compute(nd.prim, args, nd.params, nd.dtype))
        else:
            r = leaf(nd)
        new[id(nd)] = intern(r)
    return new


def count_computes(roots: Iterable[Node]) -> int:
    """Distinct Compute nodes under `roots` (what one evaluation of the body computes)."""
    return sum(1 for nd in postorder(roots) if type(nd) is Compute)


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
    # "free": a sum in any order (a dot's, ir/symdim_prims.py): reassociated, vectorised.
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
    return (st.block is not None and st.block != "free" and dt.kind == "f"
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
        dynamic = [s.offset for s in self.stores if s.offset.terms]
        while stack:
            nd = stack.pop()
            if id(nd) in seen:
                continue
            seen.add(id(nd))
            if isinstance(nd, Load):
                out.setdefault(nd.buffer, []).append(nd.offset)
                if nd.offset.terms:
                    dynamic.append(nd.offset)
            elif isinstance(nd, Compute):
                stack.extend(nd.args)
        for a in dynamic:  # run-time offsets read their start buffers (fusion/dynamic.py)
            for bid in value_buffers(a):
                out.setdefault(bid, []).append(_VALUE_READ)
        return out

    def buffers(self) -> list[int]:
        """Every buffer the kernel reads or writes, sorted."""
        return sorted(set(self.loads()) | {s.buffer for s in self.stores})


# The index map recorded for a buffer read as a run-time offset: equal to no store's offset, so no
# pass mistakes it for an element read (rows.py compares offsets).
_VALUE_READ = Aff((), -1)
# A gather (`Compute("take_at", (Load(x, GATHER_BASE), index))`, fusion/schedule.py) reads `x` at
# run-time indices: its Load names the buffer (so renames, liveness and read sets see it) through
# this map, which matches no store's offset, so no pass takes it for one element's read. The
# renderers evaluate it as the buffer's address, never as a load.
GATHER_BASE = _VALUE_READ


def value_buffers(a: Aff) -> list[int]:
    """Buffers whose values an index map reads (its ("val", ...) atoms, nested ones included)."""
    out = []
    for atom, _ in a.terms:
        if atom[0] == "val":
            out.append(atom[1])
        elif atom[0] != "i":
            out += value_buffers(atom[1])
    return out


def map_affs_by_buffer(kernel: Kernel, f) -> Kernel:
    """Rebuild `kernel` with every index map `a` replaced by `f(buffer id or None, a)`."""
    def leaf(nd: Node) -> Node:
        if isinstance(nd, Load):
            return Load(nd.buffer, f(nd.buffer, nd.offset), nd.dtype)
        if isinstance(nd, IndexValue):
            return IndexValue(f(None, nd.index), nd.dtype)
        return nd

    new = rebuild([s.value for s in kernel.stores], leaf)
    stores = [s.with_value(new[id(s.value)], f(s.buffer, s.offset),
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
    """A step run by a library: dot_general through NumPy's BLAS on the CPU, and every primitive
    of kind "library" (linear algebra, sorting, ...) through its reference implementation. One
    buffer per output of the primitive."""

    name: str
    prim: str
    params: dict[str, Any]
    inputs: list[int]
    outputs: list[int]
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
    # Input and output buffers (float, shape (..., 2)) that the caller sees as complex arrays:
    # buffer -> complex dtype. The runtime passes and returns views (passes/complex_lower.py).
    complex_views: dict[int, np.dtype] = field(default_factory=dict)

    def __str__(self) -> str:
        return _text_form(self)


def _no_text_form(kp: KernelProgram) -> str:
    raise RuntimeError("fusion/printer.py registers the text form of a KernelProgram when jitkernel.fusion is imported")


_text_form: Callable[[KernelProgram], str] = _no_text_form


def register_text_form(format_kernel_program: Callable[[KernelProgram], str]) -> None:
    """Set what `str(kernel_program)` returns. fusion/printer.py registers itself here: it reads
    these classes, so this module cannot import it."""
    global _text_form
    _text_form = format_kernel_program
