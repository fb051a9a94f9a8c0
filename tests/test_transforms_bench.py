"""benchmarks/transforms.py runs end to end (one repetition, no JAX peer): jitkernel's training
step agrees with the hand-written NumPy backward, and the report states every goal."""
from __future__ import annotations

import re

import numpy as np

import jitkernel as jk
from benchmarks import transforms as bench
from benchmarks import transforms_model as M


def test_one_repetition_report(capsys, tmp_path):
    assert bench.main(["--repeat", "1", "--workloads", "train_step", "--peer-python", "",
                       "--text", str(tmp_path / "t.txt")]) == 0
    text = (tmp_path / "t.txt").read_text()
    assert re.search(r"^train_step\s+jk\s+[\d.]+ms", text, re.M), text
    assert re.search(r"^\s+jax\s+-\s+skipped: no --peer-python", text, re.M), text
    assert "train_step: jk first call" in text and "goal jk <= 1x numpy" in text, text


def test_per_example_gradients_agree_with_the_hand_written_ones():
    params, x, y = M.make_inputs(1, batch=8)
    got = jk.jit(jk.vmap(jk.grad(M.loss), in_axes=(None, 0, 0)))(params, x, y)
    for g, want in zip(got, M.numpy_per_example_grads(params, x, y)):
        np.testing.assert_allclose(g, want, rtol=2e-4, atol=1e-6)


def test_the_hand_written_backward_is_the_gradient():
    """The reference itself: NumPy's hand-written backward against jitkernel's check_grads-tested
    reverse mode in float64."""
    params, x, y = M.make_inputs(2, batch=4)
    params64 = [p.astype(np.float64) for p in params]
    value, grads = M.numpy_value_and_grad(params64, x.astype(np.float64), y.astype(np.float64))
    v2, g2 = jk.value_and_grad(M.loss)(params64, x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(value, v2, rtol=1e-12)
    for a, b in zip(grads, g2):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
