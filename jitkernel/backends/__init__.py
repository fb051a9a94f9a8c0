"""Backends: each is a renderer plus a runtime behind `compile(program, name=, fastmath=)`,
returning (executable, {stage: text thunk}). A backend never reaches back into tracing.

Whether a backend can run is decided here, once, for every entry point: `jk.jit(backend=...)`,
the first call of a function that uses `jk.config.default_backend`, and the notebook magics.
An unknown name is a `ValueError` listing the backends; a known backend that this build or
machine cannot run is a `jk.BackendUnavailableError` saying what is missing.

>>> check_backend("cpu")
>>> check_backend("npu")
Traceback (most recent call last):
    ...
ValueError: unknown backend 'npu'; backends are 'cpu', 'interpret', 'cuda-emulator', 'cuda' (a CUDA GPU through PyCUDA), 'tpu' (a Google TPU through JAX's XLA) and 'tpu-interpret' (the TPU lowering on this CPU)
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ..config import config
from ..ir import Program
from .base import Backend
from ..fusion import schedule
from ..passes import optimize
from ..passes.native_loops import library_steps_in_bodies


@dataclass(frozen=True)
class _Registration:
    target: str  # "module:Class", imported on first use
    note: str  # said after the name in the list of backends ("" for none)


_REGISTRY: dict[str, _Registration] = {}
_ALIASES: dict[str, str] = {}


def register_backend(name: str, target: str, *, aliases: tuple[str, ...] = (), note: str = "") -> None:
    """Make backend `name` known: `target` is "module:Class" (a `Backend` subclass), imported
    the first time the backend is asked for. The one place a backend is added."""
    if name in _REGISTRY or name in _ALIASES:
        raise ValueError(f"backend {name!r} registered twice")
    _REGISTRY[name] = _Registration(target, note)
    for alias in aliases:
        _ALIASES[alias] = name


_DEVICE_PLATFORMS: dict[str, str] = {}  # platform name -> "module:function" listing its devices


def register_device_platform(platform: str, target: str) -> None:
    """Make `jk.devices(platform)` list a backend's devices: `target` is "module:function"
    returning them (imported on first use, so listing costs nothing until asked)."""
    _DEVICE_PLATFORMS[platform] = target


def platform_devices(platform: str) -> list | None:
    """The devices of a registered device platform ([] when this machine has none), or None
    for a platform no backend registered."""
    target = _DEVICE_PLATFORMS.get(platform)
    if target is None:
        return None
    module, attribute = target.split(":")
    return list(getattr(importlib.import_module(module), attribute)())


register_backend("cpu", "jitkernel.backends.cpu:CpuBackend")
register_backend("interpret", "jitkernel.backends.interpret:InterpretBackend")
register_backend("cuda-emulator", "jitkernel.backends.cuda.emulator:CudaEmulatorBackend")
register_backend("cuda", "jitkernel.backends.cuda.runtime:CudaBackend", aliases=("gpu",),
                 note="a CUDA GPU through PyCUDA")
register_backend("tpu", "jitkernel.backends.tpu.backend:TpuBackend", note="a Google TPU through JAX's XLA")
register_backend("tpu-interpret", "jitkernel.backends.tpu.backend:TpuInterpretBackend",
                 note="the TPU lowering on this CPU")
register_device_platform("tpu", "jitkernel.backends.tpu.device_array:tpu_devices")
from .tpu import options as _tpu_options  # noqa: E402,F401  (registers jk.config's tpu_fusion; no JAX)


def backend_names() -> tuple[str, ...]:
    """The registered backends, in registration order (aliases not included)."""
    return tuple(_REGISTRY)


def canonical_name(name: str) -> str:
    """The registered name a backend name or alias stands for."""
    return _ALIASES.get(name, name)


_CLASSES: dict[str, type[Backend]] = {}  # registered name -> its class, once imported


def backend_class(name: str) -> type[Backend]:
    """The class of a known backend (or alias), imported on first use."""
    check_backend_name(name)
    registered = canonical_name(name)
    cls = _CLASSES.get(registered)
    if cls is None:
        module, attribute = _REGISTRY[registered].target.split(":")
        cls = _CLASSES[registered] = getattr(importlib.import_module(module), attribute)
    return cls


def device_stages() -> tuple[str, ...]:
    """The `as_text` stages the registered backends add (`Backend.device_stages`)."""
    return tuple(dict.fromkeys(s for n in backend_names() for s in backend_class(n).device_stages))


class _WithCapability:
    """`name in SHAPE_GENERIC`: whether the backend `name` has a capability (a class attribute of
    its Backend), for the places that test a name."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self._known: dict[str, bool] = {}  # a backend's class attributes never change: asked once

    def __contains__(self, name: object) -> bool:
        # Read on every checked call (Compiled.__call__): one dict read after the first time.
        if not isinstance(name, str):
            return False
        known = self._known.get(name)
        if known is None:
            if canonical_name(name) not in _REGISTRY:
                return False  # not cached: it may be registered later
            known = self._known[name] = bool(getattr(backend_class(name), self.attribute))
        return known

    def __iter__(self):
        return iter(n for n in backend_names() if n in self)

    def __repr__(self) -> str:
        return repr(tuple(self))


# Backends whose compiled kernels can become shape-generic (docs/recompilation.md).
SHAPE_GENERIC = _WithCapability("shape_generic")
# Backends whose executables take jk.DeviceArray arguments.
DEVICE_ARRAY_BACKENDS = _WithCapability("device_arrays")


def _listing() -> str:
    names = [f"{n!r}" + (f" ({r.note})" if r.note else "") for n, r in _REGISTRY.items()]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def check_backend_name(name: Any) -> None:
    """ValueError unless `name` is a backend jitkernel knows (available or not)."""
    if not isinstance(name, str) or canonical_name(name) not in _REGISTRY:
        raise ValueError(f"unknown backend {name!r}; backends are {_listing()}")


# jk.config.update("default_backend", name): unknown names fail there, unavailable ones at the
# first call.
config.register_check("default_backend", check_backend_name)


def check_backend(name: Any) -> None:
    """Raise unless `name` is a backend that can run here: ValueError for an unknown name,
    `BackendUnavailableError` (from the backend's `check_available`) for a known one this
    build or machine lacks."""
    backend_class(name).check_available(name)


class _SizeProbe:
    """Stands in for an earlier compiled entry when a new compile looks for its size-dependent
    constants: the kernel program of the same function traced at other sizes (see
    `Jitted._dynamic_base`). The CPU backend compares `previous.executable.kp` only."""

    def __init__(self, kp: Any) -> None:
        self.executable = self
        self.kp = kp


def size_probe(program: Program, backend: str) -> Any:
    """A `_SizeProbe` for `program` (optimised and fused, no code generation, no events), or
    None for a backend without shape-generic kernels."""
    if backend not in SHAPE_GENERIC:
        return None
    # Scheduled as the backend schedules (Backend.schedule): the library steps its loop bodies
    # may hold decide what fuses (a gather is a load in a CPU kernel, a library step on CUDA),
    # and a probe scheduled otherwise never has the structure of the compile it is compared with.
    with library_steps_in_bodies(backend_class(backend).body_library_steps):
        return _SizeProbe(schedule(optimize(program, size_generic=True)))


def get_backend(name: str) -> Backend:
    """An instance of the backend `name` (or alias), after checking that it can run here."""
    check_backend(name)
    return backend_class(name)()
