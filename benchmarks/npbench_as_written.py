"""NPBench as written: every NumPy kernel of an NPBench checkout, unmodified, under ``jk.jit``.

jitkernel was first measured on NPBench's 54 NumPy kernels as a new user would use it: put
``jk.jit`` on the function and call it. This harness repeats that measurement. It never copies NPBench's code
into this repository: each kernel is imported at run time from the checkout given with
``--npbench`` (a directory holding ``bench_info/`` and ``npbench/benchmarks/``, or NPBench's bare
git directory, which is extracted to a temporary directory first).

For every kernel, in a subprocess of its own with a time limit:

1. the inputs come from the benchmark's own ``initialize`` at the preset's sizes (``--preset S``,
   NPBench's smallest, by default; ``--scale`` shrinks every size parameter for a quick run);
2. the function runs with NumPy and under ``jk.jit`` (``--backend cpu`` by default; on
   ``tpu`` / ``tpu-interpret`` the primitives run as host steps are recorded too), each on its
   own deep copies of the inputs (the kernels mutate their arguments);
3. the return value and the final contents of every argument array are compared: same type
   (array or scalar), dtype, shape, and values within a float tolerance.

Each kernel is classified ``ok`` (runs and matches), ``WRONG`` (runs, differs: the worst
outcome), ``raises`` (exception type and the first line of its message), ``timeout``, or
``numpy-fails`` (the reference itself could not run) or ``setup-fails`` (NPBench's
``initialize`` could not run here, e.g. a package it imports is missing). ``--time`` also measures the median warm
time of both.

``--numba-python PYTHON`` adds Numba, run in that interpreter (a virtualenv with numba, numpy and
scipy, which Numba's ``np.dot`` needs; never a dependency of jitkernel): for each kernel, each
Numba variant NPBench ships (``<module>_numba_<variant>.py``; ``--numba-variants``, by default
the nopython ones: ``n`` serial, ``np`` parallel, ``npr`` parallel with ``prange``) runs in a
child process of its own on the same ``initialize`` inputs, is checked against NumPy like the
jit result, and with ``--time`` is timed the same way (median warm time; the first call, which
compiles, excluded). The table then shows Numba's fastest matching variant and jit / Numba. Example::

    .venv/bin/python benchmarks/npbench_as_written.py --npbench /tmp/npbench --time
    .venv/bin/python benchmarks/npbench_as_written.py --npbench /tmp/npbench --only jacobi_2d,lu
    .venv/bin/python benchmarks/npbench_as_written.py --npbench /tmp/npbench --backend tpu-interpret --time \
        --output benchmarks/results/npbench-tpu-interpret.txt --jsonl benchmarks/results/npbench-tpu-interpret.jsonl
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/npbench_as_written.py --npbench /tmp/npbench --time \
        --numba-python /tmp/peers/bin/python --output benchmarks/results/npbench-vs-numba.txt \
        --jsonl benchmarks/results/npbench-vs-numba.jsonl
"""

from __future__ import annotations

import argparse
import copy
import datetime
import importlib.util
import inspect
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = REPO / "benchmarks" / "results" / "npbench-as-written.txt"

# Float tolerance of "matches": NumPy's and our reductions follow the same order (pairwise sums,
# BLAS for matmul), so differences are rounding in fused expressions; chaotic kernels amplify
# them, which is why the check is relative to the magnitude of the whole array (atol) as well.
RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4}
RTOL_DEFAULT = 1e-7
# Environment variables that set the thread counts of the libraries compared: the header repeats them.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "JITKERNEL_THREADS", "NUMBA_NUM_THREADS")


# --------------------------------------------------------------------------- the checkout


def resolve_checkout(path: pathlib.Path) -> pathlib.Path:
    """A directory with ``bench_info/`` and ``npbench/``; a bare git directory is extracted."""
    if (path / "bench_info").is_dir():
        return path
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        target = pathlib.Path(tempfile.mkdtemp(prefix="npbench-"))
        archive = subprocess.run(["git", "-C", str(path), "archive", "HEAD", "npbench", "bench_info"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        return target
    raise SystemExit(f"{path}: neither an NPBench checkout (bench_info/) nor its git directory")


def load_infos(root: pathlib.Path) -> dict[str, dict]:
    """Benchmark name (the json file's stem) -> its ``benchmark`` record."""
    infos = {}
    for path in sorted((root / "bench_info").glob("*.json")):
        infos[path.stem] = json.loads(path.read_text())["benchmark"]
    return infos


def load_module(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scaled_parameters(params: dict, scale: float) -> dict:
    """Size parameters (ints > 2) times ``scale``; floats and small counts are kept."""
    if scale == 1.0:
        return dict(params)
    out = {}
    for key, value in params.items():
        if isinstance(value, int) and not isinstance(value, bool) and value > 2:
            out[key] = max(2, int(round(value * scale)))
        else:
            out[key] = value
    return out


def make_inputs(root: pathlib.Path, info: dict, preset: str, scale: float, datatype: str = "float64"):
    """(kernel function, ordered argument names, argument values) as NPBench builds them; with
    ``datatype`` "float32", NPBench's own ``initialize(..., datatype=np.float32)`` where it takes one,
    and every float64 (complex128) array it still makes cast to float32 (complex64)."""
    data: dict[str, Any] = scaled_parameters(info["parameters"][preset], scale)
    init = info.get("init")
    if init:
        init_module = load_module(bench_dir(root, info) / f"{info['module_name']}.py", f"npbench_{info['module_name']}")
        init_func = getattr(init_module, init["func_name"])
        extra = ({"datatype": np.dtype(datatype).type}
                 if datatype != "float64" and "datatype" in inspect.signature(init_func).parameters else {})
        values = init_func(*[data[a] for a in init["input_args"]], **extra)
        if len(init["output_args"]) == 1:
            values = (values,)
        if datatype != "float64":  # what an initialize without the parameter made in float64 / complex128
            values = tuple(narrowed(v, np.dtype(datatype)) for v in values)
        data.update(zip(init["output_args"], values))
    names = list(info["input_args"])
    return load_kernel(root, info, "numpy"), names, [data[n] for n in names]


def narrowed(value: Any, real: np.dtype) -> Any:
    """A float64 or complex128 array as `real` (float32) or its complex type; anything else as it is."""
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return value.astype(real)
    if isinstance(value, np.ndarray) and value.dtype == np.complex128:
        return value.astype(np.result_type(real, np.complex64))
    return value


def bench_dir(root: pathlib.Path, info: dict) -> pathlib.Path:
    return root / "npbench" / "benchmarks" / info["relative_path"]


def kernel_file(root: pathlib.Path, info: dict, suffix: str) -> pathlib.Path:
    """NPBench's implementation file of one framework: ``numpy``, ``numba_n``, ``numba_np``, ..."""
    return bench_dir(root, info) / f"{info['module_name']}_{suffix}.py"


def load_kernel(root: pathlib.Path, info: dict, suffix: str):
    """The benchmark's function from ``kernel_file``; NPBench calls every framework's version
    by the same name with the same arguments."""
    module = load_module(kernel_file(root, info, suffix), f"npbench_{info['module_name']}_{suffix}")
    return getattr(module, info["func_name"])


# --------------------------------------------------------------------------- comparison


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def described(value: Any) -> str:
    """A value in a few words (an array by dtype and shape, not by its contents)."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)} array"
    return "None" if value is None else type(value).__name__


def compare(expected: Any, got: Any, where: str) -> str | None:
    """None when ``got`` is ``expected`` as NumPy's semantics require, else what differs."""
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"{where}: {type(expected).__name__} of {len(expected)} vs {type(got).__name__}"
        for k, (e, g) in enumerate(zip(expected, got)):
            diff = compare(e, g, f"{where}[{k}]")
            if diff:
                return diff
        return None
    if expected is None or got is None:
        return None if expected is got else f"{where}: {described(expected)} vs {described(got)}"
    if isinstance(expected, np.ndarray) != isinstance(got, np.ndarray):
        return f"{where}: {type(expected).__name__} vs {type(got).__name__}"
    e, g = np.asarray(expected), np.asarray(got)
    if e.dtype != g.dtype:
        return f"{where}: dtype {e.dtype} vs {g.dtype}"
    if e.shape != g.shape:
        return f"{where}: shape {e.shape} vs {g.shape}"
    if e.dtype.kind in "fc":
        rtol = RTOL.get(np.dtype(e.real.dtype), RTOL_DEFAULT)
        finite = np.isfinite(e)
        scale = float(np.max(np.abs(e[finite]))) if finite.any() else 0.0
        ok = np.isclose(g, e, rtol=rtol, atol=rtol * scale, equal_nan=True)
        if not ok.all():
            err = np.abs(g - e)[~ok]
            return (f"{where}: {int((~ok).sum())} of {e.size} values differ "
                    f"(max abs error {float(np.nanmax(np.where(np.isnan(err), np.inf, err))):.3g}, "
                    f"max |expected| {scale:.3g})")
        return None
    if not np.array_equal(e, g):
        return f"{where}: {int((e != g).sum())} of {e.size} values differ"
    return None


# --------------------------------------------------------------------------- one kernel


@dataclass
class Result:
    name: str
    status: str                       # ok | WRONG | raises | timeout | numpy-fails | setup-fails
    detail: str = ""
    numpy_s: float | None = None      # median warm time
    jit_s: float | None = None
    first_call_s: float | None = None  # trace + compile + first run
    sizes: dict = field(default_factory=dict)
    host_steps: list = field(default_factory=list)  # tpu backends: primitives run by NumPy on the host
    numba: dict = field(default_factory=dict)  # --numba-python: variant -> run_numba_variant's record

    def numba_best(self) -> tuple[str, float] | None:
        """(variant, median warm time) of the fastest Numba variant that matches NumPy."""
        timed = [(v["time_s"], k) for k, v in self.numba.items() if v["status"] == "ok" and v.get("time_s")]
        return (min(timed)[1], min(timed)[0]) if timed else None


def median_time(call, args: list, budget_s: float, max_repeat: int) -> float:
    """Median of up to ``max_repeat`` calls on fresh copies, within about ``budget_s``."""
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < max_repeat and (len(times) < 3 or time.perf_counter() - started < budget_s):
        fresh = copy.deepcopy(args)
        t0 = time.perf_counter()
        to_host(call(*fresh))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def to_host(tree: Any) -> Any:
    """The result as NumPy returns it: a device array (backend "tpu" keeps results on the chip)
    copied to the host, which also waits for the asynchronous call to finish."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(to_host(t) for t in tree)
    if hasattr(tree, "block_until_ready") and not isinstance(tree, np.ndarray):
        host = np.asarray(tree)
        return host[()] if host.ndim == 0 else host
    return tree


def run_one(root: pathlib.Path, name: str, preset: str, scale: float, backend: str,
            timing: bool, datatype: str = "float64", device_arguments: bool = False) -> Result:
    """Run kernel ``name`` with NumPy and jk.jit and classify the outcome."""
    import jitkernel as jk

    info = load_infos(root)[name]
    try:
        kernel, names, args = make_inputs(root, info, preset, scale, datatype)
    except Exception as exc:  # NPBench's own setup (spmv's initialize needs scipy)
        return Result(name, "setup-fails", first_line(exc), sizes=scaled_parameters(info["parameters"][preset], scale))
    sizes = scaled_parameters(info["parameters"][preset], scale)
    np_args = copy.deepcopy(args)
    try:
        expected = kernel(*np_args)
    except Exception as exc:  # the reference itself fails: nothing to compare with
        return Result(name, "numpy-fails", first_line(exc), sizes=sizes)
    jitted = jk.jit(kernel, backend=backend)
    jk_args = copy.deepcopy(args)
    t0 = time.perf_counter()
    try:
        got = to_host(jitted(*jk_args))
    except Exception as exc:
        return Result(name, "raises", first_line(exc), sizes=sizes)
    first_call = time.perf_counter() - t0
    steps = host_steps_of(jitted, args)
    diff = compare_outputs(expected, got, names, np_args, jk_args)
    if diff is None and device_arguments and backend == "tpu":
        try:
            diff = device_arguments_diff(jitted, args, names, expected, np_args)
        except Exception as exc:
            return Result(name, "raises", "device arguments: " + first_line(exc), sizes=sizes)
    if diff is not None:
        return Result(name, "WRONG", diff, first_call_s=first_call, sizes=sizes, host_steps=steps)
    result = Result(name, "ok", first_call_s=first_call, sizes=sizes, host_steps=steps)
    if timing:
        result.numpy_s = median_time(kernel, args, budget_s=2.0, max_repeat=21)
        result.jit_s = median_time(jitted, args, budget_s=2.0, max_repeat=21)
    return result


def device_arguments_diff(jitted: Any, args: list, names: list[str], expected: Any, np_args: list) -> str | None:
    """The kernel called again with its array arguments already on the chip (`jk.device_put`), the
    device-array entry a notebook's second cell takes: its results and written arguments must be
    NumPy's too (``compare_outputs``), or what differs."""
    import jitkernel as jk

    chip = jk.devices("tpu")[0]
    dev_args = [jk.device_put(copy.deepcopy(a), chip) if isinstance(a, np.ndarray) else copy.deepcopy(a)
                for a in args]
    got = to_host(jitted(*dev_args))
    diff = compare_outputs(expected, got, names, np_args, [to_host(a) for a in dev_args])
    return None if diff is None else "device arguments: " + diff


def compare_outputs(expected: Any, got: Any, names: list[str], ref_args: list, got_args: list) -> str | None:
    """``compare`` of the return value, then of every argument array (the kernels write into them)."""
    diff = compare(expected, got, "return")
    for arg_name, e, g in zip(names, ref_args, got_args):
        if diff is None and isinstance(e, np.ndarray):
            diff = compare(e, g, f"argument {arg_name}")
    return diff


def run_numba_variant(root: pathlib.Path, name: str, preset: str, scale: float, variant: str,
                      timing: bool) -> dict:
    """Kernel ``name``'s Numba variant (``numba_<variant>``) against NumPy, in an interpreter with
    numba: status (ok | WRONG | raises | absent | numpy-fails | setup-fails), detail, the first
    call (which compiles) and, with ``timing``, the median warm time as ``run_one`` takes it."""
    import numba

    record: dict[str, Any] = {"status": "ok", "detail": "", "numba": numba.__version__,
                              "threads": numba.config.NUMBA_NUM_THREADS}
    info = load_infos(root)[name]
    if not kernel_file(root, info, f"numba_{variant}").is_file():
        return record | {"status": "absent"}
    try:
        kernel, names, args = make_inputs(root, info, preset, scale)
    except Exception as exc:  # NPBench's own setup
        return record | {"status": "setup-fails", "detail": first_line(exc)}
    np_args = copy.deepcopy(args)
    try:
        expected = kernel(*np_args)
    except Exception as exc:
        return record | {"status": "numpy-fails", "detail": first_line(exc)}
    nb_args = copy.deepcopy(args)
    t0 = time.perf_counter()
    try:
        compiled = load_kernel(root, info, f"numba_{variant}")
        got = compiled(*nb_args)
    except Exception as exc:  # a typing error of Numba, or a failure of NPBench's variant
        return record | {"status": "raises", "detail": first_line(exc)}
    record["first_call_s"] = time.perf_counter() - t0
    diff = compare_outputs(expected, got, names, np_args, nb_args)
    if diff is not None:
        return record | {"status": "WRONG", "detail": diff}
    if timing:
        record["time_s"] = median_time(compiled, args, budget_s=2.0, max_repeat=21)
    if "p" in variant[1:]:  # a parallel variant: which thread pool it ran on
        try:
            record["threading_layer"] = numba.threading_layer()
        except ValueError:  # no parallel region ran (Numba found nothing to parallelise)
            pass
    return record


def host_steps_of(jitted: Any, args: list) -> list[str]:
    """The primitives a TPU backend runs as host steps (NumPy called back from XLA: docs/tpu.md)
    in the compiled kernel; empty for the other backends."""
    try:
        executable = jitted.lower(*copy.deepcopy(args)).compiled.executable
    except Exception:  # noqa: BLE001  (a kernel lower cannot re-trace: nothing to report)
        return []
    return sorted(set(getattr(executable, "host_steps", ())))


# --------------------------------------------------------------------------- driver


def run_in_process(ns: argparse.Namespace, root: pathlib.Path, name: str) -> Result:
    """One kernel in this process (no time limit): what a child process would report."""
    try:
        return run_one(root, name, ns.preset, ns.scale, ns.backend, ns.time, ns.datatype, ns.device_arguments)
    except Exception as exc:  # a failure of the harness, not of a kernel
        return Result(name, "raises", "harness: " + first_line(exc))


def run_in_subprocess(ns: argparse.Namespace, root: pathlib.Path, name: str) -> Result:
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--npbench", str(root),
               "--preset", ns.preset, "--scale", str(ns.scale), "--backend", ns.backend,
               "--datatype", ns.datatype, "--child", name] + (["--device-arguments"] if ns.device_arguments else []) \
        + (["--time"] if ns.time else [])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if "JITKERNEL_CACHE_DIR" not in env:  # never the user's cache: a fresh one per run
        env["JITKERNEL_CACHE_DIR"] = ns.cache_dir
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=ns.timeout, env=env)
    except subprocess.TimeoutExpired:
        return Result(name, "timeout", f"more than {ns.timeout:g} s")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return Result(**json.loads(line[len("RESULT "):]))
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return Result(name, "raises", f"child exited {proc.returncode}: {tail}"[:200])


def run_numba_in_subprocess(ns: argparse.Namespace, root: pathlib.Path, name: str, variant: str) -> dict:
    """``run_numba_variant`` in ``--numba-python``, a child per variant (a compile that hangs or
    crashes costs that variant only); this script imports nothing of jitkernel at module level."""
    command = [ns.numba_python, str(pathlib.Path(__file__).resolve()), "--npbench", str(root),
               "--preset", ns.preset, "--scale", str(ns.scale), "--child-numba", f"{name}:{variant}"]
    command += ["--time"] if ns.time else []
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=ns.timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "detail": f"more than {ns.timeout:g} s"}
    except OSError as exc:  # no such interpreter
        return {"status": "raises", "detail": f"--numba-python: {first_line(exc)}"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"status": "raises", "detail": f"child exited {proc.returncode}: {tail}"[:200]}


def cause_of(detail: str) -> str:
    """The message without what names one kernel (its function, file, line, shapes)."""
    import re
    text = re.split(r" \(in jitted function|, at /| at /|\(jitkernel traced", detail)[0]
    text = re.sub(r"\(\d+(, \d+)*,?\)", "(...)", text)
    text = re.sub(r"'[A-Za-z_][\w.]*'", "'...'", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return text.strip()


def format_time(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def numba_header(results: list[Result], ns: argparse.Namespace) -> list[str]:
    """Which Numba ran and on how many threads, beside jitkernel's and BLAS's threads."""
    records = [v for r in results for v in r.numba.values() if "numba" in v]
    version = records[0]["numba"] if records else "?"
    threads = sorted({v["threads"] for v in records})
    layers = sorted({v["threading_layer"] for v in records if "threading_layer" in v})
    jit_threads = os.environ.get("JITKERNEL_THREADS") or f"{len(os.sched_getaffinity(0))} (default: usable CPUs)"
    return [f"numba {version} ({ns.numba_python}), variants {ns.numba_variants} (NPBench's files, "
            f"fastmath=True as NPBench writes them); threads: jitkernel {jit_threads}, Numba parallel "
            f"variants {'/'.join(map(str, threads)) or '?'} ({'/'.join(layers) or 'threading layer ?'}), "
            f"OpenBLAS {os.environ.get('OPENBLAS_NUM_THREADS', 'default')} (NumPy's, and scipy's under Numba's np.dot)"]


def numba_summary(results: list[Result]) -> list[str]:
    """Geometric mean of Numba time / jit time and the share of kernels where jit is at least as fast,
    over the kernels both ran and matched."""
    pairs = [(r.numba_best()[1], r.jit_s) for r in results if r.jit_s and r.numba_best()]
    if not pairs:
        return ["vs numba: no kernel ran and matched with both"]
    geo = math.exp(sum(math.log(n / j) for n, j in pairs) / len(pairs))
    at_least = sum(j <= n for n, j in pairs)
    return [f"vs numba: geometric mean of Numba's best time / jit time over the {len(pairs)} kernels both "
            f"ran and matched: {geo:.2f}x (above 1: jit faster)",
            f"vs numba: jit at least as fast as Numba's best on {at_least} of {len(pairs)} kernels "
            f"({at_least / len(pairs):.0%})"]


def numba_failures(results: list[Result]) -> list[str]:
    """Numba variants that did not run or did not match NumPy, one line per kernel."""
    lines = []
    for r in results:
        bad = [f"{k} {v['status']}: {(v['detail'].splitlines() or [''])[0][:150]}" for k, v in r.numba.items() if v["status"] != "ok"]
        if bad:
            lines.append(f"  {r.name}: " + "; ".join(bad))
    return ["numba variants that did not run or match:"] + lines if lines else []


def render(results: list[Result], ns: argparse.Namespace, root: pathlib.Path) -> str:
    width = max(len(r.name) for r in results)
    with_numba = bool(getattr(ns, "numba_python", None))
    datatype = getattr(ns, "datatype", "float64")
    lines = [f"NPBench as written: {len(results)} NumPy kernels, unmodified, under jk.jit "
             f"(backend {ns.backend}), preset {ns.preset}"
             + (f", {datatype} inputs" if datatype != "float64" else "")
             + (f" x{ns.scale:g}" if ns.scale != 1.0 else "") + f", timeout {ns.timeout:g} s",
             f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"numpy {np.__version__}, checkout {root}",
             *(numba_header(results, ns) if with_numba else []),
             "command: " + "".join(f"{k}={os.environ[k]} " for k in THREAD_VARIABLES if k in os.environ)
             + f"python benchmarks/npbench_as_written.py --npbench PATH --preset {ns.preset}"
             + (f" --backend {ns.backend}" if ns.backend != "cpu" else "")
             + (f" --datatype {datatype}" if datatype != "float64" else "")
             + (f" --scale {ns.scale:g}" if ns.scale != 1.0 else "") + (" --time" if ns.time else "")
             + (f" --numba-python {ns.numba_python}" if with_numba else "")
             + (f" --numba-variants {ns.numba_variants}" if with_numba and ns.numba_variants != "n,np,npr" else ""),
             ""]
    header = f"{'kernel':<{width}}  {'status':<11}"
    if ns.time:
        header += f"  {'numpy':>10}  {'jit':>10}  {'speedup':>7}  {'1st call':>9}"
        if with_numba:
            header += f"  {'numba best':>10}  {'variant':<7}  {'jit/numba':>9}"
    lines += [header + "  detail", "-" * (len(header) + 8)]
    for r in results:
        row = f"{r.name:<{width}}  {r.status:<11}"
        if ns.time:
            speed = f"{r.numpy_s / r.jit_s:.2f}x" if r.numpy_s and r.jit_s else ""
            row += (f"  {format_time(r.numpy_s):>10}  {format_time(r.jit_s):>10}  {speed:>7}"
                    f"  {format_time(r.first_call_s):>9}")
            if with_numba:
                best = r.numba_best()
                ratio = f"{r.jit_s / best[1]:.2f}" if best and r.jit_s else ""
                row += (f"  {format_time(best[1]) if best else '-':>10}  {best[0] if best else '-':<7}"
                        f"  {ratio:>9}")
        detail = r.detail or (f"host steps: {', '.join(r.host_steps)}" if r.host_steps else "")
        lines.append((row + "  " + detail).rstrip())
    counts = {s: sum(r.status == s for r in results)
              for s in ("ok", "WRONG", "raises", "timeout", "numpy-fails", "setup-fails")}
    lines += ["", "summary: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n or s in ("ok", "WRONG", "raises", "timeout"))]
    causes: dict[str, list[str]] = {}
    for r in results:
        if r.status == "raises":
            causes.setdefault(cause_of(r.detail), []).append(r.name)
    if causes:
        lines.append("raises, by cause:")
        lines += [f"  {len(ks):3d}  {msg}  ({', '.join(ks)})" for msg, ks in sorted(causes.items(), key=lambda kv: -len(kv[1]))]
    speedups = [r.numpy_s / r.jit_s for r in results if r.numpy_s and r.jit_s]
    if speedups:
        geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        lines.append(f"speed: geometric mean of NumPy time / jit time over the {len(speedups)} "
                     f"kernels that match: {geo:.2f}x (median warm times)")
    if with_numba:
        if ns.time:
            lines += numba_summary(results)
        lines += numba_failures(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--npbench", required=True, type=pathlib.Path,
                        help="NPBench checkout (bench_info/, npbench/) or its bare git directory")
    parser.add_argument("--preset", default="S", help="NPBench size preset (default S)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply size parameters")
    parser.add_argument("--backend", default="cpu", help="jk.jit backend (default cpu)")
    parser.add_argument("--device-arguments", action="store_true",
                        help="backend tpu: also call each kernel with its arrays already on the chip (jk.device_put)")
    parser.add_argument("--datatype", default="float64", choices=("float64", "float32"),
                        help="the inputs' float type, where NPBench's initialize takes one (default float64)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per kernel")
    parser.add_argument("--time", action="store_true", help="also time warm calls")
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_RESULTS)
    parser.add_argument("--jsonl", type=pathlib.Path,
                        help="also write one JSON line per kernel (backend, preset and the result) here")
    parser.add_argument("--in-process", action="store_true",
                        help="run the kernels one after another in this process, without the time limit "
                             "(a TPU can be held by one process only, and opening it costs about 15 s)")
    parser.add_argument("--numba-python",
                        help="an interpreter with numba (and scipy): run NPBench's Numba variants of each kernel there too")
    parser.add_argument("--numba-variants", default="n,np,npr",
                        help="which of NPBench's Numba files (<module>_numba_<variant>.py) to run: n nopython, "
                             "np nopython parallel, npr parallel with prange, o/op/opr object mode (default n,np,npr)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-numba", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    root = resolve_checkout(ns.npbench.resolve())
    if ns.child_numba:
        name, variant = ns.child_numba.split(":")
        try:
            record = run_numba_variant(root, name, ns.preset, ns.scale, variant, ns.time)
        except Exception as exc:  # a failure of the harness, not of a kernel
            traceback.print_exc()
            record = {"status": "raises", "detail": "harness: " + first_line(exc)}
        print("RESULT " + json.dumps(record), flush=True)
        return 0
    if ns.child:
        try:
            result = run_one(root, ns.child, ns.preset, ns.scale, ns.backend, ns.time, ns.datatype,
                             ns.device_arguments)
        except Exception as exc:  # a failure of the harness, not of a kernel
            traceback.print_exc()
            result = Result(ns.child, "raises", "harness: " + first_line(exc))
        print("RESULT " + json.dumps(result.__dict__), flush=True)
        return 0
    infos = load_infos(root)
    names = list(infos)
    if ns.only:
        wanted = ns.only.split(",")
        names = [n for n in names if n in wanted]
    results = []
    with tempfile.TemporaryDirectory(prefix="jk-npbench-cache-") as cache_dir:
        ns.cache_dir = cache_dir
        for name in names:
            result = run_in_process(ns, root, name) if ns.in_process else run_in_subprocess(ns, root, name)
            for variant in (ns.numba_variants.split(",") if ns.numba_python else []):
                if not kernel_file(root, infos[name], f"numba_{variant}").is_file():
                    continue  # NPBench ships no such variant of this kernel
                record = run_numba_in_subprocess(ns, root, name, variant)
                if record["status"] != "absent":
                    result.numba[variant] = record
            best = result.numba_best()
            numba_note = f"  numba {best[0]} {format_time(best[1])}" if best else ""
            print(f"{name:<26} {result.status:<11} {format_time(result.jit_s)}{numba_note} {result.detail}",
                  flush=True)
            results.append(result)
    text = render(results, ns, root)
    print()
    print(text, end="")
    if not ns.only:
        ns.output.parent.mkdir(parents=True, exist_ok=True)
        ns.output.write_text(text)
    if ns.jsonl:
        ns.jsonl.parent.mkdir(parents=True, exist_ok=True)
        stamp = f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M}Z"
        with ns.jsonl.open("w") as out:
            for r in results:
                record = {"backend": ns.backend, "preset": ns.preset, "scale": ns.scale, "datatype": ns.datatype,
                          "date": stamp}
                best = r.numba_best()
                if best:
                    record |= {"numba_best_variant": best[0], "numba_best_s": best[1]}
                out.write(json.dumps(record | r.__dict__) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
