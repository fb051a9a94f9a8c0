"""Dict and list arguments of a jitted function are read-only containers while it is traced.

The function receives its pytree arguments rebuilt around Tracers, and a compiled call never
runs the Python code again: a mutation of the container itself (`d["y"] = ...`, `lst[0] = ...`,
`lst.append(...)`, `del d[k]`, `d.update(...)`, `lst.pop()`, ...) could only ever change the
trace's private copy, so the caller's container would silently stay as it was, on the first
call and on every cached one. Rather than lose it, the trace raises ContainerMutationError
naming the function, the argument and the user's line (docs/transformations.md, "Pytree
arguments"). Arrays inside containers are unaffected: `d["x"][0] = 1` and `d["x"] += 1` write
the caller's array as any argument write does, and building a new container (`{**d, "y": y}`, `lst + [v]`,
`dict(d)`, `d.copy()`) is the way to return a changed one.
"""
from __future__ import annotations

from typing import Any, NoReturn

from ..errors import ContainerMutationError
from .frames import user_frame_location


def _refuse(container: Any, operation: str) -> NoReturn:
    kind = "dict" if isinstance(container, dict) else "list"
    raise ContainerMutationError(
        f"in jitted function {container._jk_function!r} at {user_frame_location()}: `{operation}` mutates the "
        f"{kind} argument `{container._jk_name}`. jitkernel compiles the function once per signature and "
        f"never runs its Python code again, so the caller's {kind} would not change (on this call or any "
        f"later one). Return the new value instead ({_instead[kind]}), or change a copy made inside the "
        f"function ({kind}({container._jk_name})).")


_instead = {"dict": "a new dict: `return {**d, 'y': y}`", "list": "a new list: `return lst + [v]`"}


def _refusing(operation: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self, operation.format(name=self._jk_name))
    method.__name__ = operation
    return method


def _storing(operation: str, base: type) -> Any:
    """`container[key] = value`: refused unless `value` is the item already there, which is what
    Python's `d["x"] += 1` stores back after an array's in-place `+=` (the container unchanged)."""
    refuse = _refusing(operation)

    def __setitem__(self: Any, key: Any, value: Any) -> None:
        try:
            if not isinstance(key, slice) and base.__getitem__(self, key) is value:
                return
        except (KeyError, IndexError, TypeError):
            pass
        refuse(self, key, value)
    return __setitem__


class ArgumentDict(dict):
    """A dict argument as the traced function sees it: reads as a dict, refuses mutation."""

    _jk_name = "argument"
    _jk_function = "?"
    __setitem__ = _storing("{name}[...] = ...", dict)
    __delitem__ = _refusing("del {name}[...]")
    __ior__ = _refusing("{name} |= ...")
    update = _refusing("{name}.update(...)")
    pop = _refusing("{name}.pop(...)")
    popitem = _refusing("{name}.popitem()")
    clear = _refusing("{name}.clear()")
    setdefault = _refusing("{name}.setdefault(...)")

    def __copy__(self) -> dict:
        return dict(self)  # a copy is the function's own, freely changed

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (dict(self),))


class ArgumentList(list):
    """A list argument as the traced function sees it: reads as a list, refuses mutation."""

    _jk_name = "argument"
    _jk_function = "?"
    __setitem__ = _storing("{name}[...] = ...", list)
    __delitem__ = _refusing("del {name}[...]")
    __iadd__ = _refusing("{name} += ...")
    __imul__ = _refusing("{name} *= ...")
    append = _refusing("{name}.append(...)")
    extend = _refusing("{name}.extend(...)")
    insert = _refusing("{name}.insert(...)")
    pop = _refusing("{name}.pop(...)")
    remove = _refusing("{name}.remove(...)")
    clear = _refusing("{name}.clear()")
    sort = _refusing("{name}.sort(...)")
    reverse = _refusing("{name}.reverse()")

    def __copy__(self) -> list:
        return list(self)

    def __getattr__(self, name: str) -> Any:
        # Only for names a list lacks (`x.sum`, `x.shape`): the error names the user's type, list.
        raise AttributeError(f"'list' object has no attribute {name!r}", name=name, obj=self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self),))


def guard_containers(value: Any, name: str, function: str) -> Any:
    """`value` (a rebuilt argument pytree) with every plain dict and list in it, nested ones
    included, replaced by a read-only ArgumentDict / ArgumentList that names its path."""
    if type(value) is dict:
        guarded = ArgumentDict({k: guard_containers(v, f"{name}[{k!r}]", function) for k, v in value.items()})
    elif type(value) is list:
        guarded = ArgumentList(guard_containers(v, f"{name}[{i}]", function) for i, v in enumerate(value))
    elif type(value) is tuple:
        return tuple(guard_containers(v, f"{name}[{i}]", function) for i, v in enumerate(value))
    else:
        return value
    guarded._jk_name, guarded._jk_function = name, function
    return guarded
