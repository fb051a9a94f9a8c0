"""`check_grads`: derivatives compared with central finite differences computed in float64.

Forward mode: `jvp(f, x, t)` against `(f(x + eps t) - f(x - eps t)) / 2 eps` for random `t`.
Reverse mode: `vjp(f, x)(ct)` against the numerical gradient of `s(x) = Re(sum(ct * f(x)))`,
element by element for inputs of up to `ELEMENTWISE_LIMIT` elements (so a mismatch names the
worst element), along random directions above that. For a complex input element `z = a + ib`
the reverse result is `ds/da - i ds/db` (JAX's convention, ad.py). `order=2` checks the
derivatives of the derivative functions the same way.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..tree import tree_flatten, tree_unflatten
from .ad import vjp, jvp

ELEMENTWISE_LIMIT = 256
_DEFAULT_TOL = {np.dtype(np.float16): 5e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
                np.dtype(np.complex64): 2e-3, np.dtype(np.complex128): 1e-5}


class GradientCheckError(AssertionError):
    """An analytic derivative that disagrees with the finite-difference estimate."""


def _as64(x: Any) -> Any:
    a = np.asarray(x)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return x


def _leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in tree_flatten(tree, namedtuples=True)[0]]


def _random_like(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    if x.dtype.kind == "f":
        return rng.standard_normal(x.shape).astype(x.dtype)
    return np.zeros(x.shape, x.dtype)


def _tolerance(dtypes: Sequence[np.dtype], atol: float | None, rtol: float | None) -> tuple[float, float]:
    worst = max((_DEFAULT_TOL.get(np.dtype(d), 1e-5) for d in dtypes), default=1e-5)
    return (worst if atol is None else atol), (worst if rtol is None else rtol)


def _compare(what: str, got: np.ndarray, expected: np.ndarray, atol: float, rtol: float) -> None:
    got = np.asarray(got, dtype=np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(expected) else np.float64)
    expected = np.asarray(expected, dtype=got.dtype)
    if got.shape != expected.shape:
        raise GradientCheckError(f"{what}: shape {got.shape}, finite differences give {expected.shape}")
    err = np.abs(got - expected)
    bound = atol + rtol * np.abs(expected)
    bad = ~(err <= bound)
    if np.any(bad):
        excess = np.where(bad, err - bound, -np.inf).reshape(-1)
        k = int(np.nanargmax(np.where(np.isnan(excess), np.inf, excess)))
        index = np.unravel_index(k, got.shape) if got.shape else ()
        raise GradientCheckError(
            f"{what}: mismatch at element {tuple(int(i) for i in index)}: analytic {got.reshape(-1)[k]!r}, "
            f"finite differences {expected.reshape(-1)[k]!r} (|difference| {err.reshape(-1)[k]:.3g} > "
            f"atol {atol:g} + rtol {rtol:g} * |expected|); {int(bad.sum())} of {bad.size} elements differ")


def _dtype_of(x: Any) -> np.dtype:
    """The dtype of an array, a Tracer or a Python scalar (as NumPy would hold it)."""
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def _with(args: list, k: int, value: Any) -> list:
    out = list(args)
    out[k] = value
    return out


class _Flat:
    """`f` as a function of a flat list of leaves, evaluated in float64 for the estimates."""

    def __init__(self, f: Callable, args: Sequence[Any]) -> None:
        self.f = f
        self.leaves, self.tree = tree_flatten(tuple(args))

    def call(self, leaves: list) -> list[np.ndarray]:
        return _leaves(self.f(*tree_unflatten(self.tree, leaves)))

    def call64(self, leaves: list) -> list[np.ndarray]:
        return [np.asarray(o, dtype=np.complex128 if np.iscomplexobj(o) else np.float64)
                for o in self.call([_as64(l) for l in leaves])]


def _numeric_jvp(flat: _Flat, leaves: list, tangents: list, eps: float) -> list[np.ndarray]:
    x64 = [_as64(l) for l in leaves]
    plus = [x + eps * np.asarray(t, dtype=np.asarray(x).dtype) if np.asarray(x).dtype.kind in "fc" else x
            for x, t in zip(x64, tangents)]
    minus = [x - eps * np.asarray(t, dtype=np.asarray(x).dtype) if np.asarray(x).dtype.kind in "fc" else x
             for x, t in zip(x64, tangents)]
    return [(a - b) / (2 * eps) for a, b in zip(flat.call64(plus), flat.call64(minus))]


def check_jvp(f: Callable, args: Sequence[Any], atol: float | None = None, rtol: float | None = None,
              eps: float = 1e-6, seed: int = 0) -> None:
    """Forward mode of `f` at `args` against finite differences (raises GradientCheckError)."""
    flat = _Flat(f, args)
    rng = np.random.default_rng(seed)
    leaves = [np.asarray(l) if not isinstance(l, (bool, int, float, complex)) else l for l in flat.leaves]
    tangents = [_random_like(rng, np.asarray(l)) for l in leaves]
    tangent_args = tree_unflatten(flat.tree, [t if np.asarray(l).dtype.kind in "fc" else np.zeros_like(np.asarray(l))
                                              for t, l in zip(tangents, leaves)])
    primal_args = tree_unflatten(flat.tree, leaves)
    _, t_out = jvp(f, tuple(primal_args), tuple(tangent_args))
    expected = _numeric_jvp(flat, leaves, tangents, eps)
    got = _leaves(t_out)
    at, rt = _tolerance([g.dtype for g in got] + [np.asarray(l).dtype for l in leaves], atol, rtol)
    for k, (g, e) in enumerate(zip(got, expected)):
        _compare(f"jvp of {getattr(f, '__name__', 'f')}, output leaf {k}", g, e, at, rt)


def _pairing(ct: list[np.ndarray], outs: list[np.ndarray]) -> float:
    return float(sum(np.real(np.sum(np.asarray(c, np.complex128) * np.asarray(o, np.complex128))) for c, o in zip(ct, outs)))


def check_vjp(f: Callable, args: Sequence[Any], atol: float | None = None, rtol: float | None = None,
              eps: float = 1e-6, seed: int = 0) -> None:
    """Reverse mode of `f` at `args` against finite differences (raises GradientCheckError)."""
    flat = _Flat(f, args)
    rng = np.random.default_rng(seed + 1)
    leaves = [np.asarray(l) if not isinstance(l, (bool, int, float, complex)) else l for l in flat.leaves]
    out, pullback = vjp(f, *tree_unflatten(flat.tree, leaves))
    out_leaves, out_tree = tree_flatten(out, namedtuples=True)
    cts = [_random_like(rng, np.asarray(o)) for o in out_leaves]
    grads = _leaves(pullback(tree_unflatten(out_tree, cts)))
    x64 = [_as64(l) for l in leaves]
    at, rt = _tolerance([g.dtype for g in grads] + [np.asarray(o).dtype for o in out_leaves], atol, rtol)

    def s(xs: list) -> float:
        return _pairing(cts, flat.call64(xs))

    total = sum(np.size(l) for l in leaves if np.asarray(l).dtype.kind in "fc")
    name = getattr(f, "__name__", "f")
    if total <= ELEMENTWISE_LIMIT:
        for k, (x, g) in enumerate(zip(x64, grads)):
            x = np.asarray(x)
            if x.dtype.kind not in "fc":
                continue
            numeric = np.zeros(x.shape, np.complex128 if x.dtype.kind == "c" else np.float64)
            for idx in np.ndindex(x.shape):
                for unit in ((1.0, 1j) if x.dtype.kind == "c" else (1.0,)):
                    e = np.zeros(x.shape, x.dtype)
                    e[idx] = unit
                    d = (s(_with(x64, k, x + eps * e)) - s(_with(x64, k, x - eps * e))) / (2 * eps)
                    numeric[idx] += d if unit == 1.0 else -1j * d
            _compare(f"vjp of {name}, argument leaf {k}", g, numeric, at, rt)
        return
    for _ in range(3):
        ts = [_random_like(rng, np.asarray(x)) for x in x64]
        numeric = sum(_pairing([c], [o]) for c, o in zip(cts, _numeric_jvp(flat, leaves, ts, eps)))
        analytic = _pairing(grads, ts)
        _compare(f"vjp of {name} along a random direction", np.asarray(analytic), np.asarray(numeric), at, rt)


def check_grads(f: Callable, args: Sequence[Any], order: int = 2, modes: Sequence[str] = ("fwd", "rev"),
                atol: float | None = None, rtol: float | None = None, eps: float = 1e-6, seed: int = 0) -> None:
    """Check `f`'s derivatives at `args` up to `order` against central finite differences in
    float64; raises GradientCheckError naming the worst element.

    >>> import numpy as np, jitkernel as jk
    >>> jk.check_grads(lambda x: np.sum(np.sin(x) * x), (np.linspace(0, 1, 4),), order=2)
    """
    args = tuple(args)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"check_grads: unknown mode {mode!r} (use 'fwd' and/or 'rev')")
    if "fwd" in modes:
        check_jvp(f, args, atol, rtol, eps, seed)
    if "rev" in modes:
        check_vjp(f, args, atol, rtol, eps, seed)
    if order > 1:
        rng = np.random.default_rng(seed + 7)
        flat = _Flat(f, args)
        if "fwd" in modes:
            ts = [_random_like(rng, np.asarray(l)) for l in flat.leaves]

            def f_jvp(*xs: Any) -> Any:
                return jvp(f, xs, tuple(tree_unflatten(flat.tree, [np.asarray(t).astype(_dtype_of(x)) for t, x in zip(ts, tree_flatten(xs)[0])])))[1]
            f_jvp.__name__ = f"jvp({getattr(f, '__name__', 'f')})"
            check_grads(f_jvp, args, order - 1, ("fwd",) if "rev" not in modes else modes, atol, rtol, eps, seed + 1)
        if "rev" in modes:
            out = f(*args)
            out_leaves, out_tree = tree_flatten(out, namedtuples=True)
            cts = [_random_like(rng, np.asarray(o)) for o in out_leaves]

            def f_vjp(*xs: Any) -> Any:
                _, pull = vjp(f, *xs)
                dtypes = [_dtype_of(o) for o in tree_flatten(_, namedtuples=True)[0]]
                return pull(tree_unflatten(out_tree, [np.asarray(c, d) for c, d in zip(cts, dtypes)]))
            f_vjp.__name__ = f"vjp({getattr(f, '__name__', 'f')})"
            check_grads(f_vjp, args, order - 1, ("rev",), atol, rtol, eps, seed + 2)
