"""The GPU benchmark: jitkernel `cuda`, JAX-GPU (jit) and CuPy (unfused ops,
cuBLAS for the matmul) side by side in one run, against the issue's goals.

    python -m benchmarks.gpu --dry-run            # which parts would run here; exits 0 without a GPU
    python -m benchmarks.gpu --out /tmp/gpu-bench # on a GPU: results as JSON lines, the table last

Every implementation runs in its own subprocess (JAX would otherwise take most of the GPU's memory,
and CuPy's and PyCUDA's contexts stay apart); cupy, jax and pycuda are imported only there, so this
module imports on any machine. Kernel times are CUDA events around one call (warm-up first, then
the median of `--repeat` samples); JAX has no event API, so its samples are wall time of one
call up to `block_until_ready()`. Achieved bandwidth is the bytes a workload must move (inputs read
once, outputs written once) over its median time, next to the device-to-device copy bandwidth
measured in the same run (`2 * bytes / time` of a 1 GiB copy). Warm dispatch is the wall time per
call of 1000 back-to-back calls on 10 elements; the first call of a new function (an empty disk
cache: trace, render, nvcc, load, run) and a disk-cache hit (a fresh process, the same cache) are
measured with the one-time CUDA context creation reported apart.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):  # run as `python benchmarks/gpu.py`: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks.run import XP_FACTORIES

IMPLS = ["jitkernel", "jax", "cupy"]
F32 = np.dtype(np.float32)


@dataclass(frozen=True)
class GpuWorkload:
    """One row of the benchmark. `shapes`: the float32 arguments; `moved`: bytes a perfect kernel
    reads and writes; `bandwidth_goal`: the fraction of the copy bandwidth the issue asks of
    jitkernel (None: no bandwidth goal); `goal`: the issue's words for the row."""

    name: str
    kernel: str  # the XP_FACTORIES key (W1..W7) or "matmul"
    shapes: tuple[tuple[int, ...], ...]
    out_elems: int
    bandwidth_goal: float | None
    goal: str
    rtol: float = 1e-4

    @property
    def moved(self) -> int:
        return 4 * (sum(math.prod(s) for s in self.shapes) + self.out_elems)

    def make(self, xp: Any) -> Callable:
        if self.kernel == "matmul":
            return lambda a, b: a @ b
        return XP_FACTORIES[self.kernel](xp)


R, C = 16384, 4096
N = 10**8
N6 = 16384
WORKLOADS = [
    GpuWorkload("W1", "W1", ((N,),), N, 0.80, ">= JAX, >= 3x CuPy, >= 80% copy BW"),
    GpuWorkload("W2", "W2", ((N,), (N,), (N,)), 1, 0.70, ">= JAX, >= 3x CuPy, >= 70% copy BW", rtol=1e-3),
    GpuWorkload("W3", "W3", ((R, C),), R * C, 0.70, ">= JAX, >= 3x CuPy, >= 70% copy BW"),
    GpuWorkload("W4", "W4", ((R, C), (C,), (C,)), R * C, 0.70, ">= JAX, >= 70% copy BW", rtol=1e-3),
    GpuWorkload("W6", "W6", ((N6,), (N6,)), N6, None, ">= JAX", rtol=1e-3),
    GpuWorkload("matmul", "matmul", ((4096, 4096), (4096, 4096)), 4096 * 4096, None, ">= 50% of cuBLAS", rtol=1e-2),
]
GOALS = {"dispatch_us": 15.0, "first_call_s": 1.0, "disk_hit_ms": 20.0}


def workloads(names: list[str] | None = None) -> list[GpuWorkload]:
    if not names:
        return list(WORKLOADS)
    unknown = set(names) - {w.name for w in WORKLOADS}
    if unknown:
        raise SystemExit(f"unknown workloads {sorted(unknown)}; known: {[w.name for w in WORKLOADS]}")
    return [w for w in WORKLOADS if w.name in names]


def abstract_args(w: GpuWorkload) -> list[np.ndarray]:
    """Arrays of the workload's shapes that take no memory (zero strides): enough to trace and
    render the program (tier 0 of scripts/gpu_check.py), never to run it."""
    return [np.broadcast_to(np.zeros((), F32), s) for s in w.shapes]


def host_inputs(w: GpuWorkload, seed: int = 0) -> list[np.ndarray]:
    """Uniform [0, 1) float32 inputs (every W2 term positive: a well-conditioned float32 sum)."""
    rng = np.random.default_rng(seed)
    return [rng.random(s, dtype=F32) for s in w.shapes]


# --------------------------------------------------------------------------- what would run here
def gpu_present() -> bool:
    return any(os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidiactl"))


def importable(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None


def plan(impls: list[str], names: list[str] | None = None) -> list[dict]:
    """Per implementation: whether it would run here and, if not, why (no import of cupy/jax/pycuda)."""
    from jitkernel.backends.cuda import missing_for_cuda
    rows = []
    for impl in impls:
        why: list[str] = []
        if not gpu_present():
            why.append("no NVIDIA GPU device (/dev/nvidia0)")
        if impl == "jitkernel":
            why += [m for m in missing_for_cuda() if "/dev/nvidia0" not in m]
        elif not importable(impl):
            why.append(f"{impl} is not installed")
        rows.append({"impl": impl, "runs": not why, "why": "; ".join(why),
                     "workloads": [w.name for w in workloads(names)]})
    return rows


# --------------------------------------------------------------------------- timing (GPU only)
def median_ms(samples: list[float]) -> float:
    return float(np.median(samples))


class Timer:
    """CUDA-event timing of one call, with the implementation's own event type, or wall time up
    to the result's synchronisation where there is none (JAX)."""

    def __init__(self, impl: str) -> None:
        self.impl = impl
        if impl == "cupy":
            import cupy
            self.event = cupy.cuda.Event
            self.kind = "cuda-events (cupy)"
        elif impl == "jitkernel" and importable("pycuda"):
            import pycuda.driver as drv
            self.event = drv.Event
            self.kind = "cuda-events (pycuda, default stream)"
        else:  # JAX; jitkernel on an emulated GPU (the tests)
            self.event = None
            self.kind = "wall + block_until_ready"

    def sample(self, call: Callable[[], Any], sync: Callable[[Any], None]) -> float:
        if self.event is None:
            t0 = time.perf_counter()
            sync(call())
            return (time.perf_counter() - t0) * 1e3
        start, end = self.event(), self.event()
        start.record()
        out = call()
        end.record()
        end.synchronize()
        sync(out)
        if self.impl == "cupy":
            import cupy
            return float(cupy.cuda.get_elapsed_time(start, end))
        return float(start.time_till(end))


class Impl:
    """How one implementation puts arrays on the device, compiles a function and synchronises."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "jitkernel":
            import jitkernel as jk
            self.jk = jk
            self.gpu = jk.devices("gpu")[0]
            self.sync(self.put(np.zeros(1, F32)))  # the CUDA context exists before any event is made
        elif name == "jax":
            import jax
            import jax.numpy as jnp
            self.jax, self.xp = jax, jnp
        elif name == "cupy":
            import cupy
            self.xp = cupy

    def put(self, x: np.ndarray) -> Any:
        if self.name == "jitkernel":
            return self.jk.device_put(x, self.gpu)
        if self.name == "jax":
            return self.jax.device_put(x)
        return self.xp.asarray(x)

    def compile(self, w: GpuWorkload) -> Callable:
        if self.name == "jitkernel":
            return self.jk.jit(w.make(np), backend="cuda")
        if self.name == "jax":
            return self.jax.jit(w.make(self.xp))
        return w.make(self.xp)  # CuPy: unfused ops; `a @ b` is cuBLAS

    def sync(self, out: Any) -> None:
        if self.name == "cupy":
            self.xp.cuda.get_current_stream().synchronize()
        elif out is not None:
            for leaf in out if isinstance(out, (tuple, list)) else (out,):
                leaf.block_until_ready()

    def to_host(self, out: Any) -> np.ndarray:
        if self.name == "cupy":
            return self.xp.asnumpy(out)
        return np.asarray(out)


def check(w: GpuWorkload, inputs: list[np.ndarray], got: np.ndarray) -> str:
    """'ok' or what differs from NumPy (on sampled rows/elements where the full reference is slow)."""
    fn = w.make(np)
    rng = np.random.default_rng(1)
    if w.name in ("W1",):
        idx = rng.integers(0, inputs[0].size, 10**6)
        ref, got = fn(inputs[0][idx]), got[idx]
    elif w.name in ("W3", "W4", "W6"):  # rows of the first argument (W6: its elements) are independent
        rows = rng.integers(0, inputs[0].shape[0], 256)
        ref, got = fn(inputs[0][rows], *inputs[1:]), got[rows]
    elif w.name == "matmul":
        rows = rng.integers(0, inputs[0].shape[0], 64)
        ref, got = inputs[0][rows] @ inputs[1], got[rows]
    else:
        ref = fn(*inputs)
    ref = np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"shape/dtype {got.shape} {got.dtype} != NumPy's {ref.shape} {ref.dtype}"
    if not np.allclose(got, ref, rtol=w.rtol, atol=w.rtol * float(np.max(np.abs(ref), initial=1.0))):
        return f"values differ from NumPy: max abs diff {float(np.max(np.abs(got - ref))):.3g}"
    return "ok"


def copy_bandwidth(nbytes: int = 1 << 30, repeat: int = 20) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + write), CuPy's memcpy, median of `repeat`."""
    import cupy
    a = cupy.ones(nbytes // 4, dtype=cupy.float32)
    b = cupy.empty_like(a)
    timer = Timer("cupy")
    for _ in range(3):
        b[...] = a
    ms = median_ms([timer.sample(lambda: cupy.copyto(b, a), lambda _: None) for _ in range(repeat)])
    return 2 * nbytes / (ms * 1e-3)


def run_workloads(impl_name: str, chosen: list[GpuWorkload], repeat: int, emit: Callable[[dict], None]) -> None:
    """The timed rows of one implementation, each emitted as soon as it exists (then its
    dispatch row)."""
    t0 = time.perf_counter()
    impl = Impl(impl_name)
    timer = Timer(impl_name)
    emit({"kind": "context", "impl": impl_name, "seconds": time.perf_counter() - t0})
    for w in chosen:
        row: dict = {"kind": "workload", "impl": impl_name, "workload": w.name, "timer": timer.kind}
        try:
            inputs = host_inputs(w)
            dev = [impl.put(x) for x in inputs]
            fn = impl.compile(w)
            t1 = time.perf_counter()
            out = fn(*dev)
            impl.sync(out)
            row["first_call_s"] = time.perf_counter() - t1
            row["check"] = check(w, inputs, impl.to_host(out))
            for _ in range(3):
                impl.sync(fn(*dev))
            samples = [timer.sample(lambda: fn(*dev), impl.sync) for _ in range(repeat)]  # noqa: F821 (pyflakes reads the `del dev` below as undefining the closure's name)
            row["median_ms"] = median_ms(samples)
            row["p10_ms"], row["p90_ms"] = (float(np.percentile(samples, q)) for q in (10, 90))
            row["bytes"] = w.moved
            del dev, out
        except Exception as e:  # one row failing (not rendered yet, out of memory) is a result too
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        emit(row)
    emit(dispatch_row(impl, timer))


def dispatch_row(impl: Impl, timer: Timer, calls: int = 1000) -> dict:
    row: dict = {"kind": "dispatch", "impl": impl.name}
    try:
        x = impl.put(np.arange(10, dtype=F32))
        fn = impl.compile(GpuWorkload("W7", "W7", ((10,),), 10, None, ""))
        for _ in range(10):
            impl.sync(fn(x))
        t0 = time.perf_counter()
        for _ in range(calls):
            out = fn(x)
        impl.sync(out)
        row["dispatch_us"] = (time.perf_counter() - t0) / calls * 1e6
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"[:300]
    return row


def first_call_row(cache_dir: str, label: str) -> dict:
    """In this (fresh) process: the CUDA context apart, then the first call of a new function."""
    row: dict = {"kind": label, "impl": "jitkernel", "cache_dir": cache_dir}
    try:
        t0 = time.perf_counter()
        import jitkernel as jk
        gpu = jk.devices("gpu")[0]
        x = jk.device_put(np.arange(1 << 20, dtype=F32), gpu)
        x.block_until_ready()
        row["context_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        jk.jit(XP_FACTORIES["W1"](np), backend="cuda")(x).block_until_ready()
        row["seconds"] = time.perf_counter() - t1
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"[:300]
    return row


# --------------------------------------------------------------------------- the table
def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def table(results: list[dict], copy_bw: float | None = None) -> str:
    """The short table: one line per workload (each implementation's median, jitkernel's
    achieved bandwidth and its ratios), then dispatch and first-call rows, each with its goal."""
    by = {(r["impl"], r.get("workload")): r for r in results if r.get("kind") == "workload"}
    lines = [f"copy bandwidth (device to device): {_fmt(copy_bw and copy_bw / 1e12, '.2f')} TB/s",
             f"{'row':<7} {'jitkernel ms':>12} {'JAX ms':>9} {'CuPy ms':>9} {'jk GB/s':>8} {'%copy':>6} "
             f"{'JAX/jk':>7} {'CuPy/jk':>8}  goal"]
    for w in WORKLOADS:
        rows = {impl: by.get((impl, w.name)) for impl in IMPLS}
        if not any(rows.values()):
            continue
        ms = {impl: (r or {}).get("median_ms") for impl, r in rows.items()}
        jk_ms = ms["jitkernel"]
        gbs = w.moved / (jk_ms * 1e-3) / 1e9 if jk_ms else None
        pct = 100 * gbs * 1e9 / copy_bw if gbs and copy_bw else None
        ratio = {impl: ms[impl] / jk_ms if ms[impl] and jk_ms else None for impl in ("jax", "cupy")}
        notes = [f"{impl}: {r['error']}" for impl, r in rows.items() if r and "error" in r]
        notes += [f"{impl}: {r['check']}" for impl, r in rows.items() if r and r.get("check", "ok") != "ok"]
        lines.append(f"{w.name:<7} {_fmt(jk_ms):>12} {_fmt(ms['jax']):>9} {_fmt(ms['cupy']):>9} {_fmt(gbs, '.0f'):>8} "
                     f"{_fmt(pct, '.0f'):>6} {_fmt(ratio['jax'], '.2f'):>7} {_fmt(ratio['cupy'], '.2f'):>8}  {w.goal}"
                     + ("  [" + "; ".join(notes)[:200] + "]" if notes else ""))
    for r in results:
        if r.get("kind") == "dispatch":
            lines.append(f"dispatch {r['impl']:<9} {_fmt(r.get('dispatch_us'), '.1f')} us/call"
                         + (f"  goal <= {GOALS['dispatch_us']:.0f} us" if r["impl"] == "jitkernel" else "")
                         + (f"  [{r['error']}]" if "error" in r else ""))
        elif r.get("kind") in ("first_call", "disk_hit"):
            goal = (f"<= {GOALS['first_call_s']:.0f} s" if r["kind"] == "first_call"
                    else f"<= {GOALS['disk_hit_ms']:.0f} ms")
            lines.append(f"{r['kind']:<18} {_fmt(r.get('seconds') and r['seconds'] * 1e3, '.1f')} ms "
                         f"(import + CUDA context apart: {_fmt(r.get('context_s'), '.2f')} s)  goal {goal}"
                         + (f"  [{r['error']}]" if "error" in r else ""))
    return "\n".join(lines)


# --------------------------------------------------------------------------- driver
def _emitter(path: Path | None) -> Callable[[dict], None]:
    def emit(row: dict) -> None:
        text = json.dumps(row, default=str)
        print(text, flush=True)
        if path is not None:
            with path.open("a") as f:
                f.write(text + "\n")
    return emit


def _worker(args: argparse.Namespace) -> int:
    emit = _emitter(args.jsonl)
    if args.worker in ("first_call", "disk_hit"):
        emit(first_call_row(os.environ.get("JITKERNEL_CACHE_DIR", ""), args.worker))
    elif args.worker == "copy":
        emit({"kind": "copy", "bytes_per_s": copy_bandwidth()})
    else:
        run_workloads(args.worker, workloads(args.workloads), args.repeat, emit)
    return 0


def _spawn(worker: str, args: argparse.Namespace, jsonl: Path, timeout: float, env: dict | None = None) -> str:
    cmd = [sys.executable, "-m", "benchmarks.gpu", "--worker", worker, "--jsonl", str(jsonl), "--repeat", str(args.repeat)]
    if args.workloads:
        cmd += ["--workloads", ",".join(args.workloads)]
    env = dict(os.environ, **(env or {}))
    if worker == "jax":  # JAX would otherwise take 75% of the GPU's memory at its first array
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        proc = subprocess.run(cmd, env=env, cwd=Path(__file__).resolve().parent.parent, timeout=timeout,
                              capture_output=True, text=True)
        return "" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr[-400:]}"
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dry-run", action="store_true", help="print which parts would run here and exit 0")
    p.add_argument("--out", type=Path, default=None, help="folder for results.jsonl and table.txt (default: a temporary one)")
    p.add_argument("--impls", default=",".join(IMPLS))
    p.add_argument("--workloads", default="", help=f"comma-separated, of {[w.name for w in WORKLOADS]}")
    p.add_argument("--repeat", type=int, default=20, help="timed samples per row (the median is reported)")
    p.add_argument("--budget", type=float, default=300.0, help="seconds for the whole benchmark")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--jsonl", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.impls = [i for i in args.impls.split(",") if i]
    args.workloads = [w for w in args.workloads.split(",") if w]
    unknown = set(args.impls) - set(IMPLS)
    if unknown:
        p.error(f"unknown implementations {sorted(unknown)}; known: {IMPLS}")
    workloads(args.workloads)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return _worker(args)
    parts = plan(args.impls, args.workloads)
    runs = [p for p in parts if p["runs"]]
    if args.dry_run or not runs:
        print("GPU benchmark plan" + (" (dry run)" if args.dry_run else " (nothing can run here)") + ":")
        print(f"  copy bandwidth: {'runs' if gpu_present() and importable('cupy') else 'skipped (needs a GPU and CuPy)'}")
        for p in parts:
            print(f"  {p['impl']:<10} {'runs' if p['runs'] else 'skipped: ' + p['why']}  ({', '.join(p['workloads'])})")
        jk_runs = any(p["impl"] == "jitkernel" and p["runs"] for p in parts)
        print(f"  first call / disk-cache hit / dispatch (jitkernel): {'runs' if jk_runs else 'skipped'}")
        print("goals: " + "; ".join(f"{w.name}: {w.goal}" for w in WORKLOADS)
              + f"; dispatch <= {GOALS['dispatch_us']:.0f} us; first call <= {GOALS['first_call_s']:.0f} s; "
              f"disk hit <= {GOALS['disk_hit_ms']:.0f} ms")
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="jk-gpu-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "gpu_bench.jsonl"
    deadline = time.monotonic() + args.budget
    problems = []

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    if importable("cupy"):
        problems.append(_spawn("copy", args, jsonl, min(60.0, left())))
    for n, p in enumerate(runs):  # a hung implementation may take its share and half again, not the rest
        share = left() / (len(runs) - n + (1 if p["impl"] == "jitkernel" else 0))
        problems.append(_spawn(p["impl"], args, jsonl, min(left(), 1.5 * share)))
    if any(p["impl"] == "jitkernel" for p in runs):
        cold = tempfile.mkdtemp(prefix="jk-gpu-cold-cache-")
        problems.append(_spawn("first_call", args, jsonl, min(120.0, left()), {"JITKERNEL_CACHE_DIR": cold}))
        problems.append(_spawn("disk_hit", args, jsonl, min(60.0, left()), {"JITKERNEL_CACHE_DIR": cold}))
    results = read_jsonl(jsonl)
    copy_bw = next((r["bytes_per_s"] for r in results if r.get("kind") == "copy"), None)
    text = table(results, copy_bw)
    (out / "gpu_bench_table.txt").write_text(text + "\n")
    for problem in filter(None, problems):
        print("worker problem:", problem)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
