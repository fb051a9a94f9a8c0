"""Regenerate tests/data/jax_random_reference.json from JAX (run with a Python that has JAX;
the tests themselves never import JAX):

    python tests/data/make_jax_random_reference.py   # a Python with jax installed

Every case is measured twice: with jax_enable_x64 off (JAX's default: float32 / int32 defaults)
and on (float64 / int64), always with jax_threefry_partitionable=True (JAX's default since 0.5).
Each case passes its dtype explicitly, so jk.random's own defaults do not matter here.
"""
import json
import os
import sys

import numpy as np


def measure(x64: bool) -> dict:
    import jax
    jax.config.update("jax_enable_x64", x64)
    jax.config.update("jax_threefry_partitionable", True)
    from jax import random as jr

    def arr(x):
        a = np.asarray(x)
        if a.dtype.kind == "c":  # JSON has no complex numbers: [re, im] pairs
            return {"dtype": a.dtype.name, "shape": list(a.shape), "values": np.stack([a.real, a.imag], -1).ravel().tolist()}
        return {"dtype": a.dtype.name, "shape": list(a.shape), "values": a.ravel().tolist()}

    out = {"jax": jax.__version__, "x64": x64}
    seeds = [0, 42, 1701, 2**31 - 1]
    out["PRNGKey"] = {str(s): arr(jr.PRNGKey(s)) for s in seeds + ([-1, -5, 2**32 + 7, 2**40 + 3, -(2**40)] if x64 else [-1, -5])}
    out["PRNGKey_np"] = {"int32:-1": arr(jr.PRNGKey(np.int32(-1))), "uint32:4294967295": arr(jr.PRNGKey(np.uint32(2**32 - 1)))}
    cases = []

    def case(name, fn, key, **kw):
        kwargs = {k: {"array": arr(v)} if isinstance(v, (np.ndarray, np.generic)) else v for k, v in kw.items()}
        cases.append({"fn": name, "key": [int(v) for v in np.asarray(key)], "kwargs": kwargs, "out": arr(fn(key, **kw))})

    keys = [jr.PRNGKey(0), jr.PRNGKey(42), jr.PRNGKey(1701)]
    for k in keys:
        case("split", jr.split, k, num=3)
        case("split", jr.split, k, num=(2, 2))
        for d in (0, 1, 7, 2**31 + 5):
            case("fold_in", jr.fold_in, k, data=d)
        for shape in [(), (1,), (5,), (2, 3), (3, 1, 4)]:
            case("bits", jr.bits, k, shape=shape, dtype="uint32")
        case("bits", jr.bits, k, shape=(5,), dtype="uint8")
        case("bits", jr.bits, k, shape=(5,), dtype="uint16")
        for dt in ("float32",) + (("float64",) if x64 else ()):
            case("uniform", jr.uniform, k, shape=(7,), dtype=dt)
            case("uniform", jr.uniform, k, shape=(2, 3), dtype=dt, minval=-2.0, maxval=3.5)
            case("normal", jr.normal, k, shape=(9,), dtype=dt)
            case("truncated_normal", jr.truncated_normal, k, lower=-1.5, upper=2.0, shape=(6,), dtype=dt)
            case("bernoulli", jr.bernoulli, k, p=np.asarray(0.3, dt), shape=(10,))
            case("categorical", jr.categorical, k, logits=np.log(np.asarray([0.1, 0.2, 0.3, 0.4], dt)), shape=(12,))
            case("categorical", jr.categorical, k, logits=np.asarray([[0., 1., 2.], [2., 1., 0.]], dt), axis=-1)
            case("choice", jr.choice, k, a=5, shape=(6,), replace=True, p=np.asarray([0.1, 0.2, 0.3, 0.2, 0.2], dt))
        for dt in ("int32",) + (("int64",) if x64 else ()):
            case("randint", jr.randint, k, shape=(8,), minval=0, maxval=10, dtype=dt)
            case("randint", jr.randint, k, shape=(2, 3), minval=-100, maxval=1000, dtype=dt)
            case("randint", jr.randint, k, shape=(4,), minval=5, maxval=5, dtype=dt)
        case("randint", jr.randint, k, shape=(6,), minval=0, maxval=256, dtype="uint8")
        case("permutation", jr.permutation, k, x=10)
        case("permutation", jr.permutation, k, x=np.arange(12.0).reshape(4, 3))
        case("choice", jr.choice, k, a=10, shape=(4,), replace=False)
        case("choice", jr.choice, k, a=7, shape=(5,), replace=True)
    k = jr.PRNGKey(7)
    case("bits", jr.bits, k, shape=(3,), dtype="uint64" if x64 else "uint32")
    case("bits", jr.bits, k, shape=(3, 5, 7), dtype="uint16")
    case("split", jr.split, k, num=(0,))
    case("bernoulli", jr.bernoulli, k, p=np.asarray([0.01, 0.5, 0.99], "float32"), shape=(4, 3), mode="high")
    case("categorical", jr.categorical, k, logits=np.asarray([[0., 1., 2., 3.], [3., 2., 1., 0.]], "float32"),
         shape=(2, 2), replace=False)
    case("categorical", jr.categorical, k, logits=np.asarray([[0., 1.], [2., 0.], [1., 1.]], "float32"), axis=0,
         shape=(5, 2))
    case("categorical", jr.categorical, k, logits=np.asarray([0., 1., 2.], "float32"), shape=(6,), mode="high")
    case("choice", jr.choice, k, a=6, shape=(3,), replace=False, p=np.asarray([.1, .1, .2, .2, .3, .1], "float32"))
    case("choice", jr.choice, k, a=np.arange(12.0, dtype="float32").reshape(3, 4), shape=(2,), axis=1)
    case("choice", jr.choice, k, a=np.arange(12.0, dtype="float32").reshape(3, 4), shape=(2,), replace=False, axis=1)
    case("permutation", jr.permutation, k, x=np.arange(12.0, dtype="float32").reshape(3, 4), axis=1, independent=True)
    case("permutation", jr.permutation, k, x=2000)  # two sort rounds above ~1600 elements
    case("randint", jr.randint, k, shape=(5,), minval=-2 ** 31, maxval=2 ** 31 - 1, dtype="int32")
    case("randint", jr.randint, k, shape=(5,), minval=np.asarray([0, 10, 20, 30, 40], "int32"), maxval=45, dtype="int32")
    case("randint", jr.randint, k, shape=(4,), minval=-5, maxval=5, dtype="int8")
    case("uniform", jr.uniform, k, shape=(2, 3), dtype="float32", minval=np.asarray([0., 1., 2.], "float32"),
         maxval=np.asarray([[1.], [5.]], "float32"))
    case("normal", jr.normal, k, shape=(3,), dtype="complex64")
    if x64:
        case("normal", jr.normal, k, shape=(3,), dtype="complex128")
        case("randint", jr.randint, k, shape=(5,), minval=-2 ** 62, maxval=2 ** 62, dtype="int64")
    case("truncated_normal", jr.truncated_normal, k, lower=np.asarray([-3., 0., 1.], "float32"),
         upper=np.asarray([3., 0.5, 4.], "float32"), dtype="float32")
    case("fold_in", jr.fold_in, k, data=np.uint32(2 ** 32 - 1))
    out["cases"] = cases
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(json.dumps(measure(sys.argv[1] == "1")))
        sys.exit(0)
    import subprocess
    results = [json.loads(subprocess.check_output([sys.executable, __file__, flag])) for flag in ("0", "1")]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_random_reference.json")
    with open(path, "w") as f:
        json.dump({"x64_off": results[0], "x64_on": results[1]}, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")
