"""`for i, x in enumerate(a)` and `for x, y in zip(a, b)` over traced arrays as one loop.

A `for` with a tuple target was not converted, so Python iterated the traced array at trace time
and every element's body was unrolled into the program (a 1,000-element array: 1,000 bodies,
seconds to compile). `desugar` (pass 0, on the AST) rewrites such a loop whose iterable is a call
of `enumerate` or `zip` into one with a plain target,

    for ag__item1 in ag__.iter_enumerate(a):
        i, x = ag__item1
        ...

so the loop is a `for_iter`. `iter_enumerate` / `iter_zip` return an `IndexedSequence` when
they are given traced arrays (of at least one axis) while tracing: its length is static and its
`i`-th item is `(start + i, a[i])` / `(a[i], b[i])`, which `for_iter` turns into
`for i in range(n)` with a traced index. Anything else (a list, a range, a mix of a list and an
array, no trace) gets Python's own `enumerate` / `zip`, and the loop runs as Python, as before.

>>> import numpy as np, jitkernel as jk
>>> def f(a, b):
...     s = 0.0
...     for i, (x, y) in enumerate(zip(a, b)):
...         s += i * x * y
...     return s
>>> float(jk.jit(f)(np.arange(1000.0), np.ones(1000)))
332833500.0
"""
from __future__ import annotations

import ast
import builtins
from typing import Any, Callable, Iterator

from ..trace.context import is_tracing
from ..trace.tracer import Tracer
from .analysis import walk_scope

_ITERATORS = {"enumerate": "iter_enumerate", "zip": "iter_zip"}


# ----------------------------------------------------------------------------- pass 0 (the AST)


def desugar(body: list[ast.stmt], local_names: set[str], ids: Iterator[int], ag: str) -> int:
    """Rewrite, in place, every `for <tuple> in enumerate(...)` / `zip(...)` of this scope
    (builtins not shadowed by a local) into a loop over one name unpacked first in the body.
    Returns how many loops it rewrote."""
    count = 0
    for node in list(walk_scope(body)):
        if not (isinstance(node, ast.For) and isinstance(node.target, (ast.Tuple, ast.List))):
            continue
        if not _is_iterator_call(node.iter, local_names):
            continue
        item = f"{ag}item{next(ids)}"
        unpack = ast.Assign(targets=[node.target], value=ast.Name(id=item, ctx=ast.Load()))
        ast.copy_location(unpack, node.target)
        _route(node.iter, local_names, ag)
        node.target = ast.copy_location(ast.Name(id=item, ctx=ast.Store()), node.target)
        node.body = [unpack] + node.body
        count += 1
    for node in walk_scope(body):
        for child in ast.walk(node):
            if not hasattr(child, "lineno") and "lineno" in getattr(child, "_attributes", ()):
                ast.copy_location(child, node)
    return count


def _is_iterator_call(call: ast.expr, local_names: set[str]) -> bool:
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in _ITERATORS
            and call.func.id not in local_names and not any(isinstance(a, ast.Starred) for a in call.args))


def _route(call: ast.Call, local_names: set[str], ag: str) -> None:
    """`enumerate(zip(a, b))` -> `ag__.iter_enumerate(ag__.iter_zip(a, b))`."""
    call.func = ast.Attribute(value=ast.Name(id=ag, ctx=ast.Load()), attr=_ITERATORS[call.func.id], ctx=ast.Load())
    for arg in call.args:
        if _is_iterator_call(arg, local_names):
            _route(arg, local_names, ag)


# ----------------------------------------------------------------------------- run time


class IndexedSequence:
    """`n` items, the `i`-th being `item(i)` (i a Python or a traced int); iterating it runs
    Python's own `fallback()` (enumerate or zip). `sources`: the iterables it reads (the loop's
    checks see the traced arrays a body reads through it)."""

    def __init__(self, n: int, item: Callable[[Any], Any], fallback: Callable[[], Iterator], sources: tuple) -> None:
        self.n, self.item, self.fallback, self.sources = n, item, fallback, sources

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator:
        return iter(self.fallback())


def _indexable(x: Any) -> bool:
    return (isinstance(x, Tracer) and x.ndim >= 1) or isinstance(x, IndexedSequence)


def _at(x: Any, i: Any) -> Any:
    return x.item(i) if isinstance(x, IndexedSequence) else x[i]


def iter_enumerate(iterable: Any, start: Any = 0) -> Any:
    """`enumerate(iterable, start)`; an IndexedSequence over a traced array while tracing."""
    if not (is_tracing() and _indexable(iterable) and isinstance(start, int)):
        return builtins.enumerate(iterable, start)
    return IndexedSequence(len(iterable) if isinstance(iterable, IndexedSequence) else iterable.shape[0],
                           lambda i: (i + start, _at(iterable, i)), lambda: builtins.enumerate(iterable, start),
                           (iterable,))


def iter_zip(*iterables: Any, strict: bool = False) -> Any:
    """`zip(*iterables)`; an IndexedSequence when every iterable is a traced array while tracing
    (its length is the shortest's; `strict=True` with unequal lengths raises ValueError now, as
    zip would while iterating)."""
    if not (is_tracing() and iterables and all(_indexable(x) for x in iterables)):
        return builtins.zip(*iterables, strict=strict)
    lengths = [len(x) if isinstance(x, IndexedSequence) else x.shape[0] for x in iterables]
    if strict and len(set(lengths)) > 1:
        raise ValueError(f"zip() arguments have different lengths {lengths}")
    return IndexedSequence(min(lengths), lambda i: tuple(_at(x, i) for x in iterables),
                           lambda: builtins.zip(*iterables, strict=strict), iterables)
