"""The array API standard's public test suite (data-apis/array-api-tests) run against NumPy 2
and against jitkernel.array_api with every function compiled by jk.jit
(benchmarks/array_api_jitted.py); prints passed/failed/skipped for both and the tests that fail
under jit but pass with NumPy.

    python -m benchmarks.array_api_conformance --suite /tmp/array-api-tests --max-examples 10

The suite is not vendored: pass a checkout of it (with its `array-api` spec submodule in place)
and install its requirements (hypothesis, ndindex, pytest-json-report) into this venv.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {
    "numpy": "numpy",
    "eager": "jitkernel.array_api",
    "jit": "exec('import benchmarks.array_api_jitted as m; xp = m.namespace(\"{backend}\")')",
}


def run_suite(suite: Path, target: str, backend: str, max_examples: int, extra: list[str]) -> dict[str, str]:
    """Outcome ("passed", "failed", "skipped", "error") of each test node of the suite."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        env = dict(os.environ, ARRAY_API_TESTS_MODULE=TARGETS[target].format(backend=backend),
                   ARRAY_API_TESTS_VERSION="2024.12",
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                   HYPOTHESIS_STORAGE_DIRECTORY=str(Path(tmp) / "hypothesis"))
        cmd = [sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider",
               f"--max-examples={max_examples}", "--disable-deadline", "--derandomize",
               "--json-report", f"--json-report-file={report}", "-o", "addopts=", *extra]
        subprocess.run(cmd, cwd=suite, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        data = json.loads(report.read_text())
    outcomes = {}
    for test in data.get("tests", []):
        outcome = test["outcome"]
        outcomes[test["nodeid"]] = "failed" if outcome in ("error", "xpassed") else (
            "skipped" if outcome == "xfailed" else outcome)
    return outcomes


def counts(outcomes: dict[str, str]) -> dict[str, int]:
    return {k: sum(1 for v in outcomes.values() if v == k) for k in ("passed", "failed", "skipped")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", type=Path, required=True, help="a checkout of data-apis/array-api-tests")
    parser.add_argument("--max-examples", type=int, default=10, help="hypothesis examples per test")
    parser.add_argument("--backend", default="cpu", help="jk.jit backend of the jitted namespace")
    parser.add_argument("--targets", default="numpy,jit",
                        help="comma-separated: numpy, jit, eager (jitkernel.array_api on NumPy arrays, no jit)")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --), e.g. -k sum")
    args = parser.parse_args(argv)

    results, seconds = {}, {}
    for target in args.targets.split(","):
        start = time.perf_counter()
        results[target] = run_suite(args.suite, target, args.backend, args.max_examples, args.pytest_args)
        seconds[target] = time.perf_counter() - start

    lines = [f"command: python -m benchmarks.array_api_conformance --suite SUITE --max-examples {args.max_examples} "
             f"--backend {args.backend} --targets {args.targets}" + (" -- " + " ".join(args.pytest_args) if args.pytest_args else ""),
             "", f"{'namespace':<40} {'passed':>7} {'failed':>7} {'skipped':>8} {'seconds':>8}"]
    names = {"numpy": "numpy (NumPy 2 itself)", "jit": f"jitkernel.array_api, jk.jit {args.backend}",
             "eager": "jitkernel.array_api, eager (no jit)"}
    for target, outcomes in results.items():
        c = counts(outcomes)
        lines.append(f"{names[target]:<40} {c['passed']:>7} {c['failed']:>7} {c['skipped']:>8} {seconds[target]:>8.0f}")
    for target in (t for t in results if t != "numpy" and "numpy" in results):
        mine, numpy = results[target], results["numpy"]
        extra = sorted(n for n, o in mine.items() if o == "failed" and numpy.get(n) != "failed")
        both = sorted(n for n, o in mine.items() if o == "failed" and numpy.get(n) == "failed")
        fixed = sorted(n for n, o in numpy.items() if o == "failed" and mine.get(n) == "passed")
        lines += ["", f"== {names[target]}",
                  f"failing here, not with NumPy: {len(extra)}", *(f"  {n}" for n in extra),
                  f"failing in both (NumPy's own deviations, or NumPy's ndarray under test): {len(both)}",
                  *(f"  {n}" for n in both),
                  f"failing with NumPy, passing here: {len(fixed)}", *(f"  {n}" for n in fixed)]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
