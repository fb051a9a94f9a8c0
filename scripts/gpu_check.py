#!/usr/bin/env python3
"""The GPU check (`make gpu-check`, docs/gpu.md "The GPU check"): one command for a GPU machine
without registry access, tiered, every result written as a JSON line as soon as it exists (a time
limit may cut the run short), a short table printed last.

    tier 0  no GPU touched: install the carried wheels offline (--wheels, default .whl/) into a
            target folder, render every program the later tiers run and compile it with nvcc to a
            cubin for --arch (sm_90) into the jitkernel persistent cache the runtime reads
    tier 1  environment facts (GPU, driver, nvcc, compute-sanitizer), device-to-device copy
            bandwidth, the test corpus on backend="cuda" against NumPy, `pytest tests/gpu`
    tier 2  compute-sanitizer memcheck and racecheck on a reduction, a row kernel and a matmul
    tier 3  `%%jit -b cuda` cells through IPython's InteractiveShell (no ipykernel needed)
    tier 4  the GPU benchmark (benchmarks/gpu.py)

    python3 scripts/gpu_check.py --budget 420            # on the GPU machine (results in $OUT)
    python3 scripts/gpu_check.py --tiers 0 --cache-dir .gpu-cache   # here: precompile to carry

Every tier has its own time budget, cut to what is left of --budget; GPU work runs in child
processes with timeouts, so a hung kernel costs its tier, not the table.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402  (numpy is on every machine this runs on; jitkernel is imported late)

TIER_BUDGETS = {0: 120.0, 1: 150.0, 2: 120.0, 3: 60.0, 4: 300.0}
TIER_NAMES = {0: "prepare (no GPU)", 1: "environment + GPU tests", 2: "compute-sanitizer", 3: "%%jit -b cuda cells",
              4: "GPU benchmark"}
STATUSES = ("ok", "fail", "skip", "error", "timeout")
DEFAULT_WHEELS = REPO / ".whl"
SHARED_WHEELS = REPO.parent / "shared" / "wheels" / "cp312"
LOG_NAME = "gpu_check_logs.txt"
UNSUPPORTED_EXIT = 3  # a child program jitkernel does not render on cuda yet (a skip, not a failure)


# ------------------------------------------------------------------------------ results
@dataclass
class Report:
    """Results as JSON lines in `out/gpu_check.jsonl`, each flushed the moment it exists, and the
    short table (`table()`, also written to `out/gpu_check_table.txt` by `finish`)."""

    out: Path
    rows: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self.path = self.out / "gpu_check.jsonl"

    def add(self, tier: int, check: str, status: str, detail: str = "", seconds: float | None = None,
            **data: Any) -> dict:
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {STATUSES}")
        row = {"tier": tier, "check": check, "status": status, "detail": detail,
               "seconds": None if seconds is None else round(seconds, 3), "time": time.time(), **data}
        self.rows.append(row)
        with self.path.open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        print(f"[tier {tier}] {check}: {status}" + (f" ({detail})" if detail else ""), flush=True)
        return row

    def log(self, title: str, text: str) -> None:
        with (self.out / LOG_NAME).open("a") as f:
            f.write(f"===== {title}\n{text}\n")

    def table(self, extra: str = "") -> str:
        """One line per result; results sharing a `group` (tier 0's cubins) collapse into one
        line with their counts and the first result that is not ok."""
        lines = [f"{'tier':<5}{'check':<40}{'status':<9}{'s':>8}  detail"]
        shown: set = set()
        for r in self.rows:
            if r.get("group"):
                if (r["tier"], r["group"]) in shown:
                    continue
                shown.add((r["tier"], r["group"]))
                r = self._collapsed(r["tier"], r["group"])
            secs = "" if r["seconds"] is None else f"{r['seconds']:.1f}"
            lines.append(f"{r['tier']:<5}{r['check'][:39]:<40}{r['status']:<9}{secs:>8}  {str(r['detail'])[:110]}")
        counts = {s: sum(r["status"] == s for r in self.rows) for s in STATUSES}
        lines.append("totals: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
        return "\n".join(lines) + (f"\n\n{extra}" if extra else "")

    def _collapsed(self, tier: int, group: str) -> dict:
        rows = [r for r in self.rows if r["tier"] == tier and r.get("group") == group]
        counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
        worst = next((s for s in ("error", "fail", "timeout") if counts[s]), "ok" if counts["ok"] else "skip")
        first = next((r for r in rows if r["status"] != "ok"), None)
        detail = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        if first is not None:
            detail += f"; {first['check']}: {first['detail']}"
        return {"tier": tier, "check": f"{group} ({len(rows)})", "status": worst, "detail": detail,
                "seconds": sum(r["seconds"] or 0.0 for r in rows)}

    def finish(self, extra: str = "") -> str:
        text = self.table(extra)
        (self.out / "gpu_check_table.txt").write_text(text + "\n")
        return text


class Budget:
    """The total deadline and each tier's share of it."""

    def __init__(self, total: float, tier_budgets: dict[int, float]) -> None:
        self.deadline = time.monotonic() + total
        self.tier_budgets = tier_budgets
        self.tier_deadline = self.deadline

    def left(self) -> float:
        return max(0.0, min(self.deadline, self.tier_deadline) - time.monotonic())

    def start_tier(self, tier: int) -> float:
        self.tier_deadline = min(self.deadline, time.monotonic() + self.tier_budgets.get(tier, 60.0))
        return self.left()


def run_child(cmd: list[str], timeout: float, report: Report, title: str, env: dict | None = None,
              cwd: Path = REPO) -> tuple[str, int | None, str, float]:
    """Run `cmd` with a timeout; ('ok'|'fail'|'timeout', exit code, output tail, seconds). The
    whole output goes to the log file."""
    t0 = time.monotonic()
    if timeout < 1:
        return "timeout", None, "no time left in this tier", 0.0
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env=dict(os.environ, **(env or {})), start_new_session=True)
        text = proc.stdout + proc.stderr
        report.log(f"{title} (exit {proc.returncode}): {' '.join(cmd)}", text)
        return ("ok" if proc.returncode == 0 else "fail"), proc.returncode, text, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        report.log(f"{title} (timed out after {timeout:.0f} s): {' '.join(cmd)}", text)
        return "timeout", None, text, time.monotonic() - t0


def last_line(text: str, pattern: str | None = None) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if pattern:
        lines = [ln for ln in lines if re.search(pattern, ln)] or lines
    return lines[-1][:200] if lines else ""


# ------------------------------------------------------------------------------ the programs
def san_reduction(x):
    return x.sum(axis=1)


def san_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def san_matmul(a, b):
    return a @ b


def san_whole_sum(x):
    return np.tanh(x).sum()


SANITIZER_PROGRAMS: dict[str, tuple[Callable, list[tuple[int, ...]]]] = {
    "reduction": (san_reduction, [(256, 4096)]),
    "whole-sum": (san_whole_sum, [(1 << 20,)]),
    "row-kernel": (san_softmax, [(256, 1024)]),
    "matmul": (san_matmul, [(256, 256), (256, 256)]),
}

# The %%jit -b cuda cells of tier 3: (setup, cell, check). The functions' names are part of the
# rendered source (its header comment), so tier 0 precompiles them under the same names.
CELL_SETUP = ("import numpy as np\nimport jitkernel as jk\nrng = np.random.default_rng(0)\n"
              "x = rng.random((2048, 1024), dtype=np.float32)\n")
CELLS = [
    ("%%jit -b cuda\ndef cell_softmax(x):\n    e = np.exp(x - x.max(axis=1, keepdims=True))\n"
     "    return e / e.sum(axis=1, keepdims=True)\n\ny = cell_softmax(x)\n",
     "ref = np.exp(x - x.max(1, keepdims=True)); ref = ref / ref.sum(1, keepdims=True)\n"
     "assert type(y).__name__ == ('DeviceArray' if BACKEND == 'cuda' else 'ndarray'), type(y)\n"
     "assert np.allclose(np.asarray(y), ref, rtol=1e-5, atol=1e-6)\n"),
    ("%%jit -b cuda\ndef cell_fused(x):\n    return (np.sin(x) * np.cos(x) + np.sin(x) ** 2).sum(axis=1)\n\n"
     "s = cell_fused(x)\n",
     "ref = (np.sin(x) * np.cos(x) + np.sin(x) ** 2).sum(axis=1)\n"
     "assert np.allclose(np.asarray(s), ref, rtol=1e-4, atol=1e-3)\n"),
]


def cell_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def cell_fused(x):
    return (np.sin(x) * np.cos(x) + np.sin(x) ** 2).sum(axis=1)


def programs() -> list[tuple[str, Callable, list[np.ndarray]]]:
    """(label, function, zero-stride arguments) of every program the GPU tiers run with known
    shapes: the benchmark's workloads (and its dispatch row), the sanitizer programs and the cells."""
    from benchmarks import gpu as bench
    from benchmarks.run import XP_FACTORIES
    zeros = lambda shapes: [np.broadcast_to(np.zeros((), np.float32), s) for s in shapes]  # noqa: E731
    progs = [(f"bench {w.name}", w.make(np), bench.abstract_args(w)) for w in bench.WORKLOADS]
    progs.append(("bench dispatch (W7, n=10)", XP_FACTORIES["W7"](np), zeros([(10,)])))
    progs += [(f"sanitizer {name}", fn, zeros(shapes)) for name, (fn, shapes) in SANITIZER_PROGRAMS.items()]
    progs += [("cell cell_softmax", cell_softmax, zeros([(2048, 1024)])),
              ("cell cell_fused", cell_fused, zeros([(2048, 1024)]))]
    return progs + corpus_programs()


def corpus_programs() -> list[tuple[str, Callable, list]]:
    """The renderer's test corpus (tests/cuda_corpus.py), which tier 1 runs on the GPU."""
    if str(REPO / "tests") not in sys.path:
        sys.path.insert(0, str(REPO / "tests"))
    try:
        from cuda_corpus import all_cases
    except ImportError:  # a tree without tests/: nothing of the corpus to precompile
        return []
    return [(f"corpus {case.name}", case.fn, list(case.args)) for case in all_cases()]


# ------------------------------------------------------------------------------ tier 0
def install_wheels(wheels: Path, target: Path, report: Report, timeout: float) -> bool:
    """pip install --no-index --no-deps --target TARGET WHEELS/*.whl (offline); True when the
    target is importable afterwards. Already importable packages (pycuda, IPython) skip it."""
    t0 = time.monotonic()
    found = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
    if not found:
        report.add(0, "install wheels", "skip", f"no wheels in {wheels} (scripts/build_pycuda_wheels.py builds them)")
        return False
    target.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
           "--no-cache-dir", "--upgrade", "--target", str(target), *map(str, found)]
    status, code, text, secs = run_child(cmd, timeout, report, "pip install (offline)")
    if status != "ok":
        report.add(0, "install wheels", "error" if status == "fail" else status, last_line(text), secs)
        return False
    activate_target(target)
    report.add(0, "install wheels", "ok", f"{len(found)} wheels from {wheels} into {target}", time.monotonic() - t0)
    return True


def activate_target(target: Path) -> None:
    """Make `target` importable here and in every child process (before the repository)."""
    sys.path.insert(0, str(target))
    parts = [str(target), str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))


def nvcc_version(nvcc: str) -> str:
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout


def cubin_cache(arch: str) -> tuple[Callable[[str], str], Callable[[str], None], str]:
    """(key of a source, build-and-store of a source, whose key) for cubins of `arch` in the
    persistent cache. The runtime's own functions where they exist (branch cudart's
    `pycuda_device.cubin_key` / `cubin_for`: the keys agree by construction, and importing that
    module needs no PyCUDA); otherwise this script's assumption of the runtime's key:
    cache_key("cuda-cubin", source, `nvcc --version`, arch, jitkernel version)."""
    try:
        from jitkernel.backends.cuda import pycuda_device as runtime
        if hasattr(runtime, "cubin_key") and hasattr(runtime, "cubin_for"):
            return ((lambda source: runtime.cubin_key(source, arch)),
                    (lambda source: runtime.cubin_for(source, arch, "gpu-check")), "the runtime's key")
    except ImportError:
        pass
    from jitkernel import __version__, cache
    from jitkernel.backends.cuda import nvcc
    version = nvcc_version(nvcc.find_nvcc())

    def key(source: str) -> str:
        return cache.cache_key("cuda-cubin", source, version, arch, __version__)

    def build(source: str) -> None:
        cache.store(key(source), nvcc.cubin(source, arch), source, backend="cuda")
    return key, build, "gpu_check's own key (no runtime found)"


def cubin_store(arch: str) -> Callable[[str], tuple[str, float]]:
    """A function source -> ('compiled'|'cached', seconds) that leaves the cubin of `source` for
    `arch` in the persistent cache (`cubin_cache`)."""
    from jitkernel import cache
    key, build, origin = cubin_cache(arch)

    def store(source: str) -> tuple[str, float]:
        if cache.load(key(source)) is not None:
            return f"cached ({origin})", 0.0
        t0 = time.monotonic()
        build(source)
        return f"compiled ({origin})", time.monotonic() - t0
    return store


def _group(label: str) -> str:
    return "cubins " + label.split()[0]


def precompile(report: Report, arch: str, budget: Budget) -> None:
    """Render every program of `programs()` (in order, here) and leave its cubin in the persistent
    cache (nvcc runs in parallel, one per core: they are separate processes)."""
    from concurrent.futures import ThreadPoolExecutor, wait
    from jitkernel.backends.cuda import nvcc
    import jitkernel as jk
    if nvcc.find_nvcc() is None:
        report.add(0, "precompile cubins", "skip", "nvcc is not on PATH (set NVCC=...)")
        return
    store = cubin_store(arch)
    rendered: list[tuple[str, str, float]] = []
    for label, fn, args in programs():
        t0 = time.monotonic()
        try:
            rendered.append((label, jk.jit(fn, backend="interpret").lower(*args).as_text("cuda"), t0))
        except jk.UnsupportedOperationError as e:
            report.add(0, f"cubin {label}", "skip", f"not rendered: {str(e).splitlines()[0][:150]}",
                       time.monotonic() - t0, group=_group(label))
    pool = ThreadPoolExecutor(max_workers=max(1, min(len(rendered), os.cpu_count() or 1)))
    futures = {pool.submit(store, source): (label, source, t0) for label, source, t0 in rendered}
    done, _ = wait(futures, timeout=budget.left())
    for future, (label, source, t0) in futures.items():
        if future not in done:
            report.add(0, f"cubin {label}", "timeout", "tier 0 budget spent before nvcc finished", group=_group(label))
            continue
        try:
            how, secs = future.result()
            kernels = len(re.findall(r'extern "C" __global__', source))
            report.add(0, f"cubin {label}", "ok", f"{how} for {arch}, {kernels} kernels", secs, group=_group(label))
        except Exception as e:  # noqa: BLE001 (CompileError: nvcc's message is the result)
            report.add(0, f"cubin {label}", "error", f"{type(e).__name__}: {str(e).splitlines()[0][:150]}",
                       time.monotonic() - t0, group=_group(label))
    pool.shutdown(wait=False, cancel_futures=True)


def tier0(args: argparse.Namespace, report: Report, budget: Budget) -> None:
    if not args.no_install:
        wheels = args.wheels or (DEFAULT_WHEELS if DEFAULT_WHEELS.is_dir() else SHARED_WHEELS)
        install_wheels(wheels, args.site, report, budget.left())
    precompile(report, args.arch, budget)


# ------------------------------------------------------------------------------ tier 1
def gpu_present() -> bool:
    return any(os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidiactl"))


def find_tool(name: str) -> str | None:
    import glob
    for candidate in (shutil.which(name), f"/usr/local/cuda/bin/{name}", f"/usr/local/cuda/compute-sanitizer/{name}",
                      *sorted(glob.glob(f"/usr/local/cuda-*/bin/{name}"), reverse=True),
                      *sorted(glob.glob(f"/usr/local/cuda-*/compute-sanitizer/{name}"), reverse=True)):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def environment(report: Report, budget: Budget) -> dict:
    facts: dict[str, Any] = {"python": sys.version.split()[0]}
    smi = find_tool("nvidia-smi")
    if smi:
        status, _, text, secs = run_child([smi, "--query-gpu=name,driver_version,memory.total,compute_cap",
                                           "--format=csv,noheader"], min(20.0, budget.left()), report, "nvidia-smi")
        facts["gpu"] = last_line(text)
    from jitkernel.backends.cuda import missing_for_cuda, nvcc
    nv = nvcc.find_nvcc()
    facts["nvcc"] = last_line(nvcc_version(nv), "release") if nv else None
    facts["compute-sanitizer"] = find_tool("compute-sanitizer")
    facts["missing_for_cuda"] = missing_for_cuda()
    from importlib import metadata
    for dist in ("pycuda", "cupy-cuda13x", "cupy-cuda12x", "cupy", "jax", "jaxlib", "ipython", "numpy", "llvmlite"):
        try:  # versions without importing (JAX's import alone takes seconds)
            facts[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    report.add(1, "environment", "ok",
               f"{facts.get('gpu', 'no nvidia-smi')}; nvcc {facts['nvcc']}; sanitizer "
               f"{'yes' if facts['compute-sanitizer'] else 'no'}", facts=facts)
    return facts


def tier1(args: argparse.Namespace, report: Report, budget: Budget) -> None:
    facts = environment(report, budget)
    if facts["missing_for_cuda"]:  # a GPU machine without PyCUDA or driver fails; elsewhere it is a skip
        report.add(1, "GPU tiers", "fail" if gpu_present() else "skip", "; ".join(facts["missing_for_cuda"]))
        return
    status, _, text, secs = run_child([sys.executable, __file__, "--child", "copy-bandwidth"],
                                      min(60.0, budget.left()), report, "copy bandwidth")
    m = re.search(r"COPY_BYTES_PER_S ([0-9.e+]+)", text)
    report.add(1, "device-to-device copy", status if status != "ok" or m else "error",
               f"{float(m.group(1)) / 1e12:.2f} TB/s (2 x bytes / time, 1 GiB)" if m else last_line(text), secs,
               bytes_per_s=float(m.group(1)) if m else None)
    status, _, text, secs = run_child([sys.executable, __file__, "--child", "corpus"],
                                      min(90.0, budget.left()), report, "corpus on cuda")
    report.add(1, "test corpus on backend=cuda", status, last_line(text, r"^CORPUS"), secs)
    if not (REPO / "tests" / "gpu").is_dir():
        report.add(1, "pytest tests/gpu", "skip", "tests/gpu does not exist in this tree")
        return
    status, _, text, secs = run_child([sys.executable, "-m", "pytest", "tests/gpu", "-x", "-q", "-p", "no:cacheprovider"],
                                      budget.left(), report, "pytest tests/gpu")
    report.add(1, "pytest tests/gpu", status, last_line(text, r"passed|failed|error|skipped"), secs)


def child_copy_bandwidth() -> int:
    """Copy bandwidth with CuPy where it is installed, else PyCUDA's memcpy_dtod."""
    try:
        from benchmarks.gpu import copy_bandwidth
        print(f"COPY_BYTES_PER_S {copy_bandwidth():.6e} (cupy)")
        return 0
    except ImportError:
        pass
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv
    n = 1 << 30
    a, b = drv.mem_alloc(n), drv.mem_alloc(n)
    start, end = drv.Event(), drv.Event()
    samples = []
    for i in range(23):
        start.record()
        drv.memcpy_dtod(b, a, n)
        end.record()
        end.synchronize()
        if i >= 3:
            samples.append(start.time_till(end))
    print(f"COPY_BYTES_PER_S {2 * n / (float(np.median(samples)) * 1e-3):.6e} (pycuda)")
    return 0


def host_like(got: Any, expected: Any) -> Any:
    """`got` with device arrays copied back, shaped like NumPy's `expected` (a 0-d device array
    where NumPy returns a scalar becomes that scalar: device results are arrays, as in JAX)."""
    if isinstance(expected, (tuple, list)):
        return type(expected)(host_like(g, e) for g, e in zip(got, expected))
    value = np.asarray(got)
    return value[()] if isinstance(expected, np.generic) and value.ndim == 0 else value


def child_corpus(backend: str = "cuda") -> int:
    """The renderer's test corpus (tests/cuda_corpus.py) on `backend` against NumPy, with the
    emulator tests' comparison (dtype, shape, values within the dtype's tolerance, zero signs)."""
    sys.path.insert(0, str(REPO / "tests"))
    import jitkernel as jk
    from cuda_corpus import all_cases, assert_zero_signs
    from helpers import assert_matches_numpy, numpy_result
    cases = all_cases()
    ok, failed = 0, []
    for case in cases:
        try:
            expected = numpy_result(case.fn, *case.args)
            got = host_like(jk.jit(case.fn, backend=backend)(*case.args), expected)
            assert_matches_numpy(got, expected, rtol=case.rtol)
            if case.zero_signs:
                assert_zero_signs(got, expected)
            ok += 1
        except Exception as e:  # noqa: BLE001 (each case is one result)
            failed.append(case.name)
            print(f"FAILED {case.name}: {type(e).__name__}: {str(e)[:300]}")
    print(f"CORPUS {ok} of {len(cases)} passed on {backend}" + (f"; failed: {', '.join(failed[:8])}" if failed else ""))
    return 1 if failed else 0


# ------------------------------------------------------------------------------ tier 2
def child_program(name: str, backend: str = "cuda") -> int:
    """Run one sanitizer program on `backend` (cuda; cuda-emulator in the tests) and check it
    against NumPy."""
    import jitkernel as jk
    fn, shapes = SANITIZER_PROGRAMS[name]
    rng = np.random.default_rng(0)
    args = [rng.random(s, dtype=np.float32) for s in shapes]
    try:
        got = np.asarray(jk.jit(fn, backend=backend)(*args))
    except jk.UnsupportedOperationError as e:
        print(f"UNSUPPORTED {name}: {str(e).splitlines()[0]}")
        return UNSUPPORTED_EXIT
    ok = np.allclose(got, fn(*args), rtol=1e-4, atol=1e-3)
    print(f"PROGRAM {name} {'matches' if ok else 'DIFFERS FROM'} NumPy")
    return 0 if ok else 1


def tier2(args: argparse.Namespace, report: Report, budget: Budget) -> None:
    sanitizer = find_tool("compute-sanitizer")
    if sanitizer is None:
        report.add(2, "compute-sanitizer", "skip", "compute-sanitizer not found (PATH, /usr/local/cuda/bin)")
        return
    from jitkernel.backends.cuda import missing_for_cuda
    if missing_for_cuda():
        report.add(2, "compute-sanitizer", "skip", "; ".join(missing_for_cuda()))
        return
    names = [n for n in SANITIZER_PROGRAMS if n != "whole-sum"] + ["whole-sum"]
    unsupported: set[str] = set()
    for tool in ("memcheck", "racecheck"):
        for name in names:
            if name in unsupported:
                continue
            cmd = [sanitizer, "--tool", tool, "--error-exitcode", "97", "--print-limit", "20",
                   sys.executable, __file__, "--child", f"program:{name}"]
            status, code, text, secs = run_child(cmd, min(60.0, budget.left()), report, f"{tool} {name}")
            summary = last_line(text, r"ERROR SUMMARY|RACECHECK SUMMARY|hazard")
            if code == UNSUPPORTED_EXIT:
                unsupported.add(name)
                report.add(2, f"{tool} {name}", "skip", last_line(text, r"^UNSUPPORTED"), secs)
                continue
            if status == "fail":
                status = "fail" if code == 97 or "PROGRAM" in text else "error"
            report.add(2, f"{tool} {name}", status, summary or last_line(text), secs)


# ------------------------------------------------------------------------------ tier 3
def child_cells(backend: str = "cuda") -> int:
    """The %%jit -b cuda cells in IPython's InteractiveShell (what a notebook's kernel runs); the
    tests run the same cells with `-b cuda-emulator`, where results are NumPy arrays."""
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jitkernel")
    failures = 0
    steps = [("setup", CELL_SETUP + f"BACKEND = {backend!r}\n", "")]
    steps += [(f"cell {i}", cell.replace("-b cuda", f"-b {backend}", 1), check) for i, (cell, check) in enumerate(CELLS)]
    for step, cell, check in steps:
        for part in filter(None, (cell, check)):
            result = shell.run_cell(part, store_history=True)
            if not result.success:
                failures += 1
                print(f"CELL {step} FAILED: {result.error_in_exec or result.error_before_exec!r}")
                break
        else:
            print(f"CELL {step} ok")
    print(f"CELLS {len(steps) - failures} of {len(steps)} ok (setup included)")
    return 1 if failures else 0


def tier3(args: argparse.Namespace, report: Report, budget: Budget) -> None:
    from jitkernel.backends.cuda import missing_for_cuda
    try:
        import IPython  # noqa: F401
    except ImportError:
        report.add(3, "%%jit -b cuda cells", "skip", "IPython is not importable (carry its wheels)")
        return
    if missing_for_cuda():
        report.add(3, "%%jit -b cuda cells", "skip", "; ".join(missing_for_cuda()))
        return
    status, _, text, secs = run_child([sys.executable, __file__, "--child", "cells"], budget.left(), report, "cells")
    report.add(3, "%%jit -b cuda cells (InteractiveShell)", status, last_line(text, r"^CELL"), secs)


# ------------------------------------------------------------------------------ tier 4
def tier4(args: argparse.Namespace, report: Report, budget: Budget) -> str:
    left = budget.left()
    cmd = [sys.executable, "-m", "benchmarks.gpu", "--out", str(report.out), "--budget", str(max(1.0, left - 10))]
    if args.dry_run_bench:
        cmd.append("--dry-run")
    status, _, text, secs = run_child(cmd, left, report, "benchmarks.gpu")
    table_file = report.out / "gpu_bench_table.txt"
    table = table_file.read_text() if table_file.exists() else ""
    rows = [r for r in _read_jsonl(report.out / "gpu_bench.jsonl")]
    detail = f"{len(rows)} results" if rows else last_line(text)
    if status == "ok" and "(nothing can run here)" in text:
        status, detail = "skip", "no implementation can run here: " + last_line(text, r"skipped: ")
    elif status == "ok" and args.dry_run_bench:
        detail = "dry run: " + last_line(text, r"^jitkernel ")
    report.add(4, "GPU benchmark", status, detail, secs)
    return table or ("benchmark plan:\n" + text.strip() if args.dry_run_bench else "")


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


# ------------------------------------------------------------------------------ driver
TIERS: dict[int, Callable] = {0: tier0, 1: tier1, 2: tier2, 3: tier3, 4: tier4}
CHILDREN = {"copy-bandwidth": child_copy_bandwidth}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--out", type=Path, default=None, help="results folder (default: $OUT, else a temporary one)")
    p.add_argument("--budget", type=float, default=480.0, help="seconds for the whole check (default 480)")
    p.add_argument("--tiers", default="0,1,2,3,4", help="comma-separated tiers to run (default all)")
    p.add_argument("--tier-budget", action="append", default=[], metavar="TIER=SECONDS",
                   help=f"override a tier's budget (defaults {TIER_BUDGETS})")
    p.add_argument("--wheels", type=Path, default=None, help="carried wheels (default .whl/, else ../shared/wheels/cp312)")
    p.add_argument("--site", type=Path, default=Path(tempfile.gettempdir()) / "jk-gpu-site",
                   help="where tier 0 installs the wheels (a --target folder)")
    p.add_argument("--no-install", action="store_true", help="do not install wheels (they are already importable)")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="the jitkernel persistent cache the cubins go to and the runtime reads "
                        "(default: .gpu-cache/ where it exists, else JITKERNEL_CACHE_DIR, else a temporary one)")
    p.add_argument("--arch", default="sm_90", help="cubin architecture of tier 0 (default sm_90, the H200)")
    p.add_argument("--dry-run-bench", action="store_true", help="tier 4 only prints the benchmark's plan")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--emulate-gpu", action="store_true", help=argparse.SUPPRESS)  # tests: children on an emulated GPU
    args = p.parse_args(argv)
    args.tiers = sorted({int(t) for t in args.tiers.split(",") if t.strip()})
    bad = [t for t in args.tiers if t not in TIERS]
    if bad:
        p.error(f"unknown tiers {bad}; tiers are {sorted(TIERS)}")
    args.budgets = dict(TIER_BUDGETS)
    for item in args.tier_budget:
        tier, _, secs = item.partition("=")
        args.budgets[int(tier)] = float(secs)
    return args


def choose_out(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    if os.environ.get("OUT"):
        return Path(os.environ["OUT"])
    return Path(tempfile.mkdtemp(prefix="jk-gpu-check-"))


def choose_cache(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit.resolve()
    if (REPO / ".gpu-cache").is_dir():
        return REPO / ".gpu-cache"
    if os.environ.get("JITKERNEL_CACHE_DIR"):
        return Path(os.environ["JITKERNEL_CACHE_DIR"])
    return Path(tempfile.mkdtemp(prefix="jk-gpu-cache-"))


def run_child_here(child: str) -> int:
    """One GPU child: `program:NAME[:BACKEND]`, `cells[:BACKEND]`, `corpus[:BACKEND]`, `copy-bandwidth`."""
    kind, _, rest = child.partition(":")
    if kind == "program":
        return child_program(*rest.split(":"))
    if kind == "cells":
        return child_cells(rest or "cuda")
    if kind == "corpus":
        return child_corpus(rest or "cuda")
    return CHILDREN[kind]()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child and args.emulate_gpu:  # the tests: GPU children on jitkernel's emulated GPU
        from jitkernel.device_array import emulate_gpu
        with emulate_gpu():
            return run_child_here(args.child)
    if args.child:
        return run_child_here(args.child)
    report = Report(choose_out(args.out))
    cache_dir = choose_cache(args.cache_dir)
    os.environ["JITKERNEL_CACHE_DIR"] = str(cache_dir)  # tier 0 writes it, the runtime (children) reads it
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    budget = Budget(args.budget, args.budgets)
    print(f"gpu-check: out {report.out}, cache {cache_dir}, budget {args.budget:.0f} s, tiers {args.tiers}", flush=True)
    bench_table = ""
    for tier in args.tiers:
        if budget.start_tier(tier) < 1:
            report.add(tier, TIER_NAMES[tier], "timeout", "the total budget is spent")
            continue
        t0 = time.monotonic()
        try:
            result = TIERS[tier](args, report, budget)
            if tier == 4:
                bench_table = result or ""
        except Exception as e:  # a broken tier is a result; the next tier still runs
            report.add(tier, TIER_NAMES[tier], "error", f"{type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}",
                       time.monotonic() - t0)
    print("\n" + report.finish(bench_table), flush=True)
    return 0 if not any(r["status"] in ("fail", "error") for r in report.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
