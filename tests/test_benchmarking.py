"""`jk.benchmark` and `%jit_bench` (benchmarking the way the seeds ask): the record's
content, the eager baseline on its own copies, the numerical difference, JSON, the magic in a
real IPython shell. Timings are recorded, never asserted."""
from __future__ import annotations

import json

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import profiler
from tests.test_magics import ip, ok, usage_error  # noqa: F401  (the shell fixture)


def test_the_record_holds_timings_baseline_difference_and_versions():
    @jk.jit
    def f(x):
        return np.sin(x) * 2 + 1
    rec = jk.benchmark(f, np.linspace(0, 1, 1000), repeat=3)
    assert rec.name == "f" and rec.backend == "cpu" and rec.args == ["float64[1000]"]
    assert len(rec.compiled.per_call) == 3 and rec.compiled.number >= 1 and rec.first_call > 0
    assert rec.eager is not None and rec.speedup == rec.eager.median / rec.compiled.median
    assert rec.max_abs_difference <= 1e-15
    env = rec.environment
    assert set(env["versions"]) >= {"jitkernel", "numpy", "llvmlite", "python"} and env["threads"] >= 1
    text = str(rec)
    assert "speedup (eager / compiled)" in text and "largest difference" in text


def test_a_changed_number_shows_in_the_difference():
    # a baseline that disagrees (as a toolchain change might) is reported, not hidden
    rec = jk.benchmark(jk.jit(lambda x: x * 3.0), np.ones(10), repeat=2, baseline=lambda x: x * 3.0 + 1e-3)
    assert rec.max_abs_difference == pytest.approx(1e-3)
    assert rec.max_rel_difference == pytest.approx(1e-3 / 3.001)


def test_a_function_that_writes_its_argument_leaves_the_callers_array_alone():
    def scale(x):
        x *= 2.0
        return x.sum()
    a = np.ones(100)
    rec = jk.benchmark(scale, a, repeat=2, number=3)
    np.testing.assert_array_equal(a, np.ones(100))
    assert rec.max_abs_difference == 0.0  # first calls of both sides saw the same input


def test_transformed_functions_have_no_numpy_baseline_unless_given():
    g = jk.grad(lambda x: np.sum(x * x))
    rec = jk.benchmark(g, np.ones(5), repeat=2)
    assert rec.eager is None and "no plain NumPy form" in rec.note
    rec = jk.benchmark(g, np.ones(5), repeat=2, baseline=lambda x: 2 * x)
    assert rec.max_abs_difference == 0.0


def test_save_writes_json(tmp_path):
    rec = jk.benchmark(jk.jit(lambda x: x + 1), np.ones(4), repeat=2)
    data = json.loads(rec.save(tmp_path / "r.json").read_text())
    assert data["name"] == "<lambda>" and data["compiled"]["median"] > 0 and "versions" in data["environment"]
    assert profiler.bench_plot(rec).to_png()[:4] == b"\x89PNG"


def test_jit_bench_magic(ip, tmp_path):  # noqa: F811
    ok(ip, "import jitkernel as jk\n@jk.jit\ndef f(x, k=2.0):\n    return np.tanh(x) * k\nx = np.ones(500)")
    _, out, outputs = ok(ip, f"%jit_bench -r 3 --save {tmp_path / 'b.json'} f(x, k=3.0)")
    assert "wrote" in out
    assert any("speedup (eager / compiled)" in o.data.get("text/plain", "") and "text/html" in o.data
               for o in outputs)
    assert any("image/png" in o.data for o in outputs)
    assert json.loads((tmp_path / "b.json").read_text())["args"] == ["float64[500]", "float"]
    assert "expected a call" in usage_error(ip, "%jit_bench f")
    assert "could not evaluate" in usage_error(ip, "%jit_bench nothing_here(x)")


def test_jit_bench_says_cached_when_the_signature_was_compiled_already(ip):  # noqa: F811
    ok(ip, "import jitkernel as jk\n@jk.jit\ndef g(x):\n    return x * 2\nx = np.ones(50)")
    first = [o.data["text/plain"] for o in ok(ip, "%jit_bench -r 2 -n 1 --no-plot g(x)")[2]]
    assert "first call (trace + compile + run)" in first[0] and "cached" not in first[0]
    again = [o.data["text/plain"] for o in ok(ip, "%jit_bench -r 2 -n 1 --no-plot g(x)")[2]]
    assert "first call (trace" not in again[0]
    assert "first call" in again[0] and "cached (compiled before for these arguments)" in again[0]
    other = jk.benchmark(ip.user_ns["g"], np.ones(51), repeat=2, number=1)  # a new signature compiles
    assert not other.first_call_cached and json.loads(json.dumps(other.to_dict()))["first_call_cached"] is False


def test_dask_and_sharded_arguments_are_recorded_with_their_layout():
    da = pytest.importorskip("dask.array")
    from jitkernel.sharding import Mesh, NamedSharding, P, cpu_devices
    f = jk.jit(lambda x: np.tanh(x).sum(axis=1))
    x = np.linspace(-2, 2, 60).reshape(6, 10)
    rec = jk.benchmark(f, da.from_array(x, chunks=(4, 10)), repeat=2, number=1)
    assert rec.args == ["float64[6, 10] (dask, chunks (4, 10))"], rec.args
    assert "dask" in rec.environment["versions"] and rec.max_abs_difference <= 1e-12
    sharding = NamedSharding(Mesh(np.array(cpu_devices(2)), ("d",)), P("d"))
    rec = jk.benchmark(f, jk.device_put(x, sharding), repeat=2, number=1)
    assert rec.args == [f"float64[6, 10] ({sharding!r})"], rec.args
    assert rec.max_abs_difference <= 1e-12
