"""Ctrl-C during threaded and long native calls interrupts promptly and never crashes.

Interrupts run in a subprocess with a timeout: a failure there is a failed test, not a dead or
stuck test run."""
from __future__ import annotations

import pytest

from helpers import assert_clean_exit, run_script


# Python installs its Ctrl-C handler only where SIGINT is not ignored at start-up, and a shell
# without job control starts a background job (`make test &`) with SIGINT ignored: every SIGINT
# below was then dropped ("returned 15.18", "interrupted 0"). The scripts install
# it themselves, as an interactive session has it.
DEFAULT_CTRL_C = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"

CTRL_C_THREADED = DEFAULT_CTRL_C + """
import os, random, signal, threading, time
import numpy as np
import jitkernel as jk
jk.config.update("threads", 2)
f = jk.jit(lambda x: (np.sin(x) * np.cos(x)).sum(axis=1))
rows = 4000
SLOW = np.float32(1e30)  # sin/cos of huge arguments take libm's slow path: about 6 times longer

def expected(value):
    per_row = lambda v: (np.sin(np.float32(v)) * np.cos(np.float32(v))) * 4096
    return np.repeat([per_row(value), per_row(SLOW)], rows // 2)

def call(value=0.5):
    # owned by this frame only; the second half is slow, so the thread running it is still
    # reading when the first half is done
    x = np.full((rows, 4096), value, np.float32)
    x[rows // 2:] = SLOW
    return f(x)

call()
rng = random.Random(7)
interrupted = 0
for i in range(40):
    timer = threading.Timer(rng.uniform(0.005, 0.06), os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()  # (on a busy machine the signal may come before start() returns)
        call()
        timer.join()
        time.sleep(0.002)
    except KeyboardInterrupt:
        interrupted += 1
        if i % 4:
            time.sleep(0.03)  # the input is gone now; a worker still reading it would crash
        else:
            # at once, with other values, while the interrupted call's workers may still be
            # finishing: they must not write into this call's buffers
            r = call(0.25)
            assert np.allclose(r, expected(0.25), rtol=1e-3), ("wrong result right after an interrupt", r[:4])
assert np.allclose(call(), expected(0.5), rtol=1e-3)
print("interrupted", interrupted)
"""


def test_ctrl_c_during_a_threaded_call_never_crashes() -> None:
    """SIGINT while pool threads still read the input unwound the frame that owned it
    (segfault in 8 of 9 runs; 3 of 3 with this script on the old code)."""
    proc = run_script(CTRL_C_THREADED, timeout=600)
    assert_clean_exit(proc)
    assert int(proc.stdout.split()[-1]) >= 5, proc.stdout  # the interrupts did land inside calls


CTRL_C_LONG = DEFAULT_CTRL_C + """
import os, signal, sys, threading, time
import numpy as np
import jitkernel as jk
from jitkernel.backends.cpu import runtime
jk.config.update("threads", 2)
split = sys.argv[1] == "split"
axis = 1 if split else 0  # axis 0: the outer loop is reduced, not splittable
fn = lambda x, y: np.sin(x[:, None] * y[None, :]).sum(axis=axis)
f = jk.jit(fn)
x, y = np.linspace(0, 1, 60_000, dtype=np.float32), np.linspace(0, 1, 200_000, dtype=np.float32)
f.lower(x, y)  # compile now: the call below only runs

# "The native work has started" and "it has finished", seen from the runtime's two long-call
# paths, so that SIGINT is sent once the call runs (not after a guessed delay) and the test can
# tell an interrupt that stopped the work from one that waited for its end, whatever the load.
started, split_calls, long_call_done = threading.Event(), [], threading.Event()
if split:
    original_init = runtime._SplitCall.__init__
    def recording_init(self, *args):
        original_init(self, *args)
        split_calls.append(self)
        started.set()
    runtime._SplitCall.__init__ = recording_init
else:
    original_call_segment = runtime._call_segment
    def recording_call_segment(*args):
        started.set()
        original_call_segment(*args)
        long_call_done.set()
    runtime._call_segment = recording_call_segment

def interrupt_once_started():
    if started.wait(300):  # bounds a hang only
        os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt_once_started, daemon=True).start()
t0 = time.perf_counter()
try:
    f(x, y)
    print("returned", time.perf_counter() - t0)
except KeyboardInterrupt:
    seconds = time.perf_counter() - t0
    # split: chunks were still to run; unsplittable: the native call was still running
    unfinished = next(split_calls[-1].todo, None) is not None if split else not long_call_done.is_set()
    print("interrupted", seconds, "before-the-end" if unfinished else "at-the-end")
small = x[:50], y[:70]
assert np.allclose(f(*small), fn(*small), rtol=1e-4, atol=1e-4)
"""


@pytest.mark.parametrize("mode", ["split", "unsplittable"])
def test_ctrl_c_interrupts_a_long_call_promptly(mode: str) -> None:
    """A long native call raised KeyboardInterrupt only when it returned (10.9 s). The
    call here takes well over 5 s (1.2e10 sines: 20 s on 2 threads here). SIGINT, sent once the
    native work has started, must raise while that work is unfinished (chunks still to run;
    the worker's call still running), and the function must work after. "unsplittable": a
    column sum, whose outer loop is reduced, runs on a worker thread while the caller waits.
    Nothing is decided on the clock (a loaded machine stretches every time)."""
    proc = run_script(CTRL_C_LONG, 300, mode)
    assert_clean_exit(proc)
    words = proc.stdout.split()
    assert words[:1] == ["interrupted"], proc.stdout
    assert words[2:3] == ["before-the-end"], proc.stdout


def test_a_loop_bounded_by_an_argument_uses_a_worker_thread_only_when_long(monkeypatch):
    """A loop whose trip count is an argument: the call estimates its work from the argument's
    value (runtime.work_at_call) and runs short calls on the calling thread (no thread started
    per call), long ones on a worker thread, where Ctrl-C can still stop the wait."""
    import numpy as np
    import jitkernel as jk
    from jitkernel.backends.cpu import runtime

    on_worker = []

    def spy(*args):
        on_worker.append(True)
        return original(*args)
    original = runtime._run_on_worker
    monkeypatch.setattr(runtime, "_run_on_worker", spy)
    monkeypatch.setattr(runtime, "LONG_WORK", 5000)

    def f(x, t):
        return jk.lax.fori_loop(0, t, lambda i, c: c * 0.5 + x[i % 4], 0.0)
    g = jk.jit(f)
    x = np.arange(4.0)
    for t, long in ((3, False), (100_000, True), (5, False)):
        want = 0.0
        for i in range(t):
            want = want * 0.5 + x[i % 4]
        on_worker.clear()
        assert float(g(x, t)) == want
        assert bool(on_worker) is long, t
