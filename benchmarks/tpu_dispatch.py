"""Where the warm call of a tiny jitted function spends its time on a TPU: the whole `jk.jit`
call beside each layer under it (jitkernel's TpuExecutable, JAX's compiled executable with and
without the x64 context, the result wrapper) and JAX's own `jax.jit` dispatch of the same
function (the floor), then a cProfile of the whole call; and the first call of W1 broken into
its phases (trace, passes, lowering, XLA compile, the persistent cache's store).

    python3 -m benchmarks.tpu_dispatch            # on the TPU machine (the chip)
    python3 -m benchmarks.tpu_dispatch --emulate  # anywhere with JAX: the emulated TPU device

Prints one JSON line per measurement (median microseconds over --calls calls) and the profiles.
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import pstats
import statistics
import time
from typing import Any, Callable

import numpy as np

from benchmarks.tpu_vs_jax import first_call_pair


def median_us(fn: Callable[[], Any], calls: int) -> float:
    fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) * 1e6, 2)


def profile(fn: Callable[[], Any], calls: int, top: int = 25) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def dispatch_rows(device: Any, calls: int) -> None:
    import jax

    import jitkernel as jk
    from jitkernel.backends.tpu.device_array import TpuArray

    host = np.ones(4, np.float32)
    a = jk.device_put(host, device)
    tiny = jk.jit(lambda a: a + 1, backend="tpu")
    tiny(a).block_until_ready()
    compiled = next(iter(tiny._cache.values()))
    tpu_exec = compiled.executable  # backends/tpu/backend.py TpuExecutable
    jax_exec = tpu_exec.executable  # JAX's Compiled
    # (on JAX's CPU platform the executable also takes the run-time -0.0: backends/tpu/lowering.py)
    inputs = [a._buffer] + ([tpu_exec.negative_zero] if tpu_exec.guard else [])
    peer = jax.jit(lambda a: a + 1)
    peer_in = jax.device_put(host, device.backing)
    jax.block_until_ready(peer(peer_in))
    out = jax_exec(*inputs)[0][0]

    def in_x64() -> Any:
        with jax.enable_x64(True):
            return jax_exec(*inputs)

    def x64_context() -> None:
        with jax.enable_x64(True):
            pass

    rows = {
        "jk.jit call on a device array": lambda: tiny(a),
        "jk.jit call on a host array": lambda: tiny(host),
        "TpuExecutable call": lambda: tpu_exec([a]),
        "JAX Compiled call in enable_x64": in_x64,
        "JAX Compiled call": lambda: jax_exec(*inputs),
        "JAX Compiled call, argument via _argument": lambda: jax_exec(*[tpu_exec._argument(a, 0)] + inputs[1:]),
        "JAX Compiled call, results wrapped": lambda: [TpuArray._wrap(o, (4,), np.dtype(np.float32), device, "x")
                                                       for o in jax_exec(*inputs)[0]],
        "enable_x64 context alone": x64_context,
        "TpuArray wrap of a result": lambda: TpuArray._wrap(out, (4,), np.dtype(np.float32), device, "x"),
        "jax.jit dispatch (JAX's floor)": lambda: peer(peer_in),
        "jax.jit dispatch on a host array": lambda: peer(host),
        "jk.jit call + block_until_ready": lambda: tiny(a).block_until_ready(),
        "jax.jit dispatch + block_until_ready": lambda: peer(peer_in).block_until_ready(),
    }
    for what, fn in rows.items():
        print(json.dumps({"row": what, "median_us": median_us(fn, calls)}), flush=True)
    print(json.dumps({"jax_compiled_type": type(jax_exec).__name__,
                      "compiled_attrs": sorted(k for k in vars(jax_exec) if "call" in k.lower()),
                      "jax": jax.__version__, "device": str(device.backing)}), flush=True)
    print("== cProfile of", calls, "jk.jit calls on a device array (sorted by own time)")
    print(profile(lambda: tiny(a), calls))
    print("== cProfile of", calls, "jax.jit calls (JAX's floor)")
    print(profile(lambda: peer(peer_in), calls, top=12))


def first_call_rows(device: Any, repeats: int) -> None:
    """The first call of W1 (2^26 float32 elements on the device) with an empty cache
    directory, `repeats` times, alternating with JAX's first call of the same function (each
    round adds its own constant, so that neither side finds the other's compiled program);
    then one call profiled by cumulative time: which phase costs what beside XLA's compile."""
    import jax

    import jitkernel as jk

    x = np.random.default_rng(0).random(2 ** 26, dtype=np.float32)
    x_dev = jk.device_put(x, device)
    x_jax = jax.device_put(x, device.backing)
    for k in range(repeats + 1):
        profiler = cProfile.Profile() if k == repeats else None
        jax_first, ours = first_call_pair(k, x_dev, x_jax, "tpu", profiler)
        print(json.dumps({"row": "first call of W1" + (" (profiled)" if profiler else ""), "round": k,
                          "jax_ms": round(jax_first * 1e3, 1), "jitkernel_ms": round(ours * 1e3, 1)}), flush=True)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
    print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emulate", action="store_true", help="the emulated TPU device (JAX's CPU)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--first-calls", type=int, default=1, help="rounds of first calls (0: none)")
    args = parser.parse_args()
    import jitkernel as jk
    from jitkernel.backends.tpu.device_array import emulate_tpu
    with emulate_tpu() if args.emulate else contextlib.nullcontext():
        device = jk.devices("tpu")[0]
        dispatch_rows(device, args.calls)
        if args.first_calls:
            first_call_rows(device, args.first_calls)


if __name__ == "__main__":
    main()
