"""The coverage table: for every registered primitive and every layer that runs or transforms
programs, the rule that layer has for it, or its explicit refusal with the reason. Read from
the layers' own rule tables, so it cannot drift; generated into the docs:

    python -m jitkernel.coverage > docs/primitive-coverage.md

tests/test_primitive_coverage.py fails when a primitive has neither a rule nor a refusal in some
layer, and when the doc differs from the output. Nothing in the engine imports this module.

>>> cell("sin", "jvp")
Cell(status='rule', how='jvp rule')
>>> cell("complex_library", "vmap").status
'refused'
"""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass

from .backends import cuda
from .distributed import partition
from .ir.control_flow import CONTROL_FLOW_PRIMITIVES
from .ir.primitives import PRIMITIVES
from .transforms import ad, ad_rules, batching, batching_rules  # noqa: F401  (the rule modules register)

LAYERS = ("interpreter", "cpu", "cuda", "tpu", "jvp", "transpose", "vmap", "dask")

_KERNEL_KINDS = ("elementwise", "movement", "reduce", "structural", "creation")
# Library-kind primitives that no backend runs as a library step: inlined by a pass first, or
# lowered to kernels with run-time offsets.
_INLINED = {"custom_jvp_call": "inlined before lowering (passes/custom_inline.py)",
            "custom_vjp_call": "inlined before lowering (passes/custom_inline.py)"}
_DYNAMIC_KERNELS = ("dynamic_slice", "dynamic_update_slice")


@dataclass(frozen=True)
class Cell:
    status: str  # "rule" | "refused"
    how: str


def _backend(name: str, device: str) -> Cell | None:
    prim = PRIMITIVES[name]
    if prim.kind in _KERNEL_KINDS:
        return Cell("rule", f"fused kernel ({device})")
    if name in _INLINED:
        return Cell("rule", _INLINED[name])
    if name in _DYNAMIC_KERNELS:
        return Cell("rule", f"kernel with run-time offsets ({device}; fusion/dynamic.py)")
    if name in CONTROL_FLOW_PRIMITIVES:
        return Cell("rule", "native loop or branch over kernels, else a driver over compiled bodies"
                    if device == "LLVM" else "host-driven loop or branch over GPU steps (flow.py)")
    if device == "LLVM":
        return Cell("rule", "library step: the NumPy reference implementation, called from the compiled program")
    if name in cuda.LIBRARY_STEPS:
        return Cell("rule", cuda.LIBRARY_STEPS[name])
    return Cell("refused", "no GPU implementation: raises naming the step (run it with backend='cpu')")


def _tpu(name: str) -> Cell:
    """The TPU backend's rule (backends/tpu/rules*.py, read where JAX is installed): a lax
    lowering, or a host step (NumPy's reference implementation called back from XLA)."""
    if name in _INLINED:
        return Cell("rule", _INLINED[name])
    if importlib.util.find_spec("jax") is None:
        return Cell("rule", "lax lowering or host step (JAX is not installed here: not read)")
    from .backends.tpu.lowering import LAX_RULES  # optional dependency: jax
    if name in LAX_RULES:
        return Cell("rule", "lax lowering (XLA)")
    return Cell("rule", "host step: the NumPy reference implementation, called back from XLA")


def _transform(name: str, rules: dict, no_rule_needed: dict, refused: dict, what: str) -> Cell | None:
    if name in rules:
        return Cell("rule", what)
    if name in no_rule_needed:
        return Cell("rule", no_rule_needed[name])
    if name in refused:
        return Cell("refused", refused[name])
    return None


def _dask(name: str) -> Cell:
    if name in partition.RULES:
        return Cell("rule", "partitioned over blocks (distributed/partition.py)")
    if PRIMITIVES[name].kind == "elementwise":
        return Cell("rule", "blockwise")
    return Cell("rule", "one block: its inputs are rechunked whole, with a note naming it")


def cell(name: str, layer: str) -> Cell | None:
    """What `layer` does with primitive `name`: a rule, a refusal with its reason, or None."""
    if layer == "interpreter":
        return Cell("rule", "NumPy reference implementation") if PRIMITIVES[name].impl else None
    if layer == "cpu":
        return _backend(name, "LLVM")
    if layer == "cuda":
        return _backend(name, "CUDA C")
    if layer == "tpu":
        return _tpu(name)
    if layer == "jvp":
        return _transform(name, ad.JVP_RULES, ad.ZERO_DERIVATIVE, ad.REFUSED, "jvp rule")
    if layer == "transpose":
        return _transform(name, ad.VJP_RULES, ad.ZERO_DERIVATIVE, ad.REFUSED, "reverse rule")
    if layer == "vmap":
        return _transform(name, batching.BATCH_RULES, batching.NEVER_BATCHED, batching.REFUSED, "batching rule")
    if layer == "dask":
        return _dask(name)
    raise ValueError(f"unknown layer {layer!r} (one of {', '.join(LAYERS)})")


def missing() -> list[tuple[str, str]]:
    """(primitive, layer) pairs with neither a rule nor a refusal."""
    return [(name, layer) for name in sorted(PRIMITIVES) for layer in LAYERS if cell(name, layer) is None]


def markdown() -> str:
    """The table, one row per primitive: a rule's short form, or "refused" with the reason."""
    lines = ["# Primitive coverage", "",
             "Generated by `python -m jitkernel.coverage` from the layers' rule tables "
             "(tests/test_primitive_coverage.py checks it is current). Each cell is the rule a layer has for",
             "the primitive, or **refused** with the reason. `jvp`/`transpose`: forward and reverse "
             "differentiation; `dask`: jk.jit over Dask arrays.", "",
             f"{len(PRIMITIVES)} primitives.", "",
             "| primitive | kind | " + " | ".join(LAYERS) + " |",
             "|---|---|" + "---|" * len(LAYERS)]
    for name in sorted(PRIMITIVES):
        cells = []
        for layer in LAYERS:
            c = cell(name, layer)
            cells.append("**missing**" if c is None else c.how if c.status == "rule" else f"**refused**: {c.how}")
        lines.append(f"| `{name}` | {PRIMITIVES[name].kind} | " + " | ".join(x.replace("|", "/") for x in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
