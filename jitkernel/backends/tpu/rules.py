"""The TPU backend's lowering rules, one per primitive, keyed by name (the backend's rule table).

A rule is `rule(ctx, eqn, *inputs) -> list of jax arrays`: it reads the equation's params and
output types and builds the result with `jax.lax` / `jax.numpy` inside the one traced XLA
computation of a program (backends/tpu/lowering.py). `ctx` is the `Lowering` of the program:
it lowers sub-programs (loop and branch bodies) and records run-time checks.

A primitive without a rule here is not refused: it runs as a *host step*, its NumPy reference
implementation called back from the XLA computation (backends/tpu/host_steps.py), which is
NumPy's answer by construction and costs a transfer each way (shown in `as_text("hlo")` as a
custom call). `HOST_REASONS` says why a primitive stays on the host by design.
"""
from __future__ import annotations

from typing import Any, Callable

LaxRule = Callable[..., list]

LAX_RULES: dict[str, LaxRule] = {}

# Primitives lowered as host steps on purpose, with the reason (coverage table, docs/tpu.md).
HOST_REASONS: dict[str, str] = {}


def lax_rule(*names: str) -> Callable[[LaxRule], LaxRule]:
    """Register the decorated function as the lowering of each primitive in `names`."""
    def register(fn: LaxRule) -> LaxRule:
        for name in names:
            if name in LAX_RULES:
                raise ValueError(f"TPU lowering of {name!r} registered twice")
            LAX_RULES[name] = fn
        return fn
    return register


def out_dtype(eqn: Any, k: int = 0) -> Any:
    """The NumPy dtype of the equation's k-th output."""
    return eqn.outputs[k].aval.dtype
