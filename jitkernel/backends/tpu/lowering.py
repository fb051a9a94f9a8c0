"""An optimised graph-IR Program as one traceable JAX function: each equation lowered by its rule
in backends/tpu/rules.py (a host step when it has none), the check state threaded through in
program order (backends/tpu/checks.py).

Chains of elementwise equations may run as Pallas kernels instead (backends/tpu/pallas.py, by the
`tpu_fusion` option): a kernel runs at the place of its last equation, the others are skipped.

`lower(program)` returns a `LoweredProgram`: `fn(*arrays) -> (outputs, check state)`, ready for
`jax.jit`, plus what the runtime needs after a call (the checks' host side, the host steps).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import jax.numpy as jnp

from ...ir import Program
from . import rules_arrays, rules_control, rules_elementwise, rules_extra, rules_library  # noqa: F401  (register the rules)
from .checks import Checks
from .host_steps import ExceptionSlots, lower_host_step
from .pallas import PallasKernels
from .rules import LAX_RULES


# Primitives whose result holds the same values as their one operand (a constant stays known).
_SAME_VALUES = ("broadcast_in_dim", "reshape")


@dataclass
class Lowering:
    """The state of lowering one program: its checks, its host steps, their exception slots."""

    checks: Checks = field(default_factory=Checks)
    exception_slots: ExceptionSlots = field(default_factory=ExceptionSlots)
    host_steps: list[str] = field(default_factory=list)
    # Var -> a NumPy value it holds everywhere (a constant, or one broadcast or reshaped): for
    # the rules that read one (add of +0.0, rules_elementwise.py).
    constants: dict = field(default_factory=dict)
    negative_zero: Any = None  # the run-time -0.0 argument (lower's `fn`), None: no guard
    # XLA's simplifier reassociates sums with constants: + and - hide them (rules_elementwise.py)
    opaque_constants: bool = True
    pallas: PallasKernels = field(default_factory=lambda: PallasKernels("xla", interpret=False))

    def run(self, program: Program, args: Sequence[Any]) -> list:
        """The jax values of `program`'s outputs for jax values `args` of its inputs, inside
        the current trace (a sub-program: a loop or branch body)."""
        env: dict = dict(zip(program.invars, args))
        for v, c in zip(program.constvars, program.consts):
            env[v] = jnp.asarray(c)
            self.constants[v] = c
        plan = self.pallas.plan(program)
        for eqn in program.eqns:
            if id(eqn) in plan.members:
                kernel = plan.runs_at.get(id(eqn))
                if kernel is not None:
                    run = kernel.pallas_call(self.pallas.interpret)
                    outs = run([env[v] for v in kernel.blocked_inputs], [env[v] for v in kernel.row_inputs])
                    env.update(zip(kernel.group.outputs, outs))
                continue
            rule = LAX_RULES.get(eqn.prim, lower_host_step)
            outs = rule(self, eqn, *[env[v] for v in eqn.inputs])
            if eqn.prim in _SAME_VALUES and eqn.inputs[0] in self.constants:
                self.constants[eqn.outputs[0]] = self.constants[eqn.inputs[0]]
            for v, o in zip(eqn.outputs, outs):
                env[v] = o
        return [env[v] for v in program.outvars]

    def body(self, program: Program) -> Callable[..., tuple]:
        """`program` as a function of (check state, *inputs) -> (check state, outputs), for a
        loop or branch body traced by lax (the state is part of its carry or operands)."""
        def fn(state: tuple, *args: Any) -> tuple:
            outer, self.checks.state = self.checks.state, state
            try:
                outs = self.run(program, args)
                return self.checks.state, outs
            finally:
                self.checks.state = outer
        return fn


@dataclass
class LoweredProgram:
    fn: Callable[..., tuple]  # (*arrays) -> (outputs, check state)
    lowering: Lowering


def lower(program: Program, fusion: str = "xla", interpret: bool = False,
          contraction_guard: bool = False) -> LoweredProgram:
    """`program` as a JAX function. `fusion`: the `tpu_fusion` option ("pallas" | "xla" |
    "auto"); `interpret`: run the Pallas kernels in Pallas's TPU interpret mode (on the CPU);
    `contraction_guard`: the function takes a last argument, a run-time -0.0, that keeps XLA's
    CPU code from fusing products into later adds (the host's XLA contracts them; on the TPU
    this was not measured to matter)."""
    lowering = Lowering(pallas=PallasKernels(fusion, interpret))

    def fn(*arrays: Any) -> tuple:
        # the last argument is a run-time -0.0 (float64): the multiply rule adds it to every
        # float product so that XLA's CPU code cannot contract a product into a later add
        # (rules_elementwise.py `_multiply`)
        if contraction_guard:
            *arrays, lowering.negative_zero = arrays
        # a fresh trace (jax.jit traces once per signature) starts with no sites, host steps or kernels
        lowering.checks, lowering.host_steps = Checks(), []
        lowering.pallas.reset()
        lowering.checks.start()
        outs = lowering.run(program, arrays)
        return outs, lowering.checks.packed()
    return LoweredProgram(fn, lowering)
