"""Readable text of a KernelProgram (the `kernels` stage)."""
from __future__ import annotations

from ..ir.types import short_dtype
from .kernel_ir import Compute, IndexValue, Kernel, KernelProgram, Literal, Load, Node


def _node_text(node: Node, names: dict, lines: list[str], bufs: dict) -> str:
    if node in names:
        return names[node]
    if isinstance(node, Load):
        text = f"load %{node.buffer}[{node.offset}]"
    elif isinstance(node, Literal):
        return f"{node.value!r}:{short_dtype(node.dtype)}"
    elif isinstance(node, IndexValue):
        text = f"index({node.index})"
    else:
        args = ", ".join(_node_text(a, names, lines, bufs) for a in node.args)
        params = "".join(f" {k}={v}" for k, v in node.params)
        text = f"{node.prim}({args}){params}"
    name = f"t{len(names)}"
    names[node] = name
    lines.append(f"      {name}: {short_dtype(node.dtype)} = {text}")
    return name


def format_kernel(kernel: Kernel, bufs: dict) -> list[str]:
    loops = ", ".join(f"i{d}<{n}" + (" (reduce)" if d >= len(kernel.kept) else "")
                      for d, n in enumerate(kernel.domain))
    lines = [f"  kernel {kernel.name} over [{loops}]:"]
    if kernel.graph_ops:
        lines.append(f"    fuses: {'; '.join(kernel.graph_ops)}")
    names: dict = {}
    for st in kernel.stores:
        v = _node_text(st.value, names, lines, bufs)
        red = f" {st.reduce}-reduce" if st.reduce else ""
        lines.append(f"      store %{st.buffer}[{st.offset}] <-{red} {v}")
    return lines


def format_kernel_program(kp: KernelProgram) -> str:
    lines = [f"kernels {kp.name}:"]
    lines.append("  inputs: " + ", ".join(str(kp.buffers[b]) for b in kp.inputs))
    if kp.consts:
        lines.append("  consts: " + ", ".join(str(kp.buffers[b]) for b, _ in kp.consts))
    temps = [b for b in kp.buffers.values() if b.role == "temp"]
    if temps:
        lines.append("  temps: " + ", ".join(str(b) for b in temps))
    lines.append("  outputs: " + ", ".join(str(kp.buffers[b]) for b in kp.outputs))
    for step in kp.steps:
        if isinstance(step, Kernel):
            lines += format_kernel(step, kp.buffers)
        else:
            ins = ", ".join(f"%{b}" for b in step.inputs)
            lines.append(f"  library {step.name}: %{step.output} = {step.prim}({ins}) {step.params}")
    return "\n".join(lines)
