"""A fixed sample of the differential soak (benchmarks/soak.py) in the regular suite: 300
random programs (mixed signedness, weak Python scalars, float16/32/64, where/clip/maximum with
scalars, signed zeros, inf/NaN/huge values in reductions, dynamic sizes, threads, concurrent
calls, static arguments), each run by NumPy and jitted on the cpu and interpret backends.

The programs are the soak's own (`generate(SEED, i)`), so a failure here is reproduced by
`python -m benchmarks.soak --seed 20261201 --show I`, which prints a minimal reproducer. The
full 10,000-program soak is `python -m benchmarks.soak` (about 6 minutes; not in `make test`)."""
from __future__ import annotations

import dataclasses
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.soak import NOT_MISMATCH, generate, run_program  # noqa: E402

SEED = 20261201
PROGRAMS = 300
CHUNK = 25


@pytest.mark.filterwarnings("ignore")  # NumPy's and the jitted call's RuntimeWarnings on purpose-made values
@pytest.mark.parametrize("start", range(0, PROGRAMS, CHUNK), ids=lambda s: f"programs{s}-{s + CHUNK - 1}")
def test_soak_sample(start: int) -> None:
    """Every program of the chunk matches NumPy on both backends (or jitkernel says it is
    unsupported); a mismatch prints its program and inputs."""
    bad = []
    for i in range(start, start + CHUNK):
        prog = generate(SEED, i)
        for fd in run_program(prog):
            if fd.cls in NOT_MISMATCH:
                continue
            upto = fd.call if prog.mode in ("dynamic", "static") else None
            calls = prog.calls if upto is not None or prog.mode == "concurrent" else [prog.calls[fd.call]]
            shown = dataclasses.replace(prog, calls=calls)
            bad.append(f"program {i} ({prog.family}) on {fd.backend}: {fd.cls}: {fd.message}\n"
                       f"{shown.reproducer(fd.backend, upto)}")
    assert not bad, f"{len(bad)} mismatches (python -m benchmarks.soak --seed {SEED} --show N shrinks one):\n\n" \
                    + "\n\n".join(bad)


def test_sample_covers_every_family() -> None:
    """The sample is not degenerate: every family and call mode of the soak occurs in it."""
    progs = [generate(SEED, i) for i in range(PROGRAMS)]
    families = {p.family for p in progs}
    modes = {p.mode for p in progs}
    assert families >= {"mixed_int", "weak", "float", "any", "reduce", "dynamic", "threads", "concurrent", "static"}
    assert modes == {"single", "dynamic", "threads", "concurrent", "static"}
    dtypes = " ".join(" ".join(" ".join(c) for c in p.calls) for p in progs)
    for dt in ("uint64", "int8", "float16", "float32", "float64", "bool", "np.inf", "np.nan", "-0.0"):
        assert dt in dtypes, dt


def test_soak_command_writes_summary_and_reproducers(tmp_path) -> None:
    """The soak's command line (worker subprocesses, summary, results files) on 20 programs.
    Its exit status is 1 while any mismatch remains, 0 after; never a crash of the driver."""
    import json
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base = tmp_path / "soak"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.soak", "--count", "20", "--seed", str(SEED),
                           "--chunk", "10", "--out-base", str(base), "--quiet"],
                          cwd=root, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "cache")))
    assert proc.returncode in (0, 1), proc.stderr
    assert f"soak: seed {SEED}, families all, 20 programs" in proc.stdout, proc.stdout
    result = json.loads((base.parent / "soak.json").read_text())
    assert result["programs"] == 20
    text = (base.parent / "soak.txt").read_text()
    mismatches = [f for f in result["findings"] if f["cls"] not in NOT_MISMATCH]
    assert (proc.returncode == 1) == bool(mismatches)
    for f in mismatches:
        assert f"### program {f['index']} " in text and f["reproducer"].startswith("import numpy as np")
