#!/usr/bin/env python3
"""The TPU check (`make tpu-check` on the TPU machine, docs/tpu.md): tests/tpu on the real chip,
then the benchmark against JAX (benchmarks/tpu_vs_jax.py), in one process (only one process can
hold the chip, and opening it costs about 15 s). Prints a JSON line per test and per benchmark
row as it goes, and appends them to benchmarks/results/tpu-check.jsonl; the table last.

    python3 scripts/tpu_check.py [--quick] [--tests-only] [--no-tests] [--no-bench] [--suites all|MODULE,...]
                                 [--suites-only]

`--suites` also runs the NumPy-equivalence suites (the test modules that opt into the TPU suite,
tests/tpu_suite.py: `all` of them, or the named ones) on the chip, in the same pytest session:
their backend tests with backend "tpu" in place of "tpu-interpret" (`--suites-only`: without tests/tpu,
to spend a short chip session on the named suites). NPBENCH=PATH also runs NPBench
as written on the chip, once per input type in NPBENCH_DATATYPES (default "float32,float64"), each
kernel also called with its arrays already on the chip (`--device-arguments`).
"""
from __future__ import annotations

import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "tpu-check.jsonl")


class _ChipItemsOnly:
    """A pytest plugin: in the equivalence-suite modules, keep only the items that run on the chip
    (backend "tpu"); tests/tpu runs whole."""

    def pytest_collection_modifyitems(self, config, items) -> None:
        keep, drop = [], []
        for item in items:
            in_suite = "/tests/tpu/" not in str(item.fspath)
            backend = getattr(item, "callspec", None) and item.callspec.params.get("backend")
            (drop if in_suite and backend != "tpu" else keep).append(item)
        items[:] = keep
        config.hook.pytest_deselected(items=drop)


def _suite_modules(spec: str) -> list[str]:
    """The equivalence-suite modules `spec` names (`all`: every module that opts in)."""
    tests = os.path.join(ROOT, "tests")
    opted = sorted(name for name in os.listdir(tests) if name.startswith("test_") and name.endswith(".py")
                   and "\nTPU_SUITE = True" in open(os.path.join(tests, name)).read())
    wanted = opted if spec == "all" else [m if m.endswith(".py") else m + ".py" for m in spec.split(",")]
    return [os.path.join(tests, m) for m in wanted]


class _JsonLines:
    """A pytest plugin: one JSON line per test outcome."""

    def __init__(self, sink) -> None:
        self.sink = sink

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or report.outcome != "passed":
            line = json.dumps({"test": report.nodeid, "when": report.when, "outcome": report.outcome,
                               "seconds": round(report.duration, 3)})
            print(line, flush=True)
            self.sink.write(line + "\n")


def main() -> int:
    import pytest
    quick = "--quick" in sys.argv
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    sys.path.insert(0, ROOT)
    suites = sys.argv[sys.argv.index("--suites") + 1] if "--suites" in sys.argv else ""
    paths, plugins = ([] if "--suites-only" in sys.argv else [os.path.join(ROOT, "tests", "tpu")]), []
    if suites:
        os.environ["JITKERNEL_TPU_SUITE_BACKEND"] = "tpu"  # read by tests/tpu_suite.py at collection
        paths += _suite_modules(suites)
        plugins.append(_ChipItemsOnly())
    code = 0
    with open(RESULTS, "a") as sink:
        sink.write(json.dumps({"tpu_check": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
        if "--no-tests" not in sys.argv:
            code = pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", *paths],
                               plugins=[_JsonLines(sink), *plugins])
    if "--tests-only" in sys.argv:
        return int(code)
    if "--no-bench" not in sys.argv:
        sys.argv = [sys.argv[0], "--backend", "tpu", "--json-lines", RESULTS] + (["--quick"] if quick else [])
        from benchmarks import tpu_vs_jax
        tpu_vs_jax.main()
    npbench = os.environ.get("NPBENCH")  # NPBench as written on the chip, in this process
    if npbench:
        from benchmarks import npbench_as_written
        for datatype in os.environ.get("NPBENCH_DATATYPES", "float32,float64").split(","):
            out = os.path.join(ROOT, "benchmarks", "results", f"npbench-tpu-{datatype}")
            npbench_as_written.main(["--npbench", npbench, "--backend", "tpu", "--in-process", "--device-arguments",
                                     "--datatype", datatype, "--output", out + ".txt", "--jsonl", out + ".jsonl"]
                                    + ([] if quick else ["--time"]))
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
