"""The no-GPU paths of the GPU check (scripts/gpu_check.py), the GPU benchmark (benchmarks/gpu.py)
and the PyCUDA wheel script (scripts/build_pycuda_wheels.py), run for real: tier 0's render + nvcc
into a temporary persistent cache, an offline pip install, the JSON-lines report and its table,
budgets, the tiers' skips without a GPU, the %%jit cells in IPython's InteractiveShell (on the
emulator), the benchmark's dry run and table, and the libcuda stub from the real cuda.h."""
from __future__ import annotations

import base64
import ctypes
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cuda_corpus import needs_nvcc
from jitkernel.backends.cuda import nvcc

REPO = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


check = _load("gpu_check_script", REPO / "scripts" / "gpu_check.py")
wheels = _load("build_pycuda_wheels_script", REPO / "scripts" / "build_pycuda_wheels.py")
from benchmarks import gpu as bench  # noqa: E402


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ------------------------------------------------------------------------------ report, budget
def test_report_writes_each_result_at_once_and_the_table_last(tmp_path):
    report = check.Report(tmp_path / "out")
    report.add(0, "first", "ok", "fine", 1.25)
    assert [r["check"] for r in _rows(report.path)] == ["first"]  # on disk before the next result exists
    report.add(2, "second", "fail", "racecheck: 3 hazards")
    report.add(4, "third", "skip", "no GPU")
    assert [r["status"] for r in _rows(report.path)] == ["ok", "fail", "skip"]
    text = report.finish("BENCH TABLE")
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["tier", "check", "status"]
    assert "second" in lines[2] and "fail" in lines[2] and "racecheck: 3 hazards" in lines[2]
    assert "totals: 1 ok, 1 fail, 1 skip" in text and text.endswith("BENCH TABLE")
    assert (tmp_path / "out" / "gpu_check_table.txt").read_text() == text + "\n"
    with pytest.raises(ValueError, match="status 'passed'"):
        report.add(1, "bad", "passed")


def test_grouped_results_collapse_into_one_table_line(tmp_path):
    report = check.Report(tmp_path)
    for i in range(5):
        report.add(0, f"cubin corpus c{i}", "ok", "compiled", 1.0, group="cubins corpus")
    report.add(0, "cubin corpus bad", "error", "CompileError: nvcc said no", 2.0, group="cubins corpus")
    report.add(0, "cubin bench matmul", "skip", "not rendered: dot_general", group="cubins bench")
    lines = report.table().splitlines()
    assert len(lines) == 4 and len(_rows(report.path)) == 7  # every result stays in the JSON lines
    assert lines[1].split()[:4] == ["0", "cubins", "corpus", "(6)"] and "error" in lines[1]
    assert "5 ok, 1 error; cubin corpus bad: CompileError: nvcc said no" in lines[1] and "7.0" in lines[1]
    assert "skip" in lines[2] and "not rendered: dot_general" in lines[2]


def test_a_spent_budget_still_prints_the_table(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", os.environ.get("JITKERNEL_CACHE_DIR", str(tmp_path / "suite-cache")))
    rc = check.main(["--tiers", "1,2,3", "--budget", "0", "--out", str(tmp_path), "--no-install",
                     "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    rows = _rows(tmp_path / "gpu_check.jsonl")
    assert [(r["tier"], r["status"]) for r in rows] == [(1, "timeout"), (2, "timeout"), (3, "timeout")]
    assert out.rstrip().endswith("totals: 3 timeout") and rc == 0


def test_a_tier_that_exceeds_its_budget_is_cut(tmp_path):
    report = check.Report(tmp_path)
    status, code, _, secs = check.run_child([sys.executable, "-c", "import time; time.sleep(30)"], 1.0, report, "sleeper")
    assert status == "timeout" and code is None and secs < 10
    assert "sleeper (timed out after 1 s)" in (tmp_path / check.LOG_NAME).read_text()


def test_every_tier_without_a_gpu_skips_with_its_reason(tmp_path, monkeypatch, capsys):
    if check.gpu_present():
        pytest.skip("this machine has a GPU: the tiers run for real (make gpu-check)")
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    # main() points JITKERNEL_CACHE_DIR at --cache-dir for its children: restored after the test
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", os.environ.get("JITKERNEL_CACHE_DIR", str(tmp_path / "suite-cache")))
    rc = check.main(["--tiers", "1,2,3,4", "--dry-run-bench", "--no-install", "--out", str(tmp_path),
                     "--cache-dir", str(tmp_path / "cache"), "--budget", "120"])
    rows = {r["check"]: r for r in _rows(tmp_path / "gpu_check.jsonl")}
    assert rows["environment"]["status"] == "ok" and rows["environment"]["facts"]["missing_for_cuda"]
    assert rows["GPU tiers"]["status"] == "skip" and "no NVIDIA GPU device" in rows["GPU tiers"]["detail"]
    assert rows["compute-sanitizer"]["status"] == "skip"
    assert rows["%%jit -b cuda cells"]["status"] == "skip"
    assert rows["GPU benchmark"]["status"] == "ok"
    out = capsys.readouterr().out
    assert out.index("totals:") < out.index("GPU benchmark plan (dry run)")  # the plan follows the table
    assert rc == 0


# ------------------------------------------------------------------------------ tier 0
def _wheel(folder: Path, name: str, version: str = "1.0") -> Path:
    """A real (tiny) py3-none-any wheel with a correct RECORD."""
    files = {f"{name}/__init__.py": f"VALUE = {version!r}\n",
             f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    files[f"{name}-{version}.dist-info/RECORD"] = "\n".join(record) + "\n"
    out = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return out


def test_tier0_installs_carried_wheels_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.setattr(sys, "path", list(sys.path))
    folder = tmp_path / "whl"
    folder.mkdir()
    _wheel(folder, "jkprobe_a")
    _wheel(folder, "jkprobe_b", "2.5")
    report = check.Report(tmp_path / "out")
    assert check.install_wheels(folder, tmp_path / "site", report, 120)
    assert report.rows[-1]["status"] == "ok" and "2 wheels" in report.rows[-1]["detail"]
    proc = subprocess.run([sys.executable, "-c", "import jkprobe_a, jkprobe_b; print(jkprobe_b.VALUE)"],
                          capture_output=True, text=True, env=os.environ.copy(), check=True)
    assert proc.stdout.strip() == "2.5"  # children see the target through PYTHONPATH
    assert not check.install_wheels(tmp_path / "none", tmp_path / "site2", report, 60)
    assert report.rows[-1]["status"] == "skip" and "build_pycuda_wheels" in report.rows[-1]["detail"]


@needs_nvcc
def test_tier0_leaves_a_cubin_per_program_in_the_persistent_cache(tmp_path, monkeypatch):
    import jitkernel as jk
    from jitkernel import cache
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    wanted = ("bench W2", "sanitizer row-kernel", "sanitizer matmul")
    progs = [p for p in check.programs() if p[0] in wanted]
    assert [p[0] for p in progs] == list(wanted)
    monkeypatch.setattr(check, "programs", lambda: progs)
    report = check.Report(tmp_path / "out")
    check.precompile(report, "sm_90", check.Budget(120, check.TIER_BUDGETS))
    rows = {r["check"]: r for r in report.rows}
    key, _, origin = check.cubin_cache("sm_90")
    for label, fn, args in progs:  # the matmul too: dot_general renders as a tiled kernel
        assert rows[f"cubin {label}"]["status"] == "ok", rows
        source = jk.jit(fn, backend="interpret").lower(*args).as_text("cuda")
        try:  # the runtime's key where the runtime exists: what `backend="cuda"` will look up
            from jitkernel.backends.cuda.pycuda_device import cubin_key
            assert key(source) == cubin_key(source, "sm_90") and origin == "the runtime's key"
        except ImportError:
            assert key(source) == cache.cache_key("cuda-cubin", source, check.nvcc_version(nvcc.find_nvcc()),
                                                  "sm_90", jk.__version__)
        hit = cache.load(key(source))
        assert hit is not None and hit[0][:4] == b"\x7fELF" and hit[1] == source
        for name in __import__("re").findall(r'extern "C" __global__ void (\w+)\(', source):
            assert name.encode() in hit[0]
    assert "3 kernels" in rows["cubin bench W2"]["detail"]  # two-stage whole-array sum + elementwise
    again = check.Report(tmp_path / "out2")
    check.precompile(again, "sm_90", check.Budget(120, check.TIER_BUDGETS))
    assert all("cached" in r["detail"] for r in again.rows if r["status"] == "ok")


def test_the_programs_render_at_the_benchmark_shapes_without_memory():
    progs = {label: args for label, _, args in check.programs()}
    w1 = progs["bench W1"][0]
    assert w1.shape == (10**8,) and w1.strides == (0,) and w1.dtype == np.float32
    assert sum(label.startswith("corpus ") for label in progs) == len(__import__("cuda_corpus").all_cases()) > 100
    assert {"bench W1", "bench W2", "bench W3", "bench W4", "bench W6", "bench matmul", "sanitizer reduction",
            "sanitizer row-kernel", "sanitizer matmul", "cell cell_softmax"} <= set(progs)


def _emulated_gpu():
    try:
        from jitkernel.device_array import emulate_gpu
        return emulate_gpu
    except ImportError:
        return None


needs_emulated_gpu = pytest.mark.skipif(_emulated_gpu() is None, reason="jitkernel.device_array.emulate_gpu "
                                        "(the cuda runtime's emulated GPU) is not in this tree")


@needs_emulated_gpu
def test_the_cells_run_with_b_cuda_in_an_interactive_shell(tmp_path):
    """Tier 3's child as it runs on a GPU: `%%jit -b cuda` cells through IPython's InteractiveShell,
    results checked to be DeviceArrays equal to NumPy's; here on jitkernel's emulated GPU."""
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--child", "cells", "--emulate-gpu"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CELLS 3 of 3 ok" in proc.stdout


def test_a_failing_cell_is_reported(tmp_path, monkeypatch):
    """The cells child fails (exit 1, the cell named) when a check does not hold."""
    monkeypatch.setattr(check, "CELLS", [("%%jit -b cuda\ndef f(x):\n    return x + 1\n\ny = f(x[:2, :2])\n",
                                          "assert False, 'the check ran'\n")])
    from IPython.core.interactiveshell import InteractiveShell
    from jitkernel import events
    subscribers = list(events.SUBSCRIBERS)
    try:
        assert check.child_cells("interpret") == 1
    finally:
        # the next test module's shell starts clean, with no profiler left listening (a leftover
        # subscriber made every later jitted call in the suite record and compact events)
        InteractiveShell.instance().extension_manager.unload_extension("jitkernel")
        InteractiveShell.clear_instance()
        events.SUBSCRIBERS[:] = subscribers


@needs_emulated_gpu
def test_benchmark_rows_of_jitkernel_on_an_emulated_gpu():
    """benchmarks/gpu.py's jitkernel path (device_put, jk.jit(backend="cuda"), synchronisation,
    the NumPy check, the timing loop, dispatch) on the emulated GPU, at toy sizes."""
    small = [bench.GpuWorkload("W1", "W1", ((1000,),), 1000, 0.8, ""),
             bench.GpuWorkload("W3", "W3", ((8, 64),), 8 * 64, 0.7, "")]
    rows: list[dict] = []
    with _emulated_gpu()():
        bench.run_workloads("jitkernel", small, 3, rows.append)
    assert [r["kind"] for r in rows] == ["context", "workload", "workload", "dispatch"], rows
    for r in rows[1:3]:
        assert "error" not in r and r["check"] == "ok" and r["median_ms"] > 0 and r["timer"] == "wall + block_until_ready", r
    assert rows[3]["dispatch_us"] > 0


# ------------------------------------------------------------------------------ benchmark
def test_benchmark_dry_run_names_what_would_run(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchmarks.gpu", "--dry-run"], capture_output=True, text=True,
                          cwd=REPO, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    for impl in ("jitkernel", "jax", "cupy"):
        assert f"\n  {impl}" in proc.stdout
    assert "W1: >= JAX, >= 3x CuPy, >= 80% copy BW" in proc.stdout and "dispatch <= 15 us" in proc.stdout
    # jax and cupy are imported only in the GPU parts: importing the benchmark loads neither (asked
    # of a fresh process: this one may hold jax already, from the TPU backend's tests)
    probe = subprocess.run([sys.executable, "-c", "import sys, benchmarks.gpu; print('jax' in sys.modules, "
                            "'cupy' in sys.modules)"], capture_output=True, text=True, cwd=REPO, timeout=120,
                           env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert probe.stdout.split() == ["False", "False"], probe.stdout + probe.stderr


def test_benchmark_table_computes_bandwidth_and_ratios():
    w1 = next(w for w in bench.WORKLOADS if w.name == "W1")
    assert w1.moved == 8 * 10**8  # one float32 read, one written
    results = [
        {"kind": "workload", "impl": "jitkernel", "workload": "W1", "median_ms": 0.25},
        {"kind": "workload", "impl": "jax", "workload": "W1", "median_ms": 0.5},
        {"kind": "workload", "impl": "cupy", "workload": "W1", "median_ms": 1.0},
        {"kind": "workload", "impl": "jitkernel", "workload": "matmul", "error": "UnsupportedOperationError: dot_general"},
        {"kind": "workload", "impl": "cupy", "workload": "matmul", "median_ms": 0.9, "check": "ok"},
        {"kind": "dispatch", "impl": "jitkernel", "dispatch_us": 9.5},
        {"kind": "first_call", "impl": "jitkernel", "seconds": 0.8, "context_s": 0.3},
    ]
    text = bench.table(results, copy_bw=4e12)
    w1_line = next(line for line in text.splitlines() if line.startswith("W1 "))
    assert w1_line.split()[:8] == ["W1", "0.250", "0.500", "1.000", "3200", "80", "2.00", "4.00"]
    assert "copy bandwidth (device to device): 4.00 TB/s" in text
    assert "jitkernel: UnsupportedOperationError: dot_general" in text and "W2" not in text
    assert "dispatch jitkernel 9.5 us/call  goal <= 15 us" in text
    assert "first_call" in text and "800.0 ms (import + CUDA context apart: 0.30 s)  goal <= 1 s" in text


def test_benchmark_check_catches_a_wrong_answer():
    w3 = next(w for w in bench.WORKLOADS if w.name == "W3")
    x = np.random.default_rng(0).random((300, 64), dtype=np.float32)
    right = w3.make(np)(x)
    assert bench.check(w3, [x], right) == "ok"
    wrong = right.copy()
    wrong[:, 0] += 0.01
    assert "values differ" in bench.check(w3, [x], wrong)
    assert "shape/dtype" in bench.check(w3, [x], right.astype(np.float64))


# ------------------------------------------------------------------------------ wheel script
def test_wheel_script_arguments_and_configuration(tmp_path):
    args = wheels.parse_args([])
    assert args.out == REPO / ".whl" and args.python == "3.12" and args.pycuda_version == "2026.1"
    assert "/.whl/" in (REPO / ".gitignore").read_text().splitlines()  # the default folder is never committed
    args = wheels.parse_args(["--out", str(tmp_path), "--python", "/usr/bin/python3", "--no-ipython"])
    assert args.out == tmp_path and args.no_ipython
    config: dict = {}
    exec(wheels.aksetup_defaults(Path("/opt/cuda"), tmp_path / "stub"), config)
    assert config["CUDA_ENABLE_CURAND"] is False and config["CUDA_ROOT"] == "/opt/cuda"
    assert config["CUDADRV_LIB_DIR"] == [str(tmp_path / "stub")]
    (tmp_path / "a.whl").write_bytes(b"one")
    (tmp_path / "b.whl").write_bytes(b"two")
    sums = wheels.write_sums(tmp_path).read_text().splitlines()
    assert sums == [f"{hashlib.sha256(b'one').hexdigest()}  a.whl", f"{hashlib.sha256(b'two').hexdigest()}  b.whl"]


def _cuda_root():
    try:
        return wheels.find_cuda_root()
    except SystemExit:
        return None


@pytest.mark.skipif(_cuda_root() is None, reason="no CUDA toolkit with include/cuda.h (set CUDA_HOME)")
def test_libcuda_stub_from_the_real_headers(tmp_path):
    names = wheels.cuda_entry_points(_cuda_root())
    assert {"cuInit", "cuLaunchKernel", "cuModuleLoadData", "cuMemAlloc_v2", "cuProfilerStart"} <= set(names)
    assert "cudaMalloc" not in names and len(names) == len(set(names)) > 300
    lib = wheels.write_stub(_cuda_root(), tmp_path)
    soname = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    assert "Library soname: [libcuda.so.1]" in soname
    stub = ctypes.CDLL(str(lib))
    assert stub.cuInit is not None and stub.cuProfilerStart is not None


@needs_emulated_gpu
def test_tier0_renders_the_source_the_cuda_runtime_compiles():
    """The cubin tier 0 stores is found only if `backend="cuda"` renders the very same source
    (the cache key hashes it): compare the two for a row kernel and a two-stage reduction."""
    import jitkernel as jk
    x = np.random.default_rng(0).random((8, 64), dtype=np.float32)
    with _emulated_gpu()():
        for fn in (check.cell_softmax, check.san_whole_sum):
            runtime = jk.jit(fn, backend="cuda").lower(x).as_text("cuda")
            assert runtime == jk.jit(fn, backend="interpret").lower(x).as_text("cuda"), fn.__name__
