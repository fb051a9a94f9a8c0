"""Fusion of `update_slice` (a write into a static region, ir/update_prims.py): a region write,
like concatenate's one kernel per part, so the untouched part is copied, never recomputed per
element of the region, and the written value is computed inside the kernel that stores it.

- `update_slice(base, value)` is at most two kernels over its output buffer: a copy of `base`
  (its producer fused in) and a store of `value` into the region (`starts + steps * i`), in
  that order.
- A chain of writes into one array (`x[0] = ...; x[1] = ...`) shares one buffer: when the base
  of an update is itself an update's result read by nothing else (not even the written value),
  the update writes into the base's buffer in place and only the region kernel runs. The chain's
  buffer is the one of its last value (an output's buffer when the array is returned or written
  back), so the copy happens once per chain, not once per write.
- A written argument whose first write's base is the argument itself, read by nothing else, is
  written in its own buffer (`in_place_arguments`): no copy kernel, and the caller's array,
  when it is C-contiguous and native (the runtime passes it as is), is updated by the kernels
  directly; Compiled.write_back then has nothing to copy.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import Program, Var, primitives
from ..ir.program import WITH_SUB_PROGRAMS, may_raise
from . import index as ix
from .kernel_ir import Kernel, LibraryCall, Load, Store, rebuild
from .loops import is_control


def _use_counts(program: Program) -> dict[Var, int]:
    """How many times each variable is read: as an equation input, or as a program output."""
    uses: dict[Var, int] = {}
    for eqn in program.eqns:
        for u in eqn.inputs:
            uses[u] = uses.get(u, 0) + 1
    for v in program.outvars:
        uses[v] = uses.get(v, 0) + 1
    return uses


def in_place_chains(program: Program, materialized: set[Var], leaves: set[Var]) -> dict[Var, Var]:
    """base -> the update_slice output that may write into base's buffer in place: base is an
    update's materialised result, read by that one update only (as its base) and no output."""
    uses = _use_counts(program)
    produced_by_update = {e.outputs[0] for e in program.eqns if e.prim == "update_slice"}
    chains: dict[Var, Var] = {}
    for eqn in program.eqns:
        if eqn.prim != "update_slice":
            continue
        base = eqn.inputs[0]
        if base in produced_by_update and base in materialized and base not in leaves and uses.get(base) == 1:
            chains[base] = eqn.outputs[0]
    return chains


def in_place_arguments(program: Program, chains: dict[Var, Var]) -> dict[int, int]:
    """output position -> input position, for written arguments whose new value can be computed
    in the argument's own buffer: the first write's base is the argument read by nothing else,
    and its chain ends in the value written back to that same argument. Not when the program
    can raise after its kernels ran (`_can_raise`): a call that raises leaves its arguments
    unchanged."""
    written = {k: i for i, k in getattr(program, "written_args", ())}
    if not written or _can_raise(program.eqns):
        return {}
    uses = _use_counts(program)
    position = {v: i for i, v in enumerate(program.invars)}
    out_position = {}
    for k, v in enumerate(program.outvars):
        out_position.setdefault(v, []).append(k)
    found: dict[int, int] = {}
    for eqn in program.eqns:
        base = eqn.inputs[0] if eqn.prim == "update_slice" else None
        if base is None or base not in position or uses.get(base) != 1:
            continue
        ks = out_position.get(chain_end(chains, eqn.outputs[0]), [])
        if len(ks) == 1 and written.get(ks[0]) == position[base]:
            found[ks[0]] = position[base]
    return found


# Kinds of primitives whose steps never raise at run time; library steps (LAPACK, gathers,
# raise_if), traced indices (IndexError) and integer powers (negative exponents) can.
_NEVER_RAISING_KINDS = ("elementwise", "movement", "reduce", "creation", "structural")


def _can_raise(eqns: list) -> bool:
    """Whether some step of `eqns` (or of a sub-program) may raise after earlier kernels ran:
    then no argument is written in place, so a call that raises leaves its arguments unchanged."""
    for e in eqns:
        if may_raise(e) or primitives.raises_on_data(e.prim, [o.aval for o in e.outputs]):  # integer power too
            return True
        if e.prim in WITH_SUB_PROGRAMS:
            for value in e.params.values():
                subs = value if isinstance(value, tuple) else (value,)
                if any(isinstance(p, Program) and _can_raise(p.eqns) for p in subs):
                    return True
        elif e.prim != "dot_general" and primitives.get(e.prim).kind not in _NEVER_RAISING_KINDS:
            return True
    return False


def chain_end(chains: dict[Var, Var], v: Var) -> Var:
    """The last value of the in-place chain `v` belongs to (v itself when it is in none)."""
    while v in chains:
        v = chains[v]
    return v


def update_slice_steps(scheduler: Any, eqn: Any, v: Var, n: int, ops: set[int]) -> list[Any]:
    """The kernels of `v = update_slice(base, value)`: copy base (unless v writes base's buffer
    in place), then store value into the region."""
    base, value = eqn.inputs
    out = scheduler.buf_of[v]
    shape = v.aval.shape
    steps = []
    if scheduler.buf_of.get(base) != out:
        index = tuple(ix.var(d) for d in range(len(shape)))
        copy_ops = set(ops)
        expr = scheduler.expr(base, index, shape, {}, copy_ops)
        steps.append(scheduler._kernel(f"k{n}_update_copy", shape, 0, [Store(out, ix.linearize(index, shape), expr)],
                                       copy_ops))
    region = value.aval.shape
    if 0 in region:
        return steps
    index = tuple(ix.var(d) for d in range(len(region)))
    dst = tuple(ix.add(ix.const(s), ix.scale(i, st)) for s, st, i in zip(eqn.params["starts"], eqn.params["steps"], index))
    region_ops = set(ops)
    expr = scheduler.expr(value, index, region, {}, region_ops)
    steps.append(scheduler._kernel(f"k{n + len(steps)}_update_region", region, 0,
                                   [Store(out, ix.linearize(dst, shape), expr)], region_ops))
    return steps


def adopt_argument_buffers(steps: list[Any], inputs: list[int], outputs: list[int], program: Program,
                           in_place: dict[int, int]) -> list[Any]:
    """After scheduling: a written argument X whose new value O is first written by a plain copy
    of X (an `update_copy` kernel) or by an elementwise kernel reading X only at the offsets it
    stores (`x += 1`, `x *= y`), where no other step reads X, is computed in X's buffer itself:
    the copy is dropped (or the kernel stores into X) and the steps use X for O. O would have
    held exactly X's values, so the results are the same; the caller's C-contiguous native
    array is then written by the kernels and Compiled.write_back copies nothing. `outputs` is
    updated; programs that can raise after their kernels are left alone."""
    written = getattr(program, "written_args", ())
    if not written or _can_raise(program.eqns) or any(is_control(st) for st in steps):
        return steps  # (a native loop or branch: its carries have buffers of their own)
    for i, k in written:
        x, o = inputs[i], outputs[k]
        if k in in_place or o == x or outputs.count(o) != 1:
            continue
        first = next((n for n, st in enumerate(steps) if o in _step_buffers(st)), None)
        if first is None:
            continue
        copy = steps[first]
        later = steps[first + 1:]
        # No step after may read x, and none before either: merge_siblings and fuse_rows only
        # check that a later kernel does not read what an earlier one writes, so an earlier
        # reader of x merged with a later writer of x could read values written meanwhile.
        if any(x in _step_reads(st) for st in later) or any(x in _step_reads(st) for st in steps[:first]):
            continue
        if (isinstance(copy, Kernel) and copy.name.endswith("_update_copy") and len(copy.stores) == 1
                and copy.stores[0].buffer == o and isinstance(copy.stores[0].value, Load)
                and copy.stores[0].value.buffer == x and copy.stores[0].value.offset == copy.stores[0].offset):
            steps = steps[:first] + [_rename(st, o, x) for st in later]
        elif _elementwise_in_place(copy, x, o):
            steps = steps[:first] + [_rename(st, o, x) for st in steps[first:]]
        else:
            continue
        outputs[k] = x
    return steps


def _elementwise_in_place(step: Any, x: int, o: int) -> bool:
    """Whether kernel `step` (the first to write `o`) may store into `x` instead: an elementwise
    kernel (no reduction) with one store to `o`, that reads `x` only at the offset it stores to
    (`x += 1`, `x *= y`: each element is read before it is written, by the same iteration)."""
    if not isinstance(step, Kernel) or step.n_reduce or any(s.reduce is not None for s in step.stores):
        return False
    to_o = [s for s in step.stores if s.buffer == o]
    if len(to_o) != 1 or any(s.buffer == x for s in step.stores):
        return False
    return all(offset == to_o[0].offset for offset in step.loads().get(x, []))


def _step_reads(step: Any) -> set[int]:
    return set(step.inputs) if isinstance(step, LibraryCall) else set(step.loads())


def _step_buffers(step: Any) -> set[int]:
    if isinstance(step, LibraryCall):
        return set(step.inputs) | set(step.outputs)
    return set(step.buffers())


def _rename(step: Any, old: int, new: int) -> Any:
    """`step` with buffer `old` replaced by `new` (loads and stores; library inputs and outputs)."""
    if isinstance(step, LibraryCall):
        return dataclasses.replace(step, inputs=[new if b == old else b for b in step.inputs],
                                   outputs=[new if b == old else b for b in step.outputs])
    assert isinstance(step, Kernel), type(step)

    def leaf(nd: Any) -> Any:
        return Load(new, nd.offset, nd.dtype) if isinstance(nd, Load) and nd.buffer == old else nd

    rebuilt = rebuild([s.value for s in step.stores], leaf)
    stores = [dataclasses.replace(s, buffer=new if s.buffer == old else s.buffer, value=rebuilt[id(s.value)])
              for s in step.stores]
    return Kernel(step.name, step.domain, step.n_reduce, stores, step.graph_ops)
