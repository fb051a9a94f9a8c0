"""The README's example: one dense layer with tanh, then two reductions."""
from __future__ import annotations

import numpy as np


def layer(x: np.ndarray, w: np.ndarray, b: np.ndarray):
    h = np.tanh(x @ w + b)
    return (h * h).sum(axis=1), h.max()


def example_inputs(seed: int = 0, n: int = 512, d: int = 256, k: int = 128):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    w = (rng.standard_normal((d, k)) / np.sqrt(d)).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    return x, w, b
