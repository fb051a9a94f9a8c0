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
   is compared before and after the trace: a change means a sample was drawn while tracing.
   For the modules' global generators the comparison is skipped when another thread called a
   module function meanwhile (it would be inconclusive).
Generators reached in other ways (an attribute of an argument, a helper module's global) are not
seen; docs/numpy-support.md says so.
"""
from __future__ import annotations

import ctypes
import functools
import random as _pyrandom
import types
from typing import Any, Callable

import numpy as np

from ..errors import TracedRandomError
from .context import is_tracing, user_frame_location
from .patching import ModulePatches

_foreign_calls = 0  # module random functions called by non-tracing threads while patched

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
        global _foreign_calls
        if is_tracing():
            _raise(qualified)
        _foreign_calls += 1  # another thread drew while some trace runs (RandomStateWatch)
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


def _referenced(fun: Any, depth: int = 2) -> dict[int, tuple[str, Any]]:
    """Generators `fun` can name: globals it reads, closure cells, defaults; recursively
    through the Python functions found there."""
    found: dict[int, tuple[str, Any]] = {}
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
                consider("a bound argument", v, level)
            f = f.func
        f = getattr(f, "__wrapped__", None) or getattr(f, "__func__", None) or f
        code = getattr(f, "__code__", None)
        if code is None or id(f) in seen:
            return
        seen.add(id(f))
        g = getattr(f, "__globals__", {})
        for name in code_names(code):
            if name in g:
                consider(name, g[name], level)
        for name, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
            try:
                consider(name, cell.cell_contents, level)
            except ValueError:
                pass
        for v in (getattr(f, "__defaults__", None) or ()) + tuple((getattr(f, "__kwdefaults__", None) or {}).values()):
            consider("a default argument", v, level)

    def consider(name: str, value: Any, level: int) -> None:
        owner = getattr(value, "__self__", None) if isinstance(value, (types.MethodType, types.BuiltinMethodType)) else None
        if isinstance(owner, _GENERATOR_TYPES):  # from numpy.random import rand: a bound method
            value = owner
        if isinstance(value, _GENERATOR_TYPES):
            found.setdefault(id(value), (name, value))
        elif level > 0 and isinstance(value, (types.FunctionType, functools.partial)):
            visit(value, level - 1)

    visit(fun, depth)
    return found


def _GLOBALS() -> tuple:
    return (np.random.mtrand._rand, _pyrandom._inst)


class RandomStateWatch:
    """Snapshots of the generators a trace could draw from; `check()` raises if one moved."""

    def __init__(self, fun: Any) -> None:
        self.generators = []
        for name, value in _referenced(fun).values():
            what = "NumPy's global generator" if value is np.random.mtrand._rand else \
                "the random module's global generator" if value is _pyrandom._inst else \
                f"`{name}` ({type(value).__module__}.{type(value).__name__})"
            self.generators.append((f"{what} (through `{name}`)" if value in _GLOBALS() else what, value))
        self.before = [_state(g) for _, g in self.generators]
        self.foreign = _foreign_calls

    def check(self, function_name: str) -> None:
        foreign = _foreign_calls != self.foreign
        for (name, g), before in zip(self.generators, self.before):
            if foreign and g in _GLOBALS():
                continue  # another thread drew from the module's generator meanwhile: inconclusive
            if _state(g) != before:
                raise TracedRandomError(
                    f"jitted function {function_name!r} drew random numbers from {name} while it was being "
                    f"traced. " + _ADVICE)
