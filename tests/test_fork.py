"""Fork: a child forked after a threaded call, while another thread compiles, or by
multiprocessing gets working jitted functions.

Crashes and hangs run in a subprocess with a timeout: a failure there is a failed test, not a
dead or stuck test run."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from helpers import assert_clean_exit, run_script


FORK_AFTER_THREADS = """
import os, sys, time
import numpy as np
import jitkernel as jk
jk.config.update("threads", 2)
f = jk.jit(lambda x: np.sin(x) * 2.0)
x = np.full(1 << 20, 0.5, np.float32)
f(x)  # the thread pool is running now
pid = os.fork()
if pid == 0:
    ok = np.allclose(f(x), np.sin(x) * 2.0)          # an existing function, large: the pool
    g = jk.jit(lambda x: np.cos(x) + 1.0)            # a new function: LLVM in the child
    ok = ok and np.allclose(g(x), np.cos(x) + 1.0)
    os._exit(0 if ok else 3)
deadline = time.time() + 240  # bounds a hang only (a loaded machine compiles slowly)
while time.time() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
print("child hung")
sys.exit(4)
"""


def test_fork_after_a_threaded_call() -> None:
    """The child inherited a thread pool without threads and its next large call hung."""
    assert_clean_exit(run_script(FORK_AFTER_THREADS, timeout=300))


FORK_WHILE_COMPILING = """
import os, sys, threading, time
import numpy as np
import jitkernel as jk
stop = False

def compile_forever():
    i = 0
    while not stop:
        i += 1
        jk.jit(lambda x: np.tanh(x) * i + np.exp(x) / i, disk_cache=False)(np.ones(64))

t = threading.Thread(target=compile_forever, daemon=True)
t.start()
time.sleep(0.3)  # (not an ordering: forks land at whatever point the other thread's compile is)
hung = failed = 0
for k in range(10):
    pid = os.fork()
    if pid == 0:
        g = jk.jit(lambda x: np.sqrt(x) + k, disk_cache=False)
        os._exit(0 if np.allclose(g(np.full(16, 4.0)), 2.0 + k) else 3)
    deadline = time.time() + 120  # bounds a hang only: a child compiles in about 1 s even at load 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            failed += os.waitstatus_to_exitcode(status) != 0
            break
        if time.time() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            hung += 1
            break
        time.sleep(0.01)
    time.sleep(0.02)
stop = True
print("hung", hung, "failed", failed)
sys.exit(1 if hung or failed else 0)
"""


def test_fork_while_another_thread_compiles() -> None:
    """A child forked while another thread was inside LLVM deadlocked (20 of 20)."""
    assert_clean_exit(run_script(FORK_WHILE_COMPILING, timeout=900))


MULTIPROCESSING_FORK = """
import multiprocessing as mp
import numpy as np
import jitkernel as jk
jk.config.update("threads", 2)
existing = jk.jit(lambda x: np.sin(x) + 1.0)
big = np.full(1 << 19, 0.25)
existing(big)

def work(k):
    new = jk.jit(lambda x: x * k + 1.0, disk_cache=False)
    return bool(np.allclose(existing(big), np.sin(big) + 1.0) and np.allclose(new(np.ones(8)), k + 1.0))

if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        results = pool.map_async(work, range(6)).get(timeout=300)
    assert all(results), results
    print("ok")
"""


def test_multiprocessing_with_fork() -> None:
    """Multiprocessing's fork start method: a child compiles and runs a new function and
    runs an existing one (which used the thread pool in the parent)."""
    proc = run_script(MULTIPROCESSING_FORK, timeout=400)
    assert_clean_exit(proc)
    assert proc.stdout.strip().endswith("ok")


_FORK_SCRIPT = textwrap.dedent("""
    import os, sys, threading, time, numpy as np, jitkernel as jk
    started = threading.Event()

    def slow(x):
        if x.shape[0] == 5:  # trace time: this thread holds the function's lock meanwhile (the fork waits for this compile: jitkernel/forking.py)
            started.set()
            time.sleep(3)
        return x * 2
    f = jk.jit(slow)
    f(np.ones(3))
    t = threading.Thread(target=f, args=(np.ones(5),))
    t.start()
    started.wait()
    pid = os.fork()
    if pid == 0:  # the child: a new signature of the same function must compile, not wait forever
        import signal
        signal.alarm(240)  # a deadlocked child does not outlive the test
        ok = np.array_equal(f(np.ones(7)), np.full(7, 2.0))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    t.join()
    print("child", os.waitstatus_to_exitcode(status))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_while_another_thread_compiles_leaves_the_child_a_working_function():
    out = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert out.returncode == 0 and out.stdout.strip().endswith("child 0"), out.stdout + out.stderr[-2000:]
