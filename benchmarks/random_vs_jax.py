"""jk.random.normal / truncated_normal against JAX's samples, in ulp, over many keys.

    python tests/data/make_jax_normal_samples.py 2000 1000 /tmp/jax_normal.npz   # under JAX
    python -m benchmarks.random_vs_jax /tmp/jax_normal.npz [--backend cpu] [--keys N]

Prints, per sampler and dtype, the largest distance in ulp (ordinal distance of the float
bit patterns), the fraction of samples that differ at all, and those more than 1 and 2 ulp away.
The samples share JAX's uniform bits exactly; what differs is the last rounding of log(1 + x)
(XLA's own logf for float32, glibc's scalar log for float64 vs our vector math).
"""
from __future__ import annotations

import argparse

import numpy as np


def ulp_distance(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|ordinal(got) - ordinal(expected)| of the float bit patterns (0 for equal values)."""
    itype = {4: np.int32, 8: np.int64}[expected.dtype.itemsize]
    def ordinal(a: np.ndarray) -> np.ndarray:
        i = np.asarray(a, expected.dtype).view(itype).astype(np.int64)
        return np.where(i < 0, np.iinfo(itype).min - i, i)
    return np.abs(ordinal(got) - ordinal(expected))


def jk_samples(name: str, n_keys: int, n: int, backend: str) -> np.ndarray:
    """Our samples for the entry `name` of make_jax_normal_samples.py's file, keys 0..n_keys-1."""
    import jitkernel as jk
    fn, *rest = name.rsplit("_", 3) if name.startswith("truncated") else name.rsplit("_", 1)
    dtype = rest[-1]
    if fn == "normal":
        def sample(key):
            return jk.random.normal(key, (n,), dtype=dtype)
    else:
        lower, upper = float(rest[0]), float(rest[1])
        def sample(key):
            return jk.random.truncated_normal(key, lower, upper, (n,), dtype=dtype)
    keys = np.stack([np.asarray(jk.random.PRNGKey(s)) for s in range(n_keys)])
    return np.asarray(jk.jit(jk.vmap(sample), backend=backend)(keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--keys", type=int, default=None, help="compare only the first N keys")
    args = parser.parse_args()
    data = np.load(args.path)
    print(f"JAX {data['jax_version']} vs jitkernel ({args.backend})")
    for name in data.files:
        if name == "jax_version":
            continue
        expected = data[name][: args.keys]
        got = jk_samples(name, expected.shape[0], expected.shape[1], args.backend)
        u = ulp_distance(got, expected)
        print(f"{name:32s} {u.size:>9d} samples: max {int(u.max())} ulp, differ {np.mean(u > 0):.4%}, "
              f">1 ulp {np.mean(u > 1):.4%}, >2 ulp {np.mean(u > 2):.4%}")


if __name__ == "__main__":
    main()
