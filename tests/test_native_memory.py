"""The native memory of dropped jitted functions is released."""
from __future__ import annotations

from helpers import assert_clean_exit, run_script


def test_memory_flat_over_dropped_functions() -> None:
    """About 84 KB per compiled function was never freed (300 functions: +25 MB on the
    old code). The goal is under 8 MB per 2,000 functions (benchmarks/memory.py; measured there:
    +4 MB); over 300 functions, with the allocator's first arenas in the count, 6 MB."""
    env_script = "import sys, runpy; sys.argv = ['memory'] + sys.argv[1:]; runpy.run_module('benchmarks.memory', run_name='__main__')"
    proc = run_script(env_script, 300, "--count", "300", "--warmup", "50", "--limit-mib", "6")
    assert_clean_exit(proc)
