"""Hashes of the generated code, to show that a refactor of a backend leaves it as it was.

For every program of the CUDA test corpus (tests/cuda_corpus.py), integer `**` and `>>` on the
eight integer dtypes, and the W1-W8 rows of benchmarks/run.py (quick sizes, fastmath off and
on): the hash of the optimised LLVM module (`as_text("llvm")`), the same with its `declare`
lines sorted (a change of declaration order only), and for the corpus the hash of the CUDA
translation unit. Run it on two trees and compare the JSON files:

    PYTHONPATH=. .venv/bin/python -m benchmarks.ir_hashes before.json   # on the old tree
    PYTHONPATH=. .venv/bin/python -m benchmarks.ir_hashes after.json    # on the new tree
    .venv/bin/python -m benchmarks.ir_hashes --compare before.json after.json
"""
from __future__ import annotations

import hashlib
import json
import os
import sys


def _hashes(text: str) -> str:
    lines = text.splitlines()
    declares = sorted(line for line in lines if line.startswith("declare "))
    rest = [line for line in lines if not line.startswith("declare ")]
    raw = hashlib.sha256(text.encode()).hexdigest()[:16]
    return raw + " " + hashlib.sha256("\n".join(rest + declares).encode()).hexdigest()[:16]


def collect() -> dict[str, str]:
    sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
    import numpy as np

    import cuda_corpus
    import jitkernel as jk
    from benchmarks import run as bench

    out: dict[str, str] = {}
    for case in cuda_corpus.all_cases():
        lowered = jk.jit(case.fn).lower(*case.args)
        out["corpus/" + case.name] = _hashes(lowered.as_text("llvm"))
        out["cuda/" + case.name] = _hashes(lowered.as_text("cuda"))
    for dt in cuda_corpus.INTS:
        x, y = np.arange(-3, 5).astype(dt), (np.arange(0, 8) % 5).astype(dt)
        lowered = jk.jit(lambda a, b: (a ** b, np.power(a, 3), a >> b)).lower(x, y)
        out[f"extra/power/{dt}"] = _hashes(lowered.as_text("llvm"))
    rng = np.random.default_rng(0)
    for case in bench.build_cases(quick=True):
        args = case.inputs(rng)
        for fastmath in (False, True):
            lowered = jk.jit(bench.XP_FACTORIES[case.kernel](np), fastmath=fastmath).lower(*args)
            out[f"bench/{case.row}/fastmath={fastmath}"] = _hashes(lowered.as_text("llvm"))
    return out


def compare(before: dict[str, str], after: dict[str, str]) -> None:
    for group in ("corpus/", "extra/", "bench/", "cuda/"):
        keys = [k for k in before if k.startswith(group)]
        raw = [k for k in keys if before[k].split()[0] != after.get(k, "").split(" ")[0]]
        norm = [k for k in keys if before[k].split()[1] != after.get(k, " ").split(" ")[1]]
        print(f"{group:8} {len(keys):4} modules, {len(raw)} differ ({len(norm)} beyond declaration order)"
              + (f": {raw[:8]}" if raw else ""))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compare"]:
        compare(*(json.load(open(p)) for p in sys.argv[2:4]))
    else:
        json.dump(collect(), open(sys.argv[1], "w"), indent=1, sort_keys=True)
