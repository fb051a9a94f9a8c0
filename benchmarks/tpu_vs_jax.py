"""jitkernel's TPU backend against `jax.jit` of the same code written with `jax.numpy`, on the same
chip, in one process (docs/performance.md, "TPU").

    python -m benchmarks.tpu_vs_jax [--backend tpu] [--quick] [--json-lines PATH]

Each row times the compiled computation on inputs already on the chip (device time: the XLA
executable jitkernel built, called with device-resident jax arrays, against JAX's), median of
`--repeat` synchronised runs after warm-up, float32. Two rows time jitkernel's whole call
instead: the first call of W1 against JAX's first call of the same code (trace, optimise, lower,
XLA compile and run, the input already on the chip; the chip's one-time open is excluded), the
whole warm call of W1 on a device array, and the warm call of a tiny function (dispatch). Prints one JSON line per row as it goes and a table last.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
from typing import Any, Callable, Iterator

import numpy as np


def _median_time(run: Callable[[], Any], repeat: int) -> float:
    import jax
    jax.block_until_ready(run())  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(run())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@contextlib.contextmanager
def _fresh_cache_dir() -> Iterator[None]:
    """jitkernel's persistent cache in an empty temporary directory for the duration: a first
    call that compiles, as JAX's first call of a new function does (JAX keeps no disk cache by
    default)."""
    before = os.environ.get("JITKERNEL_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="jk-first-call-") as empty:
        os.environ["JITKERNEL_CACHE_DIR"] = empty
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("JITKERNEL_CACHE_DIR", None)
            else:
                os.environ["JITKERNEL_CACHE_DIR"] = before


def first_call_pair(k: int, x_ours: Any, x_jax: Any, backend: str, profiler: Any = None) -> tuple[float, float]:
    """Seconds of JAX's first call of W1 (plus the constant k) on `x_jax`, then of jitkernel's on
    `x_ours` with an empty persistent cache: each round's own constant, so that neither side
    finds a program compiled before. `profiler` (a cProfile.Profile) profiles jitkernel's call."""
    import jax

    import jitkernel as jk
    jnp, c = jax.numpy, np.float32(k)
    t0 = time.perf_counter()
    jax.block_until_ready(jax.jit(lambda x: jnp.sin(x) * jnp.cos(x) + jnp.sin(x) ** 2 + c)(x_jax))
    t_jax = time.perf_counter() - t0
    w1 = jk.jit(lambda x: np.sin(x) * np.cos(x) + np.sin(x) ** 2 + c, backend=backend)
    with _fresh_cache_dir():
        t0 = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        first = w1(x_ours)
        getattr(first, "block_until_ready", lambda: None)()
        if profiler is not None:
            profiler.disable()
        t_ours = time.perf_counter() - t0
    return t_jax, t_ours


def executable_on_device(lowered: Any, inputs: list, device: Any) -> Callable[[], Any]:
    """A call of the XLA executable jitkernel built for `lowered`, on `inputs` already put on
    `device` (device time, no transfer): with the run-time -0.0 the program takes on the CPU
    platform (backends/tpu: products guarded from XLA's multiply-add contraction)."""
    import jax
    run = lowered.compiled.executable
    with jax.enable_x64(True):
        on_device = jax.device_put(inputs + ([np.float64(-0.0)] if run.guard else []), device)
    return lambda: run.executable(*on_device)[0]


def json_lines_emitter(path: str | None, table: list) -> tuple[Callable[[dict], None], Any]:
    """(emit, sink): `emit(row)` prints a row as a JSON line, appends it to `path` (when given)
    and to `table`; close `sink` (None without a path) at the end."""
    sink = open(path, "a") if path else None

    def emit(row: dict) -> None:
        line = json.dumps(row)
        print(line, flush=True)
        if sink:
            sink.write(line + "\n")
            sink.flush()
        table.append(row)
    return emit, sink


def _workloads(quick: bool) -> list[tuple[str, Callable, Callable, Callable[[], list]]]:
    """(name, NumPy-as-written function for jitkernel, the jax.numpy function, inputs)."""
    import jax
    import jax.numpy as jnp

    import jitkernel as jk
    n = 1 << (20 if quick else 26)
    rows, cols = (1024, 1024) if quick else (16384, 4096)
    rng = np.random.default_rng(0)

    def vec() -> list:
        return [rng.random(n, dtype=np.float32)]

    def mat() -> list:
        return [rng.random((rows, cols), dtype=np.float32)]

    def softmax(np_):
        def f(x):
            e = np_.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        return f

    def layer_norm(np_):
        def f(x):
            mu = x.mean(axis=1, keepdims=True)
            var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
            return (x - mu) / np_.sqrt(var + 1e-5)
        return f

    batch = 128
    sizes = [784, 512, 512, 10]

    def mlp_params() -> list:
        ps = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            ps += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32)]
        return ps

    def mlp_inputs() -> list:
        return mlp_params() + [rng.random((batch, 784), dtype=np.float32),
                               np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]]

    def loss(np_):
        def f(w1, b1, w2, b2, w3, b3, x, y):
            h = np_.tanh(x @ w1 + b1)
            h = np_.tanh(h @ w2 + b2)
            out = h @ w3 + b3
            return ((out - y) ** 2).mean()
        return f

    def step(grad_fn, np_):
        value_and_grad = grad_fn(loss(np_), argnums=tuple(range(6)))

        def f(w1, b1, w2, b2, w3, b3, x, y):
            value, grads = value_and_grad(w1, b1, w2, b2, w3, b3, x, y)
            return (value,) + tuple(p - 0.01 * g for p, g in zip((w1, b1, w2, b2, w3, b3), grads))
        return f

    def per_example(grad_fn, vmap_fn, np_):
        def one(w1, b1, w2, b2, w3, b3, x, y):
            return loss(np_)(w1, b1, w2, b2, w3, b3, x[None], y[None])
        g = grad_fn(one, argnums=0)
        return vmap_fn(g, in_axes=(None, None, None, None, None, None, 0, 0))

    return [
        ("copy x * 2", lambda x: x * 2, lambda x: x * 2, vec),
        ("W1 sin*cos+sin**2", lambda x: np.sin(x) * np.cos(x) + np.sin(x) ** 2,
         lambda x: jnp.sin(x) * jnp.cos(x) + jnp.sin(x) ** 2, vec),
        ("W2 tanh(a*b+c).sum()", lambda a, b, c: np.tanh(a * b + c).sum(),
         lambda a, b, c: jnp.tanh(a * b + c).sum(), lambda: vec() + vec() + vec()),
        ("W3 softmax", softmax(np), softmax(jnp), mat),
        ("W4 layer norm", layer_norm(np), layer_norm(jnp), mat),
        ("MLP training step", step(jk.value_and_grad, np), step(jax.value_and_grad, jnp), mlp_inputs),
        ("per-example grads", per_example(jk.grad, jk.vmap, np), per_example(jax.grad, jax.vmap, jnp), mlp_inputs),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="tpu")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json-lines", default=None, help="also append the JSON lines to this file")
    args = parser.parse_args()

    import jax

    import jitkernel as jk
    device = jk.backends.get_backend(args.backend).device()
    table: list = []
    emit, sink = json_lines_emitter(args.json_lines, table)

    for name, ours, theirs, make in _workloads(args.quick):
        inputs = make()
        lowered = jk.jit(ours, backend=args.backend).lower(*inputs)
        with jax.enable_x64(True):
            t_ours = _median_time(executable_on_device(lowered, inputs, device), args.repeat)
        on_chip32 = jax.device_put(inputs, device)
        peer = jax.jit(theirs)
        t_jax = _median_time(lambda: peer(*on_chip32), args.repeat)
        emit({"workload": name, "jax_ms": round(t_jax * 1e3, 4), "jitkernel_ms": round(t_ours * 1e3, 4),
              "ratio": round(t_ours / t_jax, 3), "what": "device time, inputs on the chip"})

    x = np.random.default_rng(1).random(1 << (20 if args.quick else 26), dtype=np.float32)
    on_device = jk.devices("tpu") if args.backend == "tpu" else []
    # First calls, each side a fresh function on the same input already on the chip (the chip's
    # one-time open excluded): trace, compile, run, synchronised. Rounds alternate the two
    # sides; XLA's compile of one program varies by 1.5x between rounds (measured on the v5e).
    x_jax = jax.device_put(x, device)
    x_ours = jk.device_put(x, on_device[0]) if on_device else x
    rounds = [first_call_pair(k, x_ours, x_jax, args.backend) for k in range(1 if args.quick else 3)]
    t_jax_first = statistics.median(r[0] for r in rounds)
    t_first = statistics.median(r[1] for r in rounds)
    emit({"workload": "first call of W1", "jax_ms": round(t_jax_first * 1e3, 1), "jitkernel_ms": round(t_first * 1e3, 1),
          "ratio": round(t_first / t_jax_first, 3),
          "rounds_ms": [[round(a * 1e3, 1), round(b * 1e3, 1)] for a, b in rounds],
          "what": "trace + compile + run, input on the chip; median of alternating rounds"})
    w1 = jk.jit(lambda x: np.sin(x) * np.cos(x) + np.sin(x) ** 2, backend=args.backend)
    if on_device:  # the whole jitted call on device arrays: dispatch included, no transfer
        t_call = _median_time(lambda: w1(x_ours)._buffer, args.repeat)
        emit({"workload": "W1 whole call, device arrays", "jitkernel_ms": round(t_call * 1e3, 4),
              "what": "jk.jit call on a jk.DeviceArray, synchronised"})
    tiny = jk.jit(lambda a: a + 1, backend=args.backend)
    a = np.ones(4, np.float32)
    if on_device:
        a = jk.device_put(a, on_device[0])
    tiny(a)
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        tiny(a)
        times.append(time.perf_counter() - t0)
    row = {"workload": "warm call of a tiny function", "jitkernel_ms": round(statistics.median(times) * 1e3, 4),
           "what": "whole call, asynchronous dispatch" + (" on a device array" if on_device else " with host arrays")}
    # JAX's own dispatch of the same function on the same device: the floor the runtime sets
    peer_tiny, a_jax = jax.jit(lambda a: a + 1), np.ones(4, np.float32)
    if on_device:  # the same kind of argument as jitkernel's: on the chip, or a host array
        a_jax = jax.device_put(a_jax, device)
    jax.block_until_ready(peer_tiny(a_jax))
    peer_times = []
    for _ in range(200):
        t0 = time.perf_counter()
        peer_tiny(a_jax)
        peer_times.append(time.perf_counter() - t0)
    row["jax_ms"] = round(statistics.median(peer_times) * 1e3, 4)
    row["ratio"] = round(row["jitkernel_ms"] / row["jax_ms"], 3)
    emit(row)

    print(f"\n{'workload':32} {'JAX ms':>10} {'jitkernel ms':>13} {'ratio':>7}")
    for row in table:
        print(f"{row['workload']:32} {row.get('jax_ms', ''):>10} {row['jitkernel_ms']:>13} {row.get('ratio', ''):>7}")
    if sink:
        sink.close()


if __name__ == "__main__":
    main()
