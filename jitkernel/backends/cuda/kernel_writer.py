"""The C text and launches of one fused kernel of the kernel IR: a `Kernel` (KernelWriter) or a
`RowKernel` (RowKernelWriter), mapped onto the GPU's execution model (render.py's docstring
describes the kinds: elementwise, rows, warp rows, columns, two stages, row kernels).
"""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOperationError
from ...fusion.index import Aff
from ...fusion.kernel_ir import (GATHER_BASE, Compute, IndexValue, Kernel, KernelProgram, Literal, Load, RowKernel, Store,
                                 postorder)
from ...fusion.params import Param
from ...ir import semantics
from . import ctype, ops
from .dynamic_params import (Ext, _is_int, _ll, extent, extent_product, has_params, run_time_literal,
                             stable_text)
from .launch import Launch
from .names import PLACEHOLDER, kernel_name
from .row_staging import inner_offset, row_index, staged_rows

# A reduction over outer axes runs one thread per kept point ("columns") when there are enough
# kept points to fill the GPU, or so few reduced points that a block per kept point would idle.
COLUMNS_MIN_KEPT = 4096
COLUMNS_MAX_REDUCED = 256
# A reduction whose rows have at most this many reduced points (a compile-time extent) runs one
# warp per kept point ("warp_rows"): at most 8 points per lane, where a block per row (256
# threads on the GPU) would leave most of its threads idle and pay two __syncthreads and a
# shared-memory round per row. Longer rows, and run-time extents of a shape-generic program
# (the source must not change with the size: dynamic_params.py), keep a block per kept point.
WARP_ROWS_MAX_REDUCED = 256


def _needs_position(st: Store) -> bool:
    """argmax/argmin, and float max/min (ties between zeros resolve by position)."""
    return st.reduce in ("argmax", "argmin") or (st.reduce in ("max", "min") and st.value.dtype.kind == "f")


class KernelWriter:
    """The C text and launches of one `Kernel`."""

    def __init__(self, kp: KernelProgram, kernel: Kernel, scratch: dict[int, int] | None = None) -> None:
        self.kp, self.k = kp, kernel
        self.scratch_rows = scratch or {}  # a row kernel's phase: row scratch buffer -> elements per row
        self.staged: dict = {}  # a row kernel's phase: input buffer -> its row in shared memory (row_staging.py)
        self.row = None  # ... and the running row's index over the outer loops (an Aff)
        self.domain = [extent(n) for n in kernel.domain]
        self.with_params = has_params(kp)
        self.base = kernel_name(PLACEHOLDER, kernel.name)
        self.reduced = [s for s in kernel.stores if s.reduce]
        self.plain = [s for s in kernel.stores if not s.reduce]
        self.written = {s.buffer for s in kernel.stores}
        self.buffers = kernel.buffers()
        for bid in self.buffers:
            ctype.check_dtype(kp.buffers[bid].dtype)

    # -- the parts of a kernel -------------------------------------------------------------
    def render(self) -> tuple[str, list[Launch]]:
        if not self.reduced:
            return self.elementwise()
        if not self.k.n_reduce and 0 in self.domain:
            return self.fill_identity()
        kept, red = self.split_loops()
        n_kept = self.extent(kept)
        n_red = self.extent(red)
        if n_kept == 1:
            return self.two_stage(kept, red)
        if not self.k.n_reduce and (n_kept >= COLUMNS_MIN_KEPT or n_red <= COLUMNS_MAX_REDUCED):
            return self.columns(kept, red)
        return self.rows(kept, red)

    def split_loops(self, first: int = 0) -> tuple[list[int], list[int]]:
        """Kept and reduced loop variables from loop `first` on (a row kernel's phase: after
        the outer loops). A kernel without reduced loops accumulates its reduce stores in memory
        on the CPU: its kept variables are those the stores index."""
        nd = len(self.domain)
        if self.k.n_reduce:
            n_kept = nd - self.k.n_reduce
            return list(range(first, n_kept)), list(range(n_kept, nd))
        sets = []
        for st in self.reduced:
            if st.reduce in ("argmax", "argmin"):
                # reduced over no loop: every point is kept
                sets.append(frozenset(d for d in range(first, nd) if self.domain[d] > 1))
            else:
                sets.append(frozenset(d for d in self.store_index_vars(st) if d >= first))
        if len(set(sets)) != 1:
            raise UnsupportedOperationError(
                f"kernel {self.k.name}: reductions over different axes accumulated in one kernel are not "
                "supported by the CUDA backend yet")
        kept = sorted(sets[0])
        return kept, [d for d in range(first, nd) if d not in sets[0]]

    def store_index_vars(self, st: Store) -> list[int]:
        """The loop variables a memory-accumulated store indexes, checked to be a one-to-one
        (mixed-radix) map onto its buffer, so that each kept point owns one element."""
        terms = st.offset.terms
        if any(atom[0] != "i" for atom, _ in terms) or st.offset.const != 0:
            raise UnsupportedOperationError(
                f"kernel {self.k.name}: a reduction stored through a non-linear index map is not supported by the "
                "CUDA backend yet")
        pairs = sorted(((c, atom[1]) for atom, c in terms if self.domain[atom[1]] > 1))
        stride = 1
        for c, d in pairs:
            if c != stride:
                raise UnsupportedOperationError(
                    f"kernel {self.k.name}: a reduction whose stores overlap is not supported by the CUDA backend yet")
            stride *= self.domain[d]
        size = self.scratch_rows.get(st.buffer) or int(extent_product(list(self.kp.buffers[st.buffer].shape)))
        if stride != size:
            raise UnsupportedOperationError(
                f"kernel {self.k.name}: a reduction that does not cover its output is not supported by the CUDA "
                "backend yet")
        return [d for _, d in pairs]

    # -- signatures --------------------------------------------------------------------------
    def signature(self, name: str, extra: list[tuple[str, tuple]]) -> tuple[str, list[tuple]]:
        args, params = [], []
        for bid in self.buffers:
            dt = self.kp.buffers[bid].dtype
            const = "" if bid in self.written else "const "
            args.append(f"{const}{ctype.mem(dt)}* __restrict__ b{bid}")
            params.append(("buf", bid))
        for decl, what in extra:
            args.append(decl)
            params.append(what)
        if self.with_params:  # the run-time parameters of a shape-generic program
            args.append("const long long* __restrict__ jk_params")
            params.append(("params",))
        args.append("unsigned int* __restrict__ jk_status")
        params.append(("status",))
        return f'extern "C" __global__ void {name}(\n    ' + ",\n    ".join(args) + ")", params

    def work_args(self) -> list[tuple[str, tuple]]:
        out = []
        for k, st in enumerate(self.reduced):
            acc = semantics.accumulator_dtype(st.reduce, st.value.dtype)
            out.append((f"{ctype.reg(acc)}* __restrict__ w{k}", ("work", k, "val")))
            if _needs_position(st):
                out.append((f"long long* __restrict__ wp{k}", ("work", k, "pos")))
        return out

    def work_spec(self) -> list[tuple[int, np.dtype, bool]]:
        return [(k, semantics.accumulator_dtype(st.reduce, st.value.dtype), _needs_position(st))
                for k, st in enumerate(self.reduced)]

    def comment(self) -> str:
        ops_ = stable_text(self.kp, "; ".join(self.k.graph_ops)) if self.k.graph_ops else ""
        dom = ", ".join(f"i{d}<{n}" for d, n in enumerate(self.domain))
        return f"\n/* {self.k.name}: over [{dom}]{' (' + str(self.k.n_reduce) + ' reduced)' if self.k.n_reduce else ''}" \
               + (f"\n   fuses: {ops_}" if ops_ else "") + " */\n"

    # -- kernel kinds --------------------------------------------------------------------------
    def elementwise(self) -> tuple[str, list[Launch]]:
        total = extent_product(self.domain)
        sig, params = self.signature(self.base, [])
        lines = [self.comment() + sig + " {",
                 f"  const long long n = {self.ll(total)};",
                 "  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n;",
                 "       t += (long long)blockDim.x * gridDim.x) {"]
        lines += self.unravel("t", list(range(len(self.domain))), "    ")
        lines += self.point(self.plain, [], "    ")
        lines += ["  }", "}"]
        return "\n".join(lines), [Launch(self.base, "elementwise", total, params)]

    def rows(self, kept: list[int], red: list[int]) -> tuple[str, list[Launch]]:
        n_kept = self.extent(kept)
        n_red = self.extent(red)
        if not isinstance(n_red, Ext) and n_red <= WARP_ROWS_MAX_REDUCED:
            return self.warp_rows(kept, red)
        sig, params = self.signature(self.base, [])
        lines = [self.comment() + sig + " {",
                 f"  const long long n_rows = {self.ll(n_kept)}, n_red = {self.ll(n_red)};",
                 "  for (long long row = blockIdx.x; row < n_rows; row += gridDim.x) {"]
        lines += self.accumulate("row", kept, red, "for (long long r = threadIdx.x; r < n_red; r += blockDim.x)")
        lines += self.block_reduce("    ")
        lines += ["    if (threadIdx.x == 0) {"]
        lines += self.final_stores(red, "      ")
        lines += ["    }", "    __syncthreads();  /* the shared slots are reused by the next row */", "  }", "}"]
        return "\n".join(lines), [Launch(self.base, "rows", n_kept, params)]

    def warp_rows(self, kept: list[int], red: list[int]) -> tuple[str, list[Launch]]:
        """A reduction with short rows (WARP_ROWS_MAX_REDUCED): one warp per kept point
        (grid-stride over kept points by warps), its lanes strided over the reduced points, the
        combine in warp shuffles only (no shared memory, no __syncthreads). A warp's row is the
        same for its 32 lanes, so a warp past the last row leaves the loop as a whole and every
        shuffle has all 32 lanes (the full mask). The order of the combine depends on nothing
        but the row: the same input gives the same bits for any launch shape."""
        n_kept = self.extent(kept)
        n_red = self.extent(red)
        sig, params = self.signature(self.base, [])
        lines = [self.comment() + "/* warp rows: one warp per kept point, lanes over its reduced points */",
                 sig + " {",
                 f"  const long long n_rows = {self.ll(n_kept)}, n_red = {self.ll(n_red)};",
                 "  const long long jk_warps = blockDim.x >> 5;  /* warps per block */",
                 "  const unsigned jk_lane = threadIdx.x & 31u;",
                 "  for (long long row = (long long)blockIdx.x * jk_warps + (threadIdx.x >> 5); row < n_rows;",
                 "       row += (long long)gridDim.x * jk_warps) {"]
        lines += self.accumulate("row", kept, red, "for (long long r = jk_lane; r < n_red; r += 32)")
        lines += self.warp_reduce("    ")
        lines += ["    if (jk_lane == 0) {"]
        lines += self.final_stores(red, "      ")
        lines += ["    }", "  }", "}"]
        return "\n".join(lines), [Launch(self.base, "warp_rows", n_kept, params)]

    def accumulate(self, point: str, kept: list[int], red: list[int], loop: str, indent: str = "    ") -> list[str]:
        """The kept point `point` unravelled, the accumulators started, and the reduced points
        the C `for` header `loop` visits (over r) added into them: one reduction's body."""
        inner = indent + "  "
        return (self.unravel(point, kept, indent) + self.acc_init(indent) + [f"{indent}{loop} {{"]
                + self.unravel("r", red, inner) + self.point(self.plain, self.reduced, inner) + [f"{indent}}}"])

    def fill_identity(self) -> tuple[str, list[Launch]]:
        """A reduction accumulated in memory over an empty domain (x.sum(axis=0) of a (0, n)
        array): every element of its output is the reduction's identity."""
        sig, params = self.signature(self.base, [])
        lines = [self.comment() + "/* an empty reduction: the outputs hold the identity */", sig + " {"]
        total = 0
        for st in self.reduced:
            n = extent_product(list(self.kp.buffers[st.buffer].shape))
            total = max(total, int(n))
            dt = st.value.dtype
            value = ops.convert(self.identity(st), semantics.accumulator_dtype(st.reduce, dt), dt)
            lines += ["  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < "
                      f"{_ll(n)}; t += (long long)blockDim.x * gridDim.x) {{",
                      f"    {self.store_at(st.buffer, 't', value, dt)}",
                      "  }"]
        lines.append("}")
        return "\n".join(lines), [Launch(self.base, "elementwise", total, params)]

    def columns(self, kept: list[int], red: list[int]) -> tuple[str, list[Launch]]:
        """A reduction over outer axes (the CPU accumulates it in memory: a column sum): one
        thread per kept point, reducing its points in order. Neighbouring threads read
        neighbouring elements (coalesced), no block combine is needed, and the order is
        NumPy's (rows added one after the other)."""
        n_kept = self.extent(kept)
        n_red = self.extent(red)
        sig, params = self.signature(self.base, [])
        lines = [self.comment() + "/* columns: one thread per kept point, its reduced points in order */",
                 sig + " {",
                 f"  const long long n_kept = {self.ll(n_kept)}, n_red = {self.ll(n_red)};",
                 "  for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < n_kept;",
                 "       c += (long long)blockDim.x * gridDim.x) {"]
        lines += self.accumulate("c", kept, red, "for (long long r = 0; r < n_red; ++r)")
        lines += self.final_stores(red, "    ")
        lines += ["  }", "}"]
        return "\n".join(lines), [Launch(self.base, "elementwise", n_kept, params)]

    def two_stage(self, kept: list[int], red: list[int]) -> tuple[str, list[Launch]]:
        n_red = self.extent(red)
        work = self.work_args()
        part, final = self.base + "_part", self.base + "_final"
        sig, params = self.signature(part, work)
        lines = [self.comment() + "/* stage 1 of 2: one partial per block (grid-stride share of the reduced points) */",
                 sig + " {", f"  const long long n_red = {self.ll(n_red)};"]
        lines += [f"  const long long i{d} = 0;" for d in kept]
        lines += self.acc_init("  ")
        lines += ["  for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < n_red;",
                  "       r += (long long)blockDim.x * gridDim.x) {"]
        lines += self.unravel("r", red, "    ")
        lines += self.point(self.plain, self.reduced, "    ")
        lines += ["  }"]
        lines += self.block_reduce("  ")
        lines += ["  if (threadIdx.x == 0) {"]
        for k, st in enumerate(self.reduced):
            lines.append(f"    w{k}[blockIdx.x] = a{k};")
            if _needs_position(st):
                lines.append(f"    wp{k}[blockIdx.x] = p{k};")
        lines += ["  }", "}"]
        fsig, fparams = self.signature(final, work + [("const long long jk_parts", ("parts",))])
        lines += ["/* stage 2 of 2: one block combines the partials in block order */", fsig + " {"]
        lines += [f"  const long long i{d} = 0;" for d in kept]
        lines += self.acc_init("  ")
        lines += ["  for (long long q = threadIdx.x; q < jk_parts; q += blockDim.x) {"]
        for k, st in enumerate(self.reduced):
            pos = f"wp{k}[q]" if _needs_position(st) else None
            lines += ["    " + x for x in self.combine(k, st, f"w{k}[q]", pos)]
        lines += ["  }"]
        lines += self.block_reduce("  ")
        lines += ["  if (threadIdx.x == 0) {"]
        lines += self.final_stores(red, "    ")
        lines += ["  }", "}"]
        spec = self.work_spec()
        return "\n".join(lines), [Launch(part, "partial", n_red, params, spec),
                                  Launch(final, "final", 1, fparams, spec)]

    def phase(self, first: int, ind: str) -> list[str]:
        """This kernel as a phase of a row kernel: the loops before `first` are bound (the
        block's row), the block's threads cover the rest; reductions are one block combine per
        kept point of the phase, in order."""
        inner = list(range(first, len(self.domain)))
        lines = [f"{ind}{{  /* phase {self.k.name}: over [{', '.join(f'i{d}<{self.domain[d]}' for d in inner)}] */"]
        if not self.reduced:
            total = self.extent(inner)
            lines.append(f"{ind}  for (long long t = threadIdx.x; t < {self.ll(total)}; t += blockDim.x) {{")
            lines += self.unravel("t", inner, ind + "    ")
            lines += self.point(self.plain, [], ind + "    ")
            return lines + [f"{ind}  }}", f"{ind}}}"]
        kept, red = self.split_loops(first)
        n_kept = self.extent(kept)
        n_red = self.extent(red)
        lines.append(f"{ind}  for (long long q = 0; q < {self.ll(n_kept)}; ++q) {{")
        lines += self.unravel("q", kept, ind + "    ")
        lines += self.acc_init(ind + "    ")
        lines.append(f"{ind}    for (long long r = threadIdx.x; r < {self.ll(n_red)}; r += blockDim.x) {{")
        lines += self.unravel("r", red, ind + "      ")
        lines += self.point(self.plain, self.reduced, ind + "      ")
        lines.append(f"{ind}    }}")
        lines += self.block_reduce(ind + "    ")
        lines.append(f"{ind}    if (threadIdx.x == 0) {{")
        lines += self.final_stores(red, ind + "      ")
        lines += [f"{ind}    }}", f"{ind}    __syncthreads();", f"{ind}  }}", f"{ind}}}"]
        return lines

    # -- pieces ------------------------------------------------------------------------------
    @staticmethod
    def ll(n: object) -> str:
        return _ll(n)

    def extent(self, dims: list[int]) -> int:
        """The number of points of the loops `dims` (a flat index runs over them)."""
        return extent_product([self.domain[d] for d in dims])

    def unravel(self, flat: str, dims: list[int], ind: str) -> list[str]:
        """Loop variables `dims` (C order) from a flat index; extent-1 variables are 0."""
        live = [d for d in dims if self.domain[d] != 1]
        lines = [f"{ind}const long long i{d} = 0;" for d in dims if self.domain[d] == 1]
        if not live:
            return lines
        if len(live) == 1:
            return lines + [f"{ind}const long long i{live[0]} = {flat};"]
        lines.append(f"{ind}long long rest_{flat} = {flat};")
        for d in reversed(live[1:]):
            lines.append(f"{ind}const long long i{d} = rest_{flat} % {self.ll(self.domain[d])}; rest_{flat} /= {self.ll(self.domain[d])};")
        lines.append(f"{ind}const long long i{live[0]} = rest_{flat};")
        return lines

    def aff(self, a: Aff) -> str:
        parts = []
        for atom, c in a.terms:
            if atom[0] == "i":
                e = f"i{atom[1]}"
            elif atom[0] == "val":
                e = f"((long long)b{atom[1]}[0])"
            else:
                op = "/" if atom[0] == "div" else "%"
                e = f"(({self.aff(atom[1])}) {op} {self.ll(atom[2])})"
            parts.append(e if _is_int(c, 1) else f"{self.ll(c)} * {e}")
        if not _is_int(a.const, 0) or not parts:
            parts.append(self.ll(a.const))
        return " + ".join(parts)

    def point(self, plain: list[Store], reduced: list[Store], ind: str) -> list[str]:
        """The body at one point: every node once (in argument order), the plain stores, and
        each reduce store's value combined into its thread accumulator."""
        roots = [s.value for s in plain] + [s.value for s in reduced]
        names: dict[int, str] = {}
        lines: list[str] = []
        for nd in postorder(roots):
            name = f"v{len(names)}"
            names[id(nd)] = name
            lines.append(f"{ind}const {ctype.reg(nd.dtype)} {name} = {self.node(nd, names)};")
        for st in plain:
            lines.append(f"{ind}{self.store(st.buffer, st.offset, names[id(st.value)], st.value.dtype)}")
        for st in reduced:
            k = self.reduced.index(st)
            x = names[id(st.value)]
            acc = semantics.accumulator_dtype(st.reduce, st.value.dtype)
            x = ops.convert(x, st.value.dtype, acc) if acc != st.value.dtype else x
            pos = ("r" if self.k.n_reduce or st.reduce not in ("argmax", "argmin") else "0LL") \
                if _needs_position(st) else None
            lines += [ind + x_ for x_ in self.combine(k, st, x, pos)]
        return lines

    def node(self, nd: object, names: dict[int, str]) -> str:
        if isinstance(nd, Literal):
            if isinstance(nd.value, Param):
                return run_time_literal(nd.value, nd.dtype)
            if not isinstance(nd.value, (bool, int, float, np.generic)):
                raise UnsupportedOperationError(f"a run-time literal ({nd.value}) is not supported by the CUDA backend yet")
            return f"({ctype.literal(nd.value, nd.dtype)})"
        if isinstance(nd, Load) and nd.offset == GATHER_BASE:  # a gather's array, read by its take_at
            if nd.buffer in self.staged:
                raise UnsupportedOperationError("a gather from a row staged in shared memory is not supported by the CUDA backend")
            return ctype.load(f"b{nd.buffer}[0]", nd.dtype)  # (unused: x is never empty)
        if isinstance(nd, Compute) and nd.prim == "take_at":  # x[checked index] (fusion/schedule.py)
            return ctype.load(f"b{nd.args[0].buffer}[{names[id(nd.args[1])]}]", nd.dtype)
        if isinstance(nd, Load):
            staged = self.staged.get(nd.buffer)
            if staged is not None:  # the row kernel's copy of this row (row_staging.py)
                e = f"{staged.name}[{self.aff(inner_offset(nd.offset, staged, self.row))}]"
            else:
                e = f"b{nd.buffer}[{self.aff(nd.offset)}]"
            return ctype.load(e, nd.dtype)
        if isinstance(nd, IndexValue):
            return ops.convert(f"({self.aff(nd.index)})", np.dtype(np.int64), nd.dtype)
        args = [names[id(a)] for a in nd.args]
        lits = [a.value if isinstance(a, Literal) and not isinstance(a.value, Param) else None for a in nd.args]
        return ops.lower(nd.prim, args, [a.dtype for a in nd.args], nd.dtype, lits)

    def store(self, buffer: int, offset: Aff, value: str, dt: np.dtype) -> str:
        return self.store_at(buffer, self.aff(offset), value, dt)

    @staticmethod
    def store_at(buffer: int, index: str, value: str, dt: np.dtype) -> str:
        """`b<buffer>[index] = value;` with the register -> memory conversion of `dt`."""
        return ctype.store(f"b{buffer}[{index}]", value, dt)

    def acc_init(self, ind: str) -> list[str]:
        lines = []
        for k, st in enumerate(self.reduced):
            acc = semantics.accumulator_dtype(st.reduce, st.value.dtype)
            lines.append(f"{ind}{ctype.reg(acc)} a{k} = {self.identity(st)};")
            if _needs_position(st):
                lines.append(f"{ind}long long p{k} = {self.identity_position(st)};")
        return lines

    def identity(self, st: Store) -> str:
        acc = semantics.accumulator_dtype(st.reduce, st.value.dtype)
        return f"({ctype.literal(semantics.reduce_identity(st.reduce, acc), acc)})"

    def identity_position(self, st: Store) -> str:
        """Loses every tie: after every position when the first of equal values wins, before
        every position when the last one does."""
        return "9223372036854775807LL" if self.first_wins(st) else "-1LL"

    def first_wins(self, st: Store) -> bool:
        return st.reduce in ("argmax", "argmin") or semantics.max_min_tie_keeps_first(st.value.dtype)

    def combine(self, k: int, st: Store, x: str, pos: str | None) -> list[str]:
        """Combine value x (at position pos) into accumulator a{k} (p{k})."""
        acc = semantics.accumulator_dtype(st.reduce, st.value.dtype)
        a = f"a{k}"
        if pos is not None:
            better = self.better(st, "jk_x", "jk_xp", a, f"p{k}")
            return [f"{{ const {ctype.reg(acc)} jk_x = {x}; const long long jk_xp = {pos};",
                    f"  if ({better}) {{ {a} = jk_x; p{k} = jk_xp; }} }}"]
        return [f"{a} = {self.combine_expr(st, acc, a, x)};"]

    def combine_expr(self, st: Store, acc: np.dtype, a: str, x: str) -> str:
        op = st.reduce
        if acc.kind == "b":
            return f"({a} || {x})" if op in ("sum", "or", "max") else f"({a} && {x})"
        if op in ("and", "or"):
            return f"({a} {'&&' if op == 'and' else '||'} {x})"
        if op == "sum":
            return ops.binary("add", a, x, acc, acc, None) if acc.kind != "f" else f"({a} + {x})"
        if op == "prod":
            return ops.binary("multiply", a, x, acc, acc, None) if acc.kind != "f" else ops._mul(a, x, acc)
        return ops.binary_int("maximum" if op == "max" else "minimum", a, x, acc)

    def better(self, st: Store, x: str, xp: str, a: str, ap: str) -> str:
        """Does (x, xp) replace the accumulator (a, ap)? NaN wins over a number (the first NaN
        over another NaN); then the larger (smaller) value; equal values by position."""
        big = st.reduce in ("argmax", "max")
        cmp = ">" if big else "<"
        tie = f"{xp} < {ap}" if self.first_wins(st) else f"{xp} > {ap}"
        plain = f"({x} {cmp} {a} || ({x} == {a} && {tie}))"
        if st.value.dtype.kind != "f":
            return plain
        return f"(({x} != {x}) ? ({a} == {a} || {xp} < {ap}) : {plain})"

    def block_reduce(self, ind: str) -> list[str]:
        """Every accumulator combined across the block into thread 0: shuffles within each
        warp, one shared slot per warp, shuffles within warp 0."""
        lines = [f"{ind}{{", f"{ind}  const unsigned jk_lane = threadIdx.x & 31u, jk_warp = threadIdx.x >> 5;"]
        for k, st in enumerate(self.reduced):
            acc = ctype.reg(semantics.accumulator_dtype(st.reduce, st.value.dtype))
            lines.append(f"{ind}  __shared__ {acc} jk_sa{k}[32];")
            if _needs_position(st):
                lines.append(f"{ind}  __shared__ long long jk_sp{k}[32];")
        lines += self.warp_reduce(ind + "  ")
        lines.append(f"{ind}  if (jk_lane == 0) {{")
        for k, st in enumerate(self.reduced):
            lines.append(f"{ind}    jk_sa{k}[jk_warp] = a{k};")
            if _needs_position(st):
                lines.append(f"{ind}    jk_sp{k}[jk_warp] = p{k};")
        lines += [f"{ind}  }}", f"{ind}  __syncthreads();", f"{ind}  if (jk_warp == 0) {{"]
        for k, st in enumerate(self.reduced):
            lines.append(f"{ind}    a{k} = jk_lane < (blockDim.x >> 5) ? jk_sa{k}[jk_lane] : {self.identity(st)};")
            if _needs_position(st):
                lines.append(f"{ind}    p{k} = jk_lane < (blockDim.x >> 5) ? jk_sp{k}[jk_lane] : {self.identity_position(st)};")
        lines += self.warp_reduce(ind + "    ")
        lines += [f"{ind}  }}", f"{ind}}}"]
        return lines

    def warp_reduce(self, ind: str) -> list[str]:
        lines = [f"{ind}for (int jk_o = 16; jk_o > 0; jk_o >>= 1) {{"]
        for k, st in enumerate(self.reduced):
            x = f"jk_shfl_down(a{k}, jk_o)"
            if _needs_position(st):
                acc = ctype.reg(semantics.accumulator_dtype(st.reduce, st.value.dtype))
                lines.append(f"{ind}  {{ const {acc} jk_y = {x}; const long long jk_yp = jk_shfl_down(p{k}, jk_o);")
                lines.append(f"{ind}    if ({self.better(st, 'jk_y', 'jk_yp', f'a{k}', f'p{k}')}) {{ a{k} = jk_y; p{k} = jk_yp; }} }}")
            else:
                acc = semantics.accumulator_dtype(st.reduce, st.value.dtype)
                lines.append(f"{ind}  {{ const {ctype.reg(acc)} jk_y = {x}; a{k} = {self.combine_expr(st, acc, f'a{k}', 'jk_y')}; }}")
        lines.append(f"{ind}}}")
        return lines

    def final_stores(self, red: list[int], ind: str) -> list[str]:
        """Thread 0 writes each reduction's result: the value in the store's dtype, or for
        argmax/argmin the store's reduce_index at the winning position."""
        lines = []
        for k, st in enumerate(self.reduced):
            if st.reduce in ("argmax", "argmin"):
                lines.append(f"{ind}{{")
                if self.k.n_reduce:
                    lines += self.unravel(f"p{k}", red, ind + "  ")
                idx = self.aff(st.reduce_index) if st.reduce_index is not None else "0LL"
                dt = self.kp.buffers[st.buffer].dtype
                lines.append(f"{ind}  {self.store(st.buffer, st.offset, ops.convert(f'({idx})', np.dtype(np.int64), dt), dt)}")
                lines.append(f"{ind}}}")
                continue
            acc = semantics.accumulator_dtype(st.reduce, st.value.dtype)
            value = f"a{k}"
            if acc != st.value.dtype:
                value = ops.convert(value, acc, st.value.dtype)
            lines.append(f"{ind}{self.store(st.buffer, st.offset, value, st.value.dtype)}")
        return lines


# A row kernel's row scratch is `__shared__` when every scratch buffer's row is a compile-time
# size and together they take at most this many bytes per block: 16 KiB next to 256 threads
# keeps the 8 blocks an SM of sm_80 or later holds at 2048 threads within its shared memory
# (8 x 16 KiB = 128 KiB of the 164 KiB of sm_80, 228 KiB of sm_90), so shared memory does not
# cut occupancy; and it stays far under the 48 KiB a block may declare statically. Larger or
# run-time rows are slices of a global work buffer.
ROW_SCRATCH_SHARED_BYTES = 16 * 1024


class RowKernelWriter:
    """A row kernel (softmax, layer norm, a mean over trailing axes): one block per outer
    point (grid-stride over them); for each, the phases in order with `__syncthreads()`
    between them, so a phase reads what earlier phases wrote for its row. Row scratch buffers
    (one row of storage per running row) are `__shared__` arrays of the block when they fit
    ROW_SCRATCH_SHARED_BYTES, else slices of a work buffer, one row per block. Inputs that
    several phases read are staged: their row copied into shared memory once per row, within
    the budget the scratch leaves (row_staging.py)."""

    def __init__(self, kp: KernelProgram, rk: RowKernel) -> None:
        self.kp, self.rk = kp, rk
        self.outer = [extent(n) for n in rk.outer]
        self.name = kernel_name(PLACEHOLDER, rk.name)
        self.scratch = {bid: extent(n) for bid, n in rk.scratch.items()}
        self.phases = [KernelWriter(kp, p, self.scratch) for p in rk.phases]
        used: set[int] = set()
        for w in self.phases:
            used |= set(w.buffers)
        self.buffers = sorted(used - set(self.scratch))
        self.written = {b for w in self.phases for b in w.written}
        self.shared_scratch = self.scratch_fits_shared()
        left = ROW_SCRATCH_SHARED_BYTES - (self.scratch_bytes() if self.shared_scratch else 0)
        self.staged = staged_rows(kp, rk, self.written, left)  # inputs read by several phases
        for w in self.phases:
            w.staged, w.row = {s.bid: s for s in self.staged}, row_index(len(self.outer), self.outer)

    def scratch_bytes(self) -> int:
        return sum(max(1, int(n)) * self.kp.buffers[bid].dtype.itemsize for bid, n in self.scratch.items())

    def scratch_fits_shared(self) -> bool:
        """Do the row scratch buffers fit in shared memory: compile-time rows of at most
        ROW_SCRATCH_SHARED_BYTES together (the source of a shape-generic program must not
        depend on its sizes: dynamic_params.py)?"""
        if any(isinstance(n, Ext) for n in self.scratch.values()):
            return False
        return self.scratch_bytes() <= ROW_SCRATCH_SHARED_BYTES

    def render(self) -> tuple[str, list[Launch]]:
        n_rows = extent_product(self.outer)
        args, params = [], []
        for bid in self.buffers:
            dt = self.kp.buffers[bid].dtype
            const = "" if bid in self.written else "const "
            args.append(f"{const}{ctype.mem(dt)}* __restrict__ b{bid}")
            params.append(("buf", bid))
        for bid in ([] if self.shared_scratch else self.scratch):
            args.append(f"{ctype.mem(self.kp.buffers[bid].dtype)}* __restrict__ s{bid}")
            params.append(("scratch", bid))
        if has_params(self.kp):
            args.append("const long long* __restrict__ jk_params")
            params.append(("params",))
        args.append("unsigned int* __restrict__ jk_status")
        params.append(("status",))
        graph = stable_text(self.kp, "; ".join(self.rk.graph_ops))
        lines = [f"\n/* {self.rk.name}: row kernel over rows [{', '.join(f'i{d}<{n}' for d, n in enumerate(self.outer))}], "
                 f"{len(self.phases)} phases" + (f"\n   fuses: {graph}" if graph else "") + " */",
                 f'extern "C" __global__ void {self.name}(\n    ' + ",\n    ".join(args) + ") {"]
        for bid, size in self.scratch.items():
            mem = ctype.mem(self.kp.buffers[bid].dtype)
            if self.shared_scratch:
                lines.append(f"  __shared__ {mem} b{bid}[{max(1, int(size))}];  /* this block's row, in shared memory */")
            else:
                lines.append(f"  {mem}* __restrict__ b{bid} = s{bid} + (long long)blockIdx.x * {_ll(size)};  /* this block's row */")
        for st in self.staged:
            lines.append(f"  __shared__ {ctype.mem(st.dtype)} {st.name}[{st.length}];  /* b{st.bid}'s row, read by several phases */")
        lines.append(f"  for (long long row = blockIdx.x; row < {_ll(n_rows)}; row += gridDim.x) {{")
        lines += self.phases[0].unravel("row", list(range(len(self.outer))), "    ")
        for st in self.staged:  # one coalesced read of each staged row; the phases read the copy
            lines.append(f"    for (long long t = threadIdx.x; t < {st.length}LL; t += blockDim.x) "
                         f"{st.name}[t] = b{st.bid}[{st.row_size}LL * row + t];")
        if self.staged:
            lines.append("    __syncthreads();  /* the staged rows are complete */")
        for w in self.phases:
            lines += w.phase(len(self.outer), "    ")
            lines.append("    __syncthreads();  /* the next phase reads this one's results */")
        lines += ["  }", "}"]
        spec = [] if self.shared_scratch else [(bid, self.kp.buffers[bid].dtype, size) for bid, size in self.scratch.items()]
        return "\n".join(lines), [Launch(self.name, "rows", n_rows, params, scratch=spec)]
