"""`os.fork` while another thread compiles. The child inherited the import lock
of a module that the compiling thread was importing at that instant (jitkernel imports most of
its pipeline on first use), held by a thread that does not exist there: its own compile waited
for ever (1 child in 10 under load in tests/test_fork.py's loop). jitkernel/forking.py makes
fork wait until no other thread is inside a compile.

Here the window is made certain instead of likely: the traced function imports a module whose
body waits until a fork has begun, so the fork always starts with that thread inside the import.
No sleeps decide anything; the deadlines only bound a hang."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

FORK_INSIDE_AN_IMPORT = """
import builtins, os, sys, tempfile, threading, time
import numpy as np
import jitkernel as jk

# A module whose import blocks until a fork has begun: the thread importing it holds its import
# lock until then.
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "blocks_until_fork.py"), "w") as fh:
    fh.write("import builtins\\nbuiltins.inside_import.set()\\nbuiltins.fork_began.wait(120)\\nVALUE = 3.0\\n")
sys.path.insert(0, folder)
builtins.inside_import, builtins.fork_began = threading.Event(), threading.Event()

def body(x):
    import blocks_until_fork  # in the trace, as jitkernel's own first-use imports are
    return x * blocks_until_fork.VALUE

compiler = threading.Thread(target=lambda: jk.jit(body, disk_cache=False)(np.ones(4)), daemon=True)
compiler.start()
assert builtins.inside_import.wait(120), "the compiling thread never reached the import"
# registered last, so it runs first of the fork hooks: the import may go on from here
os.register_at_fork(before=builtins.fork_began.set)
pid = os.fork()
if pid == 0:
    ok = np.allclose(jk.jit(body, disk_cache=False)(np.ones(4)), 3.0)  # needs the same module
    os._exit(0 if ok else 3)
deadline = time.monotonic() + 120  # bounds a hang only
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        code = os.waitstatus_to_exitcode(status)
        print("child exit", code)
        sys.exit(0 if code == 0 else 3)
    time.sleep(0.05)
os.kill(pid, 9)
os.waitpid(pid, 0)
print("child hung")
sys.exit(4)
"""


def test_fork_while_another_thread_is_inside_an_import_of_a_compile() -> None:
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(FORK_INSIDE_AN_IMPORT)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert "child exit 0" in proc.stdout


def _wait_until(condition, what: str, seconds: float = 120.0) -> None:
    """Poll `condition`; the bound only stops a hang."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.001)


def test_the_gate_orders_a_fork_after_compiles_in_flight_and_before_new_ones() -> None:
    """The gate itself, without a real fork: the fork hook returns only after the compile in
    flight has left, and a compile that arrives while the fork waits enters only after it."""
    from jitkernel import forking
    order: list[str] = []
    fork_may_start, in_flight_may_leave = threading.Event(), threading.Event()

    def in_flight() -> None:
        with forking.compiling():
            fork_may_start.set()
            in_flight_may_leave.wait(120)
            order.append("in-flight compile left")

    def fork() -> None:
        forking._before_fork()
        order.append("fork")
        forking._after_fork_in_parent()

    def arriving() -> None:
        with forking.compiling():
            order.append("new compile entered")

    threads = [threading.Thread(target=in_flight)]
    threads[0].start()
    assert fork_may_start.wait(120)
    threads.append(threading.Thread(target=fork))
    threads[1].start()
    _wait_until(lambda: forking._fork_pending, "the fork began waiting")
    threads.append(threading.Thread(target=arriving))
    threads[2].start()
    _wait_until(lambda: len(forking._state._waiters) >= 2,
                "the new compile and the fork both wait")
    in_flight_may_leave.set()
    for t in threads:
        t.join(120)
    assert order == ["in-flight compile left", "fork", "new compile entered"]
    assert forking._active == 0 and not forking._fork_pending


def test_a_fork_from_inside_a_compile_waits_for_the_others_only() -> None:
    """User code being traced may fork (multiprocessing inside a traced function's Python): the
    gate must not wait for the forking thread's own compile."""
    from jitkernel import forking
    with forking.compiling():
        forking._before_fork()
        forking._after_fork_in_parent()
    assert forking._active == 0
