"""`os.fork` while another thread compiles: the child never inherits a half-done compile.

A forked child has only the forking thread. Whatever another thread of the parent held at that
instant stays held in the child for ever: LLVM's locks, and the import locks of the modules that
thread was importing (jitkernel imports most of its pipeline on first use, and a traced function
may import too). The child's first compile that needs one of them waited for ever
(one child in ten under load, always inside `import`). So `fork` waits until no other thread
is inside a compile (`compiling()`: tracing, optimising, rendering, linking), keeps new compiles
out meanwhile (without that, a thread compiling in a loop would never let it in), then takes the
locks registered with `hold_across_fork` (LLVM's), in that order, so that no compile it waits for
ever needs a lock it holds. Parent and child release everything afterwards.

Both waits have a generous bound that only breaks a deadlock no check can see (a compile that
needs a lock of the user's which the forking thread holds, say): past it, a compile enters while
a fork waits, or a fork goes ahead with a compile in flight, as before this module existed.
"""
from __future__ import annotations

import contextlib
import functools
import logging  # noqa: F401  imported before our hook is registered: see _register
import os
import threading
import time
from typing import Any, Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# A compile that arrives while a fork is waiting waits at most this long, then enters anyway.
ENTRY_WAIT_SECONDS = 30.0
# A fork waits at most this long for the compiles in flight, then forks anyway.
FORK_WAIT_SECONDS = 120.0

_state = threading.Condition(threading.Lock())
_active = 0  # threads inside compiling(), each counted once however deeply it nests
_fork_pending = False
_local = threading.local()  # .depth: how deeply this thread is nested in compiling()
_held: list[tuple[Callable[[], Any], Callable[[], Any]]] = []  # (acquire, release), in order
_taken: list[Callable[[], Any]] = []  # the releases of what the fork in progress took


def hold_across_fork(acquire: Callable[[], Any], release: Callable[[], Any]) -> None:
    """Have `fork` call `acquire` once no compile is in flight, and `release` in parent and child
    afterwards (after the ones registered later)."""
    _held.append((acquire, release))


def _depth() -> int:
    return getattr(_local, "depth", 0)


def _enter() -> None:
    global _active
    with _state:
        deadline = time.monotonic() + ENTRY_WAIT_SECONDS
        while _fork_pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _state.wait(left)
        _active += 1


def _leave() -> None:
    global _active
    with _state:
        _active -= 1
        _state.notify_all()


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """Mark this thread as compiling: a fork from another thread waits until it is done.
    Re-entrant (a trace that compiles another function nests)."""
    depth = _depth()
    if depth == 0:
        _enter()
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth
        if depth == 0:
            _leave()


def compile_section(fn: F) -> F:
    """`fn` runs inside `compiling()`."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with compiling():
            return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def _before_fork() -> None:
    global _fork_pending
    _state.acquire()  # held until the fork is done: no compile starts or ends meanwhile
    _fork_pending = True
    own = 1 if _depth() else 0  # a fork from inside a compile (user code being traced) waits for the others only
    deadline = time.monotonic() + FORK_WAIT_SECONDS
    while _active > own:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        _state.wait(left)
    for acquire, release in _held:
        acquire()
        _taken.append(release)


def _release_taken() -> None:
    while _taken:
        _taken.pop()()


def _after_fork_in_parent() -> None:
    global _fork_pending
    _release_taken()
    _fork_pending = False
    _state.notify_all()
    _state.release()


def _after_fork_in_child() -> None:
    """Only this thread exists here: it is the only one that can be compiling."""
    global _state, _active, _fork_pending
    _release_taken()
    _state, _active, _fork_pending = threading.Condition(threading.Lock()), (1 if _depth() else 0), False


def _register() -> None:
    # Hooks run before a fork in the reverse order of registration: `logging`'s takes its module
    # lock, which a compile we wait for may need (a warning); importing it above registered its
    # hook first, so ours runs before it.
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                            after_in_child=_after_fork_in_child)


_register()
