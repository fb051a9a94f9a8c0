"""The Numba side of benchmarks/dask_cluster.py, run in an interpreter that has Numba (it pins its
own llvmlite, so it lives in another virtualenv), with its own 2-worker LocalCluster:
`map_blocks` of `numba.njit` block functions (benchmarks/dask_numba_kernels.py) on the same
inputs (same generator, seeds and chunks) as the other implementations.

    /path/to/venv-with-numba-and-distributed/bin/python benchmarks/dask_cluster_numba.py '<json config>'

The config is the one dask_cluster.py uses ({"workloads": {...}, "chunk": .., "repeat": ..,
"workers": ..}); the last line printed is one JSON object: {"version": numba.__version__,
"results": {workload: {pattern: {"samples_s": [...], "checksum": float}}}} or {"error": reason}.
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # dask_cluster_common and dask_numba_kernels; workers get sys.path too


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    try:
        import numba
        import dask_numba_kernels as kernels
        from dask_cluster_common import measure, start_cluster
    except ImportError as e:
        print(json.dumps({"error": f"not importable here: {e}"}), flush=True)
        return 0
    results: dict = {}
    with start_cluster(config["workers"]) as client:
        client.run(lambda: sys.path.insert(0, HERE))  # the kernels module, by reference
        for name, n in config["workloads"].items():
            results[name] = measure(client, name, int(n), int(config["chunk"]), {"numba": kernels.IMPLS[name]},
                                    config["repeat"])["numba"]
    print(json.dumps({"version": numba.__version__, "results": results}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
