"""Functions that write their arguments: the same array passed twice (`f(a, a)`), an
argument that is also read as a global or closure array (`f(G)`), each a variant traced
for that aliasing so that reads see the writes as in NumPy; and outputs given back the
byte order of the argument they come from.
"""
from __future__ import annotations

import types
from typing import Any, Callable

import numpy as np

from ..config import config
from ..forking import compiling
from ..pipeline import CheckedPathNeeded, Compiled, compile_program, same_array, shares_memory
from ..trace.views import layout_strides
from ..tree import tree_flatten, tree_unflatten
from .signature import Signature, _ndarray
from ..errors import UnsupportedOperationError


class CapturedNames:
    """The names a function's code reads from its globals or closure (nested functions and
    comprehensions included), to find the NumPy arrays it reads that way at each call: an
    argument it writes may be one of them (`def f(a): a += 1; return G.sum()` called as f(G)).
    The code is read on first use (a global may be bound after the function is decorated)."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn
        self._names: tuple[str, ...] | None = None
        self.cells: dict[str, Any] = {}
        self.globals: dict[str, Any] = {}
        if isinstance(fn, types.FunctionType):
            self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
            self.globals = fn.__globals__

    @property
    def names(self) -> tuple[str, ...]:
        if self._names is None:
            self._names = _global_names(self._fn) if isinstance(self._fn, types.FunctionType) else ()
        return self._names

    def arrays(self) -> list[tuple[str, np.ndarray]]:
        """(name, array) of each NumPy array those names hold now."""
        found = []
        for name, cell in self.cells.items():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, np.ndarray):
                found.append((name, value))
        for name in self.names:
            value = self.globals.get(name)
            if isinstance(value, np.ndarray):
                found.append((name, value))
        return found


def _global_names(fn: types.FunctionType) -> tuple[str, ...]:
    """The global names fn's code (and the code nested in it) loads."""
    import dis
    names: set[str] = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"))
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return tuple(sorted(names))


def _bound_names(fn: Any, aliases: tuple) -> tuple[Any, Callable[[Callable[[int], Any]], None]]:
    """`fn` (a plain function) whose global or closure names in `aliases` ((name, leaf index))
    will read the Tracer of that argument leaf instead of the caller's array, in a namespace of
    its own (a copy of its globals, new cells: the module's globals are never changed), and the
    function that binds them once the Tracers exist."""
    closure_names = fn.__code__.co_freevars
    names = dict(aliases)
    namespace = dict(fn.__globals__)
    cells = {name: types.CellType() for name in names if name in closure_names}
    closure = tuple(cells.get(name, cell) for name, cell in zip(closure_names, fn.__closure__ or ()))
    new = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, closure or None)
    new.__kwdefaults__ = fn.__kwdefaults__

    def bind(tracer_of_leaf: Callable[[int], Any]) -> None:
        for name, i in names.items():
            if name in cells:
                cells[name].cell_contents = tracer_of_leaf(i)
            else:
                namespace[name] = tracer_of_leaf(i)
    return new, bind


def _guarded_by_globals(entry: Callable[[tuple], Any], captured: CapturedNames, written: tuple) -> Callable[[tuple], Any]:
    """A fast entry of a function that writes arguments and reads arrays from its globals or
    closure: a call where a written argument shares memory with one of them takes the checked
    path (Jitted._global_aliases)."""
    def guarded(args: tuple) -> Any:
        for _, array in captured.arrays():
            for i in written:
                if isinstance(args[i], np.ndarray) and np.may_share_memory(array, args[i]):
                    raise CheckedPathNeeded
        return entry(args)
    return guarded


def _restore_byteorder(result: Any, compiled: Compiled, leaves: list) -> Any:
    """Give outputs that are an input, a copy or a view of one (program.byteorder_sources) that
    input's byte order, as NumPy does: kernels compute in native order, so a '>i2' argument
    returned as-is would otherwise come back '<i2'. An output made in a byte order the function
    asked for (np.zeros(n, '>f8')) gets that order."""
    sources = compiled.program.byteorder_sources
    swapped = {i: leaf.dtype.byteorder for i, leaf in enumerate(leaves)
               if isinstance(leaf, _ndarray) and not leaf.dtype.isnative}
    if not swapped and not any(isinstance(i, str) for _, i in sources):
        return result
    outs, out_tree = tree_flatten(result, namedtuples=True)
    for k, i in sources:
        order = i if isinstance(i, str) else swapped.get(i)
        # (k past the outputs: a hidden output, the written argument's final value)
        if order and k < len(outs) and isinstance(outs[k], _ndarray) and outs[k].dtype.itemsize > 1:
            # the byte order on the output's own dtype (`.real` of '>c16' is '>f8'); a returned
            # view of the argument has it already (copy=False keeps it that view)
            outs[k] = outs[k].astype(outs[k].dtype.newbyteorder(order), copy=False)
    return tree_unflatten(out_tree, outs)


class WriteBackMixin:
    """Calls whose written arguments alias each other or a global: their variants."""

    def _aliased_variant(self, pattern: tuple, leaves: list, sig: Signature, args: tuple, kwargs: dict,
                         **trace_options: Any) -> Compiled:
        """The variant of `sig` traced with `trace_options` (an aliasing pattern: `same` or
        `globals_as`), cached per pattern and argument layout (as _layout_variant); compiled under
        the fork gate, then the function's lock, as every compile."""
        key = (sig.key, *pattern, tuple(layout_strides(leaf) for leaf in leaves))
        compiled = self._aliased.get(key)
        if compiled is None:
            with compiling(), self._lock:
                compiled = self._aliased.get(key)
                if compiled is None:
                    program, out_tree = self._trace(sig, args, kwargs, **trace_options)
                    compiled = compile_program(program, out_tree, self._backend_name(), name=self.__name__,
                                               fastmath=self.fastmath, disk_cache=self.disk_cache and config.disk_cache)
                    compiled.function_id = self.function_id
                    self._aliased[key] = compiled
        return compiled

    def _call_aliased(self, sig: Signature, args: tuple, kwargs: dict, arrays: list, leaves: list,
                      same: tuple[int, ...]) -> Any:
        """Run a function that writes its arguments on arguments of which some are the exact same
        array (`f(a, a)`): traced again with one Tracer (one Memory) per distinct array, so a
        write through one name is seen through the other, as in NumPy. Cached per pattern; not
        on the fast path."""
        compiled = self._aliased_variant((same,), leaves, sig, args, kwargs, same=same)
        distinct = sorted(set(same))
        result = compiled([arrays[i] for i in distinct], [leaves[i] for i in distinct])
        if getattr(compiled.program, "byteorder_sources", None):
            result = _restore_byteorder(result, compiled, [leaves[i] for i in distinct])
        return result

    def _global_aliases(self, compiled: Compiled, leaves: list) -> tuple:
        """(name, leaf index) of each array the function reads as a global or closure variable
        that is an argument it writes (the same array), so that those reads see the writes as in
        NumPy. An array that only partly overlaps a written argument is refused."""
        captured = self._captured.arrays()
        if not captured:
            return ()
        aliases = []
        for i, _ in compiled.program.written_args:
            leaf = leaves[i]
            if not isinstance(leaf, np.ndarray):
                continue
            for name, array in captured:
                if array is leaf or same_array(array, leaf):
                    aliases.append((name, i))
                elif shares_memory(array, leaf):
                    raise UnsupportedOperationError(
                        f"{self.__name__}: argument {self._leaf_name(compiled, i)!r}, which the function writes, "
                        f"shares memory with {name!r}, an array the function reads as a global or closure "
                        f"variable, without being the same array: its reads of {name!r} would not see the writes "
                        f"as in NumPy. Pass {name!r} as an argument too (or a copy of one of them).")
        return tuple(sorted(set(aliases)))

    def _leaf_name(self, compiled: Compiled, i: int) -> str:
        names = dict(zip((k for k, _ in compiled.program.written_args), compiled.program.written_names))
        return names.get(i, f"args[{i}]")

    def _call_with_globals(self, sig: Signature, args: tuple, kwargs: dict, arrays: list, leaves: list,
                           aliases: tuple) -> Any:
        """Run a function that writes an argument which it also reads as a global or closure
        array (`def f(a): a += 1; return G.sum()` called as `f(G)`): traced with that name bound
        to the argument's Tracer, so its reads see the writes. Cached per pattern and layout;
        not on the fast path."""
        compiled = self._aliased_variant(("globals", aliases), leaves, sig, args, kwargs, globals_as=aliases)
        result = compiled(arrays, leaves)
        if getattr(compiled.program, "byteorder_sources", None):
            result = _restore_byteorder(result, compiled, leaves)
        return result
