"""Tracing a jitted function for one signature: the argument Tracers (with the caller's
layouts, aliasing patterns and global-name bindings), autograph's conversion once, and
the trace event.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import events
from ..autograph import convert
from ..forking import compile_section
from ..ir import AType, Program
from ..startup import ensure_started
from ..trace import trace_program
from ..trace.views import argument_strides, c_strides, layout_strides
from ..tree import TreeDef, tree_unflatten
from .signature import _PY_SCALAR_DTYPES, NUMPY_SCALAR, Signature
from .write_back import _bound_names


def give_argument_layout(tracer: Any, leaf: Any) -> None:
    """Give an argument's Tracer the caller's real strides, which decide whether its reshape and
    ravel are views (trace/views.py); C order, the default of every traced array, needs none."""
    if tracer._mem is None or getattr(leaf, "shape", None) != tracer.shape:
        return  # a Python scalar, or a probe trace at other sizes (Jitted._dynamic_base)
    strides = argument_strides(leaf)
    if strides is not None and strides != c_strides(tracer.shape):
        tracer._strides = strides


class TracingMixin:
    """Trace the function for a signature (compile-and-cache and make_ir call it)."""

    @compile_section
    def _trace(self, sig: Signature, args: tuple, kwargs: dict, same: tuple[int, ...] | None = None,
               globals_as: tuple = ()) -> tuple[Program, TreeDef]:
        """Trace for `sig`. `same[j]` (an aliased call, see _call_aliased) is the first leaf that
        is the same array as leaf j: those leaves get one Tracer, and the program one input."""
        in_specs = [(AType(s[2], s[1]), None) if s[0] == "array" else (AType((), _PY_SCALAR_DTYPES[s[1]]), s[1])
                    for s in sig.specs]
        numpy_scalars = [s[3:] == (NUMPY_SCALAR,) for s in sig.specs]
        if same is not None:
            in_specs = [spec for j, spec in enumerate(in_specs) if same[j] == j]
            numpy_scalars = [k for j, k in enumerate(numpy_scalars) if same[j] == j]
        leaves = self._dynamic_leaves(args, kwargs)
        leaf_of = sorted(set(same)) if same is not None else list(range(len(leaves)))

        fun = self._function_to_trace()
        bind = None
        if globals_as:  # `globals_as` names read the argument's Tracer (_call_with_globals)
            fun, bind = _bound_names(fun, globals_as)

        def build_args(tracers: list) -> tuple[tuple, dict]:
            if bind is not None:
                bind(lambda i: tracers[leaf_of.index(i)])
            for k, t in enumerate(tracers):
                leaf = leaves[leaf_of[k]]
                give_argument_layout(t, leaf)
                if isinstance(leaf, np.ndarray) and not leaf.dtype.isnative:
                    t._ctx.swapped_input(t.ir_var, leaf.dtype.byteorder)
            for t, is_numpy_scalar in zip(tracers, numpy_scalars):
                if is_numpy_scalar:
                    t.scalar = True  # immutable, stored by value (see _leaf_spec)
            if same is not None:
                position = {leaf: k for k, leaf in enumerate(sorted(set(same)))}
                tracers = [tracers[position[same[j]]] for j in range(len(same))]
            dyn_args, dyn_kwargs = tree_unflatten(sig.treedef, tracers)
            dyn_args, dyn_kwargs = self._read_only_containers(dyn_args, dyn_kwargs)
            it = iter(dyn_args)
            full_args = tuple(args[i] if i in self.static_argnums else next(it) for i in range(len(args)))
            full_kwargs = dict(dyn_kwargs)
            full_kwargs.update({k: v for k, v in kwargs.items() if k in self.static_argnames})
            return full_args, full_kwargs

        program, out_tree = trace_program(fun, self.__name__, in_specs, build_args)
        program.layout_guard = tuple((leaf_of[i], layout_strides(leaves[leaf_of[i]]))
                                     for i in program.layout_args)
        names = sig.names if same is None else [n for j, n in enumerate(sig.names) if same[j] == j]
        program.written_names = tuple(names[i] for i, _ in program.written_args)
        return program, out_tree

    def _function_to_trace(self) -> Callable[..., Any]:
        """`fun` with its Python control flow converted (jitkernel/autograph), once; `fun`
        itself with autograph=False or when its source is not available."""
        if not self.autograph:
            return self.fun
        if self._converted is None:
            self._converted = convert(self.fun) or self.fun
        return self._converted

    def _traced(self, sig: Signature, args: tuple, kwargs: dict) -> tuple[Program, TreeDef, float]:
        ensure_started(self.__name__)  # the process's one-time start-up, timed apart (startup.py)
        t0 = events.clock()
        program, out_tree = self._trace(sig, args, kwargs)
        t1 = events.clock()
        if events.SUBSCRIBERS:
            events.publish(events.TraceEvent(self.__name__, t0, t1 - t0, sig.describe(), writes=program.written_names))
        return program, out_tree, t1 - t0
