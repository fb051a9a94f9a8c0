"""`jitkernel` command line: `jitkernel demo` traces, compiles and runs the bundled example."""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.3f} ms"


def demo(args: argparse.Namespace) -> int:
    import jitkernel as jk
    from jitkernel import events
    from jitkernel.examples.mlp import example_inputs, layer

    phases: dict[str, float] = {}

    def record(e: events.Event) -> None:
        key = type(e).__name__.replace("Event", "").lower()
        phases[key] = phases.get(key, 0.0) + e.duration

    unsubscribe = events.subscribe(record)
    x, w, b = example_inputs()
    f = jk.jit(layer)
    t0 = time.perf_counter()
    y, m = f(x, w, b)
    first_call = time.perf_counter() - t0
    unsubscribe()
    warm = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        f(x, w, b)
        warm.append(time.perf_counter() - t)
    numpy_times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        ey, em = layer(x, w, b)
        numpy_times.append(time.perf_counter() - t)
    ok = np.allclose(y, ey, rtol=1e-4, atol=1e-4) and np.isclose(m, em, rtol=1e-5)

    lowered = f.lower(x, w, b)
    print("== example: jitkernel/examples/mlp.py ==")
    print("def layer(x, w, b):\n    h = np.tanh(x @ w + b)\n    return (h * h).sum(axis=1), h.max()\n")
    print(f"inputs: x {x.dtype}{list(x.shape)}, w {w.dtype}{list(w.shape)}, b {b.dtype}{list(b.shape)}\n")
    print("== traced IR (jk.make_ir(layer)(x, w, b)) ==")
    print(jk.make_ir(layer)(x, w, b))
    print("\n== fused kernels (f.lower(x, w, b).as_text('kernels')) ==")
    print(lowered.as_text("kernels"))
    if args.llvm:
        print("\n== optimised LLVM IR ==")
        print(lowered.as_text("llvm"))
    print("\n== times ==")
    for name in ("trace", "optimize", "fuse", "codegen", "compile", "run"):
        if name in phases:
            label = "first run" if name == "run" else name
            print(f"  {label:<12}{_ms(phases[name])}")
    print(f"  {'first call':<12}{_ms(first_call)}  (trace + compile + first run)")
    print(f"  {'warm run':<12}{_ms(statistics.median(warm))}  (median of {args.repeat})")
    print(f"  {'NumPy':<12}{_ms(statistics.median(numpy_times))}  (median of {args.repeat}, same inputs)")
    print(f"\nresults match NumPy: {ok}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jitkernel", description="NumPy traced, fused and compiled with LLVM.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="trace, compile and run the bundled example; print IR, kernels and times")
    p_demo.add_argument("--repeat", type=int, default=20, help="warm runs to time (default 20)")
    p_demo.add_argument("--llvm", action="store_true", help="also print the optimised LLVM IR")
    p_demo.set_defaults(run=demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
