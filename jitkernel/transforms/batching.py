"""Vectorisation: `vmap` as an interpreter over a Program (`batch_eval`), one batching rule per
primitive in `BATCH_RULES`.

Canonical form: a batched value carries its batch axis first. A rule is called as
`BATCH_RULES[prim](args, batched, size, **params) -> (outs, out_batched)` where `args[i]` is a
Tracer with the batch axis at 0 when `batched[i]`, or the unbatched value otherwise, `size` is
the batch size, and `out_batched[j]` says whether output j carries the batch axis (at 0). Only
equations with at least one batched input reach a rule; the others are bound unchanged, so
unbatched work is done once, not once per example.

`vmap` moves each input's mapped axis to 0 on entry and each output's axis 0 to its `out_axes`
on exit; rules never see another position.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import JitError, UnsupportedOperationError
from ..ir import Program, Var, AType
from ..passes.trip_maps import register_program_batcher
from ..trace.context import TraceContext, current_context
from ..trace.tracer import Tracer
from ..tree import leaf_paths, tree_flatten, tree_unflatten
from . import ops
from .core import (Transformed, as_tracer, check_rule_result, function_name, is_traced_leaf, memoized, read_env,
                   rule_registrar, trace_leaves, traceable, weak_outputs, with_leaves)

BatchRule = Callable[..., tuple[list[Tracer], list[bool]]]
BATCH_RULES: dict[str, BatchRule] = {}
# Primitives that need no rule because they never see a batched operand, and those vmap refuses,
# each with the reason (in the error and the coverage table, docs/primitive-coverage.md).
NEVER_BATCHED: dict[str, str] = {"iota": "no operands: a constant of the batched program"}
REFUSED: dict[str, str] = {"complex_library": "made after transformations by the complex lowering pass "
                                              "(passes/complex_lower.py): a traced program never holds it"}


register_batch = rule_registrar(BATCH_RULES, "batching")


class BatchingError(JitError, ValueError):
    """vmap arguments that do not fit (JAX's messages)."""


def broadcast_batch(x: Tracer, size: int) -> Tracer:
    """An unbatched value with a batch axis of `size` in front (every example sees the same)."""
    return ops.broadcast_in_dim(x, (size,) + tuple(x.shape), tuple(range(1, x.ndim + 1)))


def batch_eval(program: Program, inputs: Sequence[Tracer], batched: Sequence[bool], size: int
               ) -> tuple[list[Tracer], list[bool]]:
    """Bind the batched version of `program` into the active trace. Batched inputs carry the
    batch axis first; so do the batched outputs."""
    env: dict[Var, Tracer] = dict(zip(program.invars, inputs))
    is_batched: dict[Var, bool] = dict(zip(program.invars, batched))
    read = read_env(env, program)
    ctx = current_context()
    for eqn in program.eqns:
        ins = [read(v) for v in eqn.inputs]
        bins = [is_batched.get(v, False) for v in eqn.inputs]
        if not any(bins):
            outs = ctx.bind(eqn.prim, ins, **eqn.params)
            env.update(zip(eqn.outputs, outs))
            continue
        rule = BATCH_RULES.get(eqn.prim)
        if rule is None:
            raise UnsupportedOperationError(f"vmap of the primitive {eqn.prim!r} is not supported"
                                            + (f": {REFUSED[eqn.prim]}" if eqn.prim in REFUSED else " yet"))
        outs, bouts = rule(ins, bins, size, **eqn.params)
        for v, o, b in zip(eqn.outputs, outs, bouts):
            expected = v.aval if not b else type(v.aval)((size,) + tuple(v.aval.shape), v.aval.dtype)
            check_rule_result("batching", eqn.prim, o, expected)
            env[v] = o
            is_batched[v] = b
    return [read(v) for v in program.outvars], [is_batched.get(v, False) for v in program.outvars]


# ----------------------------------------------------------------------------- public API


def _prefix_error(what: str, spec: Any, tree_value: Any) -> BatchingError:
    return BatchingError(f"vmap {what} specification must be a tree prefix of the corresponding value; got "
                         f"specification {spec!r} for value tree {tree_flatten(tree_value)[1]}.")


def _axes_for_leaves(spec: Any, tree_value: Any, what: str) -> list[Any]:
    """Broadcast a prefix pytree of axes (ints / None) over the leaves of `tree_value`."""
    if spec is None or isinstance(spec, (int, np.integer)):
        return [None if spec is None else int(spec)] * len(tree_flatten(tree_value)[0])
    if isinstance(spec, (tuple, list)) and isinstance(tree_value, (tuple, list)) and not hasattr(tree_value, "_fields"):
        if len(spec) != len(tree_value) or isinstance(spec, tuple) != isinstance(tree_value, tuple):
            raise _prefix_error(what, spec, tree_value)
        return [a for s, v in zip(spec, tree_value) for a in _axes_for_leaves(s, v, what)]
    if isinstance(spec, dict) and isinstance(tree_value, dict):
        if set(spec) != set(tree_value):
            raise _prefix_error(what, spec, tree_value)
        return [a for k in sorted(spec) for a in _axes_for_leaves(spec[k], tree_value[k], what)]
    raise _prefix_error(what, spec, tree_value)


def _check_axes_spec(spec: Any, what: str) -> None:
    """JAX's TypeError for an axis specification with a leaf that is not an int or None."""
    leaves, _ = tree_flatten(spec)
    if spec is None:
        return
    for leaf in leaves:
        if isinstance(leaf, bool) or not isinstance(leaf, (int, np.integer)):
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container with those types as leaves, "
                            f"but got {spec!r}.")


def _jax_type(aval: Any) -> str:
    """float32[2,4], as JAX writes an argument's type."""
    return f"{aval.dtype.name}[{','.join(str(d) for d in aval.shape)}]"


def _leaf_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """One name per leaf of (args, kwargs), as JAX's vmap errors name them: `argument x['a']`,
    `args[2]` past the named parameters, `kwargs['y']`."""
    import inspect
    try:
        params = [p.name for p in inspect.signature(getattr(fun, "__wrapped__", fun)).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for i, a in enumerate(args):
        root = f"argument {params[i]}" if i < len(params) else f"args[{i}]"
        names += leaf_paths(tree_flatten(a)[1], root)
    for k in sorted(kwargs):
        names += leaf_paths(tree_flatten(kwargs[k])[1], f"kwargs[{k!r}]")
    return names


def _inconsistent_sizes(axis_size: int | None, entries: list[tuple[int, str]]) -> BatchingError:
    """JAX's message: the most common size first (when shared), then one line per other axis."""
    lines = []
    if axis_size is not None:
        lines.append(f"  * the `axis_size` argument was {axis_size};")
    counts: dict[int, list[str]] = {}
    for n, where in entries:
        counts.setdefault(n, []).append(where)
    most = max(counts, key=lambda n: len(counts[n])) if axis_size is None else None
    if most is not None and len(counts[most]) > 1:
        lines.append(f"  * most axes ({len(counts[most])} of them) had size {most}, e.g. {counts[most][0]};")
        entries = [(n, w) for n, w in entries if n != most]
    lines += [f"  * one axis had size {n}: {w};" for n, w in entries]
    lines[-1] = lines[-1][:-1]
    return BatchingError("vmap got inconsistent sizes for array axes to be mapped:\n" + "\n".join(lines))


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None) -> Transformed:
    """Vectorise `fun` over a mapped axis of its arguments (`in_axes`, a prefix pytree of ints and
    None; keyword arguments are always mapped over axis 0, as in JAX), stacking the results
    along `out_axes` (None for an output that is the same for every example). `axis_size` gives
    the batch size when no argument is mapped.

    >>> import numpy as np, jitkernel as jk
    >>> jk.vmap(lambda row: row.sum())(np.arange(6.0).reshape(2, 3)).tolist()
    [3.0, 12.0]
    >>> jk.vmap(lambda w, x: w @ x, in_axes=(None, 0))(np.eye(2), np.ones((3, 2))).shape
    (3, 2)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # JAX accepts a list at the top level
    if not (in_axes is None or isinstance(in_axes, tuple)
            or (isinstance(in_axes, (int, np.integer)) and not isinstance(in_axes, bool))):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional "
                        f"arguments passed to the function, but got {in_axes!r}.")
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    return memoized(fun, ("vmap", in_axes, out_axes, axis_size), lambda: _build_vmap(fun, in_axes, out_axes, axis_size))


def _build_vmap(fun: Callable, in_axes: Any, out_axes: Any, axis_size: int | None) -> Transformed:
    name = f"vmap({function_name(fun)})"

    def impl(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise BatchingError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                                f"positional arguments passed to the function, but got len(in_axes)={len(in_axes)}, "
                                f"len(args)={len(args)}")
        spec = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        leaves, tree = tree_flatten((args, kwargs))
        axes = _axes_for_leaves(spec, args, "in_axes") + _axes_for_leaves(0, kwargs, "in_axes")
        positions = [k for k, leaf in enumerate(leaves) if is_traced_leaf(leaf)]
        for k, leaf in enumerate(leaves):
            if axes[k] is not None and not is_traced_leaf(leaf):  # a static Python int mapped: rank 0
                shape = np.shape(leaf) if isinstance(leaf, (bool, int)) else ()
                raise BatchingError(f"vmap was requested to map its argument along axis {axes[k]}, which implies "
                                    f"that its rank should be at least {max(axes[k], -axes[k] - 1) + 1}, but is only "
                                    f"{len(shape)} (its shape is {shape})")
        tracers = {k: as_tracer(leaves[k]) for k in positions}
        sizes: dict[int, tuple[int, int]] = {}  # leaf -> (mapped axis, its size)
        batched: list[bool] = []
        moved: list[Tracer] = []
        for k in positions:
            t, ax = tracers[k], axes[k]
            if ax is not None:
                if not -t.ndim <= ax < t.ndim or t.ndim == 0:
                    raise BatchingError(f"vmap was requested to map its argument along axis {ax}, which implies that "
                                        f"its rank should be at least {max(ax, -ax - 1) + 1}, but is only {t.ndim} "
                                        f"(its shape is {t.shape})")
                ax %= t.ndim
                sizes[k] = (ax, t.shape[ax])
                t = ops.moveaxis(t, ax, 0)
            moved.append(t)
            batched.append(ax is not None)
        distinct = {n for _, n in sizes.values()}
        if axis_size is not None:
            distinct.add(int(axis_size))
        if not distinct:
            raise BatchingError("vmap must have at least one non-None value in in_axes or axis_size must be specified")
        if len(distinct) > 1:
            names = _leaf_names(fun, args, kwargs)
            entries = [(n, f"axis {ax} of {names[k] if k < len(names) else f'leaf {k}'} of type "
                           f"{_jax_type(tracers[k].aval)}") for k, (ax, n) in sizes.items()]
            raise _inconsistent_sizes(axis_size, entries)
        size = distinct.pop()
        example_avals = [Tracer(current_context(), Var(AType(t.shape[1:], t.dtype)), t.weak) if b else t
                         for t, b in zip(moved, batched)]
        traced = trace_leaves(with_leaves(traceable(fun), leaves, tree, positions), example_avals, name)
        n = traced.ncaptured
        outs, bouts = batch_eval(traced.program, list(traced.captured) + moved, [False] * n + batched, size)
        result = tree_unflatten(traced.out_tree, list(range(len(outs))))
        o_axes = _axes_for_leaves(out_axes, result, "out_axes")
        final = []
        for o, b, ax in zip(outs, bouts, o_axes):
            if ax is None:
                if b:
                    raise BatchingError("at vmap out_axes, got axis spec None but output was batched on axis 0 "
                                        "(vmap has mapped output but out_axes is None)")
                final.append(o)
                continue
            if not b:
                o = broadcast_batch(o, size)
            if not -o.ndim <= ax < o.ndim:
                raise BatchingError(f"axis {ax} is out of bounds for array of dimension {o.ndim}")
            final.append(ops.moveaxis(o, 0, ax % o.ndim))
        return tree_unflatten(traced.out_tree, weak_outputs(final, traced.out_weak))

    return Transformed(impl, name, fun)


def batch_over_first_input(part: Program, size: int) -> Program | None:
    """`part` batched over its first input (the batch axis first), its other inputs shared,
    every output batched: a closed program of its own (no active trace needed); None when a
    primitive has no batching rule. passes/trip_maps.py batches a loop's independent work with
    it (registered below)."""
    try:
        with TraceContext(part.name) as ctx:
            first = part.invars[0].aval
            ins = [ctx.new_input(type(first)((size,) + tuple(first.shape), first.dtype))]
            ins += [ctx.new_input(v.aval) for v in part.invars[1:]]
            outs, bouts = batch_eval(part, ins, [True] + [False] * (len(ins) - 1), size)
            outs = [o if b else broadcast_batch(o, size) for o, b in zip(outs, bouts)]
            return ctx.program([o.ir_var for o in outs])
    except (JitError, NotImplementedError, TypeError, ValueError):
        return None


register_program_batcher(batch_over_first_input)
