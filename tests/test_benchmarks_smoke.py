"""Smoke test of benchmarks/run.py: the table prints and every result is verified against NumPy.

No timing assertions at all (timings on a shared CI machine mean nothing)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = ["W1-1e7", "W1-1e5", "W1-1e3", "W3", "W7"]


def test_quick_run_prints_table_and_verifies(tmp_path):
    out_json = tmp_path / "bench.json"
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "jkcache"))
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--repeat", "1", "--workloads", "W1,W3,W7",
         "--impls", "jitkernel,numpy", "--json", str(out_json)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert proc.returncode == 0, f"stdout:\n{out}\nstderr:\n{proc.stderr}"
    # header: machine, versions, BLAS hints, threads; then the table
    assert "machine:" in out and "versions:" in out and "OPENBLAS_CORETYPE=" in out and "threads:" in out
    assert "median" in out and "p10 - p90" in out and "t/numpy" in out
    for row in ROWS:
        assert f"\n{row} " in out, row
    assert "PROBLEMS" not in out and "MISMATCH" not in out and "FAILED" not in out
    assert "0 problems" in out

    doc = json.loads(out_json.read_text())
    got = {(r["row"], r["impl"]): r for r in doc["results"]}
    assert set(got) == {(row, impl) for row in ROWS for impl in ("numpy", "jitkernel")}
    for (row, impl), r in got.items():
        assert r["status"] == "ok", (row, impl, r["detail"])
        assert r["max_err"] is not None and r["max_err"] < 1e-4, (row, impl)
        assert len(r["samples_ns"]) == 1 and r["median_ns"] is not None
        assert r["ratio_to_numpy"] is not None
    assert got[("W7", "jitkernel")]["batch"] == 1000
    assert doc["quick"] is True and "OPENBLAS_CORETYPE" in doc["blas"] and "env" in doc["threads"]


def test_verify_reports_mismatches():
    from benchmarks.run import Case, Result, table_row, verify

    case = Case("W1-1e3", "W1", "n=4", lambda rng: (), "W1")
    ref = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    assert verify(ref.copy(), ref, case, np)[0]
    assert verify(ref * (1 + 1e-6), ref, case, np)[0]  # float32 rounding is fine
    ok, err, why = verify(ref + np.float32(0.5), ref, case, np)
    assert not ok and "out of tolerance" in why and err > 0.1
    assert "dtype" in verify(ref.astype(np.float64), ref, case, np)[2]
    assert "shape" in verify(ref[:3], ref, case, np)[2]
    assert "non-finite" in verify(np.array([1, 2, np.nan, 4], np.float32), ref, case, np)[2]
    line = table_row(Result("W1-1e3", "W1", "n=4", "jitkernel", status="MISMATCH", detail=why), True)
    assert "MISMATCH" in line and "out of tolerance" in line


def test_wrong_result_is_reported_not_timed(monkeypatch, capsys):
    import benchmarks.run as bench

    real = bench.build_call

    def broken(impl, case, args, libs):
        fn = real(impl, case, args, libs)
        return (lambda: fn() + 1) if impl == "jitkernel" else fn

    monkeypatch.setattr(bench, "build_call", broken)
    rc = bench.main(["--quick", "--repeat", "1", "--workloads", "W7", "--impls", "jitkernel,numpy"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "MISMATCH" in out and "PROBLEMS (1)" in out and "W7 jitkernel" in out


def test_npbench_table_with_numba_columns_and_summary():
    # benchmarks/npbench_as_written.py --numba-python: the columns and the two summary lines,
    # from results made here (no NPBench checkout, no Numba, no timing).
    import argparse
    import pathlib

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import npbench_as_written as h
    finally:
        sys.path.pop(0)
    rows = [h.Result("fast", "ok", numpy_s=4e-3, jit_s=1e-3, first_call_s=0.2,
                     numba={"n": {"status": "ok", "detail": "", "time_s": 2e-3},
                            "np": {"status": "WRONG", "detail": "return: 3 of 9 values differ\nmore"}}),
            h.Result("slow", "ok", numpy_s=4e-3, jit_s=8e-3, first_call_s=0.2,
                     numba={"n": {"status": "ok", "detail": "", "time_s": 3e-3},
                            "npr": {"status": "ok", "detail": "", "time_s": 2e-3}}),
            h.Result("alone", "raises", "ValueError: no")]
    ns = argparse.Namespace(backend="cpu", preset="S", scale=1.0, timeout=60.0, time=True,
                            numba_python="/venv/bin/python", numba_variants="n,np,npr")
    text = h.render(rows, ns, pathlib.Path("/npbench"))
    assert "numba best" in text and "jit/numba" in text
    fast = next(line for line in text.splitlines() if line.startswith("fast "))
    slow = next(line for line in text.splitlines() if line.startswith("slow "))
    assert fast.split()[-2:] == ["n", "0.50"] and slow.split()[-2:] == ["npr", "4.00"]
    assert "over the 2 kernels both ran and matched: 0.71x" in text  # sqrt(2 / 1 * 2 / 8)
    assert "at least as fast as Numba's best on 1 of 2 kernels (50%)" in text
    assert "  fast: np WRONG: return: 3 of 9 values differ" in text and "more" not in text
    assert h.described(np.zeros((2, 3))) == "float64[2, 3] array" and h.described(None) == "None"
