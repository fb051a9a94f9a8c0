"""Control flow on the GPU (docs/gpu.md, "Control flow on the GPU"): a `LoopStep` (fori_loop,
while_loop, and scan, which fusion turns into a fori_loop) or a `BranchStep` (cond/switch) of the
kernel IR (fusion/loops.py) is driven from the host, as the CPU's control_flow.py drives its
sub-programs, while every value stays on the device.

- Rendering: the sub-steps (cond, body, branches) are rendered by the normal renderer into the
  same translation unit, as kernels of their own; `render_control` returns the C text and a
  plan (`LoopPlan`, `BranchPlan`) holding the sub-steps' launches, nested like the steps.
- Running: `run_control` walks a plan with a `Device` (the executor's view of buffers: launch
  a step's kernels, copy a buffer, read or write one element). Array carries are
  double-buffered by rebinding the alias ids `Carry.cur`/`Carry.nxt` to the output and the
  spare buffer and swapping them after each iteration (no copy); 0-d carries are one-element
  device buffers copied nxt -> cur on the device. The loop bounds (once per loop), the loop
  predicate (once per while iteration) and the branch index (once per cond) are read back: a
  one-element device-to-host copy, which is a synchronisation point. A fori_loop writes its
  index into its one-element buffer (a host-to-device copy) before each iteration.

Loops stay host-driven on the GPU even where the CPU renders them as native loops inside one
segment (backends/cpu/render_loops.py): a kernel cannot wait for the whole grid between two
iterations without cooperative launches, and those are not used here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from ...fusion.loops import BranchStep, LoopStep


@dataclass
class LoopPlan:
    step: LoopStep
    cond: list
    body: list


@dataclass
class BranchPlan:
    step: BranchStep
    branches: list[list]


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


class Device(Protocol):
    """What the control driver needs of an executor (emulator.py: NumPy arrays; the PyCUDA
    runtime: device arrays)."""

    bufs: dict  # buffer id -> array (alias ids are rebound by the driver)

    def run_plans(self, plans: list) -> None: ...
    def copy(self, dst: int, src: int) -> None: ...  # device-to-device, whole buffer
    def read_scalar(self, bid: int) -> Any: ...  # one element, device -> host (a sync point)
    def write_scalar(self, bid: int, value: Any) -> None: ...  # one element, host -> device


def run_control(plan: LoopPlan | BranchPlan, dev: Device) -> None:
    if isinstance(plan, BranchPlan):
        n = len(plan.branches)
        k = int(dev.read_scalar(plan.step.index))
        dev.run_plans(plan.branches[min(max(k, 0), n - 1)])  # lax.switch clamps the index
        return
    step = plan.step
    bufs = dev.bufs
    arrays = [c for c in step.carries if c.spare is not None]
    registers = [c for c in step.carries if c.spare is None and not c.in_place]
    for c in step.carries:
        if c.in_place:
            bufs[c.cur] = bufs[c.out]  # updated in the output buffer itself
    if step.kind == "fori":
        lo, hi = int(dev.read_scalar(step.lower)), int(dev.read_scalar(step.upper))
    for c in step.carries:  # as render_loops._init_carries
        if c.spare is None and not c.in_place:
            dev.copy(c.cur, c.init)
        elif c.init != c.out:
            dev.copy(c.out, c.init)
    for c in arrays:
        bufs[c.cur], bufs[c.nxt] = bufs[c.out], bufs[c.spare]
    i = lo if step.kind == "fori" else 0
    while True:
        if step.kind == "fori":
            if i >= hi:
                break
            dev.write_scalar(step.index, i)
        else:
            dev.run_plans(plan.cond)
            if not dev.read_scalar(step.cond_out):
                break
        dev.run_plans(plan.body)
        for c in registers:
            dev.copy(c.cur, c.nxt)
        for c in arrays:
            bufs[c.cur], bufs[c.nxt] = bufs[c.nxt], bufs[c.cur]
        i += 1
    for c in registers:
        dev.copy(c.out, c.cur)
    for c in arrays:
        if bufs[c.cur] is not bufs[c.out]:  # an odd trip count left the value in the spare
            dev.copy(c.out, c.cur)


def numpy_scalar(value: Any, dtype: np.dtype) -> np.ndarray:
    """A one-element array of `dtype` holding `value` (the fori index written to the device)."""
    return np.asarray(value, dtype).reshape(())
