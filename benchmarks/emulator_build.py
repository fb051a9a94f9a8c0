"""Host build time of one emulated program, with and without the precompiled head (docs/gpu.md,
"The emulator"). Each run uses a fresh cache directory, so the first build also precompiles the
head; the later builds show the cost every other program pays.

    python -m benchmarks.emulator_build
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

CHILD = """
import time, numpy as np, jitkernel as jk
for i in range(5):
    f = jk.jit(lambda x, i=i: np.sin(x) * (i + 2) + x.sum(), backend="cuda-emulator")
    t = time.perf_counter(); f(np.ones(10, np.float32)); print(f"{time.perf_counter() - t:.2f}", end=" ")
"""


def main() -> None:
    for pch in ("0", "1"):
        env = dict(os.environ, JITKERNEL_EMULATOR_PCH=pch, JITKERNEL_CACHE_DIR=tempfile.mkdtemp())
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
        print(f"JITKERNEL_EMULATOR_PCH={pch}: five one-program builds (s): {out.stdout.strip()}")


if __name__ == "__main__":
    main()
