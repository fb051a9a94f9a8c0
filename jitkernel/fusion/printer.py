"""Readable text of a KernelProgram (the `kernels` stage)."""
from __future__ import annotations

from ..ir.control_flow import sub_programs
from ..ir.datadep_prims import describe_split
from ..ir.printer import format_param
from ..ir.types import short_dtype
from .kernel_ir import (IndexValue, Kernel, KernelProgram, Literal, Load, Node, RowKernel, postorder,
                        register_text_form)
from .loops import format_control, is_control


def _node_text(root: Node, names: dict, lines: list[str], bufs: dict) -> str:
    """The name of `root`'s value, after appending a line for every node it needs that has
    none yet (arguments first; iterative, bodies may be very deep)."""
    for node in postorder([root], names):
        if isinstance(node, Literal):
            continue  # printed inline where used
        if isinstance(node, Load):
            text = f"load %{node.buffer}[{node.offset}]"
        elif isinstance(node, IndexValue):
            text = f"index({node.index})"
        else:
            args = ", ".join(_ref(a, names) for a in node.args)
            params = "".join(f" {k}={v}" for k, v in node.params)
            text = f"{node.prim}({args}){params}"
        name = f"t{len(names)}"
        names[node] = name
        lines.append(f"      {name}: {short_dtype(node.dtype)} = {text}")
    return _ref(root, names)


def _ref(node: Node, names: dict) -> str:
    if isinstance(node, Literal):
        return f"{node.value!r}:{short_dtype(node.dtype)}"
    return names[node]


def format_kernel(kernel: Kernel, bufs: dict, first: int = 0, indent: str = "  ") -> list[str]:
    loops = ", ".join(f"i{d}<{n}" + (" (reduce)" if d >= len(kernel.kept) else "")
                      for d, n in enumerate(kernel.domain) if d >= first)
    lines = [f"{indent}kernel {kernel.name} over [{loops}]:" if not first else f"{indent}phase over [{loops}]:"]
    if kernel.graph_ops:
        lines.append(f"    fuses: {'; '.join(kernel.graph_ops)}")
    names: dict = {}
    for st in kernel.stores:
        v = _node_text(st.value, names, lines, bufs)
        red = f" {st.reduce}-reduce" if st.reduce else ""
        lines.append(f"      store %{st.buffer}[{st.offset}] <-{red} {v}")
    return lines


def _boundary(kp: KernelProgram, b: int) -> str:
    """`%0:f64[4,2]`, and `(c128[4])` after it when the caller passes or gets a complex array."""
    text = str(kp.buffers[b])
    dt = getattr(kp, "complex_views", {}).get(b)
    if dt is None:
        return text
    return text + f" (as {short_dtype(dt)}[{','.join(map(str, kp.buffers[b].shape[:-1]))}])"


def format_kernel_program(kp: KernelProgram) -> str:
    lines = [f"kernels {kp.name}:"]
    lines.append("  inputs: " + ", ".join(_boundary(kp, b) for b in kp.inputs))
    if kp.consts:
        lines.append("  consts: " + ", ".join(str(kp.buffers[b]) for b, _ in kp.consts))
    temps = [b for b in kp.buffers.values() if b.role == "temp"]
    if temps:
        lines.append("  temps: " + ", ".join(str(b) for b in temps))
    scratch = [b for b in kp.buffers.values() if b.role == "scratch"]
    if scratch:
        lines.append("  row scratch: " + ", ".join(str(b) for b in scratch))
    lines.append("  outputs: " + ", ".join(_boundary(kp, b) for b in kp.outputs))
    lines += format_steps(kp.steps, kp.buffers)
    return "\n".join(lines)


def format_steps(steps: list, buffers: dict, indent: str = "  ") -> list[str]:
    """The text of a step list; `indent` (two spaces at top level) grows inside loops."""
    pad = indent[2:]
    lines: list[str] = []
    for step in steps:
        if is_control(step):
            lines += format_control(step, buffers, indent, format_steps)
        elif isinstance(step, Kernel):
            lines += [pad + ln for ln in format_kernel(step, buffers)]
        elif isinstance(step, RowKernel):
            outer = ", ".join(f"i{d}<{n}" for d, n in enumerate(step.outer))
            lines.append(f"{indent}row kernel {step.name} over rows [{outer}], {len(step.phases)} phases:")
            if step.graph_ops:
                lines.append(f"{indent}  fuses: {'; '.join(step.graph_ops)}")
            if step.scratch:
                lines.append(f"{indent}  row scratch: " + ", ".join(f"%{b} ({n} per row)" for b, n in step.scratch.items()))
            for phase in step.phases:
                text = format_kernel(phase, buffers, first=len(step.outer), indent="    ")
                lines += [pad + ln for ln in text[0:1] + [ln for ln in text[1:] if not ln.strip().startswith("fuses:")]]
        else:
            ins = ", ".join(f"%{b}" for b in step.inputs)
            outs = ", ".join(f"%{b}" for b in step.outputs)
            if step.prim in ("datadep_call", "datadep_pure"):  # a data-dependent length (numpy/_datadep.py): the split point
                lines.append(f"{indent}library {step.name}: {outs} = {step.prim}({ins}) {describe_split(step.params)}")
                continue
            lines.append(f"{indent}library {step.name}: {outs} = {step.prim}({ins}) {_format_params(step.params)}")
    return lines


def _format_params(params: dict) -> str:
    """A library step's params; sub-programs of control flow as readable IR, not their repr."""
    if not sub_programs(params):
        return str(params)
    return "{" + ", ".join(f"{k!r}: {format_param(v)}" for k, v in sorted(params.items())).replace("\n", "\n  ") + "}"


register_text_form(format_kernel_program)
