"""Transformations in a real IPython shell: functions from %%jit cells
passed to jk.grad / jk.vmap, jk.grad used inside %%jit cells, and the line magics on transformed
functions (%jit_profile names them grad(loss), vmap(loss); %jit_explain and %jit_ir find them)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from IPython.core.error import UsageError

from tests.ipython_shell import extension_shell, ok, run

# sin, multiply and sum: primitives whose rules are on main (the matmul rules live elsewhere)
LOSS_CELL = "%%jit\ndef loss(w, x):\n    return np.sum(np.sin(x * w) * x)\n"


def loss_grad(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d/dw sum(sin(x*w)*x) = cos(x*w)*x*x, summed over x's leading axes that w broadcasts over."""
    g = np.cos(x * w) * x * x
    return g.reshape((-1,) + w.shape).sum(axis=0) if g.shape != w.shape else g


@pytest.fixture
def ip(tmp_path, monkeypatch):
    setup = "import numpy as np\nimport jitkernel as jk\nw = np.linspace(0.1, 1.0, 4)\nx = np.linspace(-1.0, 2.0, 12).reshape(3, 4)"
    with extension_shell(tmp_path, monkeypatch, setup) as shell:
        yield shell


def table_rows(outputs) -> list[str]:
    return [o.data["text/plain"] for o in outputs if "text/plain" in o.data]


def test_jit_cell_function_passed_to_grad_and_vmap(ip):
    ok(ip, LOSS_CELL)
    ok(ip, "g = jk.grad(loss)(w, x)\nper_row = jk.vmap(loss, in_axes=(None, 0))(w, x)\n"
           "per_row_grads = jk.vmap(jk.grad(loss), in_axes=(None, 0))(w, x)")
    ns = ip.user_ns
    w, x = ns["w"], ns["x"]
    np.testing.assert_allclose(ns["g"], loss_grad(w, x), rtol=1e-12)
    np.testing.assert_allclose(ns["per_row"], [np.sum(np.sin(r * w) * r) for r in x], rtol=1e-12)
    np.testing.assert_allclose(ns["per_row_grads"], np.stack([loss_grad(w, r) for r in x]), rtol=1e-12)


def test_jit_cell_uses_grad_directly(ip):
    ok(ip, LOSS_CELL)
    ok(ip, "%%jit\ndef step(w, x):\n    value, dw = jk.value_and_grad(loss)(w, x)\n    return value, w - 0.1 * dw\n")
    ok(ip, "value, w2 = step(w, x)")
    # a cell without defs, traced as one function, may call the transformations too
    ok(ip, "%%jit\ndw3 = jk.grad(loss)(w, x)\n")
    ns = ip.user_ns
    w, x = ns["w"], ns["x"]
    np.testing.assert_allclose(ns["value"], np.sum(np.sin(x * w) * x), rtol=1e-12)
    np.testing.assert_allclose(ns["w2"], w - 0.1 * loss_grad(w, x), rtol=1e-12)
    np.testing.assert_allclose(ns["dw3"], loss_grad(w, x), rtol=1e-12)


def test_recompile_line_for_a_jit_cell_calling_grad(ip):
    ok(ip, LOSS_CELL)
    ok(ip, "%%jit\ndef step(w, x):\n    return w - 0.1 * jk.grad(loss)(w, x)\n")
    ok(ip, "step(w, x)")
    _, out, _ = ok(ip, "step(w, x[:2])")
    assert re.search(r"^jit: step recompiled \(x: shape \(3, 4\) -> \(2, 4\)", out, re.M), out


def test_jit_profile_names_transformed_functions(ip):
    ok(ip, LOSS_CELL)
    ok(ip, "g = jk.grad(loss)\nv = jk.vmap(loss, in_axes=(None, 0))\ng(w, x); g(w, x); v(w, x)")
    _, _, outputs = ok(ip, "%jit_profile")
    table = "\n".join(table_rows(outputs))
    assert re.search(r"^grad\(loss\)\s+2\s+1\s+1\b", table, re.M), table
    assert re.search(r"^vmap\(loss\)\s+1\s+0\s+1\b", table, re.M), table
    # by the name the user bound it to, and with the fusion plot of the transformed program
    _, _, outputs = ok(ip, "%jit_profile g --plot fusion")
    rows = table_rows(outputs)
    assert "grad(loss)" in rows[0] and "vmap(loss)" not in rows[0], rows[0]
    assert any("fusion" in r for r in rows[1:]), rows


def test_jit_explain_and_jit_ir_find_a_transformed_function(ip):
    ok(ip, LOSS_CELL)
    ok(ip, "g = jk.grad(loss)\ng(w, x)\ng(w.astype(np.float32), x.astype(np.float32))")
    _, out, _ = ok(ip, "%jit_explain g")
    assert out.startswith("grad(loss): 1 recompilation, 2 signature(s) cached"), out
    assert "w: dtype float64 -> float32; x: dtype float64 -> float32" in out, out
    _, out, _ = ok(ip, "%jit_ir g")
    assert "--- grad(loss) (w: float32[4], x: float32[3, 4]): optimized ---" in out, out
    assert "program grad(loss)(" in out and "cos" in out, out
    _, out, _ = ok(ip, "%jit_explain")  # every known function: the transformed one included
    assert "grad(loss): 1 recompilation" in out, out


def test_transformed_function_not_called_yet_is_a_usage_error(ip):
    ok(ip, LOSS_CELL)
    ok(ip, "g = jk.grad(loss)")
    result, out, _ = run(ip, "%jit_ir g")
    assert isinstance(result.error_in_exec, UsageError), out
    assert "g (grad(loss)) has not been called yet; call it first" in out, out
