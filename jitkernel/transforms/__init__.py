"""Composable transformations over the graph IR: differentiation (`grad`, `vjp`, `jvp`,
Jacobians) and vectorisation (`vmap`). docs/transformations.md.

>>> import numpy as np, jitkernel as jk
>>> per_row = jk.vmap(jk.grad(lambda w, x: np.sum(np.tanh(w * x))), in_axes=(None, 0))
>>> per_row(np.ones(2), np.zeros((3, 2))).shape
(3, 2)
"""
from __future__ import annotations

from .ad import (GradientError, grad, hessian, jacfwd, jacrev, jvp, stop_gradient, value_and_grad, vjp)
from .batching import BatchingError, vmap
from .check import GradientCheckError, check_grads
from .core import ArgumentNotWrittenWarning, Transformed
from .custom import CustomDerivativeError, custom_jvp, custom_vjp
from . import ad_rules, batching_rules  # noqa: F401  (register the rules)

__all__ = ["check_grads", "GradientCheckError", "grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "stop_gradient", "vmap",
           "Transformed", "ArgumentNotWrittenWarning", "GradientError", "BatchingError", "custom_jvp", "custom_vjp",
           "CustomDerivativeError"]
