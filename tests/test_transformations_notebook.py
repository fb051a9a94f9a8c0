"""notebooks/transformations.ipynb, executed by nbclient in a real kernel (as tests/test_notebooks.py
runs the other notebooks): a small model fitted with jk.jit(jk.value_and_grad(loss)), random
initialisation, jk.check_grads, per-example gradients with jk.vmap, the fused program and its
fusion plot."""
from __future__ import annotations

import re

from test_notebooks import _count, _execute, _text, kernels_dir  # noqa: F401 - the fixture


def test_transformations_notebook(kernels_dir, tmp_path):  # noqa: F811
    nb = _execute("transformations", kernels_dir, tmp_path)
    text = _text(nb)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, errors
    assert re.search(r"same (key|seed), same parameters: True", text), text
    fit = re.search(r"^loss ([\d.]+) -> ([\d.]+), accuracy ([\d.]+)$", text, re.M)
    assert fit, text
    first, last, accuracy = map(float, fit.groups())
    assert last < 0.5 * first and accuracy >= 0.8, fit.group(0)
    assert "check_grads: forward and reverse mode agree with finite differences (order 2)" in text
    assert "[(32, 2, 32), (32, 32), (32, 32, 3), (32, 3)]" in text
    assert "mean of the per-example gradients == batch gradient: True" in text
    assert "program value_and_grad(loss)(" in text and "tanh" in text
    assert "kernels train_step:" in text and "library k0_dot_general" in text
    assert re.search(r"^train_step\s+300\s+299\s+1\b", text, re.M), text  # calls, cache hits, compiles
    assert _count(nb, "image/png") == 1  # the fusion plot
