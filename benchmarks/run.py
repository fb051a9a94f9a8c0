"""W1-W8 side by side: jitkernel, NumPy, numexpr, Numba and JAX (CPU), in one process.

    .venv/bin/python -m benchmarks.run                      # everything, default repetitions
    .venv/bin/python -m benchmarks.run --quick --repeat 3   # small sizes, a smoke run
    .venv/bin/python benchmarks/run.py --workloads W1,W3 --impls jitkernel,numpy --json out.json

What it does, per workload row: build the inputs (float32, fixed seed), compute NumPy's result as
the reference, then for every implementation: build it, call it once (compile; excluded from the
timing except in W8), check the result against NumPy's (shape, float32 dtype for arrays, allclose
with float32 tolerances; a mismatch is reported loudly and that implementation is NOT timed), call
it a second time (checked again, and timed to pick a batch size for tiny calls). Then time all
implementations round-robin: each repetition calls every implementation once (in a rotated
order), so slow drifts of a shared machine hit all of them alike. One sample is
`time.perf_counter_ns` around one call, or around a batch of calls divided by the batch size for
calls under 5 ms (W7: batches of 1000). Reported: median, p10-p90 of the samples, and the ratio
of the median to NumPy's median from the same run. Each call allocates its own output (no
`out=`). The result of a call is dropped before the next one (timeit style), which lets jitkernel
reuse a dropped output buffer; `--keep-outputs` keeps the previous result alive during the next
call instead.

Peers (numexpr, numba, jax) that are not installed are skipped with a note. Exit status: 0 when
every timed implementation was verified, 1 when something failed or mismatched (the table and the
JSON are written either way).

Threads (`--threads N`; the effective settings are printed in the header lines and kept in the JSON):
  by default every library uses its own default (usually: all CPUs of the process's affinity).
  `--threads N` sets, before any library is loaded (the process re-executes itself when needed):
    OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS   (NumPy's BLAS, also jitkernel's matmul)
    NUMEXPR_NUM_THREADS, NUMEXPR_MAX_THREADS                 (numexpr's pool)
    NUMBA_NUM_THREADS                                        (numba parallel=True / prange)
    XLA_FLAGS += --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1   (only N == 1)
  and pins the process to the first N CPUs of its affinity (os.sched_setaffinity), which is what
  makes it hold for XLA (whose CPU thread pool is sized from the affinity) and any other pool.
  jitkernel's generated kernels are single-threaded; its matmul calls NumPy (OpenBLAS threads).

OpenBLAS hints: this machine may export OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which force
OpenBLAS's kernel choice and the cache size its blocking assumes, and slow NumPy's BLAS (W5).
Both values are recorded. `--unset-openblas-hints` re-executes the process with BOTH removed from
the environment (they must be unset together: they are a pair, and removing only one leaves a
mixed configuration, a forced kernel with a detected cache size or the reverse, that is neither
the default nor the intended one). After that, check which kernel OpenBLAS actually runs: the
header prints it (threadpoolctl's `architecture` when threadpoolctl is importable, otherwise the
`*_get_corename*` function of the OpenBLAS bundled with NumPy, called through ctypes).

JAX runs on the CPU (JAX_PLATFORMS=cpu is set before importing it, inputs are placed on the CPU
device) in float32 (its default), every call ends with `.block_until_ready()`.

W8 measures a first call (trace + compile + first run) of a NEW function each repetition: a new
function object from a factory, wrapped by a new `jk.jit(..., disk_cache=False)` /
`numba.njit` / `jax.jit`. One untimed rep first takes the process-wide one-time initialisation
(LLVM, the numba threading layer, the XLA client) out of the numbers.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable

if __package__ in (None, ""):  # run as `python benchmarks/run.py`: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

IMPLS = ["numpy", "jitkernel", "numexpr", "numba", "numba-par", "jax"]
OPTIONAL_IMPLS = ["jitkernel-fastmath"]  # only with --impls
ORDER = ["numpy", "jitkernel", "jitkernel-fastmath", "numexpr", "numba", "numba-par", "jax"]
WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"]
OPENBLAS_HINTS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "NUMEXPR_MAX_THREADS", "NUMBA_NUM_THREADS", "JITKERNEL_THREADS", "XLA_FLAGS", "JAX_PLATFORMS")
REEXEC_MARK = "JK_BENCH_REEXECUTED"
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

DEFAULT_REPEAT = 15
W8_MAX_REPEAT = 5
BATCH_TARGET_NS = 5_000_000  # tiny calls are batched so that one sample lasts about this long
MAX_BATCH = 10_000
W7_BATCH = 1000
FIXED_BATCH_MAX_CALL_NS = 1_000_000  # W7 falls back to calibrated batches if one call takes > 1 ms


# ------------------------------------------------------------------------------------- options

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help="comma-separated: W1..W8, or single rows such as W1-1e5, W8-W3 (default: all)")
    p.add_argument("--impls", default=",".join(IMPLS),
                   help=f"comma-separated, from {ORDER} (default: {','.join(IMPLS)})")
    p.add_argument("--repeat", type=int, default=DEFAULT_REPEAT,
                   help=f"timed repetitions per implementation (default {DEFAULT_REPEAT}; "
                        f"W8 uses min(repeat, {W8_MAX_REPEAT}))")
    p.add_argument("--quick", action="store_true", help="small sizes, for smoke tests")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="thread count for every library (env vars + CPU affinity; see benchmarks/README.md)")
    p.add_argument("--unset-openblas-hints", action="store_true",
                   help="re-execute with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE both unset")
    p.add_argument("--keep-outputs", action="store_true",
                   help="keep the previous result alive during the next call (no output reuse)")
    p.add_argument("--json", default=None, metavar="PATH", help="write the results as JSON")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be >= 1")
    args.impls = [s.strip() for s in args.impls.split(",") if s.strip()]
    bad = [s for s in args.impls if s not in ORDER]
    if bad:
        p.error(f"unknown implementation(s) {bad}; choose from {ORDER}")
    args.workloads = [s.strip() for s in args.workloads.split(",") if s.strip()]
    bad = [s for s in args.workloads if s.split("-")[0].upper() not in WORKLOADS]
    if bad:
        p.error(f"unknown workload(s) {bad}; choose from {WORKLOADS}")
    return args


# ---------------------------------------------------------------- environment (before imports)

HEAVY_MODULES = ("numpy", "numba", "numexpr", "jax", "jitkernel", "llvmlite")


def _wanted_env(args: argparse.Namespace) -> dict[str, str | None]:
    """Environment changes the options ask for (None = unset)."""
    env: dict[str, str | None] = {}
    if args.unset_openblas_hints:
        env.update({k: None for k in OPENBLAS_HINTS})
    if args.threads is not None:
        n = str(args.threads)
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                  "NUMEXPR_MAX_THREADS", "NUMBA_NUM_THREADS", "JITKERNEL_THREADS"):
            env[k] = n
        if args.threads == 1:
            xla = os.environ.get("XLA_FLAGS", "")
            if "xla_cpu_multi_thread_eigen" not in xla:
                env["XLA_FLAGS"] = (xla + " " + XLA_ONE_THREAD).strip()
    return {k: v for k, v in env.items() if os.environ.get(k) != v}


def _pin(n: int) -> list[int] | None:
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))[:n]
    os.sched_setaffinity(0, cpus)
    return cpus


def prepare_environment(args: argparse.Namespace, argv: list[str], allow_reexec: bool) -> list[str]:
    """Apply --threads / --unset-openblas-hints before NumPy & co. are loaded. Returns notes."""
    notes: list[str] = []
    if args.threads is not None:
        cpus = _pin(args.threads)
        if cpus is not None:
            notes.append(f"--threads {args.threads}: process pinned to CPUs {cpus}")
    changes = _wanted_env(args)
    if args.unset_openblas_hints and not any(k in changes for k in OPENBLAS_HINTS) \
            and not os.environ.get(REEXEC_MARK):
        notes.append("--unset-openblas-hints: neither hint was set")
    if not changes:
        if os.environ.get(REEXEC_MARK):
            notes.append(f"re-executed with: {os.environ[REEXEC_MARK]}")
        return notes
    loaded = [m for m in HEAVY_MODULES if m in sys.modules]
    must_reexec = args.unset_openblas_hints or loaded
    if must_reexec and allow_reexec and not os.environ.get(REEXEC_MARK):
        env = dict(os.environ)
        for k, v in changes.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        env[REEXEC_MARK] = ", ".join(f"{k}: {os.environ.get(k, '<unset>')} -> {'<unset>' if v is None else v}"
                                     for k, v in changes.items())
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *argv], env)
    for k, v in changes.items():  # nothing loaded yet (or re-exec impossible): set them here
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    if loaded:
        notes.append(f"WARNING: {loaded} were already imported; thread/OpenBLAS env changes may not apply")
    return notes


# ------------------------------------------------------------------------------- the workloads
# One definition per workload for NumPy, jitkernel (the same NumPy code) and JAX (xp = jax.numpy).
# Factories: each call returns a NEW function object (W8 needs fresh functions, no cache hits).

def make_w1(xp):
    def w1(x):
        return xp.sin(x) * xp.cos(x) + xp.sin(x) ** 2
    return w1


def make_w2(xp):
    def w2(a, b, c):
        return xp.sum(xp.tanh(a * b + c))
    return w2


def make_w3(xp):
    def w3(x):
        e = xp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return w3


def make_w4(xp):
    def w4(x, g, b):
        m = x.mean(1, keepdims=True)
        v = ((x - m) ** 2).mean(1, keepdims=True)
        return (x - m) / xp.sqrt(v + 1e-5) * g + b
    return w4


def make_w5(xp):
    def w5(a, b):
        return a @ b
    return w5


def make_w6(xp):
    def w6(x, y):
        return ((x[:, None] - y[None, :]) ** 2).sum(1)
    return w6


def make_w7(xp):
    def w7(x):
        return x + 1
    return w7


XP_FACTORIES = {"W1": make_w1, "W2": make_w2, "W3": make_w3, "W4": make_w4, "W5": make_w5,
                "W6": make_w6, "W7": make_w7}

# Numba. `prange` is a module global that numba resolves at compile time (set when numba imports).
prange = range


def numba_factory(w: str) -> Callable:
    """@njit in vectorised-NumPy style. Numba has no axis= for max/mean, so W3/W4 go row by row
    (the vectorised style people write for Numba), still with array expressions per row."""
    np = sys.modules["numpy"]
    if w == "W3":
        def w3(x):
            out = np.empty_like(x)
            for i in range(x.shape[0]):
                e = np.exp(x[i] - x[i].max())
                out[i] = e / e.sum()
            return out
        return w3
    if w == "W4":
        def w4(x, g, b):
            out = np.empty_like(x)
            eps = np.float32(1e-5)
            for i in range(x.shape[0]):
                r = x[i]
                d = r - np.float32(r.mean())
                v = np.float32((d * d).mean())
                out[i] = d / np.sqrt(v + eps) * g + b
            return out
        return w4
    return XP_FACTORIES[w](np)


def numba_par_factory(w: str) -> Callable:
    """@njit(parallel=True, fastmath=True) explicit loops, prange over rows (or elements)."""
    np = sys.modules["numpy"]
    if w == "W1":
        def w1(x):
            out = np.empty_like(x)
            for i in prange(x.shape[0]):
                v = x[i]
                out[i] = np.sin(v) * np.cos(v) + np.sin(v) ** 2
            return out
        return w1
    if w == "W2":
        def w2(a, b, c):
            acc = 0.0  # float64 accumulator (the usual Numba idiom)
            for i in prange(a.shape[0]):
                acc += np.tanh(a[i] * b[i] + c[i])
            return np.float32(acc)
        return w2
    if w == "W3":
        def w3(x):
            n, m = x.shape
            out = np.empty_like(x)
            for i in prange(n):
                mx = x[i, 0]
                for j in range(1, m):
                    mx = max(mx, x[i, j])
                s = np.float32(0.0)
                for j in range(m):
                    e = np.exp(x[i, j] - mx)
                    out[i, j] = e
                    s += e
                for j in range(m):
                    out[i, j] = out[i, j] / s
            return out
        return w3
    if w == "W4":
        def w4(x, g, b):
            n, m = x.shape
            out = np.empty_like(x)
            inv_m = np.float32(1.0 / m)
            eps = np.float32(1e-5)
            for i in prange(n):
                s = np.float32(0.0)
                for j in range(m):
                    s += x[i, j]
                mean = s * inv_m
                q = np.float32(0.0)
                for j in range(m):
                    d = x[i, j] - mean
                    q += d * d
                r = np.float32(1.0) / np.sqrt(q * inv_m + eps)
                for j in range(m):
                    out[i, j] = (x[i, j] - mean) * r * g[j] + b[j]
            return out
        return w4
    if w == "W5":
        def w5(a, b):
            n, k = a.shape
            m = b.shape[1]
            out = np.zeros((n, m), dtype=a.dtype)
            for i in prange(n):
                for p in range(k):
                    aip = a[i, p]
                    for j in range(m):
                        out[i, j] += aip * b[p, j]
            return out
        return w5
    if w == "W6":
        def w6(x, y):
            out = np.empty_like(x)
            for i in prange(x.shape[0]):
                xi = x[i]
                acc = np.float32(0.0)
                for j in range(y.shape[0]):
                    d = xi - y[j]
                    acc += d * d
                out[i] = acc
            return out
        return w6
    if w == "W7":
        def w7(x):
            out = np.empty_like(x)
            for i in prange(x.shape[0]):
                out[i] = x[i] + np.float32(1.0)
            return out
        return w7
    raise KeyError(w)


def numexpr_function(w: str) -> Callable | None:
    """numexpr for the elementwise parts, NumPy for reductions (how people use it). None: n/a."""
    np = sys.modules["numpy"]
    ne = sys.modules["numexpr"]
    ev = ne.evaluate
    if w == "W1":
        return lambda x: ev("sin(x) * cos(x) + sin(x)**2", local_dict={"x": x})
    if w == "W2":
        return lambda a, b, c: np.sum(ev("tanh(a * b + c)", local_dict={"a": a, "b": b, "c": c}))
    if w == "W3":
        def w3(x):
            m = x.max(axis=1, keepdims=True)
            e = ev("exp(x - m)", local_dict={"x": x, "m": m})
            s = e.sum(axis=1, keepdims=True)
            return ev("e / s", local_dict={"e": e, "s": s})
        return w3
    if w == "W4":
        eps = np.float32(1e-5)  # a Python float constant would make numexpr compute in float64

        def w4(x, g, b):
            m = x.mean(1, keepdims=True)
            d = ev("x - m", local_dict={"x": x, "m": m})
            v = ev("d * d", local_dict={"d": d}).mean(1, keepdims=True)
            return ev("d / sqrt(v + eps) * g + b", local_dict={"d": d, "v": v, "eps": eps, "g": g, "b": b})
        return w4
    if w == "W5":
        return None  # numexpr has no matmul
    if w == "W6":
        return lambda x, y: ev("(xc - yr)**2", local_dict={"xc": x[:, None], "yr": y[None, :]}).sum(1)
    if w == "W7":
        return lambda x: ev("x + 1", local_dict={"x": x})
    raise KeyError(w)


@dataclass
class Case:
    row: str            # e.g. "W1-1e5", "W8-W3"
    workload: str       # W1..W8
    size: str           # human-readable size actually used
    inputs: Callable[[Any], tuple]  # rng -> tuple of float32 arrays
    kernel: str         # the W1..W7 computation
    first_call: bool = False  # W8
    rtol: float = 1e-4
    atol_rel: float = 1e-5    # atol = atol_rel * max|reference|
    fixed_batch: int | None = None
    note: str = ""


def build_cases(quick: bool) -> list[Case]:
    np = sys.modules["numpy"]
    f32 = np.float32

    def vec(n, k=1, uniform=False):
        def make(rng):
            if uniform:
                return tuple(rng.random(n, dtype=f32) for _ in range(k))
            return tuple(rng.standard_normal(n, dtype=f32) for _ in range(k))
        return make

    def rows(shape, affine=False):
        def make(rng):
            x = rng.standard_normal(shape, dtype=f32)
            if not affine:
                return (x,)
            return x, rng.standard_normal(shape[1], dtype=f32), rng.standard_normal(shape[1], dtype=f32)
        return make

    def mats(n):
        return lambda rng: (rng.standard_normal((n, n), dtype=f32), rng.standard_normal((n, n), dtype=f32))

    w1_sizes = [("1e7", 10**5 if quick else 10**7), ("1e5", 10**4 if quick else 10**5), ("1e3", 10**3)]
    n2 = 10**5 if quick else 10**7
    rc = (256, 256) if quick else (4096, 1024)
    n5 = 128 if quick else 1024
    n6 = 512 if quick else 4096
    cases = [Case(f"W1-{tag}", "W1", f"n={n}", vec(n), "W1") for tag, n in w1_sizes]
    cases += [
        # uniform [0,1) inputs: every term positive, so the float32 sum is well conditioned and
        # a 1e-3 relative tolerance separates float32 rounding from a wrong answer
        Case("W2", "W2", f"n={n2}", vec(n2, 3, uniform=True), "W2", rtol=1e-3, atol_rel=0.0),
        Case("W3", "W3", f"{rc[0]}x{rc[1]}", rows(rc), "W3"),
        Case("W4", "W4", f"{rc[0]}x{rc[1]}", rows(rc, affine=True), "W4"),
        Case("W5", "W5", f"{n5}^3", mats(n5), "W5", atol_rel=1e-4),
        Case("W6", "W6", f"n={n6}", vec(n6, 2), "W6"),
        Case("W7", "W7", "n=10", vec(10), "W7", fixed_batch=W7_BATCH, note=f"per call, batches of {W7_BATCH}"),
        Case("W8-W1", "W8", f"W1 n={w1_sizes[1][1]}", vec(w1_sizes[1][1]), "W1", first_call=True),
        Case("W8-W3", "W8", f"W3 {rc[0]}x{rc[1]}", rows(rc), "W3", first_call=True),
    ]
    return cases


def select_cases(cases: list[Case], wanted: list[str]) -> list[Case]:
    def hit(c: Case, w: str) -> bool:
        return w.lower() in (c.row.lower(), c.workload.lower())
    unknown = [w for w in wanted if not any(hit(c, w) for c in cases)]
    if unknown:
        raise SystemExit(f"benchmarks: no workload row named {unknown}; rows: {[c.row for c in cases]}")
    return [c for c in cases if any(hit(c, w) for w in wanted)]


# --------------------------------------------------------------------------- implementations

@dataclass
class Libs:
    np: Any = None
    jk: Any = None
    ne: Any = None
    numba: Any = None
    jax: Any = None
    jnp: Any = None
    missing: dict[str, str] = field(default_factory=dict)  # impl -> reason


def load_libs(impls: list[str]) -> Libs:
    import numpy as np
    libs = Libs(np=np)

    def need(*names):
        return any(n in impls for n in names)

    if need("jitkernel", "jitkernel-fastmath"):
        try:
            import jitkernel as jk
            libs.jk = jk
        except Exception as e:  # noqa: BLE001
            for n in ("jitkernel", "jitkernel-fastmath"):
                libs.missing[n] = f"import failed: {type(e).__name__}: {e}"
    if need("numexpr"):
        try:
            import numexpr
            libs.ne = numexpr
        except ImportError as e:
            libs.missing["numexpr"] = f"not installed ({e})"
    if need("numba", "numba-par"):
        try:
            import numba
            libs.numba = numba
            globals()["prange"] = numba.prange
        except ImportError as e:
            libs.missing["numba"] = libs.missing["numba-par"] = f"not installed ({e})"
    if need("jax"):
        os.environ["JAX_PLATFORMS"] = "cpu"
        try:
            import jax
            import jax.numpy as jnp
            libs.jax, libs.jnp = jax, jnp
        except ImportError as e:
            libs.missing["jax"] = f"not installed ({e})"
    return libs


class NotApplicable(Exception):
    pass


def build_call(impl: str, case: Case, args: tuple, libs: Libs) -> Callable[[], Any]:
    """A zero-argument callable running `impl` on `args` (for W8: a fresh compile + first run)."""
    np, w = libs.np, case.kernel
    if impl == "numpy":
        if case.first_call:
            raise NotApplicable("no compilation")
        f = XP_FACTORIES[w](np)
        return lambda: f(*args)
    if impl in ("jitkernel", "jitkernel-fastmath"):
        jk, fm = libs.jk, impl == "jitkernel-fastmath"
        if case.first_call:
            return lambda: jk.jit(XP_FACTORIES[w](np), fastmath=fm, disk_cache=False)(*args)
        f = jk.jit(XP_FACTORIES[w](np), fastmath=fm)
        return lambda: f(*args)
    if impl == "numexpr":
        if case.first_call:
            raise NotApplicable("no compilation")
        f = numexpr_function(w)
        if f is None:
            raise NotApplicable("no matmul in numexpr")
        return lambda: f(*args)
    if impl in ("numba", "numba-par"):
        nb = libs.numba
        if impl == "numba":
            wrap, factory = nb.njit, numba_factory
        else:
            wrap, factory = nb.njit(parallel=True, fastmath=True), numba_par_factory
        if case.first_call:
            return lambda: wrap(factory(w))(*args)
        f = wrap(factory(w))
        return lambda: f(*args)
    if impl == "jax":
        jax = libs.jax
        cpu = jax.devices("cpu")[0]
        jargs = tuple(jax.device_put(a, cpu) for a in args)
        if case.first_call:
            return lambda: jax.jit(XP_FACTORIES[w](libs.jnp))(*jargs).block_until_ready()
        f = jax.jit(XP_FACTORIES[w](libs.jnp))
        return lambda: f(*jargs).block_until_ready()
    raise KeyError(impl)


# --------------------------------------------------------------------------------- measuring

@dataclass
class Result:
    row: str
    workload: str
    size: str
    impl: str
    status: str = "ok"  # ok | MISMATCH | FAILED | n/a | skipped
    detail: str = ""
    batch: int = 1
    samples_ns: list[float] = field(default_factory=list)  # per call
    median_ns: float | None = None
    p10_ns: float | None = None
    p90_ns: float | None = None
    ratio_to_numpy: float | None = None
    max_err: float | None = None  # max |out - ref| / max |ref|
    warmup_ns: float | None = None  # first call (compile + run); for W8 the discarded rep
    traceback: str | None = None


def verify(out: Any, ref: Any, case: Case, np: Any) -> tuple[bool, float | None, str]:
    try:
        o = np.asarray(out)
    except Exception as e:  # noqa: BLE001
        return False, None, f"result not convertible to an array: {type(e).__name__}: {e}"
    r = np.asarray(ref)
    if r.ndim == 0:
        if o.size != 1:
            return False, None, f"expected a scalar, got shape {o.shape}"
        o = o.reshape(())
    else:
        if o.shape != r.shape:
            return False, None, f"shape {o.shape} != NumPy's {r.shape}"
        if o.dtype != r.dtype:
            return False, None, f"dtype {o.dtype} != NumPy's {r.dtype}"
    o64, r64 = o.astype(np.float64), r.astype(np.float64)
    if not np.array_equal(np.isfinite(o64), np.isfinite(r64)):
        return False, None, "non-finite values where NumPy's are finite (or the reverse)"
    fin = np.isfinite(r64)
    scale = float(np.max(np.abs(r64[fin]))) if fin.any() else 1.0
    scale = scale or 1.0
    err = float(np.max(np.abs(o64[fin] - r64[fin]))) / scale if fin.any() else 0.0
    ok = bool(np.allclose(o64[fin], r64[fin], rtol=case.rtol, atol=case.atol_rel * scale))
    if not ok:
        bad = np.abs(o64 - r64) > case.atol_rel * scale + case.rtol * np.abs(r64)
        idx = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
        return False, err, (f"{int(bad.sum())} of {bad.size} values out of tolerance (rtol={case.rtol}, "
                            f"atol={case.atol_rel}*max|ref|); e.g. at {tuple(int(i) for i in idx)}: "
                            f"{o64[idx]!r} vs NumPy {r64[idx]!r}; max scaled err {err:.2e}")
    return True, err, ""


def _timed(fn: Callable[[], Any], batch: int, keep: list | None = None) -> float:
    """Per-call time of `batch` calls. keep: a one-slot list holding the previous result, which
    then stays alive during the next call (--keep-outputs)."""
    clock = time.perf_counter_ns
    if keep is not None:
        t0 = clock()
        for _ in range(batch):
            keep[0] = fn()  # assigned after the call returns: the old result was alive during it
        t1 = clock()
    elif batch == 1:
        t0 = clock()
        fn()
        t1 = clock()
    else:
        t0 = clock()
        for _ in range(batch):
            fn()
        t1 = clock()
    return (t1 - t0) / batch


def _fail(res: Result, status: str, exc: BaseException | None = None, detail: str = "") -> Result:
    res.status = status
    if exc is not None:
        first = (str(exc).strip().splitlines() or [""])[0]
        res.detail = f"{type(exc).__name__}: {first}"[:300]
        res.traceback = "".join(traceback.format_exception(exc))[-4000:]
    else:
        res.detail = detail
    return res


def run_case(case: Case, impls: list[str], libs: Libs, args: argparse.Namespace) -> list[Result]:
    np = libs.np
    rng = np.random.default_rng([args.seed, int.from_bytes(case.row.encode(), "little") % 2**32])
    inputs = case.inputs(rng)
    ref = XP_FACTORIES[case.kernel](np)(*inputs)
    results: dict[str, Result] = {}
    calls: dict[str, Callable[[], Any]] = {}
    for impl in impls:
        res = results[impl] = Result(case.row, case.workload, case.size, impl)
        if impl in libs.missing:
            res.status, res.detail = "skipped", libs.missing[impl]
            continue
        try:
            fn = build_call(impl, case, inputs, libs)
            t0 = time.perf_counter_ns()
            out = fn()  # warm-up: compiles (W8: the discarded first rep)
            res.warmup_ns = time.perf_counter_ns() - t0
        except NotApplicable as e:
            res.status, res.detail = "n/a", str(e)
            continue
        except Exception as e:  # noqa: BLE001
            _fail(res, "FAILED", e)
            continue
        ok, res.max_err, why = verify(out, ref, case, np)
        del out
        if not ok:
            _fail(res, "MISMATCH", detail=why)
            continue
        try:
            if case.first_call:
                res.batch = 1
            else:
                # second warm-up call, also the calibration; its result is checked too (a stale
                # or reused output buffer would show up here, not in the first call)
                t0 = time.perf_counter_ns()
                out = fn()
                t = time.perf_counter_ns() - t0
                ok, err2, why = verify(out, ref, case, np)
                del out
                if not ok:
                    _fail(res, "MISMATCH", detail="second call: " + why)
                    continue
                res.batch = max(1, min(MAX_BATCH, math.ceil(BATCH_TARGET_NS / max(t, 1.0)))) \
                    if t < BATCH_TARGET_NS else 1
                if case.fixed_batch and t < FIXED_BATCH_MAX_CALL_NS:
                    res.batch = case.fixed_batch
        except Exception as e:  # noqa: BLE001
            _fail(res, "FAILED", e)
            continue
        calls[impl] = fn

    reps = min(args.repeat, W8_MAX_REPEAT) if case.first_call else args.repeat
    order = [i for i in impls if i in calls]
    keep = {i: [None] for i in order} if args.keep_outputs else {}
    gc.collect()
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for rep in range(reps):
            k = rep % len(order) if order else 0
            for impl in order[k:] + order[:k]:  # round-robin, rotated start
                if impl not in calls:
                    continue
                try:
                    results[impl].samples_ns.append(_timed(calls[impl], results[impl].batch, keep.get(impl)))
                except Exception as e:  # noqa: BLE001
                    _fail(results[impl], "FAILED", e)
                    del calls[impl]
            if case.first_call:
                gc.collect()  # compiled functions pile up otherwise
    finally:
        if gc_was:
            gc.enable()
    for res in results.values():
        if res.status == "ok" and res.samples_ns:
            p10, p50, p90 = np.percentile(np.array(res.samples_ns), [10, 50, 90])
            res.median_ns, res.p10_ns, res.p90_ns = float(p50), float(p10), float(p90)
    base = results.get("numpy")
    if base is not None and base.median_ns:
        for res in results.values():
            if res.median_ns:
                res.ratio_to_numpy = res.median_ns / base.median_ns
    calls.clear()
    keep.clear()
    del inputs, ref
    gc.collect()
    return [results[i] for i in impls]


# ------------------------------------------------------------------------------------ report

def fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            v = ns / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{ns:.3g} ns"


COLS = [("row", 7), ("size", 17), ("impl", 18), ("median", 10), ("p10 - p90", 21), ("t/numpy", 8),
        ("err", 8), ("status", 0)]


def table_header() -> str:
    head = "  ".join(name.ljust(w) if w else name for name, w in COLS)
    return head + "\n" + "-" * max(len(head), 100)


def table_row(r: Result, first: bool) -> str:
    spread = f"{fmt_ns(r.p10_ns)} - {fmt_ns(r.p90_ns)}" if r.median_ns is not None else ""
    ratio = f"{r.ratio_to_numpy:.2f}x" if r.ratio_to_numpy is not None else ""
    err = f"{r.max_err:.0e}" if r.max_err is not None else ""
    status = r.status if r.status != "ok" else ("ok" + (f" (batch {r.batch})" if r.batch > 1 else ""))
    if r.detail:
        status += f": {r.detail}"
    cells = [r.row if first else "", r.size if first else "", r.impl,
             fmt_ns(r.median_ns) if r.median_ns is not None else "-", spread, ratio, err, status]
    return "  ".join(c.ljust(w) if w else c for c, (_, w) in zip(cells, COLS))


def cpu_info() -> dict[str, Any]:
    info: dict[str, Any] = {"model": platform.processor() or platform.machine(), "logical_cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        models = [line.split(":", 1)[1].strip() for line in text.splitlines()
                  if line.lower().startswith(("model name", "hardware", "cpu model"))]
        if models:
            info["model"] = models[0]
        cores, cur = set(), {}
        for line in text.splitlines() + [""]:
            if not line.strip():
                if "core id" in cur:
                    cores.add((cur.get("physical id"), cur["core id"]))
                cur = {}
            elif ":" in line:
                k, v = line.split(":", 1)
                cur[k.strip()] = v.strip()
        if cores:
            info["physical_cores"] = len(cores)
        flags = next((line.split(":", 1)[1].split() for line in text.splitlines()
                      if line.startswith("flags")), [])
        info["simd"] = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "amx_tile") if f in flags]
    except OSError:
        pass
    if hasattr(os, "sched_getaffinity"):
        info["affinity_cpus"] = len(os.sched_getaffinity(0))
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        info["memory_gib"] = round(kb / 2**20, 1)
    except (OSError, StopIteration, ValueError):
        pass
    if hasattr(os, "getloadavg"):
        info["loadavg_start"] = [round(v, 2) for v in os.getloadavg()]
    return info


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("jitkernel", "numpy", "llvmlite", "numba", "numexpr", "jax", "jaxlib", "scipy", "threadpoolctl"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def blas_info(np: Any) -> dict[str, Any]:
    """Which BLAS NumPy uses and which OpenBLAS kernel (core type) it actually runs."""
    info: dict[str, Any] = {k: os.environ.get(k, "<unset>") for k in OPENBLAS_HINTS}
    try:
        deps = np.__config__.CONFIG["Build Dependencies"]["blas"]
        info["numpy_blas"] = f"{deps.get('name')} {deps.get('version')}"
    except Exception:  # noqa: BLE001
        pass
    try:
        from threadpoolctl import threadpool_info
        info["threadpoolctl"] = [{k: d.get(k) for k in ("internal_api", "prefix", "version", "architecture",
                                                         "num_threads", "filepath")} for d in threadpool_info()]
        blas = [d for d in info["threadpoolctl"] if d.get("internal_api") == "openblas"]
        if blas:
            info["openblas_kernel"] = f"{blas[0]['architecture']} (threadpoolctl)"
        return info
    except ImportError:
        pass
    try:  # fallback: ask the OpenBLAS bundled with NumPy through ctypes
        import ctypes
        import glob
        libdir = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
        for path in glob.glob(os.path.join(libdir, "*openblas*")):
            lib = ctypes.CDLL(path)
            for sym in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                        "openblas_get_corename64_", "openblas_get_corename"):
                fn = getattr(lib, sym, None)
                if fn is not None:
                    fn.restype = ctypes.c_char_p
                    info["openblas_kernel"] = f"{fn().decode()} ({sym} via ctypes; threadpoolctl not installed)"
                    nt = getattr(lib, sym.replace("get_corename", "get_num_threads"), None)
                    if nt is not None:
                        nt.restype = ctypes.c_int
                        info["openblas_threads"] = nt()
                    return info
    except Exception as e:  # noqa: BLE001
        info["openblas_kernel"] = f"unknown ({type(e).__name__}: {e})"
    return info


def thread_info(libs: Libs) -> dict[str, Any]:
    import jitkernel as jk
    info: dict[str, Any] = {"env": {k: os.environ.get(k, "<unset>") for k in THREAD_VARS},
                            "jitkernel": f"{jk.config.threads} thread(s) for large kernels "
                                         "(JITKERNEL_THREADS); matmul via NumPy (OpenBLAS threads)"}
    if libs.ne is not None:
        ne = libs.ne
        info["numexpr"] = ne.get_num_threads() if hasattr(ne, "get_num_threads") else getattr(ne, "nthreads", "?")
    if libs.numba is not None:
        info["numba"] = libs.numba.get_num_threads()
        info["numba_threading_layer"] = libs.numba.config.THREADING_LAYER
    if libs.jax is not None:
        try:
            info["jax_devices"] = [str(d) for d in libs.jax.devices()]
        except Exception as e:  # noqa: BLE001
            info["jax_devices"] = f"{type(e).__name__}: {e}"
    return info


def main(argv: list[str] | None = None, allow_reexec: bool = False) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(raw)
    notes = prepare_environment(args, raw, allow_reexec)
    impls = [i for i in ORDER if i in args.impls]
    libs = load_libs(impls)
    np = libs.np
    for impl in impls:
        if impl in libs.missing:
            notes.append(f"{impl}: skipped, {libs.missing[impl]}")
    cases = select_cases(build_cases(args.quick), args.workloads)

    machine, vers, blas = cpu_info(), versions(), blas_info(np)
    out = sys.stdout
    p = lambda s="": print(s, file=out, flush=True)  # noqa: E731
    p(f"jitkernel benchmarks{' (QUICK sizes)' if args.quick else ''}: repeat={args.repeat}, "
      f"impls={','.join(impls)}, seed={args.seed}, keep_outputs={args.keep_outputs}")
    p(f"machine: {machine.get('model')}, {machine.get('logical_cpus')} logical CPUs"
      f" ({machine.get('physical_cores', '?')} cores, {machine.get('affinity_cpus', '?')} in affinity),"
      f" {machine.get('memory_gib', '?')} GiB, SIMD {'/'.join(machine.get('simd', [])) or '?'},"
      f" load avg {machine.get('loadavg_start')}")
    p("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    p("BLAS: " + ", ".join(f"{k}={v}" for k, v in blas.items() if k != "threadpoolctl"))
    # thread counts (importing the peers happened in load_libs; JAX's client starts lazily)
    tinfo = thread_info(libs)
    p("threads: " + ", ".join(f"{k}={v}" for k, v in tinfo.items() if k != "env")
      + " | env " + " ".join(f"{k}={v}" for k, v in tinfo["env"].items()))
    for n in notes:
        p(f"note: {n}")
    p("t/numpy = median / NumPy's median in this run (< 1: faster than NumPy); err = max|out-ref|/max|ref|;"
      " small rows are per call over batches (W7: 1000 calls); W8 = new function, trace+compile+first call")
    p()
    p(table_header())

    all_results: list[Result] = []
    t_start = time.perf_counter()
    for case in cases:
        res = run_case(case, impls, libs, args)
        for i, r in enumerate(res):
            p(table_row(r, i == 0))
        p()
        all_results.extend(res)
    elapsed = time.perf_counter() - t_start

    problems = [r for r in all_results if r.status in ("MISMATCH", "FAILED")]
    if problems:
        p("!" * 100)
        p(f"PROBLEMS ({len(problems)}): these implementations were NOT timed")
        for r in problems:
            p(f"  {r.row} {r.impl}: {r.status}: {r.detail}")
        p("!" * 100)
        for r in problems:
            print(f"benchmarks: {r.row} {r.impl}: {r.status}: {r.detail}", file=sys.stderr)
    verified = [r for r in all_results if r.status == "ok"]
    p(f"verified against NumPy: {len(verified)} timed rows ok, {len(problems)} problems; {elapsed:.1f} s")

    if args.json:
        machine["loadavg_end"] = [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None
        tinfo = thread_info(libs)  # after the runs: numba's threading layer is known now
        if libs.numba is not None:
            try:
                tinfo["numba_threading_layer"] = libs.numba.threading_layer()
            except Exception:  # noqa: BLE001 - no parallel function ran
                pass
        doc = {"argv": raw, "quick": args.quick, "repeat": args.repeat, "seed": args.seed,
               "keep_outputs": args.keep_outputs, "impls": impls, "machine": machine, "versions": vers,
               "blas": blas, "reexecuted_with": os.environ.get(REEXEC_MARK), "threads": tinfo, "notes": notes,
               "elapsed_s": elapsed,
               "results": [r.__dict__ for r in all_results]}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, default=str)
        p(f"JSON written to {args.json}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(allow_reexec=True))
