"""Control flow on the GPU (docs/gpu.md, "Control flow on the GPU"): a `LoopStep` (fori_loop,
while_loop, and scan, which fusion turns into a fori_loop) or a `BranchStep` (cond/switch) of the
kernel IR (fusion/loops.py) is driven from the host, as the CPU's control_flow.py drives its
sub-programs, while every value stays on the device.

- Rendering: the sub-steps (cond, body, branches) are rendered by the normal renderer into the
  same translation unit, as kernels of their own; `render_control` returns the C text and a
  plan (`LoopPlan`, `BranchPlan`) holding the sub-steps' launches, nested like the steps. A
  body may hold library steps the GPU implements (matmul tiles, gather/scatter, complex
  steps: the CUDA backends schedule them there, backends/cuda/__init__.py BODY_LIBRARY_PRIMS);
  their plans are the same step objects as at top level, run by their own step kind.
- Running (flow_steps.py, step kinds "loop" and "branch" of executor.STEP_RUNNERS): the plan
  is walked on the host with the call's device: launch a step's kernels, copy a buffer into
  another, read or write one element. Array carries are
  double-buffered by rebinding the alias ids `Carry.cur`/`Carry.nxt` to the output and the
  spare buffer and swapping them after each iteration (no copy); 0-d carries are one-element
  device buffers copied nxt -> cur on the device. The loop bounds (once per loop), the loop
  predicate (once per while iteration) and the branch index (once per cond) are read back: a
  one-element device-to-host copy, which is a synchronisation point. A fori_loop writes its
  index into its one-element buffer (a host-to-device copy) before each iteration.

A control-flow equation that fusion kept one library step (its body holds a library step the
GPU does not implement) has no GPU form: `refuse_library_loop`, its rule in
library_rules.LIBRARY_RULES, raises naming those steps.

Loops stay host-driven on the GPU even where the CPU renders them as native loops inside one
segment (backends/cpu/render_loops.py): a kernel cannot wait for the whole grid between two
iterations without cooperative launches, and those are not used here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ...errors import UnsupportedOperationError
from ...fusion.kernel_ir import KernelProgram, LibraryCall
from ...fusion.loops import BranchStep, LoopStep
from ...ir import Program, primitives
from ...ir.control_flow import CONTROL_FLOW_PRIMITIVES
from .library_rules import library_rule
from .library_steps import BODY_LIBRARY_PRIMS


@dataclass
class LoopPlan:
    """A loop's plan: the plans of its condition steps (while) and of its body steps."""

    step: LoopStep
    cond: list
    body: list
    step_kind = "loop"  # executor.STEP_RUNNERS key (flow_steps.py)


@dataclass
class BranchPlan:
    """A cond's plan: the plans of each branch's steps."""

    step: BranchStep
    branches: list[list]
    step_kind = "branch"


def render_control(kp: Any, step: LoopStep | BranchStep, render_steps: Callable) -> tuple[str, Any]:
    """The C text of a control step's sub-steps (one translation unit with the rest) and its
    plan. `render_steps(kp, steps)` -> (texts, plans) renders a list of steps."""
    if isinstance(step, BranchStep):
        texts, branches = [], []
        for j, steps in enumerate(step.branches):
            t, plans = render_steps(kp, steps)
            texts += [f"\n/* {step.name}: branch {j} of {len(step.branches)} (chosen on the host) */"] + t
            branches.append(plans)
        return "\n".join(texts), BranchPlan(step, branches)
    ctexts, cond = render_steps(kp, step.cond)
    btexts, body = render_steps(kp, step.body)
    head = f"\n/* {step.name}: a {step.kind} loop driven from the host; condition then body kernels */"
    return "\n".join([head] + ctexts + btexts), LoopPlan(step, cond, body)


def iter_launches(plans: list) -> Iterator:
    """Every Launch of a list of plans, nested ones included."""
    for plan in plans:
        if isinstance(plan, LoopPlan):
            yield from iter_launches(plan.cond)
            yield from iter_launches(plan.body)
        elif isinstance(plan, BranchPlan):
            for br in plan.branches:
                yield from iter_launches(br)
        else:
            yield from plan


@library_rule(*CONTROL_FLOW_PRIMITIVES)
def refuse_library_loop(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, list]:
    """A control-flow equation that fusion kept one library step: its body holds a library step
    the GPU does not implement (not in BODY_LIBRARY_PRIMS). Refused, naming those steps."""
    inner = ", ".join(repr(p) for p in _body_library_prims(step.params))
    raise UnsupportedOperationError(
        f"control flow {step.prim!r} (step {n} of {kp.name}) whose body holds a library step"
        f"{f' ({inner})' if inner else ''} is not "
        "supported by the CUDA backend: bodies may hold kernels and the library steps the GPU implements "
        "(matmul, gather/scatter, complex steps); run it with backend='cpu'")


def _body_library_prims(params: dict) -> list[str]:
    """The library primitives without a GPU implementation in the sub-programs of a control-flow
    equation's params (recursively), in order: what keeps it off the GPU."""
    found: list[str] = []
    progs = [v for v in params.values() if isinstance(v, Program)]
    progs += [p for v in params.values() if isinstance(v, tuple) for p in v if isinstance(p, Program)]
    for prog in progs:
        for e in prog.eqns:
            if e.prim in CONTROL_FLOW_PRIMITIVES:
                found += _body_library_prims(e.params)
            elif primitives.get(e.prim).kind == "library" and e.prim not in BODY_LIBRARY_PRIMS:
                found.append(e.prim)
    return list(dict.fromkeys(found))
