"""The model of benchmarks/transforms.py, in plain NumPy so that every peer runs the same math:
an MLP 784-512-512-10 (tanh, softmax cross-entropy, mean over the batch), its inputs from a
seed, and a hand-written NumPy forward+backward (the baseline a user would write without
transformations).

`make_loss(xp)` builds the loss for an array namespace: `numpy` (what jitkernel traces) or
`jax.numpy` (the JAX peer, benchmarks/transforms_jax.py). Only NumPy is imported here.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

SIZES = (784, 512, 512, 10)
BATCH = 128


def make_inputs(seed: int, batch: int = BATCH, sizes: tuple = SIZES) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """(params [W1, b1, W2, b2, W3, b3], x, one-hot y), float32, from `seed` (scaled normal
    weights, small random biases so that their gradients are not trivially equal)."""
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        params.append((0.1 * rng.standard_normal(n_out)).astype(np.float32))
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    return params, x, y


def make_loss(xp: Any) -> Callable:
    """The loss for the array namespace `xp`. Works for a batch (x: (B, 784)) and for one
    example (x: (784,)), so `vmap(grad(loss), in_axes=(None, 0, 0))` gives per-example
    gradients."""

    def log_softmax(z):
        z = z - xp.max(z, axis=-1, keepdims=True)
        return z - xp.log(xp.sum(xp.exp(z), axis=-1, keepdims=True))

    def loss(params, x, y):
        W1, b1, W2, b2, W3, b3 = params
        h1 = xp.tanh(x @ W1 + b1)
        h2 = xp.tanh(h1 @ W2 + b2)
        logits = h2 @ W3 + b3
        return -xp.mean(xp.sum(log_softmax(logits) * y, axis=-1))

    return loss


loss = make_loss(np)


def numpy_value_and_grad(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[np.float32, list[np.ndarray]]:
    """The training step's loss and gradients, forward and backward written by hand."""
    W1, b1, W2, b2, W3, b3 = params
    n = x.shape[0]
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    logp = z - np.log(s)
    value = -(logp * y).sum() / np.float32(n)
    dz = (e / s * y.sum(axis=1, keepdims=True) - y) / np.float32(n)  # softmax - onehot, over the batch
    dW3, db3 = h2.T @ dz, dz.sum(axis=0)
    d2 = (dz @ W3.T) * (1 - h2 * h2)
    dW2, db2 = h1.T @ d2, d2.sum(axis=0)
    d1 = (d2 @ W2.T) * (1 - h1 * h1)
    dW1, db1 = x.T @ d1, d1.sum(axis=0)
    return value, [dW1, db1, dW2, db2, dW3, db3]


def numpy_per_example_grads(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """Per-example gradients by hand: the batched backward pass with outer products per example
    instead of the sums over the batch."""
    W1, b1, W2, b2, W3, b3 = params
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    dz = p * y.sum(axis=1, keepdims=True) - y  # each example's own loss: no 1/n
    d2 = (dz @ W3.T) * (1 - h2 * h2)
    d1 = (d2 @ W2.T) * (1 - h1 * h1)
    return [x[:, :, None] * d1[:, None, :], d1, h1[:, :, None] * d2[:, None, :], d2, h2[:, :, None] * dz[:, None, :], dz]
