"""Second derivatives of generated programs against JAX (0.10.2, x64, the `jax` of the test
extra): forward over reverse (`jk.jvp(jk.grad(f))`, Hessian-vector products; `jk.hessian`, its
vmap over a basis), and reverse over reverse (`jk.jacrev(jk.grad(f))`), all inside one jitted
function on the CPU backend, so a wrong derivative rule and a compiler bug in the program the
rules build both show (a softmax of a written copy was the second kind: fusion/coalesce.py).

The programs hold what a softmax of a written copy mixes: writes into copies (`u =
v.copy(); u[a:b] = s`, `u[i] = s`, `u[:, j] = s`, `u[mask] = s`, `u[[i, k]] += s`, `u[a::2] *= s`,
where JAX writes `v.at[...].set/add/multiply`), max-shifted sums (logsumexp, softmax) and max/min reductions with
keepdims along each axis, and indexing (negative, strided, fancy). Inputs are drawn in 0.5..1.9,
away from the kinks of max and min except where a written scalar ties with itself (a region
written with one value), where JAX and the engine agree by construction (equal tangents).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings, strategies as st

import jitkernel as jk
from helpers import load

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


@dataclass
class _Program:
    """Two versions of one program: NumPy statements (writes in place into copies) and JAX ones
    (`.at[]`), each a list of lines over the variables `x0`, `x1`, `v1`, `v2`, ..."""
    shapes: dict[str, tuple[int, ...]]
    np_lines: list[str] = field(default_factory=list)
    jax_lines: list[str] = field(default_factory=list)
    last: str = "x1"

    def add(self, name: str, shape: tuple[int, ...], np_line: str, jax_line: str | None = None) -> None:
        self.np_lines.append(np_line)
        self.jax_lines.append(np_line if jax_line is None else jax_line)
        self.shapes[name] = shape
        self.last = name

    def new_name(self) -> str:
        return f"v{len(self.shapes) - 1}"

    def source(self, jax_version: bool, out: str) -> str:
        lines = self.jax_lines if jax_version else self.np_lines
        body = "".join(f"    {line}\n" for line in lines)
        return f"def f(x0, x1):\n    xp = {'jnp' if jax_version else 'np'}\n{body}    return {out}\n"


def _reduced(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return shape[:axis] + shape[axis + 1:]


def _scalar_value(draw, prog: _Program) -> str:
    """An expression of shape () read from some variable: a reduction, an element, a logsumexp."""
    name = draw(st.sampled_from(sorted(prog.shapes)))
    shape = prog.shapes[name]
    if not shape:
        return f"{name} * 0.75"
    first = "0, " * (len(shape) - 1)
    return draw(st.sampled_from([
        f"xp.max({name})", f"xp.min({name}) * 1.25", f"xp.sum({name} * {name}) * 0.5", f"{name}[{first}-1]",
        f"(xp.log(xp.sum(xp.exp({name} - xp.max({name})))) + xp.max({name}))"]))


def _region(draw, shape: tuple[int, ...]) -> str | None:
    """An index of a region of `shape` (Python text, the same for NumPy and `.at[]`), or None for
    a mask (drawn by the caller)."""
    n = shape[0]
    if len(shape) == 1:
        a = draw(st.integers(0, n - 1))
        b = draw(st.integers(a + 1, n))
        return draw(st.sampled_from([f"{a}:{b}", f"{a}", "-1", f"{a}::2", None, f"np.array([{(a + 1) % n}, {a}])"]))
    j = draw(st.integers(0, shape[1] - 1))
    a = draw(st.integers(0, n - 1))
    return draw(st.sampled_from([f":, {j}", f"{a}", f"{a}:, {j}:", "-1, ::2", None]))


@st.composite
def _write(draw, prog: _Program) -> None:
    """`u = v.copy(); u[region] = value` (or `+=`, `*=`) of an array variable v."""
    arrays = sorted(n for n, s in prog.shapes.items() if s)
    target = draw(st.sampled_from(arrays))
    shape = prog.shapes[target]
    value = _scalar_value(draw, prog)
    region = _region(draw, shape)
    name = prog.new_name()
    if region is None:  # a constant mask, at least one element set
        mask = np.random.default_rng(draw(st.integers(0, 2 ** 16))).random(shape) < 0.5
        mask.flat[draw(st.integers(0, mask.size - 1))] = True
        region = f"np.array({mask.tolist()})"
    op, method = draw(st.sampled_from([("=", "set"), ("=", "set"), ("+=", "add"), ("*=", "multiply")]))
    # (JAX differentiates a multiplying scatter only when told that its indices are unique; they are)
    extra = ", unique_indices=True" if method == "multiply" else ""
    prog.add(name, shape, f"{name} = {target}.copy(); {name}[{region}] {op} {value}",
             f"{name} = {target}.at[{region}].{method}({value}{extra})")


@st.composite
def _reduction(draw, prog: _Program) -> None:
    """logsumexp, softmax, or a value shifted by (or scaled with) its max/min along an axis."""
    arrays = sorted(n for n, s in prog.shapes.items() if s)
    v = draw(st.sampled_from(arrays))
    shape = prog.shapes[v]
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    name = prog.new_name()
    kind = draw(st.sampled_from(["lse", "softmax", "shift", "scale"]))
    m = f"xp.max({v}, axis={axis}, keepdims=True)"
    if kind == "lse":
        prog.add(name, _reduced(shape, axis % len(shape)),
                 f"{name} = xp.log(xp.sum(xp.exp({v} - {m}), axis={axis})) + xp.max({v}, axis={axis})")
    elif kind == "softmax":
        prog.add(name, shape, f"e = xp.exp({v} - {m}); {name} = e / e.sum(axis={axis}, keepdims=True)")
    elif kind == "shift":
        prog.add(name, shape, f"{name} = {v} - xp.min({v}, axis={axis}, keepdims=True) * 0.5")
    else:
        prog.add(name, shape, f"{name} = {v} * {m}")


@st.composite
def _index(draw, prog: _Program) -> None:
    arrays = sorted(n for n, s in prog.shapes.items() if s)
    v = draw(st.sampled_from(arrays))
    shape = prog.shapes[v]
    name = prog.new_name()
    if len(shape) == 1:
        n = shape[0]
        choices = [(f"{v}[-1]", ()), (f"{v}[::2]", ((n + 1) // 2,)), (f"{v}[{n - 1}::-1]", (n,)),
                   (f"{v}[np.array([{n - 1}, 0, {n // 2}])]", (3,))]
        if n >= 3:
            choices.append((f"{v}[1:3]", (2,)))
    else:
        r, c = shape
        choices = [(f"{v}[-1]", (c,)), (f"{v}[:, 1]", (r,)), (f"{v}[1:, ::2]", (r - 1, (c + 1) // 2)),
                   (f"{v}[np.array([1, 0])]", (2, c))]
    text, out = draw(st.sampled_from(choices))
    prog.add(name, out, f"{name} = {text}")


@st.composite
def _elementwise(draw, prog: _Program) -> None:
    v = draw(st.sampled_from(sorted(prog.shapes)))
    shape = prog.shapes[v]
    partners = [n for n, s in prog.shapes.items() if s == shape or not s]
    w = draw(st.sampled_from(sorted(partners)))
    text = draw(st.sampled_from([f"xp.sin({v}) + 1.5", f"xp.tanh({v}) * 1.7", f"{v} * {w}", f"xp.exp(0.5 * {v})",
                                 f"{v} * {v} - {w}"]))
    name = prog.new_name()
    prog.add(name, shape, f"{name} = {text}")


@st.composite
def second_order_programs(draw) -> tuple[_Program, str]:
    """A program of 2..7 statements, at least one a write into a copy, and its scalar output."""
    n0 = draw(st.sampled_from([2, 3, 5]))
    shape1 = draw(st.sampled_from([(7,), (4,), (2, 4), (3, 3)]))
    prog = _Program({"x0": (n0,), "x1": shape1})
    steps = draw(st.lists(st.sampled_from(["write", "write", "reduction", "reduction", "index", "elementwise"]),
                          min_size=1, max_size=6))
    steps.insert(draw(st.integers(0, len(steps))), "write")
    build = {"write": _write, "reduction": _reduction, "index": _index, "elementwise": _elementwise}
    for kind in steps:
        draw(build[kind](prog))
    # the output reads the last value and one other, through weights that are not symmetric
    last = prog.last
    other = draw(st.sampled_from(sorted(n for n in prog.shapes if n != last)))
    terms = []
    for k, v in enumerate((last, other)):
        size = int(np.prod(prog.shapes[v]))
        weights = f"np.linspace({0.3 + k}, {1.1 + k}, {size}).reshape({prog.shapes[v]})"
        terms.append(f"xp.sum(xp.{'sin' if k else 'cos'}({v}) * {weights})")
    return prog, " + ".join(terms)


def _second_derivatives(f):
    """One jitted function: the Hessian-vector product and the Hessian (forward over reverse)
    and the Hessian (reverse over reverse) of f, with respect to both arguments."""
    g = jk.grad(f, argnums=(0, 1))

    def all_three(x0, x1, t0, t1):
        return (jk.jvp(g, (x0, x1), (t0, t1))[1], jk.hessian(f, argnums=(0, 1))(x0, x1),
                jk.jacrev(g, argnums=(0, 1))(x0, x1))
    return jk.jit(all_three)


def _jax_second_derivatives(f, x0, x1, t0, t1):
    """JAX's Hessian (jitted: one XLA compile costs less than JAX's op-by-op dispatch of the same
    transformations) and the Hessian-vector product read from it."""
    hessian = [[np.asarray(h) for h in row] for row in jax.jit(jax.hessian(f, argnums=(0, 1)))(x0, x1)]
    hvp = tuple(sum(np.tensordot(h, t, axes=t.ndim) for h, t in zip(row, (t0, t1))) for row in hessian)
    return hvp, hessian


SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


@SETTINGS
@given(data=second_order_programs(), seed=st.integers(0, 2 ** 16))
def test_second_derivatives_match_jax(tmp_path_factory, data, seed):
    prog, out = data
    path = tmp_path_factory.mktemp("d2")
    src, jax_src = prog.source(False, out), prog.source(True, out)
    note(src)
    f = load(path, src)
    fj = load(path, "import jax.numpy as jnp\n" + jax_src)
    rng = np.random.default_rng(seed)
    x0, x1 = (rng.uniform(0.5, 1.9, prog.shapes[k]) for k in ("x0", "x1"))
    t0, t1 = (rng.normal(size=prog.shapes[k]) for k in ("x0", "x1"))
    _assert_matches(_second_derivatives(f)(x0, x1, t0, t1), _jax_second_derivatives(fj, x0, x1, t0, t1), src)


def _assert_matches(got: tuple, want: tuple, src: str) -> None:
    """`got` (hvp, forward-over-reverse Hessian, reverse-over-reverse Hessian) against JAX's
    (hvp, Hessian), leaf by leaf."""
    hvp, hessian = jax.tree_util.tree_leaves(want[0]), jax.tree_util.tree_leaves(want[1])
    parts = {"hvp": (got[0], hvp), "hessian": (got[1], hessian), "jacrev(grad)": (got[2], hessian)}
    for what, (mine, theirs) in parts.items():
        mine = jax.tree_util.tree_leaves(mine)
        assert len(mine) == len(theirs), (what, len(mine), len(theirs))
        for k, (g, w) in enumerate(zip(mine, theirs)):
            assert g.shape == w.shape, (what, k, g.shape, w.shape)
            scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10 * scale, err_msg=f"{what}, leaf {k}\n{src}")


SOFTMAX_OF_A_WRITTEN_COPY = """
def f(x0, x2):
    v5 = xp.log(xp.sum(xp.exp(x2 - xp.max(x2, axis=0, keepdims=True)), axis=0)) + xp.max(x2, axis=0)
    v7 = WRITE
    e = xp.exp(v7 - xp.max(v7, axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True))[-1]
"""


def test_hessian_vector_product_of_softmax_of_a_written_copy(tmp_path):
    """A user's program: jvp of grad through `v7 = x0.copy(); v7[1:2] = v5` gave half the
    x2 part (the cotangent program's copy and a reader of the old array shared a buffer)."""
    f = load(tmp_path, "xp = np\n" + SOFTMAX_OF_A_WRITTEN_COPY.replace("WRITE", "x0.copy(); v7[1:2] = v5"))
    fj = load(tmp_path, "import jax.numpy as xp\n" + SOFTMAX_OF_A_WRITTEN_COPY.replace("WRITE", "x0.at[1:2].set(v5)"))
    rng = np.random.default_rng(2)
    x0, x2 = np.array([0.949, 1.412]), rng.uniform(0.5, 1.9, 7)
    t0, t2 = rng.normal(size=2), rng.normal(size=7)
    _assert_matches(_second_derivatives(f)(x0, x2, t0, t2), _jax_second_derivatives(fj, x0, x2, t0, t2), SOFTMAX_OF_A_WRITTEN_COPY)
    eager = jk.jvp(jk.grad(f, argnums=(0, 1)), (x0, x2), (t0, t2))[1]  # outside jk.jit too
    for g, w in zip(eager, _jax_second_derivatives(fj, x0, x2, t0, t2)[0]):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
