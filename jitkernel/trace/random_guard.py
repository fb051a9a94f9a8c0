"""Random numbers while tracing are an error, not a frozen constant.

A traced function runs once; NumPy code inside it runs on concrete data at that moment. A sample
drawn then (`np.random.normal(size=n)`, `rng.uniform()`, `random.random()`) would become a
constant of the compiled program: every call would return the same numbers. Two guards:

1. While any thread traces, the functions of the `numpy.random` and `random` modules are
   replaced by wrappers that raise TracedRandomError, with the user's line, when called from a
   tracing thread, and call the original otherwise (other threads keep working). The last trace
   to finish restores the originals; a lock makes install/restore safe across threads, and the
   restore runs on exceptions too.
2. Methods of generator objects cannot be patched (Generator, RandomState and the bit generators
   are extension types), and `from numpy.random import rand` binds the unpatched method. So the
   state of every generator the traced function can name (its globals, closure cells and
   defaults, bound methods' owners, and those of the Python functions it names, two levels deep)
   is compared before and after the trace. A change alone does not say who drew: another thread
   may draw from the same generator meanwhile. So the guard is per trace and per thread: while
   it traces, the tracing thread (and only it: sys.settrace is per thread) records which of the
   lines that load a generator's name (`rng.normal(...)`, `helper(rng)`, `rand()`) it ran, and a
   generator counts as drawn by the trace only when its state changed *and* the trace ran one of
   its lines. Another thread's draws, at any time, never make a trace fail.
Generators reached in other ways (an attribute of an argument, a helper module's global) are not
seen; docs/numpy-support.md says so.
"""
from __future__ import annotations

import ctypes
import dis
import functools
import random as _pyrandom
import sys
import types
from typing import Any, Callable

import numpy as np

from ..errors import TracedRandomError
from .context import is_tracing, user_frame_location
from .patching import ModulePatches

_ADVICE = ("A random sample drawn while tracing would be frozen into the compiled program as a "
           "constant: every call would return the same numbers. Use explicit random keys instead: pass "
           "a key (key = jk.random.PRNGKey(0); k1, k2 = jk.random.split(key)) into the jitted function "
           "and draw with jk.random.normal(k1, shape), jk.random.uniform(k2, shape), ...; or draw the "
           "numbers outside the jitted function and pass them in as an argument.")


def _raise(qualified: str) -> None:
    raise TracedRandomError(f"{qualified} was called while tracing a jitted function (at {user_frame_location()}). "
                            + _ADVICE)


def _guard(qualified: str, original: Callable) -> Callable:
    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if is_tracing():  # (per thread: other threads call NumPy's own function)
            _raise(qualified)
        return original(*args, **kwargs)
    guarded.__jitkernel_original__ = original  # type: ignore[attr-defined]
    return guarded


_guards: list[tuple[Any, str, Any, Callable]] | None = None


def _targets() -> list[tuple[Any, str, Any, Callable]]:
    """(module, name, original, guard) for every random function of numpy.random and random,
    built once."""
    global _guards
    if _guards is None:
        _guards = []
        for module, prefix in ((np.random, "np.random."), (_pyrandom, "random.")):
            for name in getattr(module, "__all__", dir(module)):
                value = getattr(module, name, None)
                if callable(value) and not isinstance(value, (type, types.ModuleType)) \
                        and getattr(value, "__jitkernel_original__", None) is None:
                    _guards.append((module, name, value, _guard(prefix + name, value)))
    return _guards


def _installable_guards():
    """The guards of the random functions still in place (a user's own replacement is left alone)."""
    for module, name, value, guard in _targets():
        if getattr(module, name, None) is value:
            yield module, name, guard


_patches = ModulePatches(_installable_guards)
# Enter a trace: patch the random modules if this is the first active trace; leave it: restore
# them when the last active trace ends.
install, uninstall = _patches.install, _patches.uninstall


# ------------------------------------------------------------------ generator state snapshots

_GENERATOR_TYPES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, _pyrandom.Random)


def _state(obj: Any) -> Any:
    """A comparable snapshot of a generator's state."""
    if isinstance(obj, _pyrandom.Random):
        return obj.getstate()
    bitgen = obj if isinstance(obj, np.random.BitGenerator) else obj.bit_generator if isinstance(
        obj, np.random.Generator) else obj._bit_generator
    if type(bitgen) is np.random.MT19937:
        # MT19937's `.state` dict costs ~100 us; its C struct is {uint32 key[624]; int pos}.
        return ctypes.string_at(bitgen.ctypes.state_address, 624 * 4 + 4)
    return _freeze(bitgen.state)


def _freeze(x: Any) -> Any:
    if isinstance(x, dict):
        return tuple((k, _freeze(v)) for k, v in sorted(x.items()))
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    return x


Site = tuple  # (file name, line): where a name that holds a generator is loaded


class _Named:
    """A generator the traced function can name: what to call it in the error, and the lines
    that load it (None: reached in a way that names no line, e.g. a functools.partial argument;
    then any change of its state counts)."""

    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value = name, value
        self.sites: set[Site] | None = set()

    def add_sites(self, sites: set[Site] | None) -> None:
        if sites is None or self.sites is None:
            self.sites = None
        else:
            self.sites |= sites


_LOADS = {"global": ("LOAD_GLOBAL", "LOAD_NAME"), "cell": ("LOAD_DEREF", "LOAD_CLASSDEREF"),
          "local": ("LOAD_FAST", "LOAD_FAST_CHECK")}
_STORES = {"STORE_GLOBAL": "global", "STORE_NAME": "global", "STORE_DEREF": "cell", "STORE_FAST": "local"}


def _load_sites(code: types.CodeType, name: str, scope: str, seen: set | None = None) -> set[Site]:
    """The (file, line) of every instruction of `code` and its nested code objects that loads
    `name` as a global, a cell (closure) or a local (a parameter's default) to use it: a load
    stored straight into another name (`r = rng`) only names it, so the loads of that name
    count instead (a draw through the alias, `r.normal()`, is still seen)."""
    seen = set() if seen is None else seen
    if (id(code), name, scope) in seen:
        return set()
    seen.add((id(code), name, scope))
    sites: set[Site] = set()
    instructions = list(dis.get_instructions(code))
    line = code.co_firstlineno
    for k, ins in enumerate(instructions):
        line = ins.starts_line or line
        if ins.opname not in _LOADS[scope] or ins.argval != name:
            continue
        after = instructions[k + 1] if k + 1 < len(instructions) else None
        if after is not None and after.opname in _STORES:
            sites |= _load_sites(code, after.argval, _STORES[after.opname], seen)
            continue
        position = getattr(ins, "positions", None)  # (3.11: the instruction's own line)
        sites.add((code.co_filename, position.lineno if position and position.lineno else line))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            # a nested function reads an enclosing local through a cell, a global as a global
            sites |= _load_sites(const, name, "cell" if scope in ("cell", "local") else scope, seen)
    return sites


def _referenced(fun: Any, depth: int = 2) -> dict[int, _Named]:
    """Generators `fun` can name: globals it reads, closure cells, defaults; recursively
    through the Python functions found there; with the lines that load each."""
    found: dict[int, _Named] = {}
    seen: set[int] = set()

    def code_names(code: types.CodeType) -> set[str]:
        names = set(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                names |= code_names(c)
        return names

    def visit(f: Any, level: int) -> None:
        while isinstance(f, functools.partial):
            for v in list(f.args) + list(f.keywords.values()):
                consider("a bound argument", v, level, None)
            f = f.func
        f = getattr(f, "__wrapped__", None) or getattr(f, "__func__", None) or f
        code = getattr(f, "__code__", None)
        if code is None or id(f) in seen:
            return
        seen.add(id(f))
        g = getattr(f, "__globals__", {})
        for name in code_names(code):
            if name in g:
                consider(name, g[name], level, lambda name=name: _load_sites(code, name, "global"))
        for name, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
            try:
                consider(name, cell.cell_contents, level, lambda name=name: _load_sites(code, name, "cell"))
            except ValueError:
                pass
        params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        defaults = dict(zip(params[code.co_argcount - len(getattr(f, "__defaults__", None) or ()):code.co_argcount],
                            getattr(f, "__defaults__", None) or ()))
        defaults.update(getattr(f, "__kwdefaults__", None) or {})
        for name, v in defaults.items():
            consider("a default argument", v, level, lambda name=name: _load_sites(code, name, "local"))

    def consider(name: str, value: Any, level: int, sites: Callable[[], set[Site]] | None) -> None:
        owner = getattr(value, "__self__", None) if isinstance(value, (types.MethodType, types.BuiltinMethodType)) else None
        if isinstance(owner, _GENERATOR_TYPES):  # from numpy.random import rand: a bound method
            value = owner
        if isinstance(value, _GENERATOR_TYPES):
            found.setdefault(id(value), _Named(name, value)).add_sites(sites() if sites else None)
        elif level > 0 and isinstance(value, (types.FunctionType, functools.partial)):
            visit(value, level - 1)

    visit(fun, depth)
    return found


def _GLOBALS() -> tuple:
    return (np.random.mtrand._rand, _pyrandom._inst)


class _SiteRecorder:
    """Records which generator-loading lines the current thread runs, between start() and
    stop(). A trace function set before (a debugger, coverage) keeps receiving every event."""

    def __init__(self, sites: set[Site]) -> None:
        self.sites = sites
        self.files = {f for f, _ in sites}
        self.ran: set[Site] = set()
        self.previous: Any = None

    def start(self) -> None:
        self.previous = sys.gettrace()
        sys.settrace(self._call)

    def stop(self) -> None:
        sys.settrace(self.previous)

    def _call(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        local = self.previous(frame, event, arg) if self.previous is not None else None
        if frame.f_code.co_filename not in self.files:
            return local
        return self._local(local)

    def _local(self, inner: Any) -> Callable:
        def trace(frame: types.FrameType, event: str, arg: Any) -> Any:
            nonlocal inner
            if event == "line":
                site = (frame.f_code.co_filename, frame.f_lineno)
                if site in self.sites:
                    self.ran.add(site)
            if inner is not None:
                inner = inner(frame, event, arg)
            return trace
        return trace


class RandomStateWatch:
    """Snapshots of the generators a trace could draw from; `check()` raises if one moved while
    the tracing thread ran a line that names it (start() / stop() bracket the trace)."""

    def __init__(self, fun: Any) -> None:
        self.generators = []
        for named in _referenced(fun).values():
            name, value = named.name, named.value
            what = "NumPy's global generator" if value is np.random.mtrand._rand else \
                "the random module's global generator" if value is _pyrandom._inst else \
                f"`{name}` ({type(value).__module__}.{type(value).__name__})"
            self.generators.append((f"{what} (through `{name}`)" if value in _GLOBALS() else what, value, named.sites))
        self.before = [_state(g) for _, g, _ in self.generators]
        sites = set().union(*[s for _, _, s in self.generators if s])
        self.recorder = _SiteRecorder(sites) if sites else None

    def start(self) -> None:
        if self.recorder is not None:
            self.recorder.start()

    def stop(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()

    def check(self, function_name: str) -> None:
        ran = self.recorder.ran if self.recorder is not None else set()
        for (name, g, sites), before in zip(self.generators, self.before):
            if sites is not None and not (sites & ran):
                continue  # this thread never ran a line naming it: a change is another thread's draw
            if _state(g) != before:
                raise TracedRandomError(
                    f"jitted function {function_name!r} drew random numbers from {name} while it was being "
                    f"traced. " + _ADVICE)
