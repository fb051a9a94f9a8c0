"""What every backend is: a renderer plus a runtime behind `compile`, with what it can do as class
attributes that the rest of the engine reads instead of lists of backend names.

A backend registers once, by name, in backends/__init__.py (`register_backend`); its class is
imported the first time something asks for it.

>>> from jitkernel.backends import backend_class
>>> backend_class("cpu").shape_generic, backend_class("interpret").shape_generic
(True, False)
"""
from __future__ import annotations

from typing import Any, ClassVar

from .. import events
from ..fusion import KernelProgram, schedule
from ..passes.native_loops import library_steps_in_bodies
from ..fusion.schedule import unfused_bytes
from ..ir import Program


def fuse(program: Program, name: str, body_library_steps: frozenset[str] = frozenset()) -> KernelProgram:
    """Fusion of an optimised program into a kernel program, the schedule every backend shares
    (loop and branch bodies may hold `body_library_steps`), published as a FuseEvent."""
    t0 = events.clock()
    with library_steps_in_bodies(body_library_steps):
        kp = schedule(program)
    if events.SUBSCRIBERS:
        events.publish(events.FuseEvent(
            name, t0, events.clock() - t0,
            kernels=sum(1 for s in kp.steps if not hasattr(s, "prim")),
            library_calls=sum(1 for s in kp.steps if hasattr(s, "prim")),
            graph_ops=len(program.eqns), groups=kp.fusion_record,
            bytes_unfused=unfused_bytes(program)))
    return kp


class Backend:
    """A backend. Subclasses set `name` and the capabilities, and implement `compile`."""

    name: ClassVar[str] = ""
    # compile(previous=...) turns the constants that differ from an earlier size into run-time
    # parameters and returns a template that `reuse` runs later sizes on (docs/recompilation.md).
    shape_generic: ClassVar[bool] = False
    # Its executables take (and return) jk.DeviceArray arguments that stay on the device.
    device_arrays: ClassVar[bool] = False
    # Library steps fusion may leave inside a loop or branch body (the backend runs them there).
    body_library_steps: ClassVar[frozenset[str]] = frozenset()
    # Stages of `f.lower(...).as_text(stage)` only this backend's machinery produces.
    device_stages: ClassVar[tuple[str, ...]] = ()

    def compile(self, program: Program, *, name: str, fastmath: bool = False, disk_cache: bool = True,
                previous: Any = None) -> tuple[Any, dict]:
        """(executable, {stage: text thunk}) for an optimised program. `previous`: an earlier
        executable (or a size probe) of the same function differing in sizes only."""
        raise NotImplementedError(f"backend {self.name!r} does not implement compile")

    def schedule(self, program: Program, name: str) -> KernelProgram:
        """This backend's kernel program for an optimised program (`fuse` with its body steps)."""
        return fuse(program, name, self.body_library_steps)

    def reuse(self, program: Program, template: Any, *, name: str) -> tuple[Any, dict] | None:
        """Run `program` on a shape-generic template's machine code, or None (then the caller
        compiles). Backends without shape-generic code never have a template."""
        return None

    @classmethod
    def check_available(cls, name: str) -> None:
        """Raise `jk.BackendUnavailableError` saying what this machine lacks to run the backend
        asked for as `name` (an alias may name it); nothing when it can run."""
