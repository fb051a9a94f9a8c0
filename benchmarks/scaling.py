"""Compile-time scaling: seconds per stage against the number of traced operations.

    .venv/bin/python -m benchmarks.scaling                              # 1k, 10k, 100k ops, all families
    .venv/bin/python -m benchmarks.scaling --sizes 1000,10000 --families chain,nested_sin
    .venv/bin/python -m benchmarks.scaling --json scaling.json

Program families (N = requested operations; the table also shows the traced equation count):

- `chain`: an elementwise chain on a (64,) float64 array, cycling `sin`, `* 0.9`, `+ 0.1`.
- `accumulate`: the unrolled loop `t = 0.0; for i in range(N // 4): t += np.tanh(a[i % 7, i % 5])`
  on a (7, 5) array (an index, a reshape, a tanh and an add per step).
- `nested_sin`: `x = np.sin(x)` N times on a (64,) array.
- `wide_sum`: N // 3 independent terms `sin(x * c_i)` added pairwise (a balanced tree).

Per stage, from `jk.events` durations: trace, optimise, fuse (scheduling), codegen (LLVM IR
rendering, parsing and verification), compile (LLVM's O3, object code, linking) and the first
run; `total` is the wall time of the first call. Every result is checked against NumPy running
the same Python function (exit status 1 on a mismatch). Machine code caching is off and the
cache directory is a temporary one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable

os.environ.setdefault("JITKERNEL_CACHE_DIR", tempfile.mkdtemp(prefix="jk-scaling-"))

import numpy as np  # noqa: E402

import jitkernel as jk  # noqa: E402

STAGES = (("trace", "TraceEvent"), ("optimise", "OptimizeEvent"), ("fuse", "FuseEvent"),
          ("codegen", "CodegenEvent"), ("compile", "CompileEvent"), ("run", "RunEvent"))


def chain(n: int) -> tuple[Callable, tuple]:
    def f(x):
        for i in range(n):
            k = i % 3
            x = np.sin(x) if k == 0 else (x * 0.9 if k == 1 else x + 0.1)
        return x
    return f, (np.linspace(-1.0, 1.0, 64),)


def accumulate(n: int) -> tuple[Callable, tuple]:
    def f(a):
        rows, cols = a.shape
        t = 0.0
        for i in range(max(n // 4, 1)):
            t += np.tanh(a[i % rows, i % cols])
        return t
    return f, (np.random.default_rng(0).standard_normal((7, 5)),)


def nested_sin(n: int) -> tuple[Callable, tuple]:
    def f(x):
        for _ in range(n):
            x = np.sin(x)
        return x
    return f, (np.linspace(-1.0, 1.0, 64),)


def wide_sum(n: int) -> tuple[Callable, tuple]:
    def f(x):
        terms = [np.sin(x * (1.0 + 1e-4 * i)) for i in range(max(n // 3, 1))]
        while len(terms) > 1:
            pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
            terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
        return terms[0]
    return f, (np.linspace(-1.0, 1.0, 64),)


FAMILIES = {"chain": chain, "accumulate": accumulate, "nested_sin": nested_sin, "wide_sum": wide_sum}


def measure(family: str, n: int) -> dict[str, Any]:
    fn, args = FAMILIES[family](n)
    expected = fn(*args)
    seen: dict[str, float] = {}
    counts: dict[str, Any] = {}

    def listen(e: Any) -> None:
        name = type(e).__name__
        seen[name] = seen.get(name, 0.0) + e.duration
        if name == "OptimizeEvent":
            counts["eqns"], counts["eqns_optimised"] = e.eqns_before, e.eqns_after
        elif name == "FuseEvent":
            counts["kernels"] = e.kernels
    unsubscribe = jk.events.subscribe(listen)
    try:
        f = jk.jit(fn, disk_cache=False)
        t0 = time.perf_counter()
        got = f(*args)
        total = time.perf_counter() - t0
    finally:
        unsubscribe()
    ok = (np.shape(got) == np.shape(expected) and np.asarray(got).dtype == np.asarray(expected).dtype
          and np.allclose(got, expected, rtol=1e-9, atol=1e-9))
    row = {"family": family, "n": n, **counts, "total": total, "ok": bool(ok)}
    row.update({stage: seen.get(event, 0.0) for stage, event in STAGES})
    return row


def _format(rows: list[dict[str, Any]]) -> str:
    head = ["family", "N", "eqns", "kernels"] + [s for s, _ in STAGES] + ["total", "ok"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["family"], str(r["n"]), str(r.get("eqns", "")), str(r.get("kernels", ""))]
        cells += [f"{r[s]:.3f}" for s, _ in STAGES] + [f"{r['total']:.2f}", "yes" if r["ok"] else "NO"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated operation counts")
    parser.add_argument("--families", default=",".join(FAMILIES), help=f"comma-separated, from {list(FAMILIES)}")
    parser.add_argument("--json", metavar="PATH", help="write the rows as JSON")
    opts = parser.parse_args(argv)
    sizes = [int(float(s)) for s in opts.sizes.split(",")]
    families = opts.families.split(",")
    for fam in families:
        if fam not in FAMILIES:
            parser.error(f"unknown family {fam!r}")
    print(f"jitkernel {jk.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}; "
          "seconds per stage (jk.events durations), first call, no disk cache", flush=True)
    rows = []
    for n in sizes:
        for fam in families:
            rows.append(measure(fam, n))
            r = rows[-1]
            print(f"  {fam:<11} N={n:<7} eqns={r.get('eqns', '?'):<7} kernels={r.get('kernels', '?'):<5} "
                  + " ".join(f"{s}={r[s]:.3f}" for s, _ in STAGES) + f" total={r['total']:.2f}s"
                  + ("" if r["ok"] else "  MISMATCH"), flush=True)
    print()
    print(_format(rows))
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
