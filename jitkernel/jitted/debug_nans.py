"""`jk.config.update("debug_nans", True)`: a call whose floating results hold a NaN or an
infinity that its inputs did not bring raises FloatingPointError naming the function, the kernel,
the operation and the user's line that made it (docs/debugging.md).

How (JAX's way, `jax_debug_nans`): the compiled program runs as always; its floating results are
checked after the call. When one is not finite, the function is traced again with the user's line
of every equation recorded (trace/context.py `recording_locations`) and that program is re-run,
equation by equation, in the NumPy reference interpreter, into the bodies of `fori_loop`,
`while_loop`, `scan` and `cond` (lax control flow and converted Python loops): the first equation whose floating result is
not finite where its inputs are (per element for elementwise operations) is the culprit. NaN that
only flowed from the inputs finds none, and the call returns normally.

Off (the default) nothing of this runs and the generated code is the same: the check wraps the
warm entry only while the option is on (switching it clears every function's warm entries).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import events
from ..ir import Eqn, Program, primitives
from ..ir.control_flow import branch_index
from ..ir.debug_prims import without_effects
from ..trace.context import recording_locations
from ..tree import tree_flatten


@dataclass(frozen=True)
class Culprit:
    """The first equation that made a NaN or an infinity."""

    eqn: Eqn
    what: str  # "NaN" | "Inf"
    location: str  # "file:line: source", or "" when unknown
    loop: str = ""  # "inside the fori_loop at file:line", for an equation of a loop body


def _floating(value: Any) -> bool:
    return np.asarray(value).dtype.kind in "fc"


def _non_finite(value: Any) -> np.ndarray:
    """Per element: not finite (NaN or infinity; a complex value when either part is)."""
    return ~np.isfinite(np.asarray(value))


def has_non_finite(leaves: Sequence[Any]) -> bool:
    """Whether any floating leaf holds a NaN or an infinity."""
    for leaf in leaves:
        if isinstance(leaf, np.ndarray | np.generic) and _floating(leaf) and _non_finite(leaf).any():
            return True
    return False


def _made_here(eqn: Eqn, ins: list[np.ndarray], outs: list[np.ndarray]) -> str | None:
    """"NaN" or "Inf" when `eqn` made a non-finite floating value out of finite inputs."""
    elementwise = primitives.get(eqn.prim).kind == "elementwise"
    bad_in = np.zeros((), bool)
    for x in ins:
        if _floating(x):
            bad = _non_finite(x)
            bad_in = bad_in | bad if elementwise and bad.shape == np.shape(outs[0]) else bad_in | bad.any()
    for out in outs:
        if not _floating(out):
            continue
        new = _non_finite(out) & ~bad_in
        if new.any():
            return "NaN" if np.isnan(np.asarray(out)[new]).any() else "Inf"
    return None


class _Finder:
    """Re-runs a traced program equation by equation, looking for the first culprit."""

    def __init__(self, locations: dict[Eqn, str]) -> None:
        self.locations = locations

    def run(self, program: Program, args: Sequence[np.ndarray], loop: str = "") -> tuple[list[np.ndarray], Culprit | None]:
        env: dict = dict(zip(program.invars, (np.asarray(a) for a in args)))
        env.update(zip(program.constvars, program.consts))
        for eqn in program.eqns:
            ins = [env[v] for v in eqn.inputs]
            if eqn.prim in ("fori_loop", "while_loop", "scan", "cond"):
                outs, found = self._control(eqn, ins)
            else:
                outs, found = primitives.evaluate(eqn.prim, ins, eqn.params), None
                what = _made_here(eqn, ins, outs)
                if what is not None:
                    found = Culprit(eqn, what, self.locations.get(eqn, ""), loop)
            if found is not None:
                return outs, found
            env.update(zip(eqn.outputs, (np.asarray(o) for o in outs)))
        return [env[v] for v in program.outvars], None

    def _control(self, eqn: Eqn, ins: list[np.ndarray]) -> tuple[list[np.ndarray], Culprit | None]:
        """A lax loop run trip by trip, a branch chosen by its index, their bodies equation by
        equation (the interpreter's impls, ir/control_flow.py)."""
        p = eqn.params
        where = f"inside the {eqn.prim} at {self.locations.get(eqn, '?')}"
        if eqn.prim == "cond":
            return self.run(p["branches"][branch_index(ins[0], len(p["branches"]))], ins[1:], where)
        if eqn.prim == "scan":
            return self._scan(ins, where, **p)
        if eqn.prim == "fori_loop":
            lower, upper, rest = ins[0], ins[1], ins[2:]
            consts, carry = list(rest[:p["nconsts"]]), list(rest[p["nconsts"]:])
            for i in range(int(lower), int(upper)):
                carry, found = self.run(p["body"], [np.asarray(i, lower.dtype)] + consts + carry, where)
                if found is not None:
                    return carry, found
            return carry, None
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, carry = list(ins[:cn]), list(ins[cn:cn + bn]), list(ins[cn + bn:])
        while True:
            (pred,), found = self.run(p["cond"], cconsts + carry, where)
            if found is not None or not bool(pred):
                return carry, found
            carry, found = self.run(p["body"], bconsts + carry, where)
            if found is not None:
                return carry, found


    def _scan(self, ins: list[np.ndarray], where: str, *, body: Program, nconsts: int, ncarry: int, length: int,
              reverse: bool) -> tuple[list[np.ndarray], Culprit | None]:
        consts, carry, xs = list(ins[:nconsts]), list(ins[nconsts:nconsts + ncarry]), ins[nconsts + ncarry:]
        ys = [np.empty((length,) + y.shape, y.dtype) for y in body.out_avals[ncarry:]]
        for t in (range(length - 1, -1, -1) if reverse else range(length)):
            outs, found = self.run(body, consts + carry + [x[t] for x in xs], where)
            if found is not None:
                return carry + ys, found
            carry = outs[:ncarry]
            for y, value in zip(ys, outs[ncarry:]):
                y[t] = value
        return carry + ys, None


def find_culprit(trace: Callable[[], Program], args: Sequence[np.ndarray]) -> Culprit | None:
    """Trace again with locations recorded, then re-run the program in the interpreter."""
    with recording_locations() as locations:
        program = trace()
    if len(program.invars) != len(args):
        return None
    with np.errstate(all="ignore"):  # (without its prints: the call printed already)
        return _Finder(locations).run(without_effects(program), args)[1]


def _kernel_of(compiled: Any, eqn: Eqn) -> str:
    """The name of the compiled program's first step that fused an operation like `eqn` (the
    kernel IR records the graph ops each step absorbed: `log->f64[3]`), else the first loop
    step (a body's kernels are inside it), else ''."""
    kp = getattr(getattr(compiled, "executable", None), "kp", None)
    record = getattr(kp, "fusion_record", None) or []
    exact = f"{eqn.prim}->{eqn.outputs[0].aval}" if eqn.outputs else eqn.prim
    for same in (lambda op: op == exact, lambda op: op.split("->")[0] == eqn.prim):
        for group in record:
            if any(same(str(op)) for op in group.get("ops", ())):
                return str(group.get("kernel", ""))
    return next((str(g.get("kernel", "")) for g in record if g.get("kind") == "loop"), "")


def raise_for(function: str, compiled: Any, culprit: Culprit, function_id: int = 0) -> None:
    """Publish the DebugNansEvent (the profiler's timeline shows it) and raise."""
    kernel = _kernel_of(compiled, culprit.eqn)
    where = culprit.location or "an unknown line"
    if events.SUBSCRIBERS:
        events.publish(events.DebugNansEvent(function, events.clock(), 0.0, function_id=function_id,
                                             kernel=kernel, operation=culprit.eqn.prim, location=culprit.location,
                                             what=culprit.what))
    raise FloatingPointError(
        f"debug_nans: {culprit.what} produced by {culprit.eqn.prim!r} in {function}"
        + (f" (kernel {kernel})" if kernel else "") + f", at {where}" + (f" ({culprit.loop})" if culprit.loop else ""))


def check_call(jitted: Any, compiled: Any, args: tuple, kwargs: dict, result: Any) -> None:
    """After a call with debug_nans on: raise when its results hold a NaN or an infinity made
    inside."""
    if not has_non_finite(tree_flatten(result)[0]):
        return
    sig, arrays = jitted._signature(args, kwargs)
    host = [np.asarray(a) for a in arrays]
    culprit = find_culprit(lambda: jitted._trace(sig, args, kwargs)[0], host)
    if culprit is not None:
        raise_for(jitted.__name__, compiled, culprit, getattr(jitted, "function_id", 0))


def checked_entry(jitted: Any, compiled: Any, entry: Callable[[tuple], Any]) -> Callable[[tuple], Any]:
    """A warm entry that checks its results (registered only while debug_nans is on)."""
    def run(args: tuple) -> Any:
        result = entry(args)
        check_call(jitted, compiled, args, {}, result)
        return result
    return run
