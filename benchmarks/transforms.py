"""Transformed programs: an MLP training step and per-example gradients,
side by side in one run:

  numpy  a hand-written NumPy forward+backward (benchmarks/transforms_model.py)
  jk     jitkernel: jk.jit(jk.value_and_grad(loss)) and jk.jit(jk.vmap(jk.grad(loss), in_axes=(None, 0, 0)))
  jax    JAX-CPU: the same with jax.jit / jax.value_and_grad / jax.vmap / jax.grad, in another
         interpreter (benchmarks/transforms_jax.py; --peer-python names a Python with jax)

The model: 784-512-512-10, batch 128, float32, tanh, softmax cross-entropy, mean over the batch.

    .venv/bin/python -m benchmarks.transforms --peer-python /path/to/venv-with-jax/bin/python
    .venv/bin/python -m benchmarks.transforms --repeat 5 --workloads train_step

Implementations alternate round-robin per repetition (this machine's speed drifts over minutes).
Reports medians, minima, the ratio of each median to jk's, the first call (trace + transform +
compile + one run) and the largest difference of each implementation's loss and gradients from
the hand-written NumPy ones (a difference beyond float32 rounding fails the run).
`--json PATH` and `--text PATH` keep the results (benchmarks/results/transforms.{json,txt}).
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
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

os.environ.setdefault("JITKERNEL_CACHE_DIR", tempfile.mkdtemp(prefix="jk-transforms-bench-"))  # first calls compile

import numpy as np  # noqa: E402

import jitkernel as jk  # noqa: E402
from benchmarks import transforms_model as M  # noqa: E402
from benchmarks.peer import PeerServer  # noqa: E402

WORKLOADS = ("train_step", "per_example")
ORDER = ("jk", "jk-base", "jax", "numpy")
# --base: also jitkernel without the passes written for transformed programs (the "before")
NEW_PASSES = ("identities", "dot_operands")
# The issue's goals: jk's median at most this many times the peer's (train_step: JAX and
# NumPy; per_example: JAX), and the training step's first call in seconds.
GOALS = {("train_step", "jax"): 1.0, ("train_step", "numpy"): 1.0, ("per_example", "jax"): 1.2}
FIRST_CALL_GOAL_S = 0.5


def jk_function(name: str) -> Callable:
    """A fresh jitted function (its first call traces, transforms and compiles)."""
    if name == "train_step":
        return jk.jit(jk.value_and_grad(M.loss), disk_cache=False)
    return jk.jit(jk.vmap(jk.grad(M.loss), in_axes=(None, 0, 0)), disk_cache=False)


def numpy_function(name: str) -> Callable:
    return M.numpy_value_and_grad if name == "train_step" else M.numpy_per_example_grads


def _as_value_and_grads(name: str, out: Any) -> tuple[float, list[np.ndarray]]:
    if name == "train_step":
        value, grads = out
        return float(value), [np.asarray(g) for g in grads]
    return float("nan"), [np.asarray(g) for g in out]


class _Local:
    """An implementation run in this process; `passes`: the optimisation pipeline its first call
    (the compile) runs with, when not the default."""

    def __init__(self, name: str, fn: Callable, args: tuple, passes: tuple | None = None) -> None:
        self.name, self.fn, self.args, self.passes = name, fn, args, passes

    def first(self) -> dict:
        import jitkernel.passes as P
        default = P.PIPELINE
        P.PIPELINE = self.passes if self.passes is not None else default
        try:
            t0 = time.perf_counter()
            out = self.fn(*self.args)
            first = time.perf_counter() - t0
        finally:
            P.PIPELINE = default
        self.result = _as_value_and_grads(self.name, out)
        return {"first_call_s": first}

    def once(self) -> float:
        t0 = time.perf_counter()
        self.fn(*self.args)
        return time.perf_counter() - t0


class _Peer(PeerServer):
    """The JAX server (benchmarks/transforms_jax.py) in another interpreter."""

    def __init__(self, python: str | None) -> None:
        super().__init__(python, "transforms_jax.py", "jax")

    def ask(self, request: dict) -> dict:
        return self.request(request)

    def impl(self, name: str, seed: int, batch: int) -> Any:
        peer = self

        class _Remote:
            result = None

            def first(self) -> dict:
                if peer.proc is None:
                    return {"skipped": peer.error}
                with tempfile.TemporaryDirectory() as d:
                    path = os.path.join(d, "out.npz")
                    reply = peer.ask({"op": "compile", "name": name, "seed": seed, "batch": batch, "out": path})
                    if "skipped" not in reply:
                        with np.load(path) as z:
                            self.result = (float(z["value"]), [z[f"g{k}"] for k in range(6)])
                return reply

            def once(self) -> float:
                return peer.ask({"op": "time", "name": name})["sample_s"]
        return _Remote()



def compare(result: tuple[float, list[np.ndarray]], reference: tuple[float, list[np.ndarray]]) -> dict:
    """The largest absolute difference of the loss and of any gradient element from the
    reference, and the largest one relative to that gradient's largest magnitude."""
    value, grads = result
    ref_value, ref_grads = reference
    abs_diff = max(float(np.max(np.abs(g - r))) for g, r in zip(grads, ref_grads))
    rel_diff = max(float(np.max(np.abs(g - r)) / max(float(np.max(np.abs(r))), 1e-30)) for g, r in zip(grads, ref_grads))
    out = {"grad_max_abs_diff": abs_diff, "grad_max_rel_diff": rel_diff}
    if not np.isnan(ref_value):
        out["loss_abs_diff"] = abs(value - ref_value)
    return out


def run_workload(name: str, repeat: int, peer: _Peer, seed: int, base: bool = False) -> dict:
    params, x, y = M.make_inputs(seed)
    impls = {"jk": _Local(name, jk_function(name), (params, x, y))}
    if base:
        import jitkernel.passes as P
        without = tuple(p for p in P.PIPELINE if p.__name__ not in NEW_PASSES)
        impls["jk-base"] = _Local(name, jk_function(name), (params, x, y), passes=without)
    impls["jax"] = peer.impl(name, seed, M.BATCH)
    impls["numpy"] = _Local(name, numpy_function(name), (params, x, y))
    row = {impl: r.first() for impl, r in impls.items()}
    reference = impls["numpy"].result
    for impl in ("jk", "jk-base", "jax"):
        if impl not in row:
            continue
        if "skipped" not in row[impl]:
            row[impl].update(compare(impls[impl].result, reference))
            # float32 rounding of different summation orders: far below this; a wrong rule is far above
            if row[impl]["grad_max_rel_diff"] > 1e-3:
                raise AssertionError(f"{name}: {impl}'s gradients differ from NumPy's hand-written ones: {row[impl]}")
    live = [impl for impl in impls if "skipped" not in row[impl]]
    for _ in range(repeat):
        for impl in live:
            row[impl].setdefault("samples_s", []).append(impls[impl].once())
    return row


def _median(r: dict) -> float | None:
    return statistics.median(r["samples_s"]) if "samples_s" in r else None


def report(results: dict, header: str) -> str:
    lines = [header, "",
             f"{'workload':<14}{'impl':<7}{'median':>11}{'min':>11}{'first call':>12}{'x vs jk':>9}"
             f"{'max |dgrad|':>13}{'rel':>10}"]
    goals = []
    for name in WORKLOADS:
        row = results.get(name)
        if row is None:
            continue
        base = _median(row["jk"])
        for impl in ORDER:
            if impl not in row:
                continue
            r = row[impl]
            label = name if impl == ORDER[0] else ""
            med = _median(r)
            if med is None:
                lines.append(f"{label:<14}{impl:<7}{'-':>11}  skipped: {r.get('skipped')}")
                continue
            diff = f"{r['grad_max_abs_diff']:>13.2e}{r['grad_max_rel_diff']:>10.1e}" if "grad_max_abs_diff" in r \
                else f"{'(reference)':>13}{'':>10}"
            lines.append(f"{label:<14}{impl:<7}{med * 1e3:>9.3f}ms{min(r['samples_s']) * 1e3:>9.3f}ms"
                         f"{r['first_call_s']:>11.3f}s{med / base:>9.2f}{diff}")
            goal = GOALS.get((name, impl))
            if goal is not None:
                ok = base <= goal * med
                goals.append(f"  {name}: jk {base * 1e3:.3f} ms vs {impl} {med * 1e3:.3f} ms, goal jk <= "
                             f"{goal:g}x {impl}: {'met' if ok else 'NOT met'}")
        if name == "train_step":
            first = row["jk"]["first_call_s"]
            goals.append(f"  train_step: jk first call {first:.3f} s, goal < {FIRST_CALL_GOAL_S} s: "
                         f"{'met' if first < FIRST_CALL_GOAL_S else 'NOT met'}")
        lines.append("")
    lines.append("jk-base: jitkernel without the passes " + ", ".join(NEW_PASSES) + " (--base). "
                 "x vs jk: the implementation's median over jk's (above 1: jitkernel is faster). min: the fastest "
                 "sample. max |dgrad|, rel: the largest difference of a gradient element from the hand-written "
                 "NumPy backward, absolute and relative to that gradient's largest magnitude.")
    lines.append("Goals (docs/performance.md, \"Transformations\"):")
    lines += goals
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: " + ",".join(WORKLOADS))
    ap.add_argument("--repeat", type=int, default=100, help="timed rounds of the training step")
    ap.add_argument("--repeat-per-example", type=int, default=20,
                    help="timed rounds of the per-example gradients (each writes 342 MB of results)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base", action="store_true",
                    help="also time jitkernel without the passes " + ", ".join(NEW_PASSES) + " (jk-base: the before)")
    ap.add_argument("--peer-python", default=os.environ.get("JITKERNEL_PEER_PYTHON"),
                    help="a Python interpreter with jax installed (default: $JITKERNEL_PEER_PYTHON)")
    ap.add_argument("--json", help="write the results as JSON")
    ap.add_argument("--text", help="write the table")
    args = ap.parse_args(argv)
    names = [n for n in args.workloads.split(",") if n]
    for n in names:
        if n not in WORKLOADS:
            ap.error(f"unknown workload {n!r}; workloads are {', '.join(WORKLOADS)}")
    # Process-wide one-time set-up (LLVM's targets, the runtime) is not the training step's
    # first call: one small jitted function takes it.
    jk.jit(lambda v: np.tanh(v) @ v, disk_cache=False)(np.ones((2, 2), np.float32))
    load_before = os.getloadavg()[0]  # the machine may be shared: say how busy it was
    peer = _Peer(args.peer_python)
    try:
        results: dict = {name: run_workload(name, args.repeat if name == "train_step" else args.repeat_per_example,
                                         peer, args.seed, args.base) for name in names}
    finally:
        peer.close()
    header = (f"benchmarks.transforms: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
              f"jk.config.threads={jk.config.threads}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
              f"numpy {np.__version__}, jax {peer.version}, "
              f"MLP {'-'.join(map(str, M.SIZES))} batch {M.BATCH} float32, repeat {args.repeat} "
              f"(per-example {args.repeat_per_example}), load average {load_before:.2f} before, "
              f"{os.getloadavg()[0]:.2f} after")
    text = report(results, header)
    print(text)
    if args.text:
        with open(args.text, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "results": results}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
