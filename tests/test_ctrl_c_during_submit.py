"""A KeyboardInterrupt raised inside `ThreadPoolExecutor.submit`, as it starts
a worker thread, left that thread out of the executor's records, and the interpreter waited for
it for ever at exit (the Ctrl-C test, SIGINT sent as the call began: 2 hangs in 2 runs). A split
call now hands its chunks to the pool with SIGINT held, and raises it right after."""
from __future__ import annotations

import signal
import threading

import pytest

from jitkernel.backends.cpu import runtime


class _InterruptedPool:
    """A pool whose `submit` receives SIGINT while it works, as a real one may."""

    def __init__(self) -> None:
        self.submitted: list[int] = []

    def submit(self, fn: object, a: int) -> int:
        if a == 1:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C now
        self.submitted.append(a)  # a KeyboardInterrupt raised in this method would skip this
        return a


@pytest.fixture
def python_sigint_handler():
    """Python's own handler, whatever the test run inherited (a background job ignores SIGINT)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread")
def test_sigint_during_submit_is_raised_after_every_submit(python_sigint_handler) -> None:
    pool = _InterruptedPool()
    with pytest.raises(KeyboardInterrupt):
        runtime._submit_uninterrupted(pool, None, range(1, 4))
    assert pool.submitted == [1, 2, 3]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the caller's handler is back


def test_without_sigint_the_submits_just_happen(python_sigint_handler) -> None:
    pool = _InterruptedPool()
    assert runtime._submit_uninterrupted(pool, None, range(2, 5)) == [2, 3, 4]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
