"""Derivatives against JAX: the functions of `benchmarks/grad_cases.py` (one source each, run
with `np` = NumPy under jitkernel and `np` = jax.numpy under JAX with x64), compared on `grad`
with respect to both arguments (eager and `jk.jit`), `jacfwd` and, for small inputs,
`hessian`. JAX runs in its own interpreter (`--peer-python`), as in the other benchmarks; the
tests never import JAX.

    .venv/bin/python -m benchmarks.grad_vs_jax --peer-python /tmp/peers/bin/python

Prints each mismatch and a summary line; exits 1 when anything differs.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

_JAX_SIDE = r'''
import sys, numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
sys.path.insert(0, sys.argv[1])
from grad_cases import CASES
out = {}
for name, src, (x, y) in CASES:
    f = eval(f"lambda x, y: {src}", {"np": jnp})
    try:
        gx, gy = jax.grad(f, argnums=(0, 1))(x, y)
        out[name + ".x"], out[name + ".y"] = np.asarray(gx), np.asarray(gy)
        out[name + ".fwd"] = np.asarray(jax.jacfwd(f)(x, y))
        if x.size <= 16:
            out[name + ".hess"] = np.asarray(jax.hessian(f)(x, y))
    except Exception as e:
        print(f"{name}: jax raised {type(e).__name__}: {str(e)[:150]}")
np.savez(sys.argv[2], **out)
'''


def jitkernel_side() -> tuple[dict[str, np.ndarray], list[str]]:
    import jitkernel as jk
    sys.path.insert(0, HERE)
    from grad_cases import CASES
    out, problems = {}, []
    for name, src, (x, y) in CASES:
        f = eval(f"lambda x, y: {src}", {"np": np})
        try:
            gx, gy = jk.grad(f, argnums=(0, 1))(x, y)
            out[name + ".x"], out[name + ".y"] = np.asarray(gx), np.asarray(gy)
            out[name + ".jit"] = np.asarray(jk.jit(jk.grad(f))(x, y))
            out[name + ".fwd"] = np.asarray(jk.jacfwd(f)(x, y))
            if x.size <= 16:
                out[name + ".hess"] = np.asarray(jk.hessian(f)(x, y))
        except Exception as e:
            problems.append(f"{name}: jitkernel raised {type(e).__name__}: {str(e)[:150]}")
    return out, problems


def compare(mine: dict, theirs: dict) -> list[str]:
    problems = []
    for key in sorted(theirs):
        if key not in mine:
            problems.append(f"{key}: missing in jitkernel")
            continue
        a, b = mine[key], theirs[key]
        tol = dict(rtol=1e-6, atol=1e-9) if a.dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
        if a.shape != b.shape or not np.allclose(a, b, equal_nan=True, **tol):
            problems.append(f"{key}: jitkernel {a.ravel()[:4]} ({a.dtype}{list(a.shape)}) vs JAX {b.ravel()[:4]} "
                            f"({b.dtype}{list(b.shape)})")
        jit_key = key.replace(".x", ".jit")
        if key.endswith(".x") and jit_key in mine and not np.allclose(mine[jit_key], a, rtol=1e-9, atol=1e-12,
                                                                      equal_nan=True):
            problems.append(f"{key}: jk.jit(jk.grad(f)) differs from eager jk.grad(f)")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer-python", required=True, help="an interpreter with jax installed")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "jax.npz")
        run = subprocess.run([args.peer_python, "-c", _JAX_SIDE, HERE, path], capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stderr[-2000:])
            return 2
        theirs = dict(np.load(path))
    mine, problems = jitkernel_side()
    problems += compare(mine, theirs)
    for p in problems:
        print("MISMATCH", p)
    print(f"compared {len(theirs)} JAX results ({len({k.split('.')[0] for k in theirs})} functions): "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
