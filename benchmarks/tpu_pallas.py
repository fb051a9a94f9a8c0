"""Pallas kernels against XLA's fusion of the same elementwise steps, on the same chip, in one
process (docs/tpu.md, "Pallas kernels"): the numbers behind `tpu_fusion="auto"`'s rule
(`backends/tpu/options.AUTO_RULE`).

    python -m benchmarks.tpu_pallas --backend tpu [--sizes 16,20,24,26] [--repeat 20] [--json-lines PATH]
    python -m benchmarks.tpu_pallas --backend tpu --block-rows 512,1024,2048 --sub-rows 0,32,128
    python -m benchmarks.tpu_pallas --backend tpu-interpret --quick     # a smoke run without a TPU

Each workload is compiled twice, with `tpu_fusion="pallas"` and `"xla"`, and each executable is
timed on float32 inputs already on the chip (device time: the XLA executable jitkernel built,
called with device-resident jax arrays, as benchmarks/tpu_vs_jax.py does), median of `--repeat`
synchronised runs after warm-up. A row also says how many of the program's elementwise chains
became Pallas kernels (a chain Mosaic cannot lower stays with XLA) and their expensive steps
(the rule's second number). Prints one JSON line per row as it goes, a table last, and the
smallest size at which Pallas won for each count of expensive steps. `--block-rows` and
`--sub-rows` time the Pallas kernels for each combination of the renderer's largest block
(`pallas.MAX_BLOCK_ROWS`) and strip (`pallas.SUB_ROWS`, 0: the whole block at once), the numbers
to set them by.
"""
from __future__ import annotations

import argparse
import re
from typing import Callable

import numpy as np

from .tpu_vs_jax import _median_time, executable_on_device, json_lines_emitter


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layer_norm(x):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def workloads() -> list[tuple[str, Callable, int, bool]]:
    """(name, NumPy function, number of inputs, whether its inputs are matrices)."""
    return [
        ("copy x * 2", lambda x: x * 2, 1, False),
        ("a * b + c", lambda a, b, c: a * b + c, 3, False),
        ("W1 sin*cos+sin**2", lambda x: np.sin(x) * np.cos(x) + np.sin(x) ** 2, 1, False),
        ("tanh(x) * exp(-x) / (1 + x*x)", lambda x: np.tanh(x) * np.exp(-x) / (1 + x * x), 1, False),
        ("W3 softmax", _softmax, 1, True),
        ("W4 layer norm", _layer_norm, 1, True),
    ]


def _shape(elements: int, matrix: bool) -> tuple[int, ...]:
    if not matrix:
        return (elements,)
    cols = 4096 if elements >= 1 << 16 else 256
    return (elements // cols, cols)


def _expensive(text: str) -> int:
    """Expensive steps of the program's kernels (from as_text("pallas"))."""
    from jitkernel.ir.primitives import PRIMITIVES
    steps = " ".join(re.findall(r"steps: (.*) on \(", text)).split()
    return sum(PRIMITIVES[s].expensive for s in steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="tpu")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--sizes", default=None, help="log2 of the element counts, comma separated (default 16,20,24,26)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--block-rows", default=None, help="largest block rows to try (multiples of 32), comma separated")
    parser.add_argument("--sub-rows", default=None, help="strip rows to try (0: whole block), comma separated")
    parser.add_argument("--json-lines", default=None, help="also append the JSON lines to this file")
    args = parser.parse_args()

    import jax

    import jitkernel as jk
    from jitkernel.backends.tpu import pallas as renderer
    block_rows = [int(b) for b in args.block_rows.split(",")] if args.block_rows else [renderer.MAX_BLOCK_ROWS]
    sub_rows = [int(b) for b in args.sub_rows.split(",")] if args.sub_rows else [renderer.SUB_ROWS]
    settings_before = renderer.MAX_BLOCK_ROWS, renderer.SUB_ROWS
    sizes = [int(s) for s in (args.sizes or ("10,12" if args.quick else "16,20,24,26")).split(",")]
    device = jk.backends.get_backend(args.backend).device()
    before = jk.config.tpu_fusion
    table: list = []
    emit, sink = json_lines_emitter(args.json_lines, table)
    rng = np.random.default_rng(0)

    def device_time(fn: Callable, inputs: list, mode: str) -> tuple[float, str]:
        """Median device time of `fn` compiled with `tpu_fusion=mode`, and its as_text("pallas")."""
        jk.config.update("tpu_fusion", mode)
        lowered = jk.jit(fn, backend=args.backend).lower(*inputs)
        with jax.enable_x64(True):
            return _median_time(executable_on_device(lowered, inputs, device), args.repeat), lowered.as_text("pallas")

    try:
        for name, fn, n_inputs, matrix in workloads():
            for log2 in sizes:
                inputs = [rng.random(_shape(1 << log2, matrix), dtype=np.float32) for _ in range(n_inputs)]
                t_xla, _ = device_time(fn, inputs, "xla")
                for rows in block_rows:
                    for strip in sub_rows:
                        renderer.MAX_BLOCK_ROWS, renderer.SUB_ROWS = rows, strip
                        t_pallas, text = device_time(fn, inputs, "pallas")
                        emit({"workload": name, "elements": 1 << log2, "shape": list(inputs[0].shape),
                              "xla_ms": round(t_xla * 1e3, 4),
                              "pallas_ms": round(t_pallas * 1e3, 4), "ratio": round(t_pallas / t_xla, 3),
                              "pallas_kernels": text.count(": pallas"), "expensive_steps": _expensive(text),
                              "max_block_rows": rows, "sub_rows": strip, "backend": args.backend,
                              "what": "device time, inputs on the chip; ratio < 1: Pallas faster"})
    finally:
        jk.config.update("tpu_fusion", before)
        renderer.MAX_BLOCK_ROWS, renderer.SUB_ROWS = settings_before
        if sink:
            sink.close()

    print(f"\n{'workload':32} {'elements':>10} {'block':>6} {'strip':>6} {'XLA ms':>10} {'Pallas ms':>10} "
          f"{'ratio':>7} {'kernels':>8}")
    for row in table:
        print(f"{row['workload']:32} {row['elements']:>10} {row['max_block_rows']:>6} {row['sub_rows']:>6} "
              f"{row['xla_ms']:>10} {row['pallas_ms']:>10} {row['ratio']:>7} {row['pallas_kernels']:>8}")
    wins: dict[int, int] = {}
    for row in table:
        if row["pallas_kernels"] and row["ratio"] < 1:
            e = row["expensive_steps"]
            wins[e] = min(wins.get(e, row["elements"]), row["elements"])
    print("\nsmallest size where Pallas won, by expensive steps:", wins or "none (keep AUTO_RULE = None)")


if __name__ == "__main__":
    main()
