"""Automatic differentiation: forward mode (`jvp_eval`) and reverse mode (`vjp_eval`) as
interpreters over a Program, and the public `jvp`, `vjp`, `grad`, `value_and_grad`, `jacfwd`,
`jacrev`, `hessian`.

Two rule tables keyed by primitive name (docs/architecture.md, "Transformations"):

- `JVP_RULES[prim](primals, tangents, **params) -> (primal_outs, tangent_outs)`: `tangents[i]` is
  a Tracer of the primal's type, or None (a symbolic zero: the term is left out, never computed
  as `x * 0`, which would turn an infinite x into NaN). A tangent out may be None.
- `VJP_RULES[prim](cts, primals, outs, **params) -> cts_in`: direct reverse rules. `cts[j]` is
  the cotangent of output j or None; `primals`/`outs` are the equation's input and output
  Tracers (the forward pass already bound them); the result has one entry per input, None for
  a zero or a non-differentiable input.

Only floating and complex values carry tangents and cotangents; integer and boolean values are
constants of the derivative. The complex convention is JAX's: the cotangent is the transpose of
the (real-linear) tangent map under the bilinear pairing, so holomorphic rules multiply by
f'(x) without conjugation and `grad` of a real function of complex `z` returns the conjugate of
df/dz (`grad(abs)(3+4j) == 0.6-0.8j`).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import JitError, UnsupportedOperationError
from ..ir import AType, Program, Var
from ..trace.context import current_context, user_frame_location, is_tracing
from ..trace.tracer import Tracer
from ..tree import plain, same_structure, tree_flatten, tree_unflatten
from . import ops
from .core import (Transformed, bind_program, check_rule_result, function_name, memoized, read_env,
                   rule_registrar, trace_pytree_function, traceable)
from .batching import vmap

JvpRule = Callable[..., tuple[list[Tracer], list["Tracer | None"]]]
VjpRule = Callable[..., list["Tracer | None"]]
JVP_RULES: dict[str, JvpRule] = {}
VJP_RULES: dict[str, VjpRule] = {}
# Primitives whose outputs carry no tangent, with the reason (the coverage table prints it):
# piecewise constant float functions (floor, sign, ...), integer or bool results (comparisons,
# argmax, ...; jvp_eval and vjp_eval also skip any equation without a float output), no operands.
ZERO_DERIVATIVE: dict[str, str] = {
    "stop_gradient": "zero tangent: the identity whose derivative is cut",
    # jk.debug.print (ir/debug_prims.py): it runs on the primal values in the forward pass, as JAX
    # prints primals; its one result is a bool token, so there is nothing to transpose.
    "debug_callback": "an effect on the primal values (jk.debug.print): its bool token has no tangent"}
# Primitives that differentiation refuses, with the reason (in the error and the coverage table).
REFUSED: dict[str, str] = {}
# Primitives whose VJP rule also takes `active=` (per input: whether a cotangent is wanted), so
# that it can refuse a derivative it cannot give instead of returning a silent zero.
VJP_WANTS_ACTIVE: set[str] = set()


register_jvp = rule_registrar(JVP_RULES, "jvp")


register_vjp = rule_registrar(VJP_RULES, "vjp")


class GradientError(JitError, TypeError):
    """A function or argument that cannot be differentiated as asked (JAX's messages)."""


def differentiable(aval: AType) -> bool:
    return aval.dtype.kind in "fc"


# ----------------------------------------------------------------------------- forward mode


def jvp_eval(program: Program, primals: Sequence[Tracer], tangents: Sequence[Tracer | None]
             ) -> tuple[list[Tracer], list[Tracer | None]]:
    """Bind `program` and its tangent program into the active trace. `tangents[i]` None is a
    zero tangent; integer inputs must have None."""
    env: dict[Var, Tracer] = dict(zip(program.invars, primals))
    tenv: dict[Var, Tracer] = {v: t for v, t in zip(program.invars, tangents) if t is not None and differentiable(v.aval)}
    read = read_env(env, program)
    ctx = current_context()
    for eqn in program.eqns:
        ins = [read(v) for v in eqn.inputs]
        tins = [tenv.get(v) for v in eqn.inputs]
        # no tangent in, a zero derivative, or only integer/bool results (comparisons, argmax)
        if (all(t is None for t in tins) or eqn.prim in ZERO_DERIVATIVE
                or not any(differentiable(o.aval) for o in eqn.outputs)):
            outs = ctx.bind(eqn.prim, ins, **eqn.params)
            env.update(zip(eqn.outputs, outs))
            continue
        rule = JVP_RULES.get(eqn.prim)
        if rule is None:
            raise UnsupportedOperationError(
                f"forward-mode differentiation (jvp) of the primitive {eqn.prim!r} is not supported"
                + (f": {REFUSED[eqn.prim]}" if eqn.prim in REFUSED else " yet"))
        outs, touts = rule(ins, tins, **eqn.params)
        for o, t, v in zip(outs, touts, eqn.outputs):
            env[v] = o
            if t is not None and differentiable(v.aval):
                check_rule_result("jvp", eqn.prim, t, v.aval)
                tenv[v] = t
    outs = [read(v) for v in program.outvars]
    return outs, [tenv.get(v) for v in program.outvars]


# ----------------------------------------------------------------------------- reverse mode


def vjp_eval(program: Program, primals: Sequence[Tracer], active: Sequence[bool]
             ) -> tuple[list[Tracer], Callable[[Sequence[Tracer | None]], list[Tracer | None]]]:
    """Bind `program` into the active trace (the forward pass) and return its outputs and the
    backward function: output cotangents (None = zero) -> input cotangents (None = zero or not
    active). The backward equations are bound into whatever trace is active when it is called."""
    env: dict[Var, Tracer] = dict(zip(program.invars, primals))
    live: set[Var] = {v for v, a in zip(program.invars, active) if a and differentiable(v.aval)}
    read = read_env(env, program)
    ctx = current_context()
    taped = []
    for eqn in program.eqns:
        ins = [read(v) for v in eqn.inputs]
        outs = ctx.bind(eqn.prim, ins, **eqn.params)
        env.update(zip(eqn.outputs, outs))
        if eqn.prim not in ZERO_DERIVATIVE and any(v in live for v in eqn.inputs):
            diff_outs = [o for o in eqn.outputs if differentiable(o.aval)]
            if diff_outs:
                live.update(diff_outs)
                taped.append(eqn)
    outs = [read(v) for v in program.outvars]

    def backward(cts_out: Sequence[Tracer | None]) -> list[Tracer | None]:
        ct: dict[Var, Tracer] = {}
        for v, c in zip(program.outvars, cts_out):
            if c is not None and v in live:
                check_rule_result("cotangent", "the output", c, v.aval)
                ct[v] = ops.add_any(ct.get(v), c)
        for eqn in reversed(taped):
            cts = [ct.pop(o, None) for o in eqn.outputs]
            if all(c is None for c in cts):
                continue
            rule = VJP_RULES.get(eqn.prim)
            if rule is None:
                raise UnsupportedOperationError(
                    f"reverse-mode differentiation (grad, vjp) of the primitive {eqn.prim!r} is not supported"
                    + (f": {REFUSED[eqn.prim]}" if eqn.prim in REFUSED else " yet"))
            extra = {"active": tuple(v in live for v in eqn.inputs)} if eqn.prim in VJP_WANTS_ACTIVE else {}
            cts_in = rule(cts, [env[v] if v in env else read(v) for v in eqn.inputs],
                          [env[o] for o in eqn.outputs], **eqn.params, **extra)
            if len(cts_in) != len(eqn.inputs):
                raise AssertionError(f"internal error: the vjp rule of {eqn.prim} returned {len(cts_in)} cotangents "
                                     f"for {len(eqn.inputs)} inputs")
            for v, c in zip(eqn.inputs, cts_in):
                if c is not None and v in live:
                    check_rule_result("vjp", eqn.prim, c, v.aval)
                    ct[v] = ops.add_any(ct.get(v), c)
        return [ct.get(v) if a else None for v, a in zip(program.invars, active)]

    return outs, backward


# ----------------------------------------------------------------------------- public API

def _argnums(argnums: int | Sequence[int], nargs: int, who: str) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, (int, np.integer))
    nums = (int(argnums),) if single else tuple(int(a) for a in argnums)
    norm = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(f"{who}: argnums {argnums} out of range for a function called with {nargs} positional arguments")
        norm.append(a % nargs)
    return tuple(norm), single


def _dtype_text(aval: AType) -> str:
    return str(aval.dtype)


def _check_inputs(who: str, leaves: list[Tracer], allow_int: bool, holomorphic: bool) -> None:
    for t in leaves:
        kind = t.dtype.kind
        if holomorphic and kind != "c":
            raise GradientError(f"{who} with holomorphic=True requires inputs with complex dtype, but got {t.dtype.name}.")
        if kind not in "fc" and not allow_int:
            raise GradientError(
                f"{who} requires real- or complex-valued inputs (input dtype that is a sub-dtype of np.inexact), "
                f"but got {t.dtype.name}. If you want to use Boolean- or integer-valued inputs, use vjp or set "
                f"allow_int to True. (at {user_frame_location()})")


class _Split:
    """The traced function's inputs split into the differentiated ones (argnums) and the rest."""

    def __init__(self, fun: Callable, args: tuple, kwargs: dict, argnums: tuple[int, ...], name: str) -> None:
        self.traced, self.inputs, self.tree, self.positions = trace_pytree_function(traceable(fun), args, kwargs, name)
        leaves, _ = tree_flatten((args, kwargs))
        # which top-level positional argument each leaf belongs to
        owner = []
        for i, a in enumerate(args):
            owner += [i] * len(tree_flatten(a)[0])
        owner += [-1] * (len(leaves) - len(owner))
        self.arg_trees = [tree_flatten(args[i])[1] for i in argnums]
        self.argnums = argnums
        # index into self.inputs of each differentiated leaf, grouped by argnum
        by_pos = {p: k for k, p in enumerate(self.positions)}
        self.groups: list[list[int]] = []
        for i in argnums:
            group = []
            for p, o in enumerate(owner):
                if o == i:
                    if p not in by_pos:
                        raise GradientError(f"argument {i} has a leaf of type {type(leaves[p]).__name__}, which cannot be differentiated")
                    group.append(by_pos[p])
            self.groups.append(group)
        self.diff_index = [k for g in self.groups for k in g]

    def all_inputs(self) -> list[Tracer]:
        return list(self.traced.captured) + list(self.inputs)

    def active(self) -> list[bool]:
        chosen = set(self.diff_index)
        return [False] * self.traced.ncaptured + [k in chosen for k in range(len(self.inputs))]

    def unflatten_outputs(self, values: list) -> Any:
        return tree_unflatten(self.traced.out_tree, values)

    def per_argument(self, values_by_leaf: dict[int, Any], single: bool) -> Any:
        trees = [tree_unflatten(td, [values_by_leaf[k] for k in g]) for td, g in zip(self.arg_trees, self.groups)]
        return trees[0] if single else tuple(trees)


def _zero_cotangent(t: Tracer) -> Tracer:
    """The gradient of an input nothing depends on (or an integer input with allow_int): zeros of
    its own dtype (JAX returns float0 for integers; docs/transformations.md)."""
    return ops.zeros_like(t.aval)


def _vjp_in_trace(fun: Callable, args: tuple, kwargs: dict, argnums: tuple[int, ...], name: str):
    split = _Split(fun, args, kwargs, argnums, name)
    outs, backward = vjp_eval(split.traced.program, split.all_inputs(), split.active())
    return split, outs, backward


def _cotangents_by_leaf(split: _Split, cts_in: list[Tracer | None]) -> dict[int, Tracer]:
    n = split.traced.ncaptured
    result = {}
    for k in split.diff_index:
        c = cts_in[n + k]
        result[k] = c if c is not None else _zero_cotangent(split.inputs[k])
    return result


def _scalar_output(who: str, out: Tracer, holomorphic: bool) -> None:
    if not isinstance(out, Tracer) or out.aval.shape != ():
        shape = out.aval.shape if isinstance(out, Tracer) else np.shape(out)
        raise GradientError(f"Gradient only defined for scalar-output functions. Output had shape: {tuple(shape)}.")
    kind = out.dtype.kind
    if holomorphic and kind != "c":
        raise GradientError(f"{who} with holomorphic=True requires outputs with complex dtype, but got {out.dtype.name}.")
    if not holomorphic and kind != "f":
        raise GradientError(
            f"{who} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), but got "
            f"{out.dtype.name}. For holomorphic differentiation, pass holomorphic=True. For differentiation of "
            "non-holomorphic functions involving complex outputs, use jax.vjp directly.".replace("jax.vjp", "jk.vjp"))


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Transformed:
    """`fun`'s value and its gradient with respect to the arguments `argnums`.

    >>> import numpy as np, jitkernel as jk
    >>> v, g = jk.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    >>> float(v), g.tolist()
    (5.0, [2.0, 4.0])
    """
    return _grad_transform(fun, argnums, has_aux, holomorphic, allow_int, with_value=True)


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Transformed:
    """The gradient of the scalar function `fun` with respect to the arguments `argnums`.

    >>> import numpy as np, jitkernel as jk
    >>> jk.grad(lambda x: np.sum(np.sin(x)))(np.zeros(3)).tolist()
    [1.0, 1.0, 1.0]
    """
    return _grad_transform(fun, argnums, has_aux, holomorphic, allow_int, with_value=False)


def _grad_transform(fun: Callable, argnums: Any, has_aux: bool, holomorphic: bool, allow_int: bool,
                    with_value: bool) -> Transformed:
    key = ("value_and_grad" if with_value else "grad", argnums if not isinstance(argnums, list) else tuple(argnums),
           has_aux, holomorphic, allow_int)
    return memoized(fun, key, lambda: _build_grad(fun, argnums, has_aux, holomorphic, allow_int, with_value))


def _build_grad(fun: Callable, argnums: Any, has_aux: bool, holomorphic: bool, allow_int: bool,
                with_value: bool) -> Transformed:
    who = "value_and_grad" if with_value else "grad"
    name = f"{who}({function_name(fun)})"

    def impl(*args: Any, **kwargs: Any) -> Any:
        nums, single = _argnums(argnums, len(args), who)
        split, outs, backward = _vjp_in_trace(fun, args, kwargs, nums, name)
        _check_inputs(who, [split.inputs[k] for k in split.diff_index], allow_int, holomorphic)
        result = split.unflatten_outputs(outs)
        if has_aux:
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise GradientError(f"{who} with has_aux=True requires the function to return a pair (output, aux)")
            value, aux = result
        else:
            value, aux = result, None
        value_leaves = tree_flatten(value, namedtuples=True)[0]
        if len(value_leaves) != 1:
            raise GradientError("Gradient only defined for scalar-output functions. Output was a "
                                f"{type(value).__name__} of {len(value_leaves)} values.")
        _scalar_output(who, value_leaves[0], holomorphic)
        # the one output the gradient flows from: the first output leaf of the program
        cts = [None] * len(outs)
        cts[0] = ops.full((), 1, value_leaves[0].dtype)
        grads = split.per_argument(_cotangents_by_leaf(split, backward(cts)), single)
        if with_value:
            return ((value, aux), grads) if has_aux else (value, grads)
        return (grads, aux) if has_aux else grads

    return Transformed(impl, name, fun)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """`(fun(*primals), vjp_fn)`; `vjp_fn(cotangent)` returns one cotangent per primal.

    `vjp_fn` runs the forward pass again with the backward one (inside a jitted function the
    repeated forward equations are merged by common-subexpression elimination).

    >>> import numpy as np, jitkernel as jk
    >>> y, f_vjp = jk.vjp(np.sin, np.zeros(2))
    >>> f_vjp(np.ones(2))[0].tolist()
    [1.0, 1.0]
    """
    name = function_name(fun)

    def forward(*ps: Any) -> Any:
        split = _Split(fun, ps, {}, tuple(range(len(ps))), f"vjp({name})")
        return split.unflatten_outputs(bind_program(split.traced.program, split.all_inputs()))

    out = memoized(fun, ("vjp.forward",), lambda: Transformed(forward, f"vjp({name})", fun))(*primals)
    value, aux = (out if has_aux else (out, None))

    def backward_impl(ps: tuple, cts: Any) -> tuple:
        split, outs, backward = _vjp_in_trace(fun, ps, {}, tuple(range(len(ps))), f"vjp({name})")
        result = split.unflatten_outputs(outs)
        value_part = result[0] if has_aux else result
        ct_leaves, ct_tree = tree_flatten(cts, namedtuples=True)
        v_leaves, v_tree = tree_flatten(value_part, namedtuples=True)
        if not same_structure(ct_tree, v_tree):
            raise ValueError(f"vjp_fn: the cotangent has the structure {ct_tree}, the primal output {v_tree}")
        cts_out = [None] * len(outs)
        for k, (c, v) in enumerate(zip(ct_leaves, v_leaves)):
            v_aval = v.aval if isinstance(v, Tracer) else AType(np.shape(v), np.asarray(v).dtype)
            c_t = ops.convert(c, v_aval.dtype) if isinstance(c, Tracer) else ops.const(np.asarray(c), v_aval.dtype)
            if c_t.aval.shape != v_aval.shape:
                raise ValueError(f"vjp_fn: cotangent {k} has shape {c_t.aval.shape}, the primal output {v_aval.shape}")
            cts_out[k] = c_t if differentiable(v_aval) else None
        grads = split.per_argument(_cotangents_by_leaf(split, backward(cts_out)), False)
        return grads

    backward_fn = memoized(fun, ("vjp.backward", has_aux),
                           lambda: Transformed(backward_impl, f"vjp({name}).backward", fun))

    def vjp_fn(ct: Any) -> tuple:
        return backward_fn(primals, plain(ct))

    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False) -> Any:
    """`(fun(*primals), the directional derivative along tangents)`.

    >>> import numpy as np, jitkernel as jk
    >>> y, t = jk.jvp(np.sin, (np.zeros(2),), (np.ones(2),))
    >>> t.tolist()
    [1.0, 1.0]
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jk.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}.")
    if len(primals) != len(tangents):
        raise TypeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    name = function_name(fun)

    def impl(ps: tuple, ts: tuple) -> Any:
        split = _Split(fun, tuple(ps), {}, tuple(range(len(ps))), f"jvp({name})")
        t_leaves, t_tree = tree_flatten(tuple(ts))
        if t_tree != tree_flatten(tuple(ps))[1]:
            raise TypeError(f"jvp: primal and tangent arguments must have the same tree structure; got {tree_flatten(tuple(ps))[1]} and {t_tree}")
        tangents_in: list[Tracer | None] = [None] * split.traced.ncaptured
        for k, (p, t) in enumerate(zip(split.inputs, t_leaves)):
            t = t if isinstance(t, Tracer) else ops.const(np.asarray(t), p.dtype)
            if t.aval.shape != p.aval.shape:
                raise ValueError(f"jvp: tangent {k} has shape {t.aval.shape}, its primal {p.aval.shape}")
            if differentiable(p.aval):
                if t.dtype != p.dtype:
                    raise TypeError(f"primal and tangent arguments to jk.jvp must have equal types; got primal {p.dtype} and tangent {t.dtype}")
                tangents_in.append(t)
            else:
                tangents_in.append(None)
        outs, touts = jvp_eval(split.traced.program, split.all_inputs(), tangents_in)
        touts = [t if t is not None else ops.zeros_like(o.aval) for o, t in zip(outs, touts)]
        primal_out = split.unflatten_outputs(outs)
        tangent_out = split.unflatten_outputs(touts)
        if has_aux:
            return primal_out[0], tangent_out[0], primal_out[1]
        return primal_out, tangent_out

    return memoized(fun, ("jvp", has_aux), lambda: Transformed(impl, f"jvp({name})", fun))(tuple(primals), tuple(tangents))


def stop_gradient(x: Any) -> Any:
    """`x`, with no derivative flowing through it (a constant of every transformation).

    >>> import numpy as np, jitkernel as jk
    >>> float(jk.grad(lambda x: x * jk.stop_gradient(x))(3.0))
    3.0
    """
    if not is_tracing():
        return x
    leaves, tree = tree_flatten(x)
    out = [ops.bind1("stop_gradient", l) if isinstance(l, Tracer) else l for l in leaves]
    return tree_unflatten(tree, out)


# ----------------------------------------------------------------------------- Jacobians


def _basis(aval: AType) -> Tracer:
    """The identity as a constant of shape (size, *aval.shape): one unit vector per row."""
    m = aval.size
    return ops.const(np.eye(m, dtype=aval.dtype).reshape((m,) + tuple(aval.shape)), aval.dtype)


def _jac_from_rows(rows: Tracer, out_shape: tuple, in_shape: tuple, rows_are_outputs: bool) -> Tracer:
    """Rows of shape (m, *X) (reverse: one row per output element) or (m, *S) (forward: one
    row per input element) as the Jacobian of shape S + X."""
    if rows_are_outputs:
        return ops.reshape(rows, tuple(out_shape) + tuple(in_shape))
    x = ops.reshape(rows, tuple(in_shape) + tuple(out_shape))
    nx, ns = len(in_shape), len(out_shape)
    return ops.transpose(x, tuple(range(nx, nx + ns)) + tuple(range(nx)))


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Transformed:
    """The Jacobian of `fun` by reverse mode: one backward pass per output element, vectorised.

    >>> import numpy as np, jitkernel as jk
    >>> jk.jacrev(lambda x: x ** 2)(np.array([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """
    return _jacobian(fun, argnums, has_aux, holomorphic, allow_int, reverse=True)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Transformed:
    """The Jacobian of `fun` by forward mode: one tangent per input element, vectorised.

    >>> import numpy as np, jitkernel as jk
    >>> jk.jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0])).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """
    return _jacobian(fun, argnums, has_aux, holomorphic, False, reverse=False)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Transformed:
    """The Hessian of a scalar `fun`: `jacfwd(jacrev(fun))`.

    >>> import numpy as np, jitkernel as jk
    >>> jk.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0])).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    """
    def build() -> Transformed:
        inner = jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic)
        outer = jacfwd(inner, argnums, has_aux=has_aux, holomorphic=holomorphic)
        return Transformed(outer._impl, f"hessian({function_name(fun)})", fun)
    return memoized(fun, ("hessian", tuple(argnums) if isinstance(argnums, list) else argnums, has_aux, holomorphic), build)


def _jacobian(fun: Callable, argnums: Any, has_aux: bool, holomorphic: bool, allow_int: bool,
              reverse: bool) -> Transformed:
    key = ("jacrev" if reverse else "jacfwd", tuple(argnums) if isinstance(argnums, list) else argnums,
           has_aux, holomorphic, allow_int)
    return memoized(fun, key, lambda: _build_jacobian(fun, argnums, has_aux, holomorphic, allow_int, reverse))


def _build_jacobian(fun: Callable, argnums: Any, has_aux: bool, holomorphic: bool, allow_int: bool,
                    reverse: bool) -> Transformed:
    who = "jacrev" if reverse else "jacfwd"
    name = f"{who}({function_name(fun)})"

    def impl(*args: Any, **kwargs: Any) -> Any:
        nums, single = _argnums(argnums, len(args), who)
        if reverse:
            split, outs, backward = _vjp_in_trace(fun, args, kwargs, nums, name)
        else:
            split = _Split(fun, args, kwargs, nums, name)
            outs = bind_program(split.traced.program, split.all_inputs())
        diff_inputs = [split.inputs[k] for k in split.diff_index]
        _check_inputs(who, diff_inputs, allow_int and reverse, holomorphic)
        result = split.unflatten_outputs(list(range(len(outs))))
        value_tree = result[0] if has_aux else result
        value_positions = tree_flatten(value_tree, namedtuples=True)[0]  # output indices of the differentiated part
        for j in value_positions:
            kind = outs[j].dtype.kind
            if (holomorphic and kind != "c") or (not holomorphic and kind not in "f" and not (kind == "c")):
                raise GradientError(f"{who} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                                    f"but got {outs[j].dtype.name}. For holomorphic differentiation, pass holomorphic=True.")
        blocks: dict[int, dict[int, Tracer]] = {}
        if reverse:
            for j in value_positions:
                def pull(ct: Tracer, j: int = j) -> list[Tracer]:
                    cts = [None] * len(outs)
                    cts[j] = ct
                    by_leaf = _cotangents_by_leaf(split, backward(cts))
                    return [by_leaf[k] for k in split.diff_index]
                rows = vmap(pull)(_basis(outs[j].aval))
                blocks[j] = {k: _jac_from_rows(r, outs[j].shape, split.inputs[k].shape, True)
                             for k, r in zip(split.diff_index, rows)}
        else:
            program, n = split.traced.program, split.traced.ncaptured
            for k in split.diff_index:
                def push(t: Tracer, k: int = k) -> list[Tracer]:
                    tangents: list[Tracer | None] = [None] * (n + len(split.inputs))
                    tangents[n + k] = t
                    _, touts = jvp_eval(program, split.all_inputs(), tangents)
                    return [touts[j] if touts[j] is not None else ops.zeros_like(outs[j].aval) for j in value_positions]
                rows = vmap(push)(_basis(split.inputs[k].aval))
                for j, r in zip(value_positions, rows):
                    blocks.setdefault(j, {})[k] = _jac_from_rows(r, outs[j].shape, split.inputs[k].shape, False)
        per_output = {j: split.per_argument(blocks[j], single) for j in value_positions}
        jac = tree_unflatten(tree_flatten(value_tree, namedtuples=True)[1], [per_output[j] for j in value_positions])
        if has_aux:
            aux_leaves, aux_tree = tree_flatten(result[1], namedtuples=True)
            aux = tree_unflatten(aux_tree, [outs[j] for j in aux_leaves])
            return jac, aux
        return jac

    return Transformed(impl, name, fun)
