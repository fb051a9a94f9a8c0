"""Regenerate tests/data/jax_normal_samples.npz: JAX's normal and truncated_normal samples for
many keys, float32 and float64, to hold jk.random to its stated bound (at most 3 ulp from JAX,
docs/transformations.md). Run with a Python that has JAX (the tests never import it):

    python tests/data/make_jax_normal_samples.py [n_keys] [n] [path]

The defaults (8 keys x 1024 samples) are what the tests read; benchmarks/random_vs_jax.py
compares a larger file (e.g. 2000 keys x 1000) made by the same script.
"""
import os
import sys

import numpy as np

# (name, sampler arguments after the key): the bounds exercise both sides of 0 and one side.
SAMPLERS = (("normal", None), ("truncated_normal", (-1.5, 2.0)), ("truncated_normal", (0.5, 4.0)))


def sample_name(fn: str, bounds, dtype: str) -> str:
    return f"{fn}_{dtype}" if bounds is None else f"{fn}_{bounds[0]}_{bounds[1]}_{dtype}"


def main(n_keys: int, n: int, path: str) -> None:
    import jax
    jax.config.update("jax_enable_x64", True)  # float64 samples; float32 ones are the same either way
    from jax import random as jr
    keys = [jr.PRNGKey(s) for s in range(n_keys)]
    out = {"jax_version": np.asarray(jax.__version__)}
    for dtype in ("float32", "float64"):
        for fn, bounds in SAMPLERS:
            if bounds is None:
                samples = [jr.normal(k, (n,), dtype=dtype) for k in keys]
            else:
                samples = [jr.truncated_normal(k, *bounds, (n,), dtype=dtype) for k in keys]
            out[sample_name(fn, bounds, dtype)] = np.stack([np.asarray(s) for s in samples])
    np.savez(path, **out)
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_normal_samples.npz")
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8, int(sys.argv[2]) if len(sys.argv) > 2 else 1024,
         sys.argv[3] if len(sys.argv) > 3 else here)
