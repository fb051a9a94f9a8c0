"""Fusion: turn a graph Program into a KernelProgram.

Every variable is either materialised (a buffer) or virtual (an expression recomputed where it
is read). Movement ops on virtual values become index maps, elementwise chains become one loop
body, elementwise producers are fused into the reductions that read them, and each kernel
records which graph equations it absorbed and the bytes it moves.

Materialised: program inputs, outputs and constants (size-1 constants become literals), results
of reductions, concatenations and library calls, inputs of library calls, and virtual values
that several kernels would otherwise each recompute at a real cost.
"""
from __future__ import annotations

from typing import Any, Callable

from ..ir import AType, Eqn, Program, Var, primitives, semantics
from ..ir.datadep_prims import describe_split
from ..passes.complex_lower import lower_complex
from ..passes.count_bounds import bound_by_counts
from ..passes.loop_dots import dots_in_loops_as_reductions
from ..passes.loop_gathers import datadep_in_loops_as_gathers
from ..passes.native_selections import native_selections
from ..passes.trip_maps import hoist_trip_maps
from ..passes.loops import hoist_loop_invariants, scans_to_fori
from ..passes.native_loops import CONTROL_FLOW, native_ok
from . import dynamic, index as ix, loops
from .index import Aff
from .kernel_ir import (GATHER_BASE, Buffer, Compute, IndexValue, Kernel, KernelProgram, LibraryCall,
                        Literal, Load, Node, RowKernel, Store)
from .kernel_ir import Interner
from .coalesce import coalesce_copies
from .kernel_passes import fuse_kernels
from .movement import source_index
from .schedule_control import schedule_control
from .update import adopt_argument_buffers, chain_end, in_place_arguments, in_place_chains, update_slice_steps

RECOMPUTE_LIMIT = 3
# The cost (_op_cost) of one expensive op: a broadcast value that costs this much is computed once.
_EXPENSIVE_COST = 8

_REDUCE_OPS = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
               "reduce_and": "and", "reduce_or": "or", "argmax": "argmax", "argmin": "argmin",
               "dot_sum": "sum"}


_MANY = object()  # "two or more kernel roots" in _Scheduler.materialized

# Reshapes that the range rules cannot simplify nest `//` and `%` atoms, and each level holds the
# previous one twice: alternating reshapes and transposes would grow index maps exponentially.
# A movement output read through deeper maps than this gets a buffer instead (its kernel starts
# again from plain loop variables).
MAX_INDEX_DEPTH = 4


class _IndexTooDeep(Exception):
    def __init__(self, var: Var) -> None:
        super().__init__(var)
        self.var = var


def _merge_roots(a: Any, b: Any) -> Any:
    if a is None or a is b:
        return b
    return a if b is None else _MANY


def _op_cost(eqn: Eqn) -> int:
    """Relative cost of recomputing one element (`Primitive.expensive`); movement ops are free
    (index maps)."""
    kind = dynamic.eqn_fusion_kind(eqn)
    if kind == "movement":
        return 0
    return 8 if primitives.get(eqn.prim).expensive else 1


class _Scheduler:
    def __init__(self, program: Program, buffers: dict | None = None, const_sink: list | None = None,
                 ranges: dict | None = None, in_body: bool = False) -> None:
        self.program = program
        self.in_body = in_body  # a loop body or branch (schedule_control.py)
        self.versioning = True  # may a fori loop get a versioned copy (fusion/versioning.py)
        self.producer: dict[Var, Eqn] = program.producers()
        self.eqn_index = {id(e): i for i, e in enumerate(program.eqns)}
        self.const_value = dict(zip(program.constvars, program.consts))
        self.leaves = set(program.invars) | set(program.constvars)
        # A loop body's scheduler shares the enclosing program's buffer table and constants.
        self.buffers: dict[int, Buffer] = {} if buffers is None else buffers
        self.const_sink: list = [] if const_sink is None else const_sink
        # 0-d int64 buffers with a known value range (the index of a loop with constant bounds):
        # dynamic starts proved in bounds need no check (fusion/dynamic.py).
        self.ranges: dict[int, tuple[int, int]] = {} if ranges is None else ranges
        self.buf_of: dict[Var, int] = {}
        self.checked: dict[int, list] = {}  # id(dynamic eqn) -> start offsets (fusion/dynamic.py)

    def nested(self, program: Program) -> _Scheduler:
        """The scheduler of a loop body or branch (fusion/schedule_control.py): it allocates in
        this one's buffer table, constants and known ranges."""
        sub = _Scheduler(program, buffers=self.buffers, const_sink=self.const_sink, ranges=self.ranges, in_body=True)
        sub.versioning = self.versioning
        return sub

    # -- which variables get buffers ------------------------------------------------
    def _is_literal(self, v: Var) -> bool:
        return v in self.const_value and v.aval.size == 1

    def materialized(self) -> set[Var]:
        mat = set(self.program.outvars)
        for eqn in self.program.eqns:
            kind = dynamic.eqn_fusion_kind(eqn)
            if kind in ("reduce", "structural", "library"):  # control flow is of kind "library" too
                mat.update(eqn.outputs)
            if kind == "library":
                mat.update(eqn.inputs)
            if kind == "gather":  # each element loads from the gathered array's buffer
                mat.add(eqn.inputs[0])
        if self.in_body:
            # A window update whose value reads the array elsewhere writes in place after its
            # value is staged in a window-sized buffer (fusion/dynamic.py, can_update_in_place).
            mat |= dynamic.staged_window_values(self.program)
        cost = self._costs(mat)
        if self._broadcast_along_outer_axes(mat, cost):
            cost = self._costs(mat)
        # A virtual value that the kernels of two or more materialised values would each
        # recompute, at a cost of RECOMPUTE_LIMIT or more, gets a buffer. Deciding the latest
        # such value first may make earlier ones single-use, so decide in reverse program
        # order: when a value is decided, every later one is, and the roots that evaluate it
        # are known. One pass; `root[v]` is the one kernel root evaluating v, or _MANY.
        root: dict[Var, Any] = {}
        for eqn in reversed(self.program.eqns):
            reach = None
            for v in eqn.outputs:
                if v not in mat and root.get(v) is _MANY and cost[v] >= RECOMPUTE_LIMIT:
                    mat.add(v)
                reach = _merge_roots(reach, v if v in mat else root.get(v))
            if reach is None:
                continue
            for u in eqn.inputs:
                if u not in self.leaves:
                    root[u] = _merge_roots(root.get(u), reach)
        return mat

    def _broadcast_along_outer_axes(self, mat: set[Var], cost: dict[Var, float]) -> bool:
        """Give a buffer to each virtual value with an expensive op in it (`np.sqrt(var)`, a
        division) that is broadcast along outer axes of a larger value while keeping its last
        axis (a row vector over the rows of a matrix: `data / np.sqrt(var)`). The kernel's inner
        loop runs along that kept axis, so LLVM cannot hoist the work out of it: every row would
        recompute the whole vector (PolyBench correlation: 600 square roots and divisions per
        column instead of one). Returns whether any was added."""
        added = False
        for eqn in self.program.eqns:
            if eqn.prim != "broadcast_in_dim":
                continue
            (x,), (out,) = eqn.inputs, eqn.outputs
            dims = eqn.params["broadcast_dimensions"]
            if (x in mat or x in self.leaves or not dims or x.aval.ndim == 0
                    or dims[-1] != out.aval.ndim - 1 or x.aval.shape[-1] == 1
                    or out.aval.size < 2 * x.aval.size or cost.get(x, 0.0) < _EXPENSIVE_COST):
                continue
            mat.add(x)
            added = True
        return added

    def _costs(self, mat: set[Var]) -> dict[Var, float]:
        """Per-element cost of recomputing each virtual variable (0 for materialised ones and
        leaves); work on smaller (later broadcast) values is amortised by their size ratio,
        since LLVM hoists it out of the inner loops. One forward pass over the program."""
        cost: dict[Var, float] = {}
        for eqn in self.program.eqns:
            for u in eqn.outputs:
                if u in mat:
                    cost[u] = 0.0
                    continue
                size = max(u.aval.size, 1)
                cost[u] = _op_cost(eqn) + sum(cost.get(w, 0.0) * min(w.aval.size / size, 1.0)
                                              for w in eqn.inputs)
        return cost

    # -- buffers ---------------------------------------------------------------------
    def new_buffer(self, aval: AType, role: str, position: int = -1) -> int:
        bid = len(self.buffers)
        self.buffers[bid] = Buffer(bid, aval.shape, aval.dtype, role, position)
        return bid

    # -- expressions -----------------------------------------------------------------
    def _key(self, v: Var, index: tuple[Aff, ...]) -> tuple:
        return (v, tuple(ix.const(0) if n == 1 else i for i, n in zip(index, v.aval.shape)))

    def expr(self, v: Var, index: tuple[Aff, ...], extents: tuple[int, ...], memo: dict, ops: set[int],
             expand: bool = False) -> Node:
        """The scalar expression of `v` at `index`: a Load of its buffer, a literal, or (virtual
        values, and `v` itself with `expand`) its producer's operation on the expressions of
        its inputs. Iterative, with an explicit stack: a program may chain 10^5 operations.
        `memo` maps (var, index) to nodes; `memo["intern"]` shares equal nodes."""
        intern = memo.get("intern")
        if intern is None:
            intern = memo["intern"] = Interner()
        root = self._key(v, index)
        if not expand and root in memo:
            return memo[root]
        # Stack entries: (key, None) to visit, (key, plan) to finish once the inputs are built.
        stack: list[tuple[tuple, Any]] = [(root, None)]
        result: Node | None = None
        while stack:
            key, plan = stack.pop()
            is_root = key is root
            if plan is None:
                if key in memo and not (expand and is_root):
                    continue
                var, idx = key
                leaf = None if (expand and is_root) else self._leaf(var, idx)
                if leaf is not None:
                    memo[key] = intern(leaf)
                    continue
                eqn = self.producer[var]
                ops.add(self.eqn_index[id(eqn)])
                plan = self._plan(eqn, idx, extents)
                if isinstance(plan, tuple) and plan[0] == "node":
                    node = intern(plan[1])
                    if expand and is_root:
                        result = node
                    else:
                        memo[key] = node
                    continue
                stack.append((key, plan))
                for k in reversed(plan):
                    if k not in memo:
                        stack.append((k, None))
                continue
            eqn = self.producer[key[0]]
            kind = dynamic.eqn_fusion_kind(eqn)
            if kind == "elementwise":
                node = intern(Compute(eqn.prim, tuple(memo[k] for k in plan), (), eqn.outputs[0].aval.dtype))
            elif kind == "gather":
                node = self._gather_node(eqn, memo[plan[0]], intern)
            else:  # movement: the input's expression at the mapped index
                node = memo[plan[0]]
            if expand and is_root:
                result = node
            else:
                memo[key] = node
        return result if expand else memo[root]

    def _leaf(self, v: Var, index: tuple[Aff, ...]) -> Node | None:
        if self._is_literal(v):
            return Literal(self.const_value[v].reshape(()).item(), v.aval.dtype)
        if v in self.buf_of:
            return Load(self.buf_of[v], ix.linearize(index, v.aval.shape), v.aval.dtype)
        return None

    def _plan(self, eqn: Eqn, index: tuple[Aff, ...], extents: tuple[int, ...]) -> Any:
        """The (var, index) keys `eqn`'s output at `index` is made of, or ("node", node)."""
        out = eqn.outputs[0]
        kind = dynamic.eqn_fusion_kind(eqn)
        if kind == "elementwise":
            return [self._key(a, index) for a in eqn.inputs]
        if kind == "gather":  # x[idx] of a 1-D x has idx's shape: the index at the same point
            return [self._key(eqn.inputs[1], index)]
        if eqn.prim == "iota":
            return ("node", IndexValue(index[eqn.params["dimension"]], out.aval.dtype))
        src = source_index(self, eqn, index, extents)  # a movement: fusion/movement.py
        if any(a.depth > MAX_INDEX_DEPTH for a in src):
            raise _IndexTooDeep(out)
        return [self._key(eqn.inputs[0], src)]

    def _gather_node(self, eqn: Eqn, index: Node, intern: Interner) -> Node:
        """`x[index]` for one element (passes/native_loops.py kernel_gather): the index checked
        as NumPy checks it (`index_check`: wrapped once if negative, else the IndexError flag and
        0), then a load of x's buffer at that element (`take_at`, whose first argument names the
        buffer, kernel_ir.GATHER_BASE)."""
        x = eqn.inputs[0]
        n = x.aval.shape[0]
        if index.dtype != dynamic.INT64:
            index = intern(Compute("convert", (index,), (), dynamic.INT64))
        checked = intern(Compute("index_check", (index, Literal(n, dynamic.INT64), Literal(n - 1, dynamic.INT64),
                                                 Literal(0, dynamic.INT64)), (), dynamic.INT64))
        base = intern(Load(self.buf_of[x], GATHER_BASE, x.aval.dtype))
        return intern(Compute("take_at", (base, checked), (), x.aval.dtype))

    # -- kernels ---------------------------------------------------------------------
    def _eqn_text(self, i: int) -> str:
        e = self.program.eqns[i]
        return f"{e.prim}->{e.outputs[0].aval}"

    def _kernel(self, name: str, domain: tuple[int, ...], n_reduce: int, stores: list[Store], ops: set[int]) -> Kernel:
        if not domain and self.ranges:
            dynamic.note_ranges(self, stores)
        return Kernel(name, tuple(domain), n_reduce, stores, [self._eqn_text(i) for i in sorted(ops)])

    def build(self) -> KernelProgram:
        program = self.program
        mat = self.materialized()
        inputs = [self.new_buffer(v.aval, "input", i) for i, v in enumerate(program.invars)]
        self.buf_of.update(zip(program.invars, inputs))
        consts = []
        for i, (v, c) in enumerate(zip(program.constvars, program.consts)):
            if not self._is_literal(v) or v in mat:
                b = self.new_buffer(v.aval, "const", i)
                self.buf_of[v] = b
                consts.append((b, c))
        outputs: list[int] = []
        copies: list[tuple[Var, int]] = []
        seen_outputs: set[Var] = set()
        chains = in_place_chains(program, mat, self.leaves)  # fusion/update.py
        in_place = in_place_arguments(program, chains)
        for pos, v in enumerate(program.outvars):
            if pos in in_place:  # a written argument updated in its own buffer
                self.buf_of[v] = inputs[in_place[pos]]
                outputs.append(inputs[in_place[pos]])
                seen_outputs.add(v)
                continue
            if v in self.leaves or v in seen_outputs:
                b = self.new_buffer(v.aval, "output", pos)
                copies.append((v, b))
            else:
                b = self.new_buffer(v.aval, "output", pos)
                self.buf_of[v] = b
            seen_outputs.add(v)
            outputs.append(b)
        steps: list[Any] = []
        self.emit_equations(mat, steps, chains)
        for v, b in copies:
            self._emit(steps, lambda n, v=v, b=b: [self._copy_kernel(v, b, n)])
        steps = adopt_argument_buffers(steps, inputs, outputs, program, in_place)  # fusion/update.py
        kp = fuse_kernels(KernelProgram(program.name, self.buffers, inputs, consts + self.const_sink, outputs, steps))
        kp = coalesce_copies(kp)  # fusion/coalesce.py: copies whose two buffers can be one
        kp.consts = _read_consts(kp)
        kp.fusion_record = fusion_record(program, kp)
        return kp

    def emit_equations(self, mat: set[Var], steps: list[Any], chains: dict[Var, Var] | None = None) -> None:
        """The steps of every materialised value, in program order. `chains`: values written in
        place into the buffer of the update they feed (fusion/update.py in_place_chains)."""
        chains = chains or {}
        for eqn in self.program.eqns:
            if eqn.prim in dynamic.PRIMS:
                dynamic.emit_checks(self, eqn, steps)
            library = dynamic.eqn_fusion_kind(eqn) == "library"  # control flow included
            for v in eqn.outputs:
                if v not in mat:
                    continue
                if v not in self.buf_of and v in chains:  # written in place: the chain's buffer
                    end = chain_end(chains, v)
                    if end not in self.buf_of:
                        self.buf_of[end] = self.new_buffer(end.aval, "temp")
                    self.buf_of[v] = self.buf_of[end]
                if v not in self.buf_of:
                    self.buf_of[v] = self.new_buffer(v.aval, "temp")
                if library and v is not eqn.outputs[0]:
                    continue  # one library call computes all of the primitive's outputs
                if library:
                    for u in eqn.outputs[1:]:
                        if u not in self.buf_of:
                            self.buf_of[u] = self.new_buffer(u.aval, "temp")
                self._emit(steps, lambda n, eqn=eqn, v=v: self._steps_for(eqn, v, n))

    def _emit(self, steps: list[Any], make) -> None:
        """Append `make(len(steps))`'s steps. Where an expression would read a value through too
        deep an index map, that value gets a buffer and its kernel goes first, then `make` runs
        again (a work list, not recursion: chains of such values can be long)."""
        pending = [make]
        while pending:
            try:
                new = pending[-1](len(steps))
            except _IndexTooDeep as e:
                u = e.var
                self.buf_of[u] = self.new_buffer(u.aval, "temp")
                pending.append(lambda n, eqn=self.producer[u], u=u: self._steps_for(eqn, u, n))
                continue
            pending.pop()
            steps.extend(new)

    def _copy_kernel(self, v: Var, b: int, n: int) -> Kernel:
        shape = v.aval.shape
        index = tuple(ix.var(d) for d in range(len(shape)))
        ops: set[int] = set()
        value = self.expr(v, index, shape, {}, ops)
        return self._kernel(f"k{n}_copy", shape, 0, [Store(b, ix.linearize(index, shape), value)], ops)

    def _steps_for(self, eqn: Eqn, v: Var, n: int) -> list[Any]:
        kind = dynamic.eqn_fusion_kind(eqn)
        out = self.buf_of[v]
        ops = {self.eqn_index[id(eqn)]}
        if eqn.prim in CONTROL_FLOW and native_ok(eqn):
            return schedule_control(self, eqn, n)
        if kind == "library":  # control flow that does not run natively included
            return [LibraryCall(f"k{n}_{eqn.prim}", eqn.prim, dict(eqn.params),
                                [self.buf_of[u] for u in eqn.inputs], [self.buf_of[u] for u in eqn.outputs],
                                [self._eqn_text(min(ops))])]
        if kind == "reduce":
            x = eqn.inputs[0]
            axes = eqn.params["axes"] if "axes" in eqn.params else (eqn.params["axis"],)
            kept = [d for d in range(x.aval.ndim) if d not in axes]
            op = _REDUCE_OPS[eqn.prim]
            if semantics.reduction_inner_loop_kept(x.aval.shape, axes) and op not in ("argmax", "argmin"):
                # NumPy's inner loop runs along a kept axis (column-like reduction; axes of
                # extent 1 do not count): walk the input in memory order and accumulate into
                # the output buffer, a vectorisable read-modify-write.
                domain = x.aval.shape
                index = tuple(ix.var(d) for d in range(x.aval.ndim))
                value = self.expr(x, index, domain, {}, ops)
                offset = ix.linearize([ix.var(d) for d in kept], v.aval.shape)
                return [self._kernel(f"k{n}_{eqn.prim}", domain, 0, [Store(out, offset, value, op)], ops)]
            order = kept + list(axes)
            domain = tuple(x.aval.shape[d] for d in order)
            index = [None] * x.aval.ndim
            for pos, d in enumerate(order):
                index[d] = ix.var(pos)
            value = self.expr(x, tuple(index), domain, {}, ops)
            offset = ix.linearize([ix.var(k) for k in range(len(kept))], v.aval.shape)
            red_index = ix.var(len(kept)) if op in ("argmax", "argmin") else None
            # A dot's sum (ir/symdim_prims.py) follows no NumPy order: "free" (reassociated).
            block = "free" if eqn.prim == "dot_sum" else semantics.reduction_block(x.aval.shape, axes)
            return [self._kernel(f"k{n}_{eqn.prim}", domain, len(axes),
                                 [Store(out, offset, value, op, red_index, block)], ops)]
        region_writes = _REGION_WRITES.get(eqn.prim)
        if region_writes is not None:
            return region_writes(self, eqn, v, n, ops)
        shape = v.aval.shape
        index = tuple(ix.var(d) for d in range(len(shape)))
        value = self.expr(v, index, shape, {}, ops, expand=True)  # v's own buffer is the destination
        return [self._kernel(f"k{n}_{eqn.prim}", shape, 0, [Store(out, ix.linearize(index, shape), value)], ops)]


def _concatenate_steps(sched: _Scheduler, eqn: Eqn, v: Var, n: int, ops: set[int]) -> list[Any]:
    """One kernel per part, each storing into its region of v's buffer."""
    axis = eqn.params["axis"]
    out = sched.buf_of[v]
    steps, start = [], 0
    for part in eqn.inputs:
        shape = part.aval.shape
        index = tuple(ix.var(d) for d in range(len(shape)))
        dst = tuple(ix.add(i, ix.const(start)) if d == axis else i for d, i in enumerate(index))
        part_ops = set(ops)
        value = sched.expr(part, index, shape, {}, part_ops)
        steps.append(sched._kernel(f"k{n + len(steps)}_concatenate", shape, 0,
                                   [Store(out, ix.linearize(dst, v.aval.shape), value)], part_ops))
        start += shape[axis]
    return steps


# The structural primitives that write regions of their output buffer, each by its own kernels:
# (scheduler, eqn, output var, step number, graph-op indices) -> steps.
_REGION_WRITES: dict[str, Callable[[_Scheduler, Eqn, Var, int, set[int]], list[Any]]] = {
    "update_slice": update_slice_steps,  # fusion/update.py
    dynamic.UPDATE: lambda sched, eqn, v, n, ops: dynamic.update_steps(sched, eqn, v, n),
    "concatenate": _concatenate_steps,
}


# -- fusion record -----------------------------------------------------------------------


def fusion_record(program: Program, kp: KernelProgram) -> list[dict[str, Any]]:
    """Per step: the graph ops it contains and the bytes it reads and writes."""
    record = []
    for step in kp.steps:
        if isinstance(step, (Kernel, RowKernel)):
            phases = step.phases if isinstance(step, RowKernel) else [step]
            scratch = step.scratch if isinstance(step, RowKernel) else {}
            reads: set[int] = set()
            writes: set[int] = set()
            for phase in phases:
                reads |= set(phase.loads())
                writes |= {st.buffer for st in phase.stores}
            # Row-internal values (scratch, and what one phase writes for the next) cost nothing.
            reads -= writes | set(scratch)
            writes -= set(scratch)
            kind = ("rows" if isinstance(step, RowKernel) else
                    "reduction" if step.n_reduce or any(s.reduce for s in step.stores) else "elementwise")
        else:
            reads, writes = set(step.inputs), set(step.outputs)
            kind = "loop" if loops.is_control(step) else "library"
        record.append({"kernel": step.name, "kind": kind, "ops": list(step.graph_ops),
                       "bytes_read": sum(kp.buffers[b].nbytes for b in reads),
                       "bytes_written": sum(kp.buffers[b].nbytes for b in writes)})
        if getattr(step, "prim", None) in ("datadep_call", "datadep_pure"):  # a data-dependent length: the split point
            if step.params.get("split"):
                record[-1]["split"] = describe_split(step.params, short=True)
    return record


def unfused_bytes(program: Program) -> int:
    """Bytes an op-by-op execution (one pass per non-movement equation) would move."""
    total = 0
    for eqn in program.eqns:
        if dynamic.fusion_kind(eqn.prim) == "movement":
            continue
        total += sum(v.aval.size * v.aval.dtype.itemsize for v in eqn.inputs + eqn.outputs)
    return total


def schedule(program: Program) -> KernelProgram:
    """Fuse `program` into kernels and library calls.

    >>> import numpy as np, jitkernel as jk
    >>> from jitkernel.passes import optimize
    >>> prog = optimize(jk.make_ir(lambda x: (np.sin(x) * 2).sum(axis=1))(np.ones((4, 8), np.float32)))
    >>> [k.name for k in schedule(prog).steps]
    ['k0_reduce_sum']
    """
    # complex -> (real, imag) float pairs, loop and branch bodies too: their complex arithmetic
    # fuses into the bodies' kernels (a native loop when nothing else keeps it Python-driven)
    # selections of selections and scatters through them as native loops over their count,
    # before complex lowering, so a complex compaction carries two float arrays
    lowered, packed = lower_complex(native_selections(bound_by_counts(hoist_trip_maps(program))), lower_bodies=True)
    kp = _Scheduler(hoist_loop_invariants(scans_to_fori(dots_in_loops_as_reductions(
        datadep_in_loops_as_gathers(lowered))))).build()
    kp.complex_views = {**{kp.inputs[i]: dt for i, dt in packed.inputs.items()},
                        **{kp.outputs[k]: dt for k, dt in packed.outputs.items()}}
    return kp


def _read_consts(kp: KernelProgram) -> list:
    """The constants some step reads. A constant output is stored as a literal by its copy
    kernel, so its buffer is never read; left in, its contents (which change with the size
    when the program folds to a size-dependent constant, `np.sum(a == a)`) would key the kernel
    structure and keep such a program from becoming shape-generic."""
    read: set[int] = set()
    for step in kp.steps:
        if isinstance(step, LibraryCall):
            read.update(step.inputs)
        else:
            for kernel in (step.phases if isinstance(step, RowKernel) else [step]):
                read.update(kernel.loads())
    return [(b, c) for b, c in kp.consts if b in read]
