"""Run-time checks inside loop bodies and branches, carried as an error code.

At the top level of a trace a run-time check of Python-int arithmetic (trace/python_int.py) is
a `raise_if` step. Inside a jk.lax loop body such a library step would keep the loop out of the
CPU backend's native loops (one Python-driven call per trip, about 500x slower), so a body or a
branch records its checks into its *error code* instead: a 0-d int32 that is 0 while every
check passed, else the number of the first check that failed (its *site*: exception and
message, numbered per outermost trace). The control flow returns the code with its results:

- a fori_loop or scan carries it (the first failing trip's code is kept; the remaining trips
  still run, on wrapped values, and their results are discarded when the call raises);
- a while_loop carries it and stops as soon as it is nonzero (a wrapped value must not keep the
  loop running, possibly forever);
- a cond returns it as one more result (0 from a branch without checks).

The enclosing trace merges it into its own code (the first failure wins: it came first in
Python's order), and at the top level one `raise_if` per site that the code may hold raises that
check's exception right after the loop or cond. The checks are selects on 0-d values, which
fuse into the loop's kernels.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import AType
from ..ir.arrayfn_prims import ERROR_CODE, error_code_message
from .active import current_context
from .numpy_api import NUMPY
from .subtrace import SubTraceContext, recording_in
from .tracer import Tracer

CODE_DTYPE = np.dtype(np.int32)
CODE_SPEC = AType((), CODE_DTYPE)


def _jnp():
    return NUMPY.namespace


def collects_checks(ctx: Any) -> bool:
    """Whether checks traced in `ctx` go into its error code (a jk.lax body or branch whose
    caller reads the code) rather than a raise_if step."""
    return isinstance(ctx, SubTraceContext) and ctx.collects_checks


def _root(ctx: Any) -> Any:
    while isinstance(ctx, SubTraceContext):
        ctx = ctx.parent
    return ctx


def _site(ctx: Any, exception: str, message: str) -> int:
    """The number (1, 2, ...) of the check (exception, message) in the outermost trace."""
    sites = _root(ctx).__dict__.setdefault("check_sites", {})
    return sites.setdefault((exception, message), len(sites) + 1)


def _merge(ctx: SubTraceContext, code: Tracer, sites: set[int]) -> None:
    """ctx's code after `code`: an earlier failure (a nonzero code already there) wins."""
    jnp = _jnp()
    if ctx.error_code is None:
        ctx.error_code = code
    else:
        ctx.error_code = jnp.where(jnp.not_equal(ctx.error_code, np.int32(0)), ctx.error_code, code)
    ctx.error_sites |= sites


def record_check(ctx: SubTraceContext, bad: Any, exception: str, message: str) -> None:
    """Where the bool 0-d `bad` is true (and no earlier check failed), ctx's code becomes this
    check's site."""
    jnp = _jnp()
    site = _site(ctx, exception, message)
    _merge(ctx, jnp.where(bad, np.int32(site), np.int32(0)), {site})


def check(value: Tracer, bad: Any, exception: str, message: str) -> Tracer:
    """`value`, raising exception(message) at run time where the bool 0-d `bad` is true: a
    raise_if step, or in a loop body or branch a check of its error code."""
    ctx = current_context()
    if collects_checks(ctx):
        record_check(ctx, bad, exception, message)
        return value
    return NUMPY.raise_if(value, bad, exception, message)


def absorb_code(ctx: Any, code: Tracer, sites: set[int]) -> None:
    """The error code that a loop or cond traced in `ctx` returned: merged into ctx's own code,
    or, at the top level, raised: one raise_if step, whose message holds the sites' exceptions
    and messages (ir/arrayfn_prims.py ERROR_CODE)."""
    if collects_checks(ctx):
        _merge(ctx, code, sites)
        return
    table = {site: check for check, site in _root(ctx).check_sites.items() if site in sites}
    NUMPY.raise_if(code, _jnp().not_equal(code, np.int32(0)), ERROR_CODE, error_code_message(table))


def take_code(ctx: SubTraceContext) -> tuple[Tracer | None, set[int]]:
    """The code `ctx` (a finished body or branch) recorded, and its sites; ctx keeps none."""
    code, sites = ctx.error_code, ctx.error_sites
    ctx.error_code, ctx.error_sites = None, set()
    return code, sites


def carry_code(ctx: SubTraceContext) -> tuple[Tracer | None, set[int]]:
    """For a loop body that recorded checks: (the carried code's value after this trip, from a
    new last explicit input of ctx, the code before it; the sites). (None, set()) without checks."""
    code, sites = take_code(ctx)
    if code is None:
        return None, sites
    with recording_in(ctx):  # the merge is recorded in the body
        before = ctx.new_input(CODE_SPEC)
        jnp = _jnp()
        after = jnp.where(jnp.not_equal(before, np.int32(0)), before, code)
    return after, sites


def no_failure(code: Tracer) -> Tracer:
    """`code == 0` (a while loop's condition also needs it)."""
    return _jnp().equal(code, np.int32(0))

