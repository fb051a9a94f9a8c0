"""The Numba peer of benchmarks/loops.py, run in its own interpreter (Numba pins its own llvmlite,
so it lives in another virtualenv): `numba.njit` of the functions of loops_kernels.py.

    /path/to/venv-with-numba/bin/python benchmarks/loops_numba.py

A server on stdin/stdout, one JSON line per request, so that benchmarks/loops.py can alternate
Numba's repetitions with jitkernel's (this machine's speed varies over minutes):
  {"op": "compile", "name": N, "size": S} -> {"first_call_s": t} (njit, first call on fresh inputs)
                                            or {"skipped": reason}
  {"op": "time", "name": N, "size": S}    -> {"sample_s": t} (one call on fresh inputs)
The first line it writes is {"version": numba.__version__} or {"error": reason}.
"""
from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import loops_kernels as K  # noqa: E402


def _inputs(name: str, size):
    size = tuple(size) if isinstance(size, list) else size
    return K.make_inputs(K.LOOP_FORMS.get(name, name), size)


def main() -> int:
    try:
        import numba
    except ImportError as e:
        print(json.dumps({"error": f"numba not importable: {e}"}), flush=True)
        return 0
    print(json.dumps({"version": numba.__version__}), flush=True)
    compiled: dict = {}
    for line in sys.stdin:
        req = json.loads(line)
        name, size = req["name"], req["size"]
        try:
            if req["op"] == "compile":
                fn = compiled[name] = numba.njit(cache=False)(getattr(K, name))
                t0 = time.perf_counter()
                fn(*_inputs(name, size))
                reply = {"first_call_s": time.perf_counter() - t0}
            else:
                args = _inputs(name, size)
                t0 = time.perf_counter()
                compiled[name](*args)
                reply = {"sample_s": time.perf_counter() - t0}
        except Exception as e:  # a workload Numba cannot run is reported, not fatal
            reply = {"skipped": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
