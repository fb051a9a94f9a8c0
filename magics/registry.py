"""Which jitted functions came from `%%jit` cells, with their cell options, and read-only
access to a jitted function's compiled entries."""
from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterator

from jitkernel.api import Jitted
from jitkernel.pipeline import Compiled

from .options import CellOptions


@dataclass
class Tracked:
    """Per %%jit function: its options, how many recompilations were already reported, and the
    compiled entries whose stage text was already shown (--show)."""

    options: CellOptions
    reported: int = 0
    shown: "weakref.WeakSet[Compiled]" = field(default_factory=weakref.WeakSet)


class Registry:
    """Jitted functions created by %%jit (held weakly), plus the strongly held functions of
    no-def cells (keyed by cell source and options, so re-running a cell reuses its compiles)."""

    MAX_CELLS = 64

    def __init__(self) -> None:
        self._tracked: "weakref.WeakKeyDictionary[Jitted, Tracked]" = weakref.WeakKeyDictionary()
        self.cells: "OrderedDict[tuple, Jitted]" = OrderedDict()

    def track(self, f: Jitted, options: CellOptions) -> None:
        """Remember `f` as created by a %%jit cell with `options` (its history counts as reported)."""
        self._tracked[f] = Tracked(options, reported=len(f.recompilations()))

    def tracked(self, name: str | None = None) -> Iterator[tuple[Jitted, Tracked]]:
        """The tracked functions (named `name`, when given)."""
        for f, t in list(self._tracked.items()):
            if name is None or f.__name__ == name:
                yield f, t

    def cell_function(self, key: tuple) -> Jitted | None:
        f = self.cells.get(key)
        if f is not None:
            self.cells.move_to_end(key)
        return f

    def add_cell_function(self, key: tuple, f: Jitted) -> None:
        self.cells[key] = f
        while len(self.cells) > self.MAX_CELLS:
            self.cells.popitem(last=False)

    def forget(self, f: Jitted, key: tuple | None = None) -> None:
        """Stop tracking `f` (and drop the no-def cell entry `key`)."""
        self._tracked.pop(f, None)
        if key is not None and self.cells.get(key) is f:
            del self.cells[key]

    def by_name(self, name: str) -> Jitted | None:
        """The most recently tracked function named `name`."""
        found = None
        for f, _ in self.tracked(name):
            found = f
        return found

    def clear(self) -> None:
        self._tracked.clear()
        self.cells.clear()


def compiled_entries(f: Jitted) -> list[tuple[str, Compiled]]:
    """(signature text, Compiled) of every cached entry, least recently compiled first."""
    return f.entries()


def last_compiled(f: Jitted) -> tuple[str, Compiled] | None:
    """The most recently compiled entry of `f` with its signature text, or None."""
    entries = f.entries()
    return entries[-1] if entries else None


def entry_for(f: Jitted, args: tuple) -> tuple[str, Compiled]:
    """(signature text, Compiled) that a call `f(*args)` uses, compiling if needed."""
    return f.compiled_for(*args)


def is_transformed(value: Any) -> bool:
    """Whether `value` is a transformed function (`jk.grad(f)`, `jk.vmap(f)`, ...)."""
    from jitkernel.transforms.core import Transformed
    return isinstance(value, Transformed)


def jitted_of(value: Any) -> Jitted | None:
    """The jitted function that runs `value` when it is called: `value` itself if jitted; for a
    transformed function (`g = jk.grad(loss)`, named `grad(loss)`), the `jk.jit` of itself that
    its calls outside a trace compile (None until it was first called)."""
    if isinstance(value, Jitted):
        return value
    if is_transformed(value):
        return getattr(value, "_jitted", None)
    return None


def jitted_in(namespace: dict[str, Any]) -> dict[str, Jitted]:
    """The jitted functions bound to names in `namespace` (private names skipped), transformed
    functions that were called included."""
    out = {}
    for k, v in list(namespace.items()):
        f = jitted_of(v) if not k.startswith("_") else None
        if f is not None:
            out[k] = f
    return out
