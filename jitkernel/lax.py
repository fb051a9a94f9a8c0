"""`jk.lax`: structured control flow with JAX's signatures: `cond`, `switch`, `while_loop`,
`fori_loop`, `scan`. Carries, operands and results are pytrees (jitkernel/tree.py).

Outside a trace each function runs as plain Python on NumPy values (as JAX's do under
`disable_jit`). Inside a jitted function each sub-function is traced once into a sub-program
(trace/subtrace.py: values of the enclosing function that it reads are captured as explicit
operands) and one control-flow equation is recorded (ir/control_flow.py), so a loop of 10,000
iterations compiles in the time of one.

>>> import numpy as np, jitkernel as jk
>>> @jk.jit
... def total(a):
...     return jk.lax.fori_loop(0, a.shape[0], lambda i, acc: acc + a[i], 0.0)
>>> float(total(np.arange(5.0)))
10.0

Carry types (docs/numpy-support.md, "Control flow (jk.lax)"): a leaf's shape and dtype must be
the same at the input and the output of the body, except that a Python scalar leaf (weak,
NEP 50) takes the dtype the body gives it, as it does when the Python loop runs.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .ir import AType, Var, check_dtype
from .trace.carry_writes import InputWatch, write_back_carry, write_back_operands, written_operands
from .trace.context import current_context, is_tracing
from .trace.pending_checks import CODE_SPEC, absorb_code, carry_code, no_failure, take_code
from .trace.subtrace import SubTraceContext, finish, recording_in, trace_function
from .trace.tracer import Tracer
from .tree import TreeDef, leaf_paths, tree_flatten, tree_unflatten
from . import numpy as jnp
from .numpy._dynamic import value_range
from .trace.operands import lift

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan"]

Spec = tuple[AType, "type | None"]  # (abstract value, weak Python type or None)
_WEAK_DTYPE = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64)}
_WEAK_SAMPLE = {bool: False, int: 0, float: 0.0}
_MAX_PROMOTION_ROUNDS = 4  # weak -> strong is monotone: bool < int < float < strong


# ----------------------------------------------------------------------------- pytree helpers


def _spec(leaf: Any, path: str, who: str) -> Spec:
    if isinstance(leaf, Tracer):
        return leaf.aval, leaf.weak
    if type(leaf) in (bool, int, float):
        if type(leaf) is int and not -2**63 <= leaf < 2**63:
            raise OverflowError(f"{who}: {path} is the Python int {leaf}, which does not fit int64")
        return AType((), _WEAK_DTYPE[type(leaf)]), type(leaf)
    if isinstance(leaf, (np.ndarray, np.generic)):
        return AType(np.shape(leaf), check_dtype(leaf.dtype, f"{path} of {who}")), None
    raise TypeError(f"{who}: {path} has type {type(leaf).__name__}, which is not an array or a number")


def _type_text(spec: Spec) -> str:
    aval, weak = spec
    return f"{aval} (a Python {weak.__name__})" if weak is not None else str(aval)


def _lift_leaf(ctx: Any, leaf: Any, spec: Spec) -> Tracer:
    """An operand of the control-flow equation in `ctx` for `leaf`, with `spec`'s dtype."""
    aval, weak = spec
    if isinstance(leaf, Tracer):
        t = leaf if leaf.dtype == aval.dtype else lift(ctx, leaf, aval.dtype)
    else:
        t = ctx.const(np.asarray(leaf, dtype=aval.dtype))
    return Tracer(t._ctx, t.ir_var, weak)


def _result_tracers(ctx: Any, outs: Sequence[Tracer], specs: Sequence[Spec]) -> list[Tracer]:
    return [Tracer(o._ctx, o.ir_var, weak) for o, (_, weak) in zip(outs, specs)]


def _outer_context() -> Any:
    ctx = current_context()
    assert ctx is not None
    return ctx


# ----------------------------------------------------------------------------- carry unification


def weak_fits(leaf: Any, weak: type, dtype: np.dtype) -> bool:
    """Whether a Python-scalar result `leaf` may be stored in a carry of `dtype` without changing
    its value: a concrete number that `dtype` holds exactly, or a traced one whose dtype is
    at most as wide as `dtype` holds exactly (int64 or bool into int64 / float64, float into
    float64)."""
    if np.result_type(dtype, _WEAK_SAMPLE[weak]) != dtype:
        return False
    if not isinstance(leaf, Tracer):
        try:
            with np.errstate(all="ignore"):
                return np.asarray(leaf, dtype).item() == leaf or leaf != leaf  # exact (Python compares); NaN stays NaN
        except OverflowError:
            return False
    if weak is bool:
        return True
    return dtype == np.float64 or (weak is int and dtype == np.int64)


def _unify_carry(who: str, fun_name: str, paths: list[str], ins: list[Spec], outs: list[Spec],
                 out_leaves: list[Any]) -> tuple[list[Spec], bool]:
    """The carry types for the next tracing round, and whether they changed. A weak input leaf
    takes the body's output type; a weak output leaf may meet a strong input whose dtype holds
    its value exactly (cast at the end, weak_fits); anything else that differs is a TypeError."""
    new, changed = [], False
    for path, (ia, iw), (oa, ow), leaf in zip(paths, ins, outs, out_leaves):
        if (ia, iw) == (oa, ow):
            new.append((ia, iw))
            continue
        if ia.shape != oa.shape:
            raise _carry_error(who, fun_name, path, (ia, iw), (oa, ow), "the shape changed")
        if iw is not None:
            new.append((oa, ow))  # Python scalar carry: NumPy gives it the body's type
            changed = True
        elif ow is not None and weak_fits(leaf, ow, ia.dtype):
            new.append((ia, iw))  # a Python scalar result cast to the carry's dtype
        elif ow is not None:
            raise _carry_error(who, fun_name, path, (ia, iw), (oa, ow),
                               f"{ia.dtype} may not hold that Python {ow.__name__} exactly, and NumPy's loop "
                               "would make the carry a Python scalar")
        else:
            raise _carry_error(who, fun_name, path, (ia, iw), (oa, ow), "the dtype changed")
    return new, changed


def _carry_error(who: str, fun_name: str, path: str, given: Spec, got: Spec, why: str) -> TypeError:
    return TypeError(
        f"{who}: {fun_name} must return the carry with the types it was given, but {path} is "
        f"{_type_text(given)} at the input and {_type_text(got)} at the output of {fun_name} ({why}). "
        "Cast it in the body (x.astype(...)) or give the initial value that type.")


def _check_tree(who: str, fun_name: str, given: TreeDef, got: TreeDef) -> None:
    if given != got:
        raise TypeError(f"{who}: {fun_name} must return a carry with the structure of the initial value "
                        f"{given}, got {got}")


def _trace_loop_body(who: str, fun_name: str, fun: Callable[..., Any], init_leaves: list[Any], tree: TreeDef,
                     lead_specs: list[Spec], make_lead: Callable[[SubTraceContext, list[Tracer]], tuple],
                     extra_out: bool = False) -> tuple[Any, list[Spec], Any]:
    """Trace `fun` with the carry `init_leaves` until the carry types agree (weak leaves take
    the body's types). `make_lead(ctx, lead_tracers)` returns the arguments that come before
    the carry (a loop index) or around it. Returns ((sub-context, carry leaves out, extra, the
    watch of the carry inputs), specs, the enclosing context)."""
    paths = leaf_paths(tree, "carry")
    specs = [_spec(leaf, p, who) for leaf, p in zip(init_leaves, paths)]
    outer = _outer_context()
    for _ in range(_MAX_PROMOTION_ROUNDS):
        watches: list[InputWatch] = []

        def make_args(ctx: SubTraceContext, specs: list[Spec] = specs) -> tuple:
            lead = [ctx.new_input(a, w) for a, w in lead_specs]
            inputs = [ctx.new_input(a, w) for a, w in specs]
            watches.append(InputWatch(inputs))
            return make_lead(ctx, lead, tree_unflatten(tree, inputs))
        ctx, result = trace_function(outer, f"{outer.name}.{fun_name}", fun, make_args, loop=True)
        carry_out, extra = (result if extra_out else (result, None))
        if extra_out and not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(f"{who}: {fun_name} must return a pair (carry, y), got {type(result).__name__}")
        out_leaves, out_tree = tree_flatten(carry_out)
        _check_tree(who, fun_name, tree, out_tree)
        out_specs = [_spec(leaf, p, who) for leaf, p in zip(out_leaves, paths)]
        new_specs, changed = _unify_carry(who, fun_name, paths, specs, out_specs, out_leaves)
        if not changed:
            return (ctx, out_leaves, extra, watches[-1]), specs, outer
        ctx.closed = True
        specs = new_specs
    raise TypeError(f"{who}: the carry types of {fun_name} did not settle after {_MAX_PROMOTION_ROUNDS} rounds")


def _finish_body(ctx: SubTraceContext, leaves: list[Any], specs: list[Spec]):
    return finish(ctx, leaves, [a.dtype for a, _ in specs])


# ----------------------------------------------------------------------------- run-time checks


def _carry_checks(ctx: SubTraceContext, leaves: list[Any], specs: list[Spec],
                  init_leaves: list[Any]) -> tuple[list[Any], list[Spec], list[Any], set[int] | None]:
    """A body that recorded run-time checks carries its error code as one more (last) carry
    leaf, starting at 0 (trace/pending_checks.py); the sites, or None without checks."""
    after, sites = carry_code(ctx)
    if after is None:
        return leaves, specs, init_leaves, None
    return list(leaves) + [after], list(specs) + [(CODE_SPEC, None)], list(init_leaves) + [np.int32(0)], sites


def _raise_checks(ctx: Any, outs: list[Tracer], sites: set[int] | None) -> list[Tracer]:
    """The results of a loop or cond without its error code (last), which goes to `ctx`."""
    if sites is None:
        return outs
    absorb_code(ctx, outs[-1], sites)
    return outs[:-1]


def _stop_on_failure(ctx: SubTraceContext, pred: Any) -> Any:
    """A while loop's condition that also stops once the carried error code (a new last input
    of the condition) is nonzero: a wrapped value must not keep the loop running."""
    with recording_in(ctx):
        return jnp.logical_and(pred, no_failure(ctx.new_input(CODE_SPEC)))


def _loop_results(who: str, fun_name: str, tree: TreeDef, outer: Any, outs: list[Tracer], sites: set[int] | None,
                  specs: list[Spec], init_leaves: list[Any], watch: InputWatch, body_leaves: list[Any]) -> list[Any]:
    """The carry a loop returns: its outputs less the error code (merged or raised in `outer`),
    where the body wrote its carry in place, the caller's arrays (trace/carry_writes.py)."""
    results = _result_tracers(outer, _raise_checks(outer, outs, sites), specs)
    return write_back_carry(who, fun_name, leaf_paths(tree, "carry"), init_leaves, results, watch, body_leaves)


# ----------------------------------------------------------------------------- plain Python


def _python_bool(value: Any, who: str) -> bool:
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"{who}: the predicate must be a scalar; the truth value of an array with more "
                         "than one element is ambiguous")
    return bool(arr.reshape(()))


# ----------------------------------------------------------------------------- while_loop


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init_val: Any) -> Any:
    """`while cond_fun(val): val = body_fun(val)`; returns the final `val` (a pytree).

    >>> import numpy as np, jitkernel as jk
    >>> jk.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] * 2, c[1] + 1), (1, 0))
    (16, 4)
    """
    if not is_tracing():
        val = init_val
        while _python_bool(cond_fun(val), "while_loop"):
            val = body_fun(val)
        return val
    who = "jk.lax.while_loop"
    init_leaves, tree = tree_flatten(init_val)
    (bctx, bleaves, _, watch), specs, outer = _trace_loop_body(
        who, "body_fun", body_fun, init_leaves, tree, [], lambda ctx, lead, carry: (carry,))
    user_specs = specs
    bleaves, specs, init_leaves, sites = _carry_checks(bctx, bleaves, specs, init_leaves)
    body = _finish_body(bctx, bleaves, specs)

    def make_cond_args(ctx: SubTraceContext) -> tuple:
        return (tree_unflatten(tree, [ctx.new_input(a, w) for a, w in user_specs]),)
    cctx, pred = trace_function(outer, f"{outer.name}.cond_fun", cond_fun, make_cond_args, loop=True)
    if take_code(cctx)[0] is not None:
        # cond_fun checks something at run time (x[i] with a traced i): a condition has no carry
        # to hold an error code, so it is evaluated in the body instead (this trace is dropped)
        return _while_with_checked_condition(cond_fun, body_fun, init_val)
    pred = _predicate(pred, who, "cond_fun")
    if sites is not None:
        pred = _stop_on_failure(cctx, pred)
    cond = finish(cctx, [pred], [np.dtype(np.bool_)])
    operands = list(cctx.captured) + list(bctx.captured) + [
        _lift_leaf(outer, leaf, spec) for leaf, spec in zip(init_leaves, specs)]
    outs = outer.bind("while_loop", operands, cond=cond, body=body, cond_nconsts=len(cctx.captured),
                      body_nconsts=len(bctx.captured))
    return tree_unflatten(tree, _loop_results(who, "body_fun", tree, outer, outs, sites, specs, init_leaves, watch,
                                              bleaves))


def _while_with_checked_condition(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
                                  init_val: Any) -> Any:
    """`while cond_fun(val): val = body_fun(val)` where cond_fun has run-time checks (NumPy's
    IndexError for `while x[i] > 0` once i runs past the end; without the check the loop read a
    clamped element and could run forever). Each trip evaluates the condition, in Python's
    order, inside the loop body, whose error code stops the loop and raises after it; the body
    runs under a cond on it, so it never runs on a false condition:
    `go = True; while go: go = cond_fun(val); val = body_fun(val) if go else val`."""
    def step(state: tuple) -> tuple:
        val, _ = state
        go = _predicate(cond_fun(val), "jk.lax.while_loop", "cond_fun")
        return cond(go, body_fun, lambda v: v, val), go
    return while_loop(lambda state: state[1], step, (init_val, np.bool_(True)))[0]


def _predicate(pred: Any, who: str, fun_name: str) -> Any:
    """A bool 0-d from what `fun_name` returned, as Python's truth test would read it."""
    shape = pred.shape if isinstance(pred, Tracer) else np.shape(pred)
    if int(np.prod(shape)) != 1:
        raise ValueError(f"{who}: {fun_name} must return a scalar, got shape {tuple(shape)}: the truth value "
                         "of an array with more than one element is ambiguous")
    if isinstance(pred, Tracer):
        pred = jnp.reshape(pred, ()) if pred.shape else pred
        return pred if pred.dtype == np.bool_ else jnp.not_equal(pred, 0)
    return np.asarray(bool(np.asarray(pred).reshape(())))


# ----------------------------------------------------------------------------- fori_loop


def _static_int(x: Any) -> int | None:
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return int(x)
    return None


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Any], Any], init_val: Any) -> Any:
    """`for i in range(lower, upper): val = body_fun(i, val)`; returns the final `val`. The
    index `i` is a Python int, traced as one (int64, weak).

    >>> import jitkernel as jk
    >>> jk.lax.fori_loop(0, 4, lambda i, acc: acc + i * i, 0)
    14
    """
    if not is_tracing():
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val
    who = "jk.lax.fori_loop"
    for name, bound in (("lower", lower), ("upper", upper)):
        if not (_static_int(bound) is not None or (isinstance(bound, Tracer) and bound.ndim == 0
                                                      and bound.dtype.kind in "iu")):
            raise TypeError(f"{who}: {name} must be an integer scalar, got {bound!r}")
    lo, hi = _static_int(lower), _static_int(upper)
    init_leaves, tree = tree_flatten(init_val)
    index_spec: Spec = (AType((), np.int64), int)

    def make_lead(ctx: SubTraceContext, lead: list[Tracer], carry: Any) -> tuple:
        if lo is not None and hi is not None and lo < hi:
            ctx.ranges[lead[0].ir_var] = (lo, hi - 1)
        elif (bounds := _bound_ranges(lower, upper)) is not None:
            ctx.loose_ranges[lead[0].ir_var] = bounds  # range(i): 0 <= j < i for every trip
        return (lead[0], carry)
    (bctx, bleaves, _, watch), specs, outer = _trace_loop_body(
        who, "body_fun", body_fun, init_leaves, tree, [index_spec], make_lead)
    bleaves, specs, init_leaves, sites = _carry_checks(bctx, bleaves, specs, init_leaves)
    body = _finish_body(bctx, bleaves, specs)
    ncap = len(bctx.captured)  # invars are captured + [i] + carry: the IR wants i first
    body.invars = body.invars[ncap:ncap + 1] + body.invars[:ncap] + body.invars[ncap + 1:]
    bounds = [_lift_leaf(outer, b, (AType((), np.int64), None)) for b in (lower, upper)]
    operands = bounds + list(bctx.captured) + [_lift_leaf(outer, leaf, spec) for leaf, spec in zip(init_leaves, specs)]
    outs = outer.bind("fori_loop", operands, body=body, nconsts=len(bctx.captured))
    return tree_unflatten(tree, _loop_results(who, "body_fun", tree, outer, outs, sites, specs, init_leaves, watch,
                                              bleaves))


def _bound_ranges(lower: Any, upper: Any) -> tuple[int, int] | None:
    """Bounds of a fori_loop index whose loop bounds are traced values of known ranges (an
    enclosing loop's index): every trip has lower_lo <= index <= upper_hi - 1."""
    ranges = [(b, b) if _static_int(b) is not None else value_range(b) if isinstance(b, Tracer) else None
              for b in (lower, upper)]
    if ranges[0] is None or ranges[1] is None or ranges[0][0] > ranges[1][1] - 1:
        return None
    return ranges[0][0], ranges[1][1] - 1


# ----------------------------------------------------------------------------- scan


def scan(f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False) -> tuple[Any, Any]:
    """`for x in xs: carry, y = f(carry, x)`; returns `(carry, ys)` with the `y`s stacked along
    a new leading axis (in the order of `xs` also when `reverse`).

    >>> import numpy as np, jitkernel as jk
    >>> jk.lax.scan(lambda c, x: (c + x, c * x), 0.0, np.array([1.0, 2.0, 3.0]))
    (np.float64(6.0), array([0., 2., 9.]))
    """
    x_leaves, x_tree = tree_flatten(xs)
    shapes = [x.shape if isinstance(x, Tracer) else np.shape(x) for x in x_leaves]
    lengths = {int(shape[0]) if shape else None for shape in shapes}
    if None in lengths:
        raise ValueError("jk.lax.scan: every leaf of xs must have a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) > 1:
        raise ValueError(f"jk.lax.scan: xs leaves and length disagree on the number of steps: {sorted(lengths)}")
    if not lengths:
        raise ValueError("jk.lax.scan: length must be given when xs is None or has no leaves")
    n = lengths.pop()
    if not is_tracing():
        return _scan_python(f, init, x_leaves, x_tree, n, reverse)
    who = "jk.lax.scan"
    init_leaves, tree = tree_flatten(init)
    x_specs = [_spec(x, p, who) for x, p in zip(x_leaves, leaf_paths(x_tree, "xs"))]
    slice_specs = [(AType(a.shape[1:], a.dtype), None) for a, _ in x_specs]
    y_info: dict[str, Any] = {}

    def make_lead(ctx: SubTraceContext, lead: list[Tracer], carry: Any) -> tuple:
        return (carry, tree_unflatten(x_tree, lead))
    # The x slices come first among the sub-trace's explicit inputs (lead); the program's input
    # order (consts, carry, x slices) is restored below.
    (bctx, bleaves, ys, watch), specs, outer = _trace_loop_body(
        who, "f", f, init_leaves, tree, slice_specs, make_lead, extra_out=True)
    y_leaves, y_tree = tree_flatten(ys)
    y_specs = [_spec(y, p, who) for y, p in zip(y_leaves, leaf_paths(y_tree, "y"))]
    y_info["tree"] = y_tree
    bleaves, specs, init_leaves, sites = _carry_checks(bctx, bleaves, specs, init_leaves)
    body = finish(bctx, list(bleaves) + list(y_leaves), [a.dtype for a, _ in specs] + [a.dtype for a, _ in y_specs])
    nx, ncap = len(slice_specs), len(bctx.captured)
    # invars are captured + [x slices] + [carry]: move the slices after the carry.
    invars = body.invars[:ncap] + body.invars[ncap + nx:] + body.invars[ncap:ncap + nx]
    body.invars = invars
    operands = (list(bctx.captured) + [_lift_leaf(outer, leaf, spec) for leaf, spec in zip(init_leaves, specs)]
                + [_lift_leaf(outer, x, spec) for x, spec in zip(x_leaves, x_specs)])
    outs = outer.bind("scan", operands, body=body, nconsts=ncap, ncarry=len(specs), length=n, reverse=bool(reverse))
    carry = tree_unflatten(tree, _loop_results(who, "f", tree, outer, outs[:len(specs)], sites, specs, init_leaves,
                                               watch, bleaves))
    return carry, tree_unflatten(y_tree, list(outs[len(specs):]))


def _scan_python(f: Callable, init: Any, x_leaves: list, x_tree: TreeDef, n: int, reverse: bool) -> tuple[Any, Any]:
    carry, ys = init, []
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        carry, y = f(carry, tree_unflatten(x_tree, [x[t] for x in x_leaves]))
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys:
        # No step ran: the stacked outputs are empty arrays of the types one step would give,
        # as JAX's (which traces the body for them). The body runs once on zeros to learn them.
        with np.errstate(all="ignore"):
            _, y = f(init, tree_unflatten(x_tree, [np.zeros(np.shape(x)[1:], np.asarray(x).dtype) for x in x_leaves]))
        y_leaves, y_tree = tree_flatten(y)
        return carry, tree_unflatten(y_tree, [np.empty((0,) + np.shape(v), np.asarray(v).dtype) for v in y_leaves])
    leaves0, y_tree = tree_flatten(ys[0])
    columns = [tree_flatten(y)[0] for y in ys]
    return carry, tree_unflatten(y_tree, [np.stack([np.asarray(c[k]) for c in columns]) for k in range(len(leaves0))])


# ----------------------------------------------------------------------------- cond / switch


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """`branches[index](*operands)`, the index clamped to `[0, len(branches) - 1]`.

    >>> import jitkernel as jk
    >>> jk.lax.switch(5, [lambda x: x + 1, lambda x: x * 10], 3)
    30
    """
    branches = list(branches)
    if not branches:
        raise ValueError("jk.lax.switch: branches must be a non-empty sequence")
    if not isinstance(index, Tracer):
        k = int(np.asarray(index).reshape(()))
        return branches[min(max(k, 0), len(branches) - 1)](*operands)
    if index.ndim != 0 or index.dtype.kind not in "biu":
        raise TypeError(f"jk.lax.switch: the index must be an integer scalar, got {index.aval}")
    clamped = jnp.clip(jnp.astype(index, np.int64), 0, len(branches) - 1)
    return _cond(jnp.astype(clamped, np.int32), branches, operands, "jk.lax.switch")


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], *operands: Any) -> Any:
    """`true_fun(*operands) if pred else false_fun(*operands)`; both branches are traced and must
    return results of the same types (Python scalars take the other branch's dtype).

    >>> import numpy as np, jitkernel as jk
    >>> @jk.jit
    ... def f(x):
    ...     return jk.lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x)
    >>> f(np.array([1.0, -3.0]))
    array([-1.,  3.])
    """
    if not isinstance(pred, Tracer):
        return (true_fun if _python_bool(pred, "jk.lax.cond") else false_fun)(*operands)
    if pred.size != 1:
        raise ValueError(f"jk.lax.cond: the predicate must be a scalar, got {pred.aval}: the truth value of "
                         "an array with more than one element is ambiguous")
    pred = jnp.reshape(pred, ()) if pred.shape else pred
    truth = pred if pred.dtype == np.bool_ else jnp.not_equal(pred, 0)
    return _cond(jnp.astype(truth, np.int32), [false_fun, true_fun], operands, "jk.lax.cond")


def _cond(index: Tracer, branches: list[Callable[..., Any]], operands: tuple, who: str) -> Any:
    outer = _outer_context()
    op_leaves, op_tree = tree_flatten(tuple(operands))
    op_specs = [_spec(x, p, who) for x, p in zip(op_leaves, leaf_paths(op_tree, "operands"))]
    traced, watches = [], []
    for k, fun in enumerate(branches):
        def make_args(ctx: SubTraceContext) -> tuple:
            inputs = [ctx.new_input(a, w) for a, w in op_specs]
            watches.append(InputWatch(inputs))
            return tuple(tree_unflatten(op_tree, inputs))
        ctx, result = trace_function(outer, f"{outer.name}.branch{k}", fun, make_args, collects_checks=True)
        leaves, tree = tree_flatten(result)
        traced.append((ctx, leaves, tree))
    tree0 = traced[0][2]
    for k, (_, _, tree) in enumerate(traced):
        if tree != tree0:
            raise TypeError(f"{who}: branch {k} returns the structure {tree}, branch 0 returns {tree0}; every "
                            "branch must return the same structure")
    paths = leaf_paths(tree0, "result")
    per_branch = [[_spec(leaf, p, who) for leaf, p in zip(leaves, paths)] for _, leaves, _ in traced]
    specs = [_join_branch_types(who, path, [b[j] for b in per_branch], [t[1][j] for t in traced])
             for j, path in enumerate(paths)]
    # Operands a branch wrote in place: every branch also returns their final values (after its
    # results, before its error code), which are written back into the caller's arrays after the
    # cond (trace/carry_writes.py).
    nresults, branch_leaves = len(specs), [list(leaves) for _, leaves, _ in traced]
    written = written_operands(watches)
    traced = [(ctx, list(leaves) + [w.inputs[k] for k in written], tree)
              for (ctx, leaves, tree), w in zip(traced, watches)]
    specs = specs + [op_specs[k] for k in written]
    traced, specs, sites = _branch_checks(traced, specs)
    finished = [finish(ctx, leaves, [a.dtype for a, _ in specs]) for ctx, leaves, _ in traced]
    # One operand list for every branch: all captured values (by outer variable), then the operands.
    union: dict[Any, Tracer] = {}
    for ctx, _, _ in traced:
        for t in ctx.captured:
            union.setdefault(t.ir_var, t)
    programs = []
    for (ctx, _, _), program in zip(traced, finished):
        mine = {t.ir_var: v for t, v in zip(ctx.captured, program.invars)}
        program.invars = [mine.get(ov) or Var(ov.aval) for ov in union] + program.invars[len(ctx.captured):]
        programs.append(program)
    operand_tracers = list(union.values()) + [_lift_leaf(outer, x, s) for x, s in zip(op_leaves, op_specs)]
    outs = outer.bind("cond", [index] + operand_tracers, branches=tuple(programs))
    outs = _raise_checks(outer, outs, sites)
    results = _result_tracers(outer, outs[:nresults], specs[:nresults])
    if written:
        results = write_back_operands(who, leaf_paths(op_tree, "operands"), op_leaves, written, outs[nresults:],
                                      results, watches, branch_leaves)
    return tree_unflatten(tree0, results)


def _branch_checks(traced: list[tuple], specs: list[Spec]) -> tuple[list[tuple], list[Spec], set[int] | None]:
    """Where a branch recorded run-time checks, every branch returns an error code (last; 0
    from a branch without checks); the sites, or None."""
    codes = [take_code(ctx) for ctx, _, _ in traced]
    if all(code is None for code, _ in codes):
        return traced, specs, None
    sites = set().union(*(s for _, s in codes))
    traced = [(ctx, list(leaves) + [np.int32(0) if code is None else code], tree)
              for (ctx, leaves, tree), (code, _) in zip(traced, codes)]
    return traced, list(specs) + [(CODE_SPEC, None)], sites


def _join_branch_types(who: str, path: str, specs: list[Spec], leaves: list[Any]) -> Spec:
    """One result type for a leaf the branches return: equal types, or Python scalars that take
    the dtype NumPy would combine them to with the others (NEP 50)."""
    if all(s == specs[0] for s in specs):
        return specs[0]
    shapes = {a.shape for a, _ in specs}
    strong = {a.dtype for a, w in specs if w is None}
    if len(shapes) == 1 and len(strong) <= 1:
        if strong:
            dt = strong.pop()
            if all(w is None or weak_fits(leaf, w, dt) for (_, w), leaf in zip(specs, leaves)):
                return AType(specs[0][0].shape, dt), None
        else:  # all Python scalars: the widest kind
            weak = max((w for _, w in specs), key=[bool, int, float].index)
            if all(weak_fits(leaf, w, _WEAK_DTYPE[weak]) for (_, w), leaf in zip(specs, leaves)):
                return AType(specs[0][0].shape, _WEAK_DTYPE[weak]), weak
    types = ", ".join(f"branch {k}: {_type_text(s)}" for k, s in enumerate(specs))
    raise TypeError(f"{who}: the branches must return the same types, but {path} differs ({types})")

