"""Loops that stay loops: a 2-D Jacobi stencil time loop (PolyBench jacobi-2d),
a triangular solve and a Cholesky factorisation written with loops and slices, and a scalar
dynamic-programming loop (longest common subsequence: nested `for` with an `if` on array values),
side by side:

  numpy         the as-written functions of benchmarks/loops_kernels.py run by NumPy (Python
                loops over NumPy slices; for the DP, NumPy-in-Python scalar loops)
  jk-lax        jitkernel, the same algorithm written with jk.lax.fori_loop (native loops)
  jk-lax-fastmath  the same with jk.jit(..., fastmath=True): reductions reassociated (vectorised)
                instead of NumPy's pairwise order
  jk-as-written jitkernel on the as-written function (needs helpers `inplace` and `autograph`;
                skipped with the error while it raises)
  numba         numba.njit of the as-written function; numba-loops: of the explicit-loop form
                (run in another interpreter: Numba pins its own llvmlite)

    .venv/bin/python -m benchmarks.loops --peer-python /path/to/venv-with-numba/bin/python
    .venv/bin/python -m benchmarks.loops --quick --repeat 3

Implementations alternate round-robin per repetition (this machine's speed drifts over minutes),
each call on fresh inputs. Reports medians, minima, ratios to jk-lax, and the first-call time
(trace + compile + one run) of each.
`--json PATH` and `--text PATH` keep the results (benchmarks/results/loops.{json,txt}).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

os.environ.setdefault("JITKERNEL_CACHE_DIR", tempfile.mkdtemp(prefix="jk-loops-bench-"))  # first calls compile

import numpy as np  # noqa: E402

import jitkernel as jk  # noqa: E402
from benchmarks import loops_kernels as K  # noqa: E402
from benchmarks.peer import PeerServer  # noqa: E402
from jitkernel.numpy._dynamic import dynamic_update  # noqa: E402

lax = jk.lax

SIZES = {"jacobi_2d": (512, 100), "trisolve": 2000, "cholesky": 400, "lcs": 1000}
QUICK = {"jacobi_2d": (128, 20), "trisolve": 300, "cholesky": 100, "lcs": 200}
INTERIOR = (slice(1, -1), slice(1, -1))


# -- the jk.lax forms (same algorithms, functional updates) -----------------------------------

def jacobi_2d_lax(A, B, T):
    def step(t, AB):
        A, B = AB
        B = dynamic_update(B, INTERIOR, 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]))
        A = dynamic_update(A, INTERIOR, 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]))
        return A, B
    return lax.fori_loop(0, T, step, (A, B))


def trisolve_lax(L, b):
    # x[j] is still 0 for j >= i, so the whole row's dot product is the one over j < i (the
    # as-written form, benchmarks/loops_kernels.py, slices L[i, :i]: a symbolic length).
    def row(i, x):
        return dynamic_update(x, (i,), (b[i] - (L[i, :] * x).sum()) / L[i, i])
    return lax.fori_loop(0, b.shape[0], row, np.zeros_like(b))


def cholesky_lax(A):
    n = A.shape[0]
    rows = np.arange(n)

    def column(j, L):
        Lj = L[j, :]  # entries k < j are known, the rest still 0
        d = np.sqrt(A[j, j] - (Lj * Lj).sum())
        below = (A[:, j] - (L * Lj).sum(axis=1)) / d
        return dynamic_update(L, (slice(None), j), np.where(rows > j, below, np.where(rows == j, d, 0.0)))
    return lax.fori_loop(0, n, column, np.zeros_like(A))


def lcs_lax(a, b):
    n, m = a.shape[0], b.shape[0]

    def row(i, D):
        def cell(j, D):
            v = np.where(a[i] == b[j], D[i, j] + 1, np.maximum(D[i, j + 1], D[i + 1, j]))
            return dynamic_update(D, (i + 1, j + 1), v)
        return lax.fori_loop(0, m, cell, D)
    return lax.fori_loop(0, n, row, np.zeros((n + 1, m + 1), np.int64))[n, m]


LAX = {"jacobi_2d": (jacobi_2d_lax, (2,)), "trisolve": (trisolve_lax, ()), "cholesky": (cholesky_lax, ()),
       "lcs": (lcs_lax, ())}


# -- timing: every implementation of a workload, round-robin per repetition -----------------

class _Local:
    """An implementation run in this process (NumPy, or jitkernel: its first call compiles)."""

    def __init__(self, fn: Callable, name: str, size: Any, check: Callable[[Any], None] | None,
                 may_raise: bool = False) -> None:
        self.fn, self.name, self.size, self.check, self.may_raise = fn, name, size, check, may_raise

    def first(self) -> dict:
        """The first call, checked against NumPy. Only an implementation that may not be
        supported yet (`may_raise`) is skipped on an error; a wrong answer always fails loudly."""
        if not self.may_raise:
            return self._first()
        try:
            return self._first()
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001 - reported as the reason for the skip
            return {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}

    def _first(self) -> dict:
        inputs = K.make_inputs(self.name, self.size)
        t0 = time.perf_counter()
        result = self.fn(*inputs)
        first = time.perf_counter() - t0
        if self.check is not None:
            self.check(result)
        return {"first_call_s": first}

    def once(self) -> float:
        inputs = K.make_inputs(self.name, self.size)  # fresh: the as-written forms write into them
        t0 = time.perf_counter()
        self.fn(*inputs)
        return time.perf_counter() - t0


class _Peer(PeerServer):
    """The Numba server (benchmarks/loops_numba.py) in another interpreter."""

    def __init__(self, python: str | None) -> None:
        super().__init__(python, "loops_numba.py", "numba")

    def ask(self, op: str, name: str, size: Any) -> dict:
        return self.request({"op": op, "name": name, "size": size})

    def impl(self, name: str, size: Any) -> Any:
        peer = self

        class _Remote:
            def first(self) -> dict:
                return peer.ask("compile", name, size) if peer.proc else {"skipped": peer.error}

            def once(self) -> float:
                return peer.ask("time", name, size)["sample_s"]
        return _Remote()



def _checker(name: str, want: Any, rtol: float) -> Callable[[Any], None]:
    def check(got: Any) -> None:
        g = got if isinstance(got, tuple) else (got,)
        w = want if isinstance(want, tuple) else (want,)
        for a, b in zip(g, w):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-9, err_msg=name)
    return check


def run_workload(name: str, size: Any, repeat: int, peer: _Peer) -> dict:
    """First call of each implementation, then `repeat` rounds in which each runs once."""
    ref = getattr(K, name)(*K.make_inputs(name, size))  # NumPy's answer
    fn, static = LAX[name]
    impls = {
        "numpy": _Local(getattr(K, name), name, size, None),
        "jk-lax": _Local(jk.jit(fn, static_argnums=static, disk_cache=False), name, size, _checker(name, ref, 1e-9)),
        # fastmath: reductions may be reassociated (vectorised, as BLAS and Numba sum) instead
        # of following NumPy's pairwise order; results agree within rounding.
        "jk-lax-fastmath": _Local(jk.jit(fn, static_argnums=static, disk_cache=False, fastmath=True), name, size,
                                  _checker(name, ref, 1e-7)),
        "jk-as-written": _Local(jk.jit(getattr(K, name), static_argnums=static, disk_cache=False), name, size,
                                _checker(name, ref, 1e-9), may_raise=True),
        "numba": peer.impl(name, size),
    }
    loop_form = {w: f for f, w in K.LOOP_FORMS.items()}.get(name)
    if loop_form:
        impls["numba-loops"] = peer.impl(loop_form, size)
    row = {impl: r.first() for impl, r in impls.items()}
    live = [impl for impl in impls if "skipped" not in row[impl]]
    rounds = {impl: (repeat if impl != "numpy" or name != "lcs" else max(1, min(repeat, 3))) for impl in live}
    for k in range(repeat):
        for impl in live:
            if k < rounds[impl]:
                row[impl].setdefault("samples_s", []).append(impls[impl].once())
    return row


# -- report ------------------------------------------------------------------------------------

ORDER = ["numpy", "jk-lax", "jk-lax-fastmath", "jk-as-written", "numba", "numba-loops"]


def _median(r: dict) -> float | None:
    return statistics.median(r["samples_s"]) if "samples_s" in r else None


def report(results: dict, sizes: dict, header: str) -> str:
    lines = [header, "", f"{'workload':<24}{'impl':<17}{'median':>12}{'min':>12}{'first call':>12}{'x vs jk-lax':>13}  note"]
    for name, row in results.items():
        if name.startswith("_"):
            continue
        base = _median(row.get("jk-lax", {}))
        for impl in ORDER:
            if impl not in row:
                continue
            r = row[impl]
            med = _median(r)
            label = f"{name} {sizes[name]}".replace(" ", "") if impl == ORDER[0] else ""
            if med is None:
                lines.append(f"{label:<24}{impl:<17}{'-':>12}{'-':>12}{'-':>12}{'-':>13}  skipped: {r.get('skipped')}")
                continue
            ratio = f"{med / base:.2f}" if base else "-"
            low = min(r["samples_s"])
            lines.append(f"{label:<24}{impl:<17}{med * 1e3:>10.3f}ms{low * 1e3:>10.3f}ms{r['first_call_s']:>11.3f}s{ratio:>13}")
        lines.append("")
    lines.append("x vs jk-lax: the implementation's median over jk-lax's (above 1: jitkernel is faster). "
                 "min: the fastest sample (robust on a loaded machine).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=",".join(SIZES), help="comma-separated: " + ",".join(SIZES))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--peer-python", default=os.environ.get("JITKERNEL_PEER_PYTHON"),
                    help="a Python interpreter with numba installed (default: $JITKERNEL_PEER_PYTHON)")
    ap.add_argument("--json", help="write the results as JSON")
    ap.add_argument("--text", help="write the table")
    args = ap.parse_args(argv)
    names = [n for n in args.workloads.split(",") if n]
    sizes = QUICK if args.quick else SIZES
    # Process-wide one-time set-up (LLVM's targets, the pairwise-sum runtime) is not any
    # workload's first call: one small jitted loop takes it.
    jk.jit(lambda x: lax.fori_loop(0, 2, lambda i, s: s + x.sum(), 0.0), disk_cache=False)(np.ones(3))
    peer = _Peer(args.peer_python)
    try:
        results: dict = {name: run_workload(name, sizes[name], args.repeat, peer) for name in names}
    finally:
        peer.close()
    results["_numba_version"] = peer.version
    header = (f"benchmarks.loops{' QUICK' if args.quick else ''}: {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} CPUs, jk.config.threads={jk.config.threads}, numpy {np.__version__}, "
              f"numba {results.get('_numba_version')}, repeat {args.repeat}")
    text = report(results, sizes, header)
    print(text)
    if args.text:
        with open(args.text, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "sizes": {k: sizes[k] for k in names}, "results": results}, f, indent=1,
                      default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
