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


# The measured rule is "XLA everywhere" (None). On the v5e (`python -m benchmarks.tpu_pallas --backend tpu
# --sizes 20,24,26`, benchmarks/results/tpu-pallas.jsonl, docs/tpu.md "Pallas kernels") one-kernel chains
# with 0 to 3 expensive steps ran within -1.7% .. +3.6% of XLA's fusion (noise), softmax's two kernels 5-6%
# faster at 2^20 and 2^24 elements but 39% slower at 2^26, layer norm's four kernels 8-58% slower: no
# size or count of expensive steps beyond which Pallas wins.
AUTO_RULE: AutoRule | None = None
AUTO_XLA_WHY = "auto: on the v5e no chain was reliably faster as a Pallas kernel (docs/tpu.md)"


def auto_choice(elements: int, expensive: int) -> tuple[str, str]:
    """("pallas" | "xla", why) for a kernel under "auto"."""
    if AUTO_RULE is None:
        return "xla", AUTO_XLA_WHY
    if AUTO_RULE.prefers_pallas(elements, expensive):
        return "pallas", f"auto: {AUTO_RULE}"
    return "xla", f"auto: below {AUTO_RULE}"
