"""g++ time of one prebuild bundle of the emulator (docs/gpu.md, "Equivalence suite on the
emulator"): the programs of 48 unary ufunc x dtype pairs of tests/test_ufuncs.py rendered, then
compiled as one host library, with the host wrappers as they are (a plain static function per
kernel, jk_emu::launch_fn) and as they were (a lambda per kernel, which instantiated a
std::function each). Fresh cache directories, the precompiled head built first in each.

    python -m benchmarks.emulator_prebuild
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time, numpy as np
sys.path.insert(0, "tests")
import jitkernel as jk
from jitkernel.backends.cuda import emulator
from helpers import ALL_DTYPES

if sys.argv[1] == "lambda":  # the wrappers before: one lambda (and std::function) per kernel
    def launchers(text):
        lines = []
        for name, types in emulator._kernel_params(text).items():
            args = [f"({t})a[{i}]" if "*" in t else f"*({t.replace('const ', '')}*)a[{i}]" for i, t in enumerate(types)]
            lines.append(f'extern "C" void jk_launch_{name}(unsigned g, unsigned b, void** a) '
                         f"{{ jk_emu::launch(g, b, [=] {{ {name}({', '.join(args)}); }}); }}")
        return "\n".join(lines) + "\n"
    emulator.launchers = launchers

modules = []
for name in ("sin", "exp", "negative", "sqrt"):
    for dt in ALL_DTYPES:
        x = np.ones((3, 5), dt)
        with emulator.record_modules(stand_in=False) as rec:
            try:
                jk.jit(lambda a, b, c, uf=getattr(np, name): (uf(a), uf(b.T), uf(c[::-1])), backend="cuda-emulator")(x, x, x)
            except (emulator.RenderedOnly, TypeError):
                pass
        modules += rec
emulator._build(emulator.HEAD + "\n", "head")  # builds the precompiled head
t = time.perf_counter()
emulator.prebuild(modules, workers=1)
kernels = sum(m.kernels.count('extern "C" __global__') for m in modules)
print(f"{len(modules)} programs, {kernels} kernels: {time.perf_counter() - t:.2f} s")
"""


def main() -> None:
    for kind in ("function", "lambda"):
        env = dict(os.environ, JITKERNEL_CACHE_DIR=tempfile.mkdtemp())
        out = subprocess.run([sys.executable, "-c", CHILD, kind], env=env, capture_output=True, text=True, check=True)
        print(f"host wrappers as a {kind} per kernel: one g++ run over {out.stdout.strip()}")


if __name__ == "__main__":
    main()
