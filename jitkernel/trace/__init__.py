"""Tracing: run a Python function on Tracers and record the Program it computes."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..forking import compile_section
from ..ir import AType, Program, Var, live_variables, primitives
from ..tree import TreeDef, tree_flatten
from .context import TraceContext, current_context, user_line_warnings
from . import creation, random_guard, strided, unsupported
from . import inplace, operators  # noqa: F401  (attach the Tracer's writes and operators)
from .tracer import Tracer, conversion_error
from .views import argument_view_chain

__all__ = ["TraceContext", "Tracer", "current_context", "trace_program"]


@compile_section
def trace_program(fun: Callable[..., Any], name: str,
                  in_specs: Sequence[tuple[AType, type | None]],
                  build_args: Callable[[list[Tracer]], tuple[tuple, dict]]) -> tuple[Program, TreeDef]:
    """Trace `fun(*args, **kwargs)` where `build_args` places one Tracer per spec into the
    argument pytrees (static arguments are already there). Returns (program, output tree)."""
    watch = random_guard.RandomStateWatch(fun)
    random_guard.install()
    creation.install()
    strided.install()
    watch.start()  # (records, in this thread only, the lines naming a generator that the trace runs)
    try:
        unsupported.install()  # inside: a failure still uninstalls the others
        with TraceContext(name) as ctx, user_line_warnings():
            tracers = [ctx.new_input(aval, weak) for aval, weak in in_specs]
            args, kwargs = build_args(tracers)
            try:
                result = fun(*args, **kwargs)
            except (ValueError, TypeError) as e:
                real = conversion_error(ctx, e)
                if real is None:
                    raise
                raise real.with_traceback(e.__traceback__) from None
            leaves, out_tree = tree_flatten(result, namedtuples=True)
            outvars: list[Var] = []
            trimmed: list = []  # (output index, count Tracer) of data-dependent outputs
            views: list = []  # (output index, input index, movements): views of arguments
            for leaf in leaves:
                if getattr(type(leaf), "_jk_datadep", False):  # numpy/_datadep.py: padded + count
                    trimmed.append((len(outvars), leaf.count))
                    outvars.append(leaf.padded.ir_var)
                elif isinstance(leaf, Tracer) and leaf._ctx is ctx:
                    ctx.keep_byteorder(leaf, leaf)  # an argument (or a view of one) after writes: its order
                    chain = argument_view_chain(leaf, ctx)
                    if chain is not None:  # returned as that view of the caller's array
                        views.append((len(outvars), *chain))
                    outvars.append(leaf.ir_var)
                elif isinstance(leaf, Tracer):
                    raise UnsupportedOperationError(f"{name}: returned a value traced by another function")
                else:
                    if type(leaf) is int and not -2**63 <= leaf < 2**64:
                        # (a Python int computed at trace time: static arguments, or a retrace
                        # with them static after a conversion error)
                        raise OverflowError(
                            f"{name}: returns the Python int {leaf}, past int64 (-2**63 .. 2**63 - 1) and "
                            "uint64, which compiled code cannot hold (Python's ints are unbounded)")
                    try:
                        outvars.append(ctx.const(leaf if isinstance(leaf, np.ndarray) else np.asarray(leaf)).ir_var)
                    except (TypeError, ValueError) as e:
                        raise TypeError(f"{name}: output of type {type(leaf).__name__} is not an array: {e}") from None
            written = _written_arguments(ctx, outvars)
            outvars += _unread_raising_values(ctx, outvars)
            trims = []
            for k, count in trimmed:  # each count is a hidden output, read by Compiled.finish
                trims.append((k, len(outvars)))
                outvars.append(count.ir_var)
    finally:
        unsupported.uninstall()
        watch.stop()
        strided.uninstall()
        creation.uninstall()
        random_guard.uninstall()
    watch.check(name)
    program = ctx.program(outvars)
    program.written_args = written
    program.output_views = tuple(views)
    program.layout_args = tuple(mem.index for mem in ctx.argument_memories if mem.layout_read)
    program.trimmed_outputs = tuple(trims)
    return program, out_tree


def _written_arguments(ctx: TraceContext, outvars: list[Var]) -> tuple[tuple[int, int], ...]:
    """Append the final value of every argument the function wrote as a hidden output (the
    output tree never reads it); returns (input index, output index) for each. The call copies
    these back into the caller's arrays (pipeline.Compiled.write_back)."""
    written = []
    for mem in ctx.argument_memories:
        if mem.written and mem.value is not ctx.invars[mem.index]:
            written.append((mem.index, len(outvars)))
            outvars.append(mem.value)
    return tuple(written)


def _unread_raising_values(ctx: TraceContext, outvars: list[Var]) -> list[Var]:
    """Hidden outputs that keep alive the values whose computation can raise at run time but
    that no output reads. NumPy evaluates every statement, so `unused = a ** b; return a + 1`
    raises for a negative integer exponent; dead-code elimination would drop the power and
    return a result silently. Integer `power` is the one primitive that raises at run time
    (the status word, backends/cpu/ops.py STATUS_MESSAGES). Each such value is summed to a
    scalar (computed inside a fused loop, nothing stored) and appended after the real outputs;
    `tree_unflatten` of the output tree reads only the real ones, so callers never see them."""
    live = live_variables(ctx.eqns, outvars)  # what dead-code elimination will keep
    hidden = []
    for eqn in list(ctx.eqns):
        out = eqn.outputs[0]
        if eqn.prim == "power" and out.aval.dtype.kind in "iu" and out not in live:
            axes = tuple(range(out.aval.ndim))
            value = Tracer(ctx, out)
            hidden.append(ctx.bind1("reduce_sum", value, axes=axes).ir_var if axes else out)
        elif primitives.get(eqn.prim).unread == "output" and not any(o in live for o in eqn.outputs):
            hidden.append(out)  # LinAlgError, IndexError etc. (Primitive.unread): already a buffer, kept as is
    return hidden
