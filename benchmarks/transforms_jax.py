"""The JAX-CPU peer of benchmarks/transforms.py, run in its own interpreter (a virtualenv with
jax): `jax.jit(jax.value_and_grad(loss))` and `jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))`
of the loss of transforms_model.py, written with jax.numpy.

    /path/to/venv-with-jax/bin/python benchmarks/transforms_jax.py

A server on stdin/stdout, one JSON line per request, so that benchmarks/transforms.py can
alternate JAX's repetitions with jitkernel's and NumPy's (this machine's speed drifts):
  {"op": "compile", "name": N, "seed": S, "batch": B, "out": PATH}
      -> {"first_call_s": t}: trace + compile + one run (block_until_ready); the results are
         saved to PATH (.npz: value, g0..g5) for the parent to compare
  {"op": "time", "name": N}  -> {"sample_s": t} (one call, block_until_ready)
The first line it writes is {"version": jax.__version__} or {"error": reason}.
"""
from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import transforms_model as M  # noqa: E402


def main() -> int:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        print(json.dumps({"error": f"jax not importable: {e}"}), flush=True)
        return 0
    print(json.dumps({"version": jax.__version__, "devices": [str(d) for d in jax.devices()]}), flush=True)
    loss = M.make_loss(jnp)
    builders = {
        "train_step": lambda: jax.jit(jax.value_and_grad(loss)),
        "per_example": lambda: jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))),
    }
    state: dict = {}
    for line in sys.stdin:
        req = json.loads(line)
        name = req["name"]
        try:
            if req["op"] == "compile":
                params, x, y = M.make_inputs(req["seed"], req["batch"])
                args = ([jnp.asarray(p) for p in params], jnp.asarray(x), jnp.asarray(y))
                fn = builders[name]()
                t0 = time.perf_counter()
                out = jax.block_until_ready(fn(*args))
                reply = {"first_call_s": time.perf_counter() - t0}
                state[name] = (fn, args)
                value, grads = out if name == "train_step" else (np.nan, out)
                np.savez(req["out"], value=np.asarray(value), **{f"g{k}": np.asarray(g) for k, g in enumerate(grads)})
            else:
                fn, args = state[name]
                t0 = time.perf_counter()
                jax.block_until_ready(fn(*args))
                reply = {"sample_s": time.perf_counter() - t0}
        except Exception as e:  # a workload JAX cannot run is reported, not fatal
            reply = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
