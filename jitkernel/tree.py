"""Pytrees: nested tuples, lists, dicts and None around leaves (arrays, scalars, other objects)."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree with its leaves taken out; hashable, so it can key caches."""

    kind: str  # "leaf" | "none" | "tuple" | "list" | "dict" | "namedtuple" (outputs only)
    children: tuple["TreeDef", ...] = ()
    keys: tuple = ()

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = [str(c) for c in self.children]
        if self.kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, inner)) + "}"
        if self.kind == "tuple":
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        if self.kind == "namedtuple":
            return self.keys[0].__name__ + "(" + ", ".join(inner) + ")"
        return "[" + ", ".join(inner) + "]"


_LEAF = TreeDef("leaf")
_NONE = TreeDef("none")


# The recursions below are module functions, not closures over a nested function that calls
# itself: such a closure is a reference cycle (function -> cell -> function) that keeps the
# leaves list, and so every argument and result of a call, alive until the cyclic garbage
# collector runs. A jitted call's result then looked still referenced to the executable, which
# allocated (and page-faulted) a fresh output on every call instead of reusing its own
# (backends/cpu/runtime.py reuse_lines).


def tree_flatten(tree: Any, namedtuples: bool = False) -> tuple[list[Any], TreeDef]:
    """Split a pytree into its leaves (depth first) and its structure.

    >>> leaves, treedef = tree_flatten({"b": (1, None), "a": [2.0]})
    >>> leaves, str(treedef)
    ([2.0, 1], "{'a': [*], 'b': (*, None)}")
    """
    leaves: list[Any] = []
    return leaves, _flatten_into(tree, leaves, namedtuples)


def _flatten_into(node: Any, leaves: list[Any], namedtuples: bool) -> TreeDef:
    if node is None:
        return _NONE
    if isinstance(node, tuple) and not hasattr(node, "_fields"):
        return TreeDef("tuple", tuple(_flatten_into(c, leaves, namedtuples) for c in node))
    if namedtuples and isinstance(node, tuple):
        # Outputs only (np.linalg.eigh's EighResult, ...): rebuilt as the same class.
        return TreeDef("namedtuple", tuple(_flatten_into(c, leaves, namedtuples) for c in node), (type(node),))
    if isinstance(node, list):
        return TreeDef("list", tuple(_flatten_into(c, leaves, namedtuples) for c in node))
    if isinstance(node, dict):
        keys = tuple(sorted(node))
        return TreeDef("dict", tuple(_flatten_into(node[k], leaves, namedtuples) for k in keys), keys)
    leaves.append(node)
    return _LEAF


def tree_unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    """Inverse of tree_flatten."""
    return _build(treedef, iter(leaves))


def _build(td: TreeDef, it: Any) -> Any:
    if td.kind == "leaf":
        return next(it)
    if td.kind == "none":
        return None
    kids = [_build(c, it) for c in td.children]
    if td.kind == "tuple":
        return tuple(kids)
    if td.kind == "list":
        return kids
    if td.kind == "namedtuple":
        return td.keys[0](*kids)
    return dict(zip(td.keys, kids))


def plain(tree: Any) -> Any:
    """The pytree with every namedtuple (NumPy's EighResult, SlogdetResult, ...) as a plain tuple:
    the form in which results of a traced function are passed back in as arguments."""
    if isinstance(tree, tuple):
        return tuple(plain(c) for c in tree)
    if isinstance(tree, list):
        return [plain(c) for c in tree]
    if isinstance(tree, dict):
        return {k: plain(v) for k, v in tree.items()}
    return tree


def same_structure(a: TreeDef, b: TreeDef) -> bool:
    """Whether two tree structures agree, a namedtuple matching a plain tuple of the same arity."""
    kinds = {"namedtuple": "tuple"}
    if kinds.get(a.kind, a.kind) != kinds.get(b.kind, b.kind) or len(a.children) != len(b.children):
        return False
    if a.kind == "dict" and a.keys != b.keys:
        return False
    return all(same_structure(x, y) for x, y in zip(a.children, b.children))


def static_key(value: Any) -> Any:
    """The cache key of a static argument's value: two values share a compiled entry only when
    traced code cannot tell them apart. `==` is not enough (`0.0 == -0.0`, `1 == 1.0 == True`,
    `np.float32(1) == 1.0`), so the key holds the exact type and, for floats and complex
    numbers, the bits (a NaN matches itself bit for bit); tuples and frozensets are keyed
    element by element, NumPy scalars by dtype and bytes.

    >>> static_key(0.0) == static_key(-0.0), static_key(1) == static_key(True)
    (False, False)
    >>> static_key((1, float("nan"))) == static_key((1, float("nan")))
    True
    """
    t = type(value)
    if isinstance(value, np.generic):  # before float: np.float64 is a float subclass
        return (t, value.dtype.str, value.tobytes())
    if isinstance(value, float):
        return (t, struct.pack("<d", value))
    if isinstance(value, complex):
        return (t, struct.pack("<dd", value.real, value.imag))
    if isinstance(value, tuple):
        return (t, tuple(static_key(v) for v in value))
    if isinstance(value, frozenset):
        return (t, frozenset(static_key(v) for v in value))
    return (t, value)


def leaf_paths(treedef: TreeDef, root: str) -> list[str]:
    """A readable path per leaf, in flatten order: `carry[0]['x']`."""
    paths: list[str] = []

    def walk(td: TreeDef, path: str) -> None:
        if td.kind == "leaf":
            paths.append(path)
        elif td.kind == "dict":
            for k, c in zip(td.keys, td.children):
                walk(c, f"{path}[{k!r}]")
        elif td.kind in ("tuple", "list"):
            for k, c in enumerate(td.children):
                walk(c, f"{path}[{k}]")

    walk(treedef, root)
    return paths
