"""The status word (a native call's error flags) belongs to the call: threads never see each
other's, an exception leaves none behind, segments without error flags take none."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.backends.cpu import runtime


def _power_mismatches(f, n: int, calls: int, threads: int = 8) -> dict[str, int]:
    """`threads` threads call f(x, y) = x ** y, alternately with a valid exponent array and one
    holding a negative exponent; count valid calls that raised or were wrong and invalid calls
    that returned."""
    x = np.arange(1, n + 1, dtype=np.int64) % 7 + 1
    good = np.full(n, 2, np.int64)
    bad = good.copy()
    bad[n // 2] = -1
    expected = x ** good
    counts = {"valid call raised or wrong": 0, "invalid call returned": 0}
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def worker(k: int) -> None:
        wrong = returned = 0
        start.wait()
        for i in range(calls):
            if (i + k) % 2 == 0:
                try:
                    if not np.array_equal(f(x, good), expected):
                        wrong += 1
                except ValueError:
                    wrong += 1
            else:
                try:
                    f(x, bad)
                    returned += 1
                except ValueError:
                    pass
        with lock:
            counts["valid call raised or wrong"] += wrong
            counts["invalid call returned"] += returned

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return counts


@pytest.mark.parametrize("path", ["direct", "split", "worker"])
def test_status_word_belongs_to_the_call(monkeypatch, path: str) -> None:
    """With one status word per executable, a negative exponent in one thread's call
    raised in another thread's valid call, and was lost by its own (148-895 / 80-1,064 of 8,000).
    Every path a segment can take is covered: called directly, split in chunks over threads, and
    run on a worker thread (the long-call path, forced here by lowering its threshold)."""
    n, calls = 2000, 150
    if path == "split":
        monkeypatch.setattr(jk.config, "threads", 2)
        n, calls = 1 << 18, 24  # a segment of its own, split over 2 threads
    if path == "worker":
        monkeypatch.setattr(runtime, "LONG_WORK", 0)
        calls = 60
    f = jk.jit(lambda x, y: x ** y)
    x = np.ones(n, np.int64)
    f(x, x)
    source = f.last_compiled().executable.source
    assert {"direct": "seg0(", "split": "split(", "worker": "on_worker("}[path] in source
    assert _power_mismatches(f, n, calls) == {"valid call raised or wrong": 0, "invalid call returned": 0}


def test_status_word_left_by_an_exception_is_not_reused() -> None:
    """A call that sets a flag and is stopped before checking it must not pass the flag on."""
    f = jk.jit(lambda x, y: x ** y)
    x = np.arange(5)
    with pytest.raises(ValueError):
        f(x, -x - 1)
    for _ in range(3):
        np.testing.assert_array_equal(f(x, x), x ** x)


def test_segments_without_error_flags_take_no_status_word() -> None:
    """`x + 1` cannot fail: its runner passes no status word and checks none (the warm path)."""
    f = jk.jit(lambda x: x + 1)
    f(np.ones(10))
    source = f.last_compiled().executable.source
    assert "status" not in source and "st.value" not in source
