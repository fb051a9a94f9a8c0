"""Lowering of control flow (`cond`, `while_loop`, `fori_loop`, `scan`), run-time checks
(`raise_if`) and run-time windows (`dynamic_slice`, `dynamic_update_slice`) to `jax.lax`.

Loop and branch bodies are lowered by the same rules (`Lowering.body`); the check state of
backends/tpu/checks.py is part of every carry and branch result, so an error inside a loop is
raised after the call with NumPy's message, the first one in program order.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from ...ir.arrayfn_prims import ERROR_CODE, NUMPY_STORE, check_error, error_code_sites
from .host_steps import lower_host_step
from .rules import lax_rule


@lax_rule("cond")
def _cond(ctx, eqn, index, *operands):
    branches = [ctx.body(b) for b in eqn.params["branches"]]
    state, outs = lax.switch(jnp.clip(index, 0, len(branches) - 1), branches, ctx.checks.state, *operands)
    ctx.checks.state = state
    return list(outs)


@lax_rule("while_loop")
def _while(ctx, eqn, *args):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts, init = args[:nc], args[nc:nc + nb], args[nc + nb:]
    cond, body = ctx.body(p["cond"]), ctx.body(p["body"])

    # The condition runs at the end of each trip (and once before), so that its checks (x[i] with
    # i past the end) reach the carried state; a failure anywhere stops the loop, whose call then
    # raises NumPy's error: a clamped value read must not keep it going (`while x[i] > 0`).
    def tested(state, values):
        state, (go,) = cond(state, *cconsts, *values)
        return state, list(values), go

    def keep_going(carry):
        state, _, go = carry
        return go & (state[0] == 0) & (state[1] == 0)  # no status bit, no failed site

    def step(carry):
        state, values, _ = carry
        return tested(*body(state, *bconsts, *values))

    state, outs, _ = lax.while_loop(keep_going, step, tested(ctx.checks.state, list(init)))
    ctx.checks.state = state
    return list(outs)


@lax_rule("fori_loop")
def _fori(ctx, eqn, lower, upper, *args):
    p = eqn.params
    consts, init = args[:p["nconsts"]], args[p["nconsts"]:]
    body = ctx.body(p["body"])

    def step(i, carry):
        state, values = carry
        return body(state, i.astype(lower.dtype), *consts, *values)

    state, outs = lax.fori_loop(lower, upper, step, (ctx.checks.state, list(init)))
    ctx.checks.state = state
    return list(outs)


@lax_rule("scan")
def _scan(ctx, eqn, *args):
    p = eqn.params
    nconsts, ncarry = p["nconsts"], p["ncarry"]
    consts, init, xs = args[:nconsts], args[nconsts:nconsts + ncarry], args[nconsts + ncarry:]
    body = ctx.body(p["body"])

    def step(carry, x_slices):
        state, values = carry
        state, outs = body(state, *consts, *values, *x_slices)
        return (state, outs[:ncarry]), outs[ncarry:]

    (state, carry), ys = lax.scan(step, (ctx.checks.state, list(init)), list(xs),
                                  length=p["length"], reverse=p["reverse"])
    ctx.checks.state = state
    return list(carry) + list(ys)


@lax_rule("raise_if")
def _raise_if(ctx, eqn, value, bad):
    exception, message = eqn.params["exception"], eqn.params["message"]
    if exception == NUMPY_STORE:  # the message depends on the value: NumPy's own store decides
        return lower_host_step(ctx, eqn, value, bad)
    if exception == ERROR_CODE:  # one check site per number the code may hold: no host step
        for code, (exc, text) in error_code_sites(message).items():
            ctx.checks.site(bad & (value == code), lambda exc=exc, text=text: check_error(exc, text, None))
        return [value]
    ctx.checks.site(bad, lambda: check_error(exception, message, None))
    return [value]


def _starts(ctx, shape, starts, sizes):
    """NumPy's rule for run-time starts (ir/dynamic_slice.normalize_start): a negative start
    wraps, a start outside [0, n - size] is NumPy's IndexError naming the value written."""
    fixed = []
    for axis, (start, n, k) in enumerate(zip(starts, shape, sizes)):
        start = start.astype(jnp.int64)
        s = jnp.where(start < 0, start + n, start)
        bad = (s < 0) | (s > n - k)
        ctx.checks.index(bad, start, axis, n)
        fixed.append(jnp.where(bad, 0, s))
    return fixed


@lax_rule("dynamic_slice")
def _dynamic_slice(ctx, eqn, x, *starts):
    sizes = tuple(int(k) for k in eqn.params["sizes"])
    if eqn.params.get("layout") is not None:
        return lower_host_step(ctx, eqn, x, *starts)
    return [lax.dynamic_slice(x, _starts(ctx, x.shape, starts, sizes), sizes)]


@lax_rule("dynamic_update_slice")
def _dynamic_update_slice(ctx, eqn, x, update, *starts):
    if eqn.params.get("layout") is not None:
        return lower_host_step(ctx, eqn, x, update, *starts)
    return [lax.dynamic_update_slice(x, update, _starts(ctx, x.shape, starts, update.shape))]
