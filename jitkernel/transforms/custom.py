"""`jk.custom_jvp` and `jk.custom_vjp`: functions with user-defined derivatives (JAX's API).

In a trace, a call traces the function into a sub-Program and binds one `custom_jvp_call` /
`custom_vjp_call` equation (ir/custom_prims.py) whose params hold it and the user's rules
(`JvpRule`, `VjpRule`: flat-list interfaces over the user's pytree functions). The
transformations read it through the rules below: forward mode runs the user's jvp rule
(custom_vjp: JAX's error), reverse mode the user's fwd/bwd (custom_jvp: the transpose of the
jvp rule, which is linear in the tangents), vmap batches the function's program and wraps the
rules (`BatchedJvpRule`, `BatchedVjpRule`: each rule traced per example, then batched). Afterwards the pipeline inlines the function
(passes/custom_inline.py). Outside a trace the function runs as plain Python/NumPy.

Closed-over values: a value of an enclosing trace that the function or a rule reads is a
constant of the custom derivative; if it is being differentiated the call raises (pass it as an
argument instead), never a silent zero. docs/transformations.md, "Custom derivatives".
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import AType, Program, Var
from ..trace.context import is_tracing, current_context
from ..trace.tracer import Tracer
from ..tree import tree_flatten, tree_unflatten
from . import ops
from .ad import GradientError, differentiable, register_jvp, register_vjp, vjp_eval, VJP_WANTS_ACTIVE
from .batching import batch_eval, broadcast_batch, register_batch
from .core import as_tracer, is_traced_leaf, trace_leaves


class CustomDerivativeError(GradientError):
    """A custom_jvp / custom_vjp rule whose results do not fit the function (JAX's messages)."""


def _positional(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    if not kwargs:
        return args
    sig = inspect.signature(fun)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.args) + tuple(bound.kwargs.values())


class _Args:
    """The call's arguments split into static non-differentiable ones (nondiff_argnums) and the
    differentiable ones, flattened into leaves (the equation's operands)."""

    def __init__(self, args: tuple, nondiff_argnums: tuple[int, ...]) -> None:
        n = len(args)
        self.nondiff = tuple(a % n for a in nondiff_argnums)
        self.args = args
        self.diff_args = tuple(a for i, a in enumerate(args) if i not in self.nondiff)
        leaves, self.tree = tree_flatten(self.diff_args)
        self.positions = [k for k, leaf in enumerate(leaves) if is_traced_leaf(leaf)]
        self.leaves = leaves
        self.tracers = [as_tracer(leaves[k]) for k in self.positions]

    def rebuild(self, tracers: Sequence[Any]) -> tuple:
        """The differentiable arguments with their leaves replaced by `tracers`."""
        full = list(self.leaves)
        for k, t in zip(self.positions, tracers):
            full[k] = t
        return tree_unflatten(self.tree, full)

    def full_args(self, diff_args: tuple) -> tuple:
        it = iter(diff_args)
        return tuple(self.args[i] if i in self.nondiff else next(it) for i in range(len(self.args)))

    def nondiff_values(self) -> tuple:
        return tuple(self.args[i] for i in self.nondiff)


def _out_leaves(value: Any, what: str) -> tuple[list[Tracer], Any]:
    leaves, tree = tree_flatten(value)
    return [as_tracer(leaf) for leaf in leaves], tree


def _match(what: str, got: list[Tracer], expected: list[AType]) -> list[Tracer]:
    """`got` as values of exactly the `expected` types: a Python scalar (weak) is converted; any
    other difference is the user's error."""
    out = []
    for k, (g, e) in enumerate(zip(got, expected)):
        if g.aval.shape == tuple(e.shape) and g.dtype != e.dtype and g.weak is not None:
            g = ops.convert(g, e.dtype)
        if g.aval != e:
            raise CustomDerivativeError(f"{what}: output {k} has shape {g.aval.shape} and dtype {g.dtype}, "
                                        f"expected shape {tuple(e.shape)} and dtype {e.dtype}")
        out.append(g)
    return out


def _constants_differentiated(name: str, kind: str) -> CustomDerivativeError:
    return CustomDerivativeError(
        f"{name}: the {kind} function closes over a value that is being differentiated (a value of the "
        "enclosing function it reads without taking it as an argument); pass that value as an explicit "
        "argument, so that the custom rule defines its derivative")


def _check_rule_closures(name: str, rules: dict[str, Callable | None]) -> None:
    """A rule runs when a transformation reaches the call, possibly in another trace than the one
    where `f` was called (`grad(inner)` differentiates inner's program after its trace closed).
    A traced value the rule reads from its enclosing function (a closure) belongs to the trace
    where it was made: usable while that trace encloses the current one, an undefined variable
    otherwise. That case is refused here, naming the value: it must be an argument of `f`."""
    here = current_context()
    for kind, rule in rules.items():
        cells = getattr(rule, "__closure__", None) or ()
        names = getattr(getattr(rule, "__code__", None), "co_freevars", ())
        for var, cell in zip(names, cells):
            try:
                value = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
            leaves = tree_flatten(value)[0] if isinstance(value, (tuple, list, dict)) else [value]
            if any(isinstance(leaf, Tracer) and (here is None or not here.encloses(leaf._ctx)) for leaf in leaves):
                raise CustomDerivativeError(
                    f"{name}: the custom {kind} rule {getattr(rule, '__name__', '?')!r} reads the traced value "
                    f"{var!r} of its enclosing function (a closure); pass {var!r} to {name} as an argument "
                    "(nondiff_argnums for a value that is not differentiated) so that the rule receives it")


# ----------------------------------------------------------------------------- rules (flat lists)


class JvpRule:
    """The user's jvp rule on flat lists: `jvp(primals, tangents) -> (outs, tangent_outs)`, one
    Tracer per argument leaf / output leaf, checked against the function's output types."""

    def __repr__(self) -> str:
        return f"<custom_jvp rule of {self.name}>"

    def __init__(self, owner: "custom_jvp", split: "_Args", out_tree: Any, out_avals: list[AType], name: str) -> None:
        self.owner, self.split, self.out_tree, self.out_avals, self.name = owner, split, out_tree, out_avals, name

    def jvp(self, primals: list[Tracer], tangents: list[Tracer]) -> tuple[list[Tracer], list[Tracer]]:
        split = self.split
        _check_rule_closures(self.name, {"jvp": self.owner.jvp})
        result = self.owner.jvp(*split.nondiff_values(), split.rebuild(primals), split.rebuild(tangents))
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise CustomDerivativeError(f"{self.name}: the custom_jvp rule must return a pair (primal_out, tangent_out)")
        p_leaves, p_tree = _out_leaves(result[0], "primal")
        t_leaves, t_tree = _out_leaves(result[1], "tangent")
        if p_tree != self.out_tree or t_tree != self.out_tree:
            raise CustomDerivativeError(
                "Custom JVP rule must produce primal and tangent outputs with equal container (pytree) "
                f"structures, but got {p_tree} and {t_tree} respectively (the function returns {self.out_tree}).")
        return (_match(f"{self.name}: the custom_jvp rule's primal output", p_leaves, self.out_avals),
                _match(f"{self.name}: the custom_jvp rule's tangent output", t_leaves, self.out_avals))


class BatchedJvpRule:
    """`inner` vectorised over a batch of `size`: traced per example, then batched."""

    def __repr__(self) -> str:
        return f"<batched custom_jvp rule of {self.name}>"

    def __init__(self, inner: Any, batched: list[bool], size: int) -> None:
        self.inner, self.batched, self.size = inner, batched, size
        self.out_avals = [AType((size,) + tuple(a.shape), a.dtype) for a in inner.out_avals]
        self.name = inner.name

    def jvp(self, primals: list[Tracer], tangents: list[Tracer]) -> tuple[list[Tracer], list[Tracer]]:
        n = len(primals)
        example = [_unbatched_aval(t.aval, b) for t, b in zip(primals, self.batched)]
        traced = trace_leaves(lambda ts: list(_flat_pair(self.inner.jvp(ts[:n], ts[n:]))),
                              [_placeholder(a) for a in example + example], f"{self.name}.jvp")
        outs = _batched_call(traced, list(primals) + list(tangents), self.batched + self.batched, self.size)
        nout = len(self.out_avals)
        return outs[:nout], outs[nout:]


class VjpRule:
    """The user's fwd/bwd on flat lists: `fwd(args) -> (outs, residuals)`, `bwd(residuals,
    cts) -> one cotangent per argument leaf` (zeros where the user gave None or the argument is
    an integer)."""

    def __repr__(self) -> str:
        return f"<custom_vjp rule of {self.name}>"

    def __init__(self, owner: "custom_vjp", split: "_Args", out_tree: Any, out_avals: list[AType], name: str) -> None:
        self.owner, self.split, self.out_tree, self.out_avals, self.name = owner, split, out_tree, out_avals, name
        self.arg_avals = [t.aval for t in split.tracers]
        self._res_structure: Any = None

    def fwd(self, args: list[Tracer]) -> tuple[list[Tracer], list[Tracer]]:
        fwd_name = getattr(self.owner.fwd, "__name__", "fwd")
        _check_rule_closures(self.name, {"fwd": self.owner.fwd})
        result = self.owner.fwd(*self.split.full_args(self.split.rebuild(args)))
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise CustomDerivativeError(f"Custom VJP fwd rule {fwd_name} for function {self.name} must produce a pair "
                                        "(list or tuple of length two) representing primal outputs and residuals "
                                        "(values stored from the forward pass for use on the backward pass)")
        o_leaves, o_tree = _out_leaves(result[0], "output")
        if o_tree != self.out_tree:
            raise CustomDerivativeError(f"Custom VJP fwd rule {fwd_name} for function {self.name} must produce primal "
                                        "outputs with the same container (pytree) structure as the function: got "
                                        f"{o_tree}, expected {self.out_tree}")
        r_all, r_tree = tree_flatten(result[1])
        r_pos = [k for k, leaf in enumerate(r_all) if is_traced_leaf(leaf)]
        self._res_structure = (r_all, r_tree, r_pos)  # static residual leaves stay Python objects
        outs = _match(f"{self.name}: the custom_vjp fwd rule's output", o_leaves, self.out_avals)
        return outs, [as_tracer(r_all[k]) for k in r_pos]

    def bwd(self, residuals: list[Tracer], cts: list[Tracer]) -> list[Tracer]:
        r_all, r_tree, r_pos = self._res_structure
        full = list(r_all)
        for k, t in zip(r_pos, residuals):
            full[k] = t
        _check_rule_closures(self.name, {"bwd": self.owner.bwd})
        result = self.owner.bwd(*self.split.nondiff_values(), tree_unflatten(r_tree, full),
                                tree_unflatten(self.out_tree, list(cts)))
        return _bwd_leaves(self.name, result, self.split, self.arg_avals)


class BatchedVjpRule:
    """`inner` vectorised over a batch of `size`: fwd and bwd traced per example, then batched;
    the cotangent of an unbatched argument is the sum over the examples."""

    def __repr__(self) -> str:
        return f"<batched custom_vjp rule of {self.name}>"

    def __init__(self, inner: Any, batched: list[bool], size: int) -> None:
        self.inner, self.batched, self.size = inner, batched, size
        self.name = inner.name
        self.out_avals = [AType((size,) + tuple(a.shape), a.dtype) for a in inner.out_avals]
        self.arg_avals = [AType((size,) + tuple(a.shape), a.dtype) if b else a for a, b in zip(inner.arg_avals, batched)]
        self._nres = 0

    def fwd(self, args: list[Tracer]) -> tuple[list[Tracer], list[Tracer]]:
        example = [_unbatched_aval(t.aval, b) for t, b in zip(args, self.batched)]
        traced = trace_leaves(lambda ts: list(_flat_pair(self.inner.fwd(ts))), [_placeholder(a) for a in example],
                              f"{self.name}.fwd")
        outs = _batched_call(traced, list(args), self.batched, self.size)
        nout = len(self.out_avals)
        self._res_example = [AType(tuple(a.shape), a.dtype) for a in traced.program.out_avals[nout:]]
        return outs[:nout], outs[nout:]

    def bwd(self, residuals: list[Tracer], cts: list[Tracer]) -> list[Tracer]:
        example = self._res_example + [AType(tuple(a.shape[1:]), a.dtype) for a in self.out_avals]
        nres = len(residuals)
        traced = trace_leaves(lambda ts: self.inner.bwd(ts[:nres], ts[nres:]), [_placeholder(a) for a in example],
                              f"{self.name}.bwd")
        outs = _batched_call(traced, list(residuals) + list(cts), [True] * (nres + len(cts)), self.size)
        return [o if b else ops.reduce_sum(o, (0,)) for o, b in zip(outs, self.batched)]


def _flat_pair(pair: tuple[list, list]) -> list:
    return list(pair[0]) + list(pair[1])


def _unbatched_aval(aval: AType, batched: bool) -> AType:
    return AType(tuple(aval.shape[1:]), aval.dtype) if batched else aval


def _batched_call(traced: Any, inputs: list[Tracer], batched: list[bool], size: int) -> list[Tracer]:
    """Run a per-example traced rule on batched inputs: every output batched."""
    outs, out_b = batch_eval(traced.program, list(traced.captured) + inputs,
                             [False] * traced.ncaptured + list(batched), size)
    return [o if b else broadcast_batch(o, size) for o, b in zip(outs, out_b)]


def _placeholder(aval: AType) -> Tracer:
    """A stand-in Tracer of `aval` for trace_leaves, which reads only avals and weak types."""
    return Tracer(current_context(), Var(aval))


def _zero_filled(tangents: Sequence, primals: Sequence[Tracer]) -> list[Tracer]:
    return [ops.zeros_like(p) if t is None else t for t, p in zip(tangents, primals)]


def _call_parts(inputs: Sequence, params: dict) -> tuple[list, list]:
    n = params["fun_nconsts"]
    return list(inputs[:n]), list(inputs[n:])


def _bind_call(prim: str, traced: Any, args: list[Tracer], rule: Any, name: str) -> list[Tracer]:
    return ops.bind(prim, *traced.captured, *args, fun=traced.program, rule=rule,
                    fun_nconsts=traced.ncaptured, name=name)


# ----------------------------------------------------------------------------- custom_jvp


class custom_jvp:
    """A function with a user-defined forward-mode derivative (JAX's `jax.custom_jvp`).

    >>> import numpy as np, jitkernel as jk
    >>> @jk.custom_jvp
    ... def log1pexp(x):
    ...     return np.log1p(np.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t / (1 + np.exp(-x))
    >>> float(jk.grad(log1pexp)(100.0))
    1.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule `jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`."""
        if symbolic_zeros:
            raise UnsupportedOperationError("custom_jvp.defjvp(symbolic_zeros=True) is not supported; "
                                            "zero tangents are passed as arrays of zeros")
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument, `jvp_i(tangent_i, primal_out, *primals) -> tangent contribution`."""
        def jvp(primals: tuple, tangents: tuple) -> tuple:
            out = self.fun(*primals)
            out_leaves, out_tree = tree_flatten(out)
            total = [None] * len(out_leaves)
            for rule, t in zip(jvps, tangents):
                if rule is not None:
                    term = tree_flatten(rule(t, out, *primals))[0]
                    total = [b if a is None else a + b for a, b in zip(total, term)]
            total = [np.zeros_like(o) if a is None else a for a, o in zip(total, out_leaves)]
            return out, tree_unflatten(out_tree, total)
        self.defjvp(jvp)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {getattr(self, '__name__', 'f')} using defjvp.")
        args = _positional(self.fun, args, kwargs)
        if not is_tracing():
            return self.fun(*args)
        name = getattr(self, "__name__", "custom_jvp")
        split = _Args(args, self.nondiff_argnums)
        traced = trace_leaves(lambda ts: self.fun(*split.full_args(split.rebuild(ts))), split.tracers, name)
        rule = JvpRule(self, split, traced.out_tree, traced.program.out_avals, name)
        return tree_unflatten(traced.out_tree, _bind_call("custom_jvp_call", traced, split.tracers, rule, name))


@register_jvp("custom_jvp_call")
def _custom_jvp_jvp(primals, tangents, *, rule, **params):
    consts, args = _call_parts(primals, params)
    t_consts, t_args = _call_parts(tangents, params)
    if any(t is not None for t in t_consts):
        raise _constants_differentiated(params["name"], "custom_jvp")
    return rule.jvp(args, _zero_filled(t_args, args))


VJP_WANTS_ACTIVE.add("custom_jvp_call")


@register_vjp("custom_jvp_call")
def _custom_jvp_vjp(cts, primals, outs, *, rule, active, **params):
    """Reverse mode through the jvp rule: its tangent outputs are linear in its tangent inputs,
    so the arguments' cotangents are that linear map's transpose (the vjp of the traced rule with
    respect to the tangents, at zero tangents)."""
    consts, args = _call_parts(primals, params)
    if any(_call_parts(active, params)[0]):
        raise _constants_differentiated(params["name"], "custom_jvp")
    n = len(args)
    traced = trace_leaves(lambda ts: _flat_pair(rule.jvp(ts[:n], ts[n:])), list(args) + list(args),
                          f"{params['name']}.jvp")
    nout = len(outs)
    inputs = list(traced.captured) + list(args) + [ops.zeros_like(a) for a in args]
    flags = [False] * (traced.ncaptured + n) + [differentiable(a.aval) for a in args]
    _, backward = vjp_eval(traced.program, inputs, flags)
    cts_in = backward([None] * nout + list(cts))
    return [None] * len(consts) + cts_in[traced.ncaptured + n:]


# ----------------------------------------------------------------------------- custom_vjp


class custom_vjp:
    """A function with a user-defined reverse-mode derivative (JAX's `jax.custom_vjp`).

    >>> import numpy as np, jitkernel as jk
    >>> @jk.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> def fwd(x):
    ...     return x, None
    >>> def bwd(res, g):
    ...     return (np.clip(g, -1.0, 1.0),)
    >>> clip_gradient.defvjp(fwd, bwd)
    >>> float(jk.grad(lambda x: 5.0 * clip_gradient(x))(2.0))
    1.0
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """`fwd(*args) -> (out, residuals)`; `bwd(*nondiff_args, residuals, out_cotangent) ->` a
        tuple of one cotangent per differentiable argument (None for zero)."""
        if symbolic_zeros:
            raise UnsupportedOperationError("custom_vjp.defvjp(symbolic_zeros=True) is not supported")
        self.fwd, self.bwd = fwd, bwd

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {getattr(self, '__name__', 'f')} using defvjp.")
        args = _positional(self.fun, args, kwargs)
        if not is_tracing():
            return self.fun(*args)
        name = getattr(self, "__name__", "custom_vjp")
        split = _Args(args, self.nondiff_argnums)
        traced = trace_leaves(lambda ts: self.fun(*split.full_args(split.rebuild(ts))), split.tracers, name)
        rule = VjpRule(self, split, traced.out_tree, traced.program.out_avals, name)
        return tree_unflatten(traced.out_tree, _bind_call("custom_vjp_call", traced, split.tracers, rule, name))


def _bwd_leaves(name: str, result: Any, split: _Args, arg_avals: list[AType]) -> list[Tracer]:
    """The bwd rule's result (a tuple, one entry per differentiable argument, None for zero) as
    one cotangent per argument leaf."""
    if not isinstance(result, (tuple, list)):
        raise CustomDerivativeError(f"Custom VJP bwd rule must produce a tuple of length equal to the number of "
                                    f"arguments to the primal function, got {type(result).__name__} (function {name})")
    if len(result) != len(split.diff_args):
        raise CustomDerivativeError(f"Custom VJP bwd rule must produce a tuple of length equal to the number of "
                                    f"arguments to the primal function (excluding nondiff_argnums), but got "
                                    f"{len(result)} for {len(split.diff_args)} arguments (function {name})")
    ct_leaves: list = []
    for ct, arg in zip(result, split.diff_args):
        a_leaves, a_tree = tree_flatten(arg)
        if ct is None:
            ct_leaves += [None] * len(a_leaves)
            continue
        c_leaves, c_tree = tree_flatten(ct)
        if c_tree != a_tree:
            raise CustomDerivativeError(f"Custom VJP bwd rule must produce an output with the same container "
                                        f"(pytree) structure as the args tuple of the primal function, got {c_tree} "
                                        f"for an argument of structure {a_tree} (function {name})")
        ct_leaves += c_leaves
    out = []
    for pos, aval in zip(split.positions, arg_avals):
        c = ct_leaves[pos]
        if c is None or not differentiable(aval):
            out.append(ops.zeros_like(aval))
            continue
        out.extend(_match(f"Custom VJP bwd rule of {name}: the cotangent of argument leaf {pos}", [as_tracer(c)], [aval]))
    return out


@register_jvp("custom_vjp_call")
def _custom_vjp_jvp(primals, tangents, **params):
    raise GradientError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


VJP_WANTS_ACTIVE.add("custom_vjp_call")


@register_vjp("custom_vjp_call")
def _custom_vjp_vjp(cts, primals, outs, *, rule, active, **params):
    consts, args = _call_parts(primals, params)
    if any(_call_parts(active, params)[0]):
        raise _constants_differentiated(params["name"], "custom_vjp")
    _, residuals = rule.fwd(args)  # the forward values again (CSE merges them with the call's)
    cts_in = rule.bwd(residuals, _zero_filled(cts, outs))
    return [None] * len(consts) + [c if differentiable(a.aval) else None for c, a in zip(cts_in, args)]


# ----------------------------------------------------------------------------- vmap

def _batched_program(program: Program, batched: Sequence[bool], size: int, name: str) -> Any:
    """`program` vectorised (inputs batched at axis 0 where `batched`, every output batched),
    traced as a closed sub-program of the active trace."""
    avals = [AType((size,) + tuple(a.shape), a.dtype) if b else a for a, b in zip(program.in_avals, batched)]

    def run(ts: list[Tracer]) -> list[Tracer]:
        outs, out_b = batch_eval(program, ts, batched, size)
        return [o if b else broadcast_batch(o, size) for o, b in zip(outs, out_b)]

    return trace_leaves(run, [_placeholder(a) for a in avals], name)


def _register_custom_batch(prim: str, batched_rule: type) -> None:
    @register_batch(prim)
    def rule(args, batched, size, *, fun, rule, fun_nconsts, name):
        traced = _batched_program(fun, batched, size, name)
        new_rule = batched_rule(rule, list(batched[fun_nconsts:]), size)
        outs = ops.bind(prim, *args, fun=traced.program, rule=new_rule, fun_nconsts=fun_nconsts, name=name)
        return outs, [True] * len(outs)


_register_custom_batch("custom_jvp_call", BatchedJvpRule)
_register_custom_batch("custom_vjp_call", BatchedVjpRule)


# ----------------------------------------------------------------------------- power's fast paths

def power_with_fast_paths(dispatch: Callable[[Tracer, Tracer], Tracer], base: Tracer, exponent: Tracer) -> Tracer:
    """`dispatch(base, exponent)` (NumPy's fast paths of `x ** p`, selected on a traced exponent,
    numpy/_ufuncs.select_by_exponent) with power's derivative: `p * x ** (p - 1)` for the base and
    `log(x') * x ** p` (x' = 1 where x == 0) for the exponent, as the `power` rule gives."""
    f = custom_jvp(dispatch)
    f.__name__ = "power"

    def rule(primals: tuple, tangents: tuple) -> tuple:
        (x, p), (tx, tp) = primals, tangents
        out = f(x, p)
        y = ops.broadcast_in_dim(ops.convert(p, out.dtype), out.shape, ()) if p.ndim == 0 else ops.convert(p, out.dtype)
        xb = ops.broadcast_in_dim(ops.convert(x, out.dtype), out.shape, tuple(range(out.ndim - x.ndim, out.ndim)))
        terms = []
        if differentiable(x.aval):
            d = ops.mul(y, ops.bind1("power", xb, ops.sub(y, ops.ones_like(y))))
            terms.append(ops.mul(_as_out(tx, out), d))
        if differentiable(p.aval):
            safe = ops.select(ops.bind1("equal", xb, ops.zeros_like(xb)), ops.ones_like(xb), xb)
            terms.append(ops.mul(_as_out(tp, out), ops.mul(ops.bind1("log", safe), out)))
        return out, terms[0] if len(terms) == 1 else ops.add(*terms) if terms else ops.zeros_like(out)

    f.defjvp(rule)
    return f(base, exponent)


def _as_out(t: Tracer, out: Tracer) -> Tracer:
    """A tangent broadcast and converted to the output's shape and dtype."""
    t = ops.convert(t, out.dtype)
    return ops.broadcast_in_dim(t, out.shape, tuple(range(out.ndim - t.ndim, out.ndim)))
