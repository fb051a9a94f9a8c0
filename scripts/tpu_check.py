#!/usr/bin/env python3
"""The TPU check (`make tpu-check` on the TPU machine, docs/tpu.md): tests/tpu on the real chip,
then the benchmark against JAX (benchmarks/tpu_vs_jax.py), in one process (only one process can
hold the chip, and opening it costs about 15 s). Prints a JSON line per test and per benchmark
row as it goes, and appends them to benchmarks/results/tpu-check.jsonl; the table last.

    python3 scripts/tpu_check.py [--quick] [--tests-only]   # NPBENCH=PATH also runs NPBench as written on the chip
"""
from __future__ import annotations

import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "tpu-check.jsonl")


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
    with open(RESULTS, "a") as sink:
        sink.write(json.dumps({"tpu_check": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", os.path.join(ROOT, "tests", "tpu")],
                           plugins=[_JsonLines(sink)])
    if "--tests-only" in sys.argv:
        return int(code)
    sys.argv = [sys.argv[0], "--backend", "tpu", "--json-lines", RESULTS] + (["--quick"] if quick else [])
    from benchmarks import tpu_vs_jax
    tpu_vs_jax.main()
    npbench = os.environ.get("NPBENCH")  # NPBench as written on the chip, in this process
    if npbench:
        from benchmarks import npbench_as_written
        npbench_as_written.main(["--npbench", npbench, "--backend", "tpu", "--in-process", "--time",
                                 "--output", os.path.join(ROOT, "benchmarks", "results", "npbench-tpu.txt"),
                                 "--jsonl", os.path.join(ROOT, "benchmarks", "results", "npbench-tpu.jsonl")])
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
