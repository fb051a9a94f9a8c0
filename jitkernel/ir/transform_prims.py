"""Primitives that exist only for the transformations (jitkernel/transforms/).

- `stop_gradient`: the identity, which differentiation treats as a constant. `passes/simplify`
  removes it (it is the identity), so no backend ever sees it.
"""
from __future__ import annotations

import numpy as np

from .primitives import Primitive, register
from .types import AType


def _identity_rule(in_avals: list[AType]) -> list[AType]:
    return [in_avals[0]]


register(Primitive("stop_gradient", "elementwise", _identity_rule, lambda x: [np.array(x, copy=True)]))
