"""The random-number guard (jitkernel/trace/random_guard.py) is per trace and per thread: another
thread drawing from a generator the jitted function names, while the function is traced, never
makes the trace fail; a draw by the trace itself still raises TracedRandomError, whatever the
other threads do. Each test makes the other thread draw *during* the trace with events (the
traced function waits until the draw is done), so no outcome depends on timing."""
from __future__ import annotations

import random
import sys
import threading
from typing import Any, Callable

import numpy as np
import pytest

import jitkernel as jk
from numpy.random import rand as imported_rand

rng = np.random.default_rng(0)
legacy = np.random.RandomState(0)
stdlib = random.Random(0)
bit_generator = np.random.PCG64(0)

_DRAWS: dict[str, Callable[[], Any]] = {
    "generator": lambda: rng.normal(size=4),
    "randomstate": lambda: legacy.rand(4),
    "numpy_global": lambda: imported_rand(4),
    "numpy_module_function": lambda: np.random.normal(size=4),
    "stdlib_random": lambda: stdlib.random(),
    "bit_generator": lambda: bit_generator.random_raw(4),
}


class OtherThread:
    """A thread that draws `draw()` each time the traced function asks it to (`during_trace()`),
    and returns only once the draw is done: the draw certainly happens inside the trace."""

    def __init__(self, draw: Callable[[], Any]) -> None:
        self.draw, self.go, self.done, self.stop = draw, threading.Event(), threading.Event(), False
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.go.wait()
            self.go.clear()
            if self.stop:
                return
            try:
                self.draw()
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.errors.append(e)
            self.done.set()

    def during_trace(self) -> None:
        self.done.clear()
        self.go.set()
        assert self.done.wait(30), "the other thread did not draw"

    def __enter__(self) -> "OtherThread":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop = True
        self.go.set()
        self.thread.join(30)
        assert not self.errors, self.errors


OTHER: OtherThread | None = None


def other_thread_draws() -> None:
    """Called by the traced functions below, at trace time, in the tracing thread."""
    OTHER.during_trace()


# Functions that name a generator but never draw from it in this trace.

def names_generator_in_untaken_branch(x, use=False):
    other_thread_draws()
    if use:
        return x + rng.normal()
    return x * 2.0


def aliases_generators(x):
    other_thread_draws()
    r, s, t, b = None, None, None, None
    r = rng  # noqa: F841 (the unused name is what the test traces)
    s = legacy  # noqa: F841 (the unused name is what the test traces)
    t = stdlib  # noqa: F841 (the unused name is what the test traces)
    b = bit_generator  # noqa: F841 (the unused name is what the test traces)
    return x * 2.0


def names_imported_rand_in_untaken_branch(x, use=False):
    other_thread_draws()
    if use:
        return x + imported_rand()
    return x * 2.0


def names_stdlib_and_bit_generator_in_untaken_branch(x, use=False):
    other_thread_draws()
    if use:
        return x + stdlib.random() + bit_generator.random_raw()
    return x * 2.0


NAMING = [names_generator_in_untaken_branch, aliases_generators, names_imported_rand_in_untaken_branch,
          names_stdlib_and_bit_generator_in_untaken_branch]


@pytest.mark.parametrize("draw", sorted(_DRAWS))
@pytest.mark.parametrize("fn", NAMING, ids=[f.__name__ for f in NAMING])
def test_another_threads_draw_during_the_trace_is_not_the_traces(fn, draw):
    global OTHER
    with OtherThread(_DRAWS[draw]) as OTHER:
        np.testing.assert_array_equal(jk.jit(fn)(np.ones(3)), np.full(3, 2.0))


def test_many_fresh_traces_while_another_thread_draws_from_everything():
    global OTHER
    def everything():
        for draw in _DRAWS.values():
            draw()
    with OtherThread(everything) as OTHER:
        for k in range(12):
            fn = NAMING[k % len(NAMING)]
            fresh = type(fn)(fn.__code__, fn.__globals__, f"{fn.__name__}_{k}", fn.__defaults__)
            np.testing.assert_array_equal(jk.jit(fresh)(np.full(k + 1, 1.0)), np.full(k + 1, 2.0))


# Functions that do draw while traced: still an error, whatever the other thread does.

def draws_from_generator(x):
    other_thread_draws()
    return x + rng.normal()


def draws_through_an_alias(x):
    other_thread_draws()
    r = legacy
    return x + r.rand()


def draws_through_a_helper(x):
    other_thread_draws()
    return x + _draw_from(rng)


def _draw_from(g):
    return g.normal()


def draws_from_imported_rand(x):
    other_thread_draws()
    return x + imported_rand()


def draws_from_stdlib_instance(x):
    other_thread_draws()
    return x + stdlib.random()


def draws_in_a_nested_function(x):
    other_thread_draws()
    def inner():
        return bit_generator.random_raw()
    return x + float(inner())


def draws_from_a_default(x, g=np.random.default_rng(1)):
    other_thread_draws()
    return x + g.normal()


DRAWING = [draws_from_generator, draws_through_an_alias, draws_through_a_helper, draws_from_imported_rand,
           draws_from_stdlib_instance, draws_in_a_nested_function, draws_from_a_default]


@pytest.mark.parametrize("draw", ["generator", "randomstate", "numpy_module_function"])
@pytest.mark.parametrize("fn", DRAWING, ids=[f.__name__ for f in DRAWING])
def test_a_draw_by_the_trace_still_raises_while_another_thread_draws(fn, draw):
    global OTHER
    with OtherThread(_DRAWS[draw]) as OTHER:
        with pytest.raises(jk.TracedRandomError, match="while it was being traced"):
            jk.jit(fn)(np.ones(3))


def test_a_trace_function_set_before_keeps_its_events_and_is_restored():
    """The guard records lines with sys.settrace in the tracing thread; a debugger's or
    coverage's trace function set before keeps receiving the events and is put back."""
    global OTHER
    seen: list[str] = []

    def tracer(frame, event, arg):
        if frame.f_code.co_name.startswith("names_generator"):
            seen.append(event)
        return tracer

    with OtherThread(_DRAWS["generator"]) as OTHER:
        sys.settrace(tracer)
        try:
            jk.jit(names_generator_in_untaken_branch)(np.ones(2))
            assert sys.gettrace() is tracer
        finally:
            sys.settrace(None)
    assert "call" in seen and "line" in seen
