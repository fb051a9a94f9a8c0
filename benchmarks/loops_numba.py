"""The Numba peer of benchmarks/loops.py, run in its own interpreter (Numba pins its own llvmlite,
so it lives in another virtualenv): `numba.njit` of the as-written functions of loops_kernels.py.

    /path/to/venv-with-numba/bin/python benchmarks/loops_numba.py --sizes JSON --repeat N

Prints one JSON object: per workload the first-call time (compile + run) and the timed samples,
or {"skipped": reason}.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import loops_kernels as K  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", required=True, help="JSON: workload -> size")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    try:
        import numba
    except ImportError as e:
        print(json.dumps({"_error": f"numba not importable: {e}"}))
        return 0
    out: dict = {"_version": numba.__version__}
    for name, size in json.loads(args.sizes).items():
        size = tuple(size) if isinstance(size, list) else size
        try:
            fn = numba.njit(cache=False)(getattr(K, name))
            inputs_of = K.LOOP_FORMS.get(name, name)
            t0 = time.perf_counter()
            fn(*K.make_inputs(inputs_of, size))
            first = time.perf_counter() - t0
            samples = []
            for _ in range(args.repeat):
                inputs = K.make_inputs(inputs_of, size)
                t0 = time.perf_counter()
                fn(*inputs)
                samples.append(time.perf_counter() - t0)
            out[name] = {"first_call_s": first, "samples_s": samples}
        except Exception as e:  # a peer that cannot run a workload is reported, not fatal
            out[name] = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
