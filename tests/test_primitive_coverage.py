"""The primitive coverage table (jitkernel/coverage.py, docs/primitive-coverage.md): every
primitive has, in every layer (interpreter, cpu, cuda, jvp, transpose, vmap, dask), a rule or an
explicit refusal with a reason; the doc is the generator's output; and what the table claims for
the backends holds when the primitive is compiled on its own."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import coverage
from jitkernel.backends.cuda import BODY_LIBRARY_PRIMS, LIBRARY_STEPS, device_text
from jitkernel.errors import UnsupportedOperationError
from jitkernel.ir import AType, Eqn, Program, Var
from jitkernel.ir.primitives import PRIMITIVES, evaluate
from jitkernel.passes import optimize
from jitkernel.pipeline import compile_program
from jitkernel.tree import tree_flatten

ROOT = pathlib.Path(__file__).resolve().parents[1]
ELEMENTWISE = sorted(n for n, p in PRIMITIVES.items() if p.kind == "elementwise" and p.ufunc is not None)


def test_every_primitive_has_a_rule_or_a_refusal_in_every_layer():
    assert coverage.missing() == []


def test_the_doc_is_the_generated_table():
    doc = (ROOT / "docs" / "primitive-coverage.md").read_text()
    assert doc == coverage.markdown(), "regenerate: python -m jitkernel.coverage > docs/primitive-coverage.md"


def test_a_refusal_names_its_reason():
    for layer in coverage.LAYERS:
        for name in PRIMITIVES:
            c = coverage.cell(name, layer)
            assert c.status in ("rule", "refused"), (name, layer, c)
            if c.status == "refused":  # a reason, not a bare word
                assert len(c.how.split()) >= 5, (name, layer, c)


def test_every_library_step_the_gpu_runs_in_a_loop_body_is_in_the_table():
    assert BODY_LIBRARY_PRIMS <= set(LIBRARY_STEPS)
    assert set(LIBRARY_STEPS) <= {n for n, p in PRIMITIVES.items() if p.kind == "library"}


def _loop(ufunc: np.ufunc) -> tuple[np.dtype, ...]:
    """One inner loop of the ufunc: float64 if it has one, else int64, else the first. The
    trace emits `conjugate` for complex values only (np.conj of a real array is a copy)."""
    loops = [t.split("->")[0] for t in ufunc.types if "O" not in t]
    for want in ("D",) if ufunc is np.conjugate else ("d", "l", "q"):
        for ins in loops:
            if set(ins) == {want}:
                return tuple(np.dtype(c) for c in ins)
    return tuple(np.dtype(c) for c in loops[0])


def _one_equation(name: str) -> tuple[Program, list[np.ndarray]]:
    ufunc = PRIMITIVES[name].ufunc
    dtypes = _loop(ufunc)
    invars = [Var(AType((7,), dt)) for dt in dtypes]
    outvars = [Var(a) for a in PRIMITIVES[name].shape_rule([v.aval for v in invars])]
    program = Program(invars, [], [], [Eqn(name, invars, outvars, {})], outvars, name=f"only_{name}")
    base = np.array([-3.5, -1.0, -0.25, 0.0, 0.5, 2.0, 3.0])
    args = [(base + k + 1j * base[::-1] if dt.kind == "c" else base + k).astype(dt) if dt.kind != "b" else (base + k) > 0
            for k, dt in enumerate(dtypes)]
    return program, args


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_each_elementwise_primitive_compiles_on_the_cpu_to_its_reference(name, tmp_path, monkeypatch):
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path))
    program, args = _one_equation(name)
    _, out_tree = tree_flatten(tuple(range(len(program.outvars))))
    compiled = compile_program(program, out_tree, "cpu", name=program.name, disk_cache=False)
    got = compiled.executable.run(args)
    expected = evaluate(name, args, {})
    for g, e in zip(got, expected):
        g, e = np.asarray(g), np.asarray(e)
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_each_elementwise_primitive_renders_as_cuda(name):
    program, _ = _one_equation(name)
    source = device_text(optimize(program), "cuda")
    assert "__global__" in source


@pytest.mark.parametrize("fn,step", [(np.linalg.inv, "linalg_inv"), (np.fft.fft, "fft")])
def test_a_library_step_the_table_refuses_on_the_gpu_raises_naming_it(fn, step):
    assert coverage.cell(step, "cuda").status == "refused"
    with pytest.raises(UnsupportedOperationError, match=step):
        jk.jit(fn, backend="cuda-emulator")(np.eye(3) + 1)
