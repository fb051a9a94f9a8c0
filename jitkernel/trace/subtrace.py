"""Sub-traces: the functions given to jk.lax (loop bodies, branches) traced into closed
sub-Programs, with closure conversion (docs/architecture.md, "Control flow, traced indices and
symbolic dimensions").

A `SubTraceContext` is nested in the context that was active when the jk.lax function was
called. Every operation while it is active is recorded in it (TraceContext.bind routes there);
an input of an enclosing trace is *captured*: it gets a fresh input variable of the
sub-program once, and the outer Tracer is remembered, to be passed as an explicit operand of
the control-flow equation. Capture is by variable, not by Tracer, because helpers rewrap a
variable in new Tracers (`Tracer(ctx, x.ir_var)`).
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import AType, Eqn, Program, Var
from ..passes.lower_symbolic import lower_symbolic, lowering_rule
from .context import TraceContext, _traces
from .frames import user_frame_location
from .numpy_api import NUMPY
from .operands import lift
from .tracer import Tracer


class SubTraceContext(TraceContext):
    """The trace of one jk.lax sub-function (`name` like "f.fori_loop_body")."""

    def __init__(self, name: str, parent: TraceContext) -> None:
        super().__init__(name)
        self.parent = parent
        self._local: set[Var] = set()
        self._captured: dict[Var, Var] = {}  # outer variable -> its input here
        self._outer_of: dict[Var, Var] = {}  # the reverse
        self.captured: list[Tracer] = []  # outer Tracers (of `parent`), in order of capture
        self.producer: dict[Var, Eqn] = {}
        # (lowest, highest) value of an integer input, where known (a fori_loop index with
        # static bounds): proves that a dynamic slice has a constant length (numpy/_dynamic.py).
        self.ranges: dict[Var, tuple[int, int]] = {}
        # Bounds that hold for every iteration but may not be reached (a loop over range(i), i an
        # enclosing index): enough to prove a slice in bounds, not to raise NumPy's OverflowError.
        self.loose_ranges: dict[Var, tuple[int, int]] = {}
        # id(eqn) -> the user's line, for equations on values of symbolic length (their
        # lowering, passes/lower_symbolic.py, reports errors there).
        self.symbolic_where: dict[int, str] = {}
        # Run-time checks of a jk.lax body or branch (trace/pending_checks.py): whether they go
        # into `error_code` (0-d int32: the first failing check's site, 0 if none) and its sites.
        self.collects_checks = False
        self.error_code: Tracer | None = None
        self.error_sites: set[int] = set()

    @property
    def pending_conversion_error(self) -> Exception | None:
        # tracer.conversion_error reads it on the outermost context (trace_program)
        return self.parent.pending_conversion_error

    @pending_conversion_error.setter
    def pending_conversion_error(self, err: Exception | None) -> None:
        if err is not None:
            self.parent.pending_conversion_error = err

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self.closed = True

    def new_input(self, aval: AType, weak: type | None = None) -> Tracer:
        """An explicit input (a carry leaf, a loop index, a branch operand). Unlike a function
        argument it is the body's own value, not the caller's memory."""
        v = Var(aval)
        self.invars.append(v)
        self._local.add(v)
        return Tracer(self, v, weak)

    def const(self, value: Any, dtype: np.dtype | None = None) -> Tracer:
        t = super().const(value, dtype)
        self._local.add(t.ir_var)
        return t

    def bind(self, prim: str, inputs: Sequence[Tracer], **params: Any) -> list[Tracer]:
        if self.closed:
            raise self._leak_error()
        innermost = _traces.stack[-1] if _traces.stack else self
        if innermost is not self and innermost.encloses(self):
            return innermost.bind(prim, inputs, **params)  # capture happens there, not here
        results = super().bind(prim, [self.localize(t) for t in inputs], **params)
        eqn = self.eqns[-1] if self.eqns and results and self.eqns[-1].outputs[0] is results[0].ir_var else None
        for r in results:
            self._local.add(r.ir_var)
            if eqn is not None:
                self.producer[r.ir_var] = eqn
        if eqn is not None and (any(r.ir_var.aval.is_symbolic for r in results)
                                or any(v.aval.is_symbolic for v in eqn.inputs)):
            self._note_symbolic(eqn)
        return results

    def _note_symbolic(self, eqn: Eqn) -> None:
        """An equation on a value of symbolic length: remember the user's line, and refuse a
        primitive the lowering cannot handle now, while that line is known."""
        where = user_frame_location()
        self.symbolic_where[id(eqn)] = where
        if lowering_rule(eqn.prim) is None:
            raise UnsupportedOperationError(
                f"{eqn.prim} of a value of symbolic length ({', '.join(str(v.aval) for v in eqn.inputs)}) is "
                f"not supported yet, at {where}. Slices whose length depends on a loop index support "
                "elementwise math, broadcasting, reductions, argmin/argmax, dot/@, reshapes and transposes that "
                "keep the symbolic axis, and assignment")

    def _leak_error(self) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"a value traced inside {self.name!r} (a function given to jk.lax) is used after that function "
            "returned, e.g. through a Python list or a nonlocal variable; return it from the function "
            "instead (as part of the loop carry, or the branch's result)")

    def localize(self, t: Any) -> Any:
        """`t` as a Tracer of this context: an outer value is captured (once per variable)."""
        if not isinstance(t, Tracer):
            return t
        v = t.ir_var
        if v in self._local:
            return t if t._ctx is self else _retag(t, self, v)
        if t._ctx.closed and t._ctx is not self:
            raise t._ctx._leak_error() if isinstance(t._ctx, SubTraceContext) else self._leak_error()
        if not self.encloses(t._ctx) and not t._ctx.encloses(self):
            raise UnsupportedOperationError(
                f"{self.name}: a value traced by another jitted function leaked into this one")
        inner = self._captured.get(v)
        if inner is None:
            inner = Var(v.aval)
            self._captured[v] = inner
            self._outer_of[inner] = v
            self._local.add(inner)
            self.captured.append(_retag(t, self.parent, v))
        return _retag(t, self, inner)

    def outer_var(self, v: Var) -> Var | None:
        """The enclosing trace's variable that input `v` captures, or None."""
        return self._outer_of.get(v)

    def weak_int_cast(self, var: Var, dtype: np.dtype, check_below: bool = True, check_above: bool = True) -> None:
        """A Python int cast to a narrower integer: the bound check belongs to the argument of the
        outermost function it comes from; a loop index with known bounds is checked now."""
        if var in self.ranges:
            info, (lo, hi) = np.iinfo(dtype), self.ranges[var]
            # NumPy raises at the first iteration whose index does not fit (the loop counts up).
            for value, checked, bad in ((lo, check_below, lo < info.min),
                                        (max(lo, info.max + 1), check_above, hi > info.max)):
                if checked and bad:
                    raise OverflowError(f"Python integer {value} out of bounds for {np.dtype(dtype)}")
            return
        outer = self._outer_of.get(var, None if var in self._local else var)
        if outer is not None:
            self.parent.weak_int_cast(outer, dtype, check_below, check_above)

    def program(self, outvars: list[Var]) -> Program:
        """The closed sub-program: inputs are the captured values, then the explicit inputs."""
        captured_inputs = [self._captured[t.ir_var] for t in self.captured]
        return Program(captured_inputs + list(self.invars), list(self.constvars), list(self.consts),
                       list(self.eqns), outvars, self.name)

    def output_var(self, leaf: Any, dtype: np.dtype | None = None) -> Var:
        """The variable of one output leaf: a local Tracer, a captured outer one, or a constant."""
        if isinstance(leaf, Tracer):
            t = self.localize(leaf)
        else:
            try:
                t = lift(self, leaf)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{self.name}: returned a value of type {type(leaf).__name__}, which is not an array: {e}") from None
        if dtype is not None and t.dtype != dtype:
            jnp = NUMPY.namespace
            t = self.localize(jnp.astype(t, dtype))
        return t.ir_var


def _retag(t: Tracer, ctx: TraceContext, v: Var) -> Tracer:
    """A Tracer of `ctx` for variable `v`, with `t`'s weak type, scalar kind and memory."""
    out = Tracer(ctx, v, t.weak)
    out.scalar = t.scalar
    out._mem = t._mem
    # t is current (its ir_var was just read): so is the retagged Tracer. Without this, a base
    # written before the loop (version > 0) made a captured value read the enclosing trace's var.
    out._version = t._version
    if v is t._var:  # the same value in another context: still the same view of its base
        out._view, out._strides = t._view, t._strides
    elif t._view is None:
        out._strides = t._strides  # a base keeps its layout (an argument's real strides)
    return out


def trace_function(parent: TraceContext, name: str, fun: Callable[..., Any],
                   make_args: Callable[[SubTraceContext], tuple], loop: bool = False,
                   collects_checks: bool | None = None) -> tuple[SubTraceContext, Any]:
    """Run `fun(*make_args(ctx))` inside a new sub-trace of `parent`; return (ctx, result). The
    caller turns the result's leaves into outputs (ctx.output_var) and builds ctx.program.
    `loop`: the body or condition of a loop (runs once per iteration; see in_loop).
    `collects_checks` (default: `loop`): run-time checks become ctx's error code, which the
    caller must take before `finish` (trace/pending_checks.py)."""
    ctx = SubTraceContext(name, parent)
    ctx.loop = loop
    ctx.collects_checks = loop if collects_checks is None else collects_checks
    with ctx:
        args = make_args(ctx)
        result = fun(*args)
    ctx.closed = False  # outputs are still read (and captured) while the caller finishes it
    return ctx, result


def in_loop(ctx: TraceContext | None) -> bool:
    """Whether `ctx` traces (a part of) a loop body or condition."""
    while ctx is not None:
        if getattr(ctx, "loop", False):
            return True
        ctx = getattr(ctx, "parent", None)
    return False


@contextlib.contextmanager
def recording_in(ctx: SubTraceContext) -> Iterator[SubTraceContext]:
    """Operations inside the block are recorded in `ctx`, a sub-trace whose function has returned
    (the casts of its outputs, a loop's checks), without closing it as `with ctx` does."""
    _traces.stack.append(ctx)
    try:
        yield ctx
    finally:
        _traces.stack.remove(ctx)


def finish(ctx: SubTraceContext, leaves: Sequence[Any], dtypes: Sequence[np.dtype | None] | None = None) -> Program:
    """The sub-program returning `leaves` (cast to `dtypes` where given), then close `ctx`."""
    if ctx.error_code is not None:  # a check nobody would raise: a silent wrong answer
        raise AssertionError(f"{ctx.name}: its run-time checks were not taken (trace/pending_checks.py)")
    with recording_in(ctx):  # casts and captures of the outputs are recorded in ctx
        outvars = [ctx.output_var(leaf, None if dtypes is None else dtypes[k]) for k, leaf in enumerate(leaves)]
    ctx.closed = True
    return lower_symbolic(ctx.program(outvars), ctx.symbolic_where)
