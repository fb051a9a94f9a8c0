"""The TPU backends' option `tpu_fusion`: who fuses a chain of elementwise steps, a Pallas TPU kernel
rendered by jitkernel (backends/tpu/pallas.py) or XLA's own fusion (docs/tpu.md, "Pallas kernels").

- "xla": XLA fuses every elementwise chain (no Pallas kernel);
- "pallas": every chain the Pallas renderer can take becomes a Pallas kernel;
- "auto" (the default): per kernel, Pallas where the measured rule `AUTO_RULE` says it beats XLA,
  XLA otherwise.

Set it with `jk.config.update("tpu_fusion", "pallas")` or the environment variable
JITKERNEL_TPU_FUSION; it is read when a function is compiled (a function already compiled keeps its
kernels). Imports no JAX: the option exists wherever jitkernel does.

>>> import jitkernel as jk
>>> jk.config.tpu_fusion in FUSION_MODES
True
>>> jk.config.update("tpu_fusion", "fast")
Traceback (most recent call last):
    ...
ValueError: jitkernel option 'tpu_fusion' must be one of 'pallas', 'xla', 'auto', got 'fast'
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ...config import config

FUSION_MODES = ("pallas", "xla", "auto")
OPTION = "tpu_fusion"
ENVIRONMENT = "JITKERNEL_TPU_FUSION"


def check_fusion_mode(value: Any, source: str = f"jitkernel option {OPTION!r}") -> None:
    """ValueError unless `value` is one of FUSION_MODES."""
    if value not in FUSION_MODES:
        raise ValueError(f"{source} must be one of {', '.join(map(repr, FUSION_MODES))}, got {value!r}")


def default_mode() -> str:
    """The option's value before any update: JITKERNEL_TPU_FUSION, or "auto"."""
    value = os.environ.get(ENVIRONMENT) or "auto"
    check_fusion_mode(value, f"the environment variable {ENVIRONMENT}")
    return value


config.register_option(OPTION, default_mode(), check_fusion_mode)


def fusion_mode() -> str:
    """The current `tpu_fusion` option."""
    return getattr(config, OPTION)


@dataclass(frozen=True)
class AutoRule:
    """When "auto" renders a kernel with Pallas: at least `min_elements` elements and at least
    `min_expensive` expensive steps (transcendental functions, divisions: `Primitive.expensive`).
    The numbers come from `python -m benchmarks.tpu_pallas --backend tpu` on the chip."""

    min_elements: int
    min_expensive: int

    def prefers_pallas(self, elements: int, expensive: int) -> bool:
        return elements >= self.min_elements and expensive >= self.min_expensive


# None until a measurement on the chip shows a Pallas kernel beating XLA's fusion of the same steps:
# until then "auto" is XLA everywhere (docs/tpu.md, "Pallas kernels").
AUTO_RULE: AutoRule | None = None


def auto_choice(elements: int, expensive: int) -> tuple[str, str]:
    """("pallas" | "xla", why) for a kernel under "auto"."""
    if AUTO_RULE is None:
        return "xla", "auto: no measured rule favours Pallas yet"
    if AUTO_RULE.prefers_pallas(elements, expensive):
        return "pallas", f"auto: {AUTO_RULE}"
    return "xla", f"auto: below {AUTO_RULE}"
