"""The step runners of control flow on the GPU (step kinds "loop" and "branch" of
step_runners.STEP_RUNNERS): a plan of flow.py driven from the host, every value on the device.

Besides the `Device` interface (step_runners.py), these steps use three device methods:
`copy_into(dst, src)` (a device-to-device copy of src's first dst.nbytes bytes: a whole buffer here), `read_scalar(buffer)` (one
element to the host: a synchronisation point) and `write_scalar(buffer, value)` (one element
from the host). Per loop: one read of each bound (fori) or one read of the predicate per
iteration (while), one write of the index per iteration (fori); per cond: one read of the index.
"""
from __future__ import annotations

from typing import Any

from .step_runners import STEP_RUNNERS, Call, step_kind, step_runner
from .flow import BranchPlan, LoopPlan


def run_plans(call: Call, plans: list) -> None:
    for plan in plans:
        STEP_RUNNERS[step_kind(plan)](call, plan)


def _device(call: Call) -> Any:
    dev = call.device
    for method in ("copy_into", "read_scalar", "write_scalar"):
        if not hasattr(dev, method):
            raise NotImplementedError(f"device {getattr(dev, 'name', dev)!r} has no {method}(): control flow "
                                      "steps need it (backends/cuda/flow_steps.py)")
    return dev


@step_runner("branch")
def run_branch(call: Call, plan: BranchPlan) -> None:
    n = len(plan.branches)
    k = int(_device(call).read_scalar(call.bufs[plan.step.index]))
    run_plans(call, plan.branches[min(max(k, 0), n - 1)])  # lax.switch clamps the index


@step_runner("loop")
def run_loop(call: Call, plan: LoopPlan) -> None:
    """As backends/cpu/render_loops._emit_loop, with buffer bindings for the pointer phis."""
    step, bufs, dev = plan.step, call.bufs, _device(call)

    def copy(dst: int, src: int) -> None:
        dev.copy_into(bufs[dst], bufs[src])

    arrays = [c for c in step.carries if c.spare is not None]
    registers = [c for c in step.carries if c.spare is None and not c.in_place]
    for c in step.carries:
        if c.in_place:
            bufs[c.cur] = bufs[c.out]  # updated in the output buffer itself
    if step.kind == "fori":
        i, hi = int(dev.read_scalar(bufs[step.lower])), int(dev.read_scalar(bufs[step.upper]))
    for c in step.carries:
        if c.spare is None and not c.in_place:
            copy(c.cur, c.init)
        elif c.init != c.out:
            copy(c.out, c.init)
    for c in arrays:  # double-buffered: the body reads cur, writes nxt; swapped after each trip
        bufs[c.cur], bufs[c.nxt] = bufs[c.out], bufs[c.spare]
    checks_status = step.kind != "fori" and getattr(call.runner, "may_set_status", False)
    while True:
        if step.kind == "fori":
            if i >= hi:
                break
            dev.write_scalar(bufs[step.index], i)
        else:
            run_plans(call, plan.cond)
            if not dev.read_scalar(bufs[step.cond_out]):
                break
            if checks_status:
                # a run-time error flagged by the condition or the last trip raises now: the
                # clamped value read must not keep the loop going (`while x[i] > 0: i += 1`)
                dev.check_status(call.status)
        run_plans(call, plan.body)
        for c in registers:
            copy(c.cur, c.nxt)
        for c in arrays:
            bufs[c.cur], bufs[c.nxt] = bufs[c.nxt], bufs[c.cur]
        if step.kind == "fori":
            i += 1
    for c in registers:
        copy(c.out, c.cur)
    for c in arrays:
        if bufs[c.cur] is not bufs[c.out]:  # an odd trip count left the value in the spare
            copy(c.out, c.cur)
