"""What every transformation shares: tracing the user's function into a closed sub-program of
the active trace, evaluating a Program's equations into the active trace, and `Transformed`,
the callable that `grad`, `vmap` and friends return.

Transformations are interpreters over the graph IR (docs/transformations.md): the user's
function is traced once with the engine's ordinary tracer (in-place updates, views, autograph,
closures: everything `jk.jit` accepts), which yields a pure Program; the transformation then
walks that Program's equations and, for each one, binds the equations its rule produces into the
trace that is active where the transformed function was called. The result is one flat program
of ordinary primitives, which the passes, the fusion and every backend treat like any other; a
transformation of a transformation just walks a program that already holds the first one's
equations.

Called outside a trace, a transformed function runs as `jk.jit` of itself (`Transformed._jitted`,
named `grad(loss)`, `vmap(step)`): compiled per argument signature, cached, profiled and
explained like any jitted function.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ..entry import converted, is_jitted, jit
from ..errors import UnsupportedOperationError
from ..ir import AType, Program, Var
from ..trace.context import current_context, is_tracing, user_frame
from ..trace.subtrace import finish, trace_function
from ..trace.tracer import Tracer
from ..tree import TreeDef, tree_flatten, tree_unflatten
from ..trace.operands import lift
from ..tracebacks import describe_location


def function_name(fun: Any) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def traceable(fun: Callable[..., Any]) -> Callable[..., Any]:
    """The function to run on Tracers: a jitted function's converted body (autograph), a
    transformed function as it is (it transforms when called in a trace), any other function
    with its Python control flow converted as `jk.jit` converts it."""
    if is_jitted(fun):
        return fun._function_to_trace()
    if isinstance(fun, Transformed):
        return fun
    return converted(fun)


class Transformed:
    """A transformed function (`grad(f)`, `vmap(f)`, ...). In a trace it transforms there; outside
    one it is compiled as `jk.jit` of itself, so `jk.grad(f)(x)` and `jk.jit(jk.grad(f))(x)` run
    the same program."""

    def __init__(self, impl: Callable[..., Any], name: str, wrapped: Callable[..., Any]) -> None:
        self._impl = impl
        self.__name__ = name
        self.__qualname__ = name
        self.__wrapped__ = wrapped
        self.__doc__ = getattr(wrapped, "__doc__", None)
        self._jitted = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if is_tracing():
            return self._impl(*args, **kwargs)
        if self._jitted is None:
            self._jitted = jit(self, name=self.__name__, autograph=False)
        return self._jitted(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<transformed function {self.__name__}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)


_MEMO: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def memoized(fun: Any, key: tuple, build: Callable[[], Transformed]) -> Transformed:
    """The same Transformed for the same function and options: `jk.grad(loss)` written inside a
    training loop then reuses one compiled program instead of tracing and compiling at every
    iteration (JAX caches `jit` the same way, by function identity)."""
    try:
        per_fun = _MEMO.setdefault(fun, {})
        hash(key)
    except TypeError:  # not weakly referenceable (a ufunc), or unhashable options
        return build()
    found = per_fun.get(key)
    if found is None:
        found = per_fun[key] = build()
    return found


def transformed(name: str, wrapped: Callable[..., Any]) -> Callable[[Callable[..., Any]], Transformed]:
    """Decorator: `@transformed(f"grad({name})", f)` on the in-trace implementation."""
    return lambda impl: Transformed(impl, name, wrapped)


# ----------------------------------------------------------------------------- leaves


def is_traced_leaf(leaf: Any) -> bool:
    """Whether a pytree leaf is a value the program takes (an array, a NumPy scalar, a Python
    float or complex), not a static Python object passed through. Concrete Python ints and
    bools stay static: they cannot be differentiated, and user code uses them as sizes and
    counts (`x[:n]`, `range(n)`), which a traced value would turn into a loop or an error."""
    if isinstance(leaf, (bool, int)) and not isinstance(leaf, np.generic):
        return False
    return isinstance(leaf, (Tracer, np.ndarray, np.generic, float, complex))


def as_tracer(leaf: Any) -> Tracer:
    """A leaf as a Tracer of the active trace (concrete arrays and numbers become constants;
    Python scalars keep their weak type, as jk.jit arguments do)."""
    ctx = current_context()
    if isinstance(leaf, Tracer):
        return leaf
    t = lift(ctx, leaf)
    if type(leaf) in (bool, int, float, complex):
        t = Tracer(ctx, t.ir_var, type(leaf))
    return t


# ----------------------------------------------------------------------------- tracing


class Traced:
    """`fun` traced at some inputs: a closed Program whose first `len(captured)` inputs are the
    enclosing trace's values it read (`captured`, Tracers of the active trace), then one input
    per traced leaf; `out_tree` rebuilds its result from the program's outputs."""

    def __init__(self, program: Program, captured: list[Tracer], out_tree: TreeDef, out_weak: list) -> None:
        self.program = program
        self.captured = captured
        self.out_tree = out_tree
        self.out_weak = out_weak  # the weak type of each output leaf (a Python scalar returned)

    @property
    def ncaptured(self) -> int:
        return len(self.captured)


def trace_leaves(fun: Callable[[list[Tracer]], Any], in_leaves: Sequence[Tracer], name: str) -> Traced:
    """Trace `fun(list_of_input_tracers) -> pytree` into a closed sub-program of the active trace,
    one input per entry of `in_leaves` (their avals and weak types)."""
    parent = current_context()
    if parent is None:
        raise RuntimeError("trace_leaves needs an active trace")
    box: dict[str, Any] = {}

    inputs: list[Tracer] = []

    def make_args(ctx: Any) -> tuple:
        inputs.extend(ctx.new_input(t.aval, t.weak) for t in in_leaves)
        return (list(inputs),)

    ctx, result = trace_function(parent, name, fun, make_args)
    _warn_written_inputs(name, inputs)
    leaves, out_tree = tree_flatten(result, namedtuples=True)
    for leaf in leaves:
        if getattr(type(leaf), "_jk_datadep", False):
            raise UnsupportedOperationError(
                f"{name}: returns a value of data-dependent shape (boolean mask selection, nonzero, unique); "
                "transformations (grad, vmap) need shapes known at trace time")
    out_weak = [leaf.weak if isinstance(leaf, Tracer) else (type(leaf) if type(leaf) in (bool, int, float) else None)
                for leaf in leaves]
    program = finish(ctx, leaves)
    box["captured"] = list(ctx.captured)
    return Traced(program, box["captured"], out_tree, out_weak)


class ArgumentNotWrittenWarning(UserWarning):
    """A transformed function writes one of its arguments in place; the caller's array is not
    updated (docs/transformations.md, "Functions that write their arguments")."""


def _warn_written_inputs(name: str, inputs: list[Tracer]) -> None:
    """A function that writes an argument in place is transformed as the pure function it
    becomes (its result); the write itself does not reach the caller's array, as under JAX.
    That is said once per trace instead of being dropped silently."""
    written = [k for k, t in enumerate(inputs) if t._mem is not None and t._mem.written]
    if written:
        import warnings
        what = ", ".join(f"input {k} ({inputs[k].aval})" for k in written)
        frame = user_frame()
        where = f" (called at {describe_location(frame.f_code.co_filename, frame.f_lineno)})" if frame is not None else ""
        warnings.warn(f"{name}: the function writes {what} in place; under transformations the caller's array "
                      f"is not updated, only the function's result is transformed{where}",
                      ArgumentNotWrittenWarning, stacklevel=2)


def rule_registrar(table: dict[str, Callable], what: str) -> Callable[..., Callable[[Callable], Callable]]:
    """The `@register_...(*prims)` decorator of one rule table: a primitive gets one rule."""
    def register(*prims: str) -> Callable[[Callable], Callable]:
        def deco(rule: Callable) -> Callable:
            for p in prims:
                if p in table:
                    raise ValueError(f"{what} rule of {p!r} registered twice")
                table[p] = rule
            return rule
        return deco
    return register


def with_leaves(fun: Callable[..., Any], leaves: list[Any], tree: TreeDef, positions: list[int]
                ) -> Callable[[list[Tracer]], Any]:
    """`fun` as a function of the traced leaves: the arguments' tree rebuilt with `tracers[i]`
    at leaf `positions[i]` (the other leaves as they were given)."""
    def run(tracers: list[Tracer]) -> Any:
        full = list(leaves)
        for k, t in zip(positions, tracers):
            full[k] = t
        a, kw = tree_unflatten(tree, full)
        return fun(*a, **kw)
    return run


def trace_pytree_function(fun: Callable[..., Any], args: tuple, kwargs: dict, name: str
                          ) -> tuple[Traced, list[Any], TreeDef, list[int]]:
    """Trace `fun(*args, **kwargs)`: every array or number leaf of the arguments is an input
    (other leaves are passed through as they are). Returns (traced, the input leaves as Tracers,
    the arguments' tree, the position of each traced leaf among all leaves)."""
    leaves, tree = tree_flatten((args, kwargs))
    positions = [k for k, leaf in enumerate(leaves) if is_traced_leaf(leaf)]
    in_tracers = [as_tracer(leaves[k]) for k in positions]
    traced = trace_leaves(with_leaves(fun, leaves, tree, positions), in_tracers, name)
    return traced, in_tracers, tree, positions


# ----------------------------------------------------------------------------- evaluation


def bind_program(program: Program, inputs: Sequence[Tracer]) -> list[Tracer]:
    """Evaluate `program` on Tracers of the active trace: its equations are bound there as they
    are (an inlined call)."""
    ctx = current_context()
    env: dict[Var, Tracer] = dict(zip(program.invars, inputs))
    for v, c in zip(program.constvars, program.consts):
        env[v] = ctx.const(c)
    for eqn in program.eqns:
        outs = ctx.bind(eqn.prim, [env[v] for v in eqn.inputs], **eqn.params)
        env.update(zip(eqn.outputs, outs))
    return [env[v] for v in program.outvars]


def read_env(env: dict[Var, Tracer], program: Program) -> Callable[[Var], Tracer]:
    """A reader of `env` that binds the program's constants on first use."""
    consts = dict(zip(program.constvars, program.consts))

    def read(v: Var) -> Tracer:
        t = env.get(v)
        if t is None:
            t = env[v] = current_context().const(consts[v])
        return t
    return read


def check_rule_result(what: str, prim: str, got: Tracer, expected: AType) -> None:
    """A rule's result must have exactly the type the transformation expects: a mismatch is an
    engine bug, reported instead of being cast (which could hide a wrong answer)."""
    if got.aval != expected:
        raise AssertionError(f"internal error: the {what} rule of {prim} returned {got.aval}, expected {expected}")


def weak_outputs(values: list[Any], weak: list) -> list[Any]:
    """Results of a transformed call keep the weak type of a Python scalar the function returned."""
    out = []
    for v, w in zip(values, weak):
        if isinstance(v, Tracer) and w is not None and v.aval.shape == () and v.weak is None:
            v = Tracer(v._ctx, v.ir_var, w)
        out.append(v)
    return out
