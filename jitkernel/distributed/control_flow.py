"""Control flow over Dask arrays: `fori_loop`, `while_loop`, `scan` and `cond` run per block
when that is exact, inside the block program (docs/distributed.md, "Control flow over Dask
arrays").

The rule analyses every sub-Program of the equation with the partition's own letter rules, in a
scratch segment whose inputs carry the letters (and chunkings) of the equation's operands. The
equation is blockwise when, in every sub-Program,
- no reduction or product runs over a chunked axis (no partial: a loop predicate or a branch
  index computed from chunked data lands here, `while x.max() > 1` for one),
- no step needs a chunked axis whole (slices, reshapes across chunked axes, sorts, library calls),
- every carry keeps its letters through the body (a body writing `x.T` into `x` does not), and a
  scan's `xs` are whole along the scanned axis.
A scalar predicate, branch index or trip count then holds the same value in every block task (a
0-d value inside a segment is never computed from one block of chunked data; one computed from a
reduction is the tree combine's 0-d result, which every block task reads).

NumPy arrays closed over in a loop body or branch are made operands first (`hoist_constants`), so
the partition splits them like any other input.

Otherwise the equation keeps the fallback: its inputs are rechunked to one block, with a
RechunkWarning saying why. Letters the sub-Programs make whole (row reductions) are pinned in the
enclosing segment, so a later chunking of them rechunks instead of running wrong. Every
sub-Program variable gets the letters of the enclosing segment (`Segment.letters`, listed in
`Segment.sub_vars`), which is how `worker.specialize` rebuilds the sub-Programs at block shapes
(`block_shapes.specialize_params`).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import AType, Program
from ..ir.control_flow import CONTROL_FLOW_PRIMITIVES
from ..ir.program import Eqn, Var
from .block_shapes import sub_programs
from .partition import Letters, Segment, Source, _Retry, fallback_rule, refine, rule, rule_for


class NotBlockwise(Exception):
    """A sub-Program that cannot run per block; the message says why."""


class _ScratchPlanner:
    """What the letter rules read of a planner, for one sub-Program analysis: nothing exists
    before it (no Dask-level slicing), and a rechunk is a failure, not a warning."""

    def __init__(self) -> None:
        self.chunks: dict[Var, tuple] = {}
        self.scalar_consts: set[Var] = set()
        self.rechunked: list[str] = []
        self.notes: list[str] = []

    def dask_step(self, eqn: Eqn) -> bool:
        return False


def _would_chunk(L: Letters, root: int) -> bool:
    return bool(L.chunkings[root]) and len(refine(L.chunkings[root], L.size[root])) > 1


class _Analysis:
    """One control-flow equation's sub-Programs in a scratch segment whose letters shadow the
    enclosing segment's (`outer_of`: scratch letter -> the enclosing letter it stands for)."""

    def __init__(self, seg: Segment) -> None:
        self.outer = seg
        self.scratch = Segment(_ScratchPlanner())
        self.scratch.reads_inputs = True  # any need for a chunked axis whole raises _Retry
        self.outer_of: dict[int, int] = {}
        self.by_outer: dict[int, int] = {}
        self.vars: list[Var] = []
        self.const_letters: list[int] = []  # letters of the sub-Programs' array constants (whole)

    def letter_for(self, outer_letter: int) -> int:
        root = self.outer.L.find(outer_letter)
        if root not in self.by_outer:
            L = self.outer.L
            a = self.scratch.L.new(L.size[root], L.chunks(root))
            self.by_outer[root], self.outer_of[a] = a, root
        return self.by_outer[root]

    def bind(self, program: Program, outer_letters: list[tuple[int, ...]]) -> None:
        """The sub-Program's inputs carry the letters of the operands they receive."""
        S = self.scratch
        for v, letters in zip(program.invars, outer_letters, strict=True):
            S.letters[v] = tuple(self.letter_for(a) for a in letters)
            self.vars.append(v)
        for v in program.constvars:  # a constant cannot be cut per block: its axes stay whole
            if v.aval.ndim == 0:
                S.planner.scalar_consts.add(v)
                S.letters[v] = ()
            else:
                S.letters[v] = S.fresh(v.aval.shape)
                for a in S.letters[v]:
                    S.L.pin(a)
                self.const_letters += S.letters[v]
            self.vars.append(v)

    def run(self, program: Program, role: str) -> list[tuple[int, ...]]:
        """Apply the letter rules to `program`'s equations; the letters of its outputs."""
        S = self.scratch
        for eqn in program.eqns:
            try:
                rule_for(eqn.prim)(S, eqn)
            except _Retry:
                raise NotBlockwise(f"{role} needs a chunked axis whole ({eqn.prim})") from None
            if S.partials:
                raise NotBlockwise(f"{role} reduces over a chunked axis ({eqn.prim}): it depends on chunked data")
            self.vars.extend(eqn.outputs)
        return [S.of(v) for v in program.outvars]

    def unify(self, a: tuple[int, ...], b: tuple[int, ...]) -> None:
        for x, y in zip(a, b, strict=True):
            self.scratch.L.union(x, y)

    def check(self) -> None:
        """No letter twice on a chunked array, no chunked letter that a step needs whole."""
        L = self.scratch.L
        for v, letters in self.scratch.letters.items():
            roots = [L.find(a) for a in letters]
            if any(roots.count(r) > 1 and _would_chunk(L, r) for r in roots):
                raise NotBlockwise(f"{v.aval} carries one chunked axis twice")
        consts = {L.find(a) for a in self.const_letters}
        for r in {L.find(a) for x in self.scratch.letters.values() for a in x}:
            if L.pinned[r] and _would_chunk(L, r):
                raise NotBlockwise("a NumPy constant or np.arange inside it meets a chunked axis; pass the array "
                                   "as an argument of the jitted function to keep the loop blockwise" if r in consts
                                   else "a chunked axis is needed whole inside it")

    def commit(self) -> Any:
        """Carry the analysis into the enclosing segment: letters the sub-Programs unify are
        unified there, letters they pin are pinned, and every sub-Program variable gets its
        enclosing letters. Returns `to_outer`: scratch letters -> enclosing letters."""
        S, O = self.scratch, self.outer
        groups: dict[int, list[int]] = {}
        for a, outer in self.outer_of.items():
            groups.setdefault(S.L.find(a), []).append(outer)
        mapped: dict[int, int] = {}
        for root, outers in groups.items():
            for other in outers[1:]:
                O.L.union(outers[0], other)
            mapped[root] = outers[0]
            if S.L.pinned[root]:
                O.L.pin(outers[0])

        def to_outer(letters: tuple[int, ...]) -> tuple[int, ...]:
            out = []
            for a in letters:
                r = S.L.find(a)
                if r not in mapped:  # made inside the sub-Program (a broadcast): whole
                    mapped[r] = O.L.new(S.L.size[r])
                    O.L.pin(mapped[r])
                out.append(mapped[r])
            return tuple(out)
        sub_vars = O.__dict__.setdefault("sub_vars", [])
        for v in self.vars:
            O.letters[v] = to_outer(S.letters[v])
            sub_vars.append(v)
        for v in getattr(S, "sub_vars", []):  # nested control flow's variables
            if v not in O.letters:
                O.letters[v] = to_outer(S.letters[v])
                sub_vars.append(v)
        return to_outer


def _analyse(seg: Segment, eqn: Eqn) -> list[tuple[int, ...]]:
    """The outputs' letters of a blockwise control-flow `eqn` (committed to `seg`); NotBlockwise
    otherwise (nothing committed)."""
    ins = [seg.of(v) for v in eqn.inputs]
    an = _Analysis(seg)
    for sub in sub_programs(eqn.prim, eqn.params):
        if any(v in seg.letters for v in sub.invars + [o for e in sub.eqns for o in e.outputs]):
            raise NotBlockwise("its sub-program is shared with another step of this segment")
    return _ANALYSE[eqn.prim](seg, an, eqn, ins)


def _checked_and_committed(an: _Analysis, outs: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The outputs' letters in the enclosing segment, once the analysis holds (`_Analysis.check`)."""
    an.check()
    to_outer = an.commit()
    return [to_outer(o) for o in outs]


def _analyse_fori_loop(seg: Segment, an: _Analysis, eqn: Eqn, ins: list) -> list[tuple[int, ...]]:
    n, body = eqn.params["nconsts"], eqn.params["body"]
    an.bind(body, [ins[0]] + ins[2:])
    outs = an.run(body, "the body")
    for k, carry in enumerate(body.invars[1 + n:]):
        an.unify(an.scratch.letters[carry], outs[k])
    return _checked_and_committed(an, outs)


def _analyse_while_loop(seg: Segment, an: _Analysis, eqn: Eqn, ins: list) -> list[tuple[int, ...]]:
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    carry_ins = ins[cn + bn:]
    an.bind(p["cond"], ins[:cn] + carry_ins)
    an.bind(p["body"], ins[cn:cn + bn] + carry_ins)
    an.run(p["cond"], "its predicate")
    outs = an.run(p["body"], "the body")
    for k, carry in enumerate(p["body"].invars[bn:]):
        an.unify(an.scratch.letters[carry], outs[k])
    return _checked_and_committed(an, outs)


def _analyse_scan(seg: Segment, an: _Analysis, eqn: Eqn, ins: list) -> list[tuple[int, ...]]:
    p = eqn.params
    n, nc, body = p["nconsts"], p["ncarry"], p["body"]
    xs = ins[n + nc:]
    if any(seg.L.chunked(x[0]) for x in xs):
        raise NotBlockwise("its xs are chunked along the scanned axis")
    an.bind(body, ins[:n + nc] + [x[1:] for x in xs])
    outs = an.run(body, "the body")
    for k, carry in enumerate(body.invars[n:n + nc]):
        an.unify(an.scratch.letters[carry], outs[k])
    an.check()
    for x in xs:
        seg.L.pin(x[0])  # the scanned axis whole in every block
    to_outer = an.commit()
    carry = [to_outer(o) for o in outs[:nc]]
    ys = []
    for o, y in zip(outs[nc:], eqn.outputs[nc:]):
        lead = seg.L.new(y.aval.shape[0])
        seg.L.pin(lead)
        ys.append((lead,) + to_outer(o))
    return carry + ys


def _analyse_cond(seg: Segment, an: _Analysis, eqn: Eqn, ins: list) -> list[tuple[int, ...]]:
    """cond / switch: every branch on the operands, their outputs unified."""
    outs = None
    for k, branch in enumerate(eqn.params["branches"]):
        an.bind(branch, ins[1:])
        got = an.run(branch, f"branch {k}")
        if outs is None:
            outs = got
        else:
            for a, b in zip(outs, got):
                an.unify(a, b)
    return _checked_and_committed(an, outs)


# One analysis per control-flow primitive (bind, run and unify its sub-Programs, then check and commit).
_ANALYSE = {"fori_loop": _analyse_fori_loop, "while_loop": _analyse_while_loop, "scan": _analyse_scan,
            "cond": _analyse_cond}


# Per loop, per sub-Program param: (the param counting its consts, where its consts start in the
# sub-Program's invars, where they start in the loop's inputs, given the params so far).
_CONSTS_AT = {
    "fori_loop": {"body": ("nconsts", 1, lambda params: 2)},
    "while_loop": {"cond": ("cond_nconsts", 0, lambda params: 0),  # inputs: [*cond_consts, *body_consts, *init]
                   "body": ("body_nconsts", 0, lambda params: params["cond_nconsts"])},
    "scan": {"body": ("nconsts", 0, lambda params: 0)},
}


def hoist_constants(seg: Segment, eqn: Eqn) -> Eqn:
    """A loop (or cond) whose sub-Programs hold array constants (a NumPy array closed over),
    rewritten to receive them as loop consts (branch operands): the partition then splits them like any operand (a Dask source),
    where a constant inside the loop cannot be cut per block. Only in a real segment (a nested
    loop keeps its constants)."""
    planner = seg.planner
    if not hasattr(planner, "steps"):
        return eqn
    consts_at = _CONSTS_AT.get(eqn.prim)
    if consts_at is None:  # cond: its branches' constants become operands
        return _hoist_branch_constants(planner, eqn)
    params = dict(eqn.params)
    inputs = list(eqn.inputs)
    for name, (key, offset, inputs_start) in consts_at.items():
        sub = params[name]
        hoisted = [k for k, v in enumerate(sub.constvars) if v.aval.ndim > 0]
        if not hoisted or sub.int_arg_bounds or sub.byteorder_sources:
            continue
        n = params[key]
        at = offset + n  # after the sub-Program's own consts
        outer = [_const_source(planner, sub.constvars[k].aval, sub.consts[k]) for k in hoisted]
        keep = [k for k in range(len(sub.constvars)) if k not in hoisted]
        params[name] = dataclasses.replace(
            sub, invars=sub.invars[:at] + [sub.constvars[k] for k in hoisted] + sub.invars[at:],
            constvars=[sub.constvars[k] for k in keep], consts=[sub.consts[k] for k in keep])
        params[key] = n + len(hoisted)
        pos = inputs_start(params) + n
        inputs[pos:pos] = outer
    if params == eqn.params:
        return eqn
    return Eqn(eqn.prim, inputs, list(eqn.outputs), params)


def _const_source(planner: Any, aval: AType, value: Any) -> Var:
    """A new Dask source (one block, rechunked where it meets chunked axes) holding `value`."""
    v = Var(aval)
    planner.chunks[v] = tuple((m,) for m in aval.shape)
    planner.steps.append(Source(v, "const", value))
    return v


def _hoist_branch_constants(planner: Any, eqn: Eqn) -> Eqn:
    """`cond` whose branches hold array constants, rewritten so that every constant is an operand
    (appended; every branch receives all of them and reads its own)."""
    branches = eqn.params["branches"]
    hoisted = [[k for k, v in enumerate(b.constvars) if v.aval.ndim > 0] for b in branches]
    if not any(hoisted) or any(b.int_arg_bounds or b.byteorder_sources for b in branches):
        return eqn
    extra = [(j, k) for j, ks in enumerate(hoisted) for k in ks]
    inputs = list(eqn.inputs) + [_const_source(planner, branches[j].constvars[k].aval, branches[j].consts[k])
                                 for j, k in extra]
    new = []
    for j, b in enumerate(branches):
        slots = [b.constvars[k] if i == j else Var(branches[i].constvars[k].aval) for i, k in extra]
        keep = [k for k in range(len(b.constvars)) if k not in hoisted[j]]
        new.append(dataclasses.replace(b, invars=list(b.invars) + slots, constvars=[b.constvars[k] for k in keep],
                                       consts=[b.consts[k] for k in keep]))
    return Eqn("cond", inputs, list(eqn.outputs), dict(eqn.params, branches=tuple(new)))


@rule(*CONTROL_FLOW_PRIMITIVES)
def control_flow_rule(seg: Segment, eqn: Eqn) -> None:
    """Blockwise where exact (module docstring), else the fallback (one block, warned)."""
    eqn = hoist_constants(seg, eqn)
    try:
        out_letters = _analyse(seg, eqn)
    except NotBlockwise as why:
        return fallback_rule(seg, eqn, f"{eqn.prim} ({why})")
    seg.define(eqn, out_letters)
    if not isinstance(seg.planner, _ScratchPlanner) and any(seg.L.chunked(a) for x in out_letters for a in x):
        seg.planner.notes.append(f"{eqn.prim} over {', '.join(str(v.aval) for v in eqn.outputs)} runs blockwise "
                                 "(the whole loop/branch per block)")
