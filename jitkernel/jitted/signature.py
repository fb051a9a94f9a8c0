"""How a call's arguments key the cache: the per-leaf specs, the static arguments' keys,
the `Signature` and how two signatures differ (the reasons a recompilation reports).
`SignatureMixin` gives `Jitted` the split of its arguments into static and dynamic ones.
"""
from __future__ import annotations

import inspect
import struct
from typing import Any

import numpy as np

from ..ir import check_dtype
from ..trace.context import check_array_subclass
from ..tree import TreeDef, static_key, tree_flatten
from ..trace.container_arguments import guard_containers


_ndarray = np.ndarray
_PY_SCALAR_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64),
                     complex: np.dtype(np.complex128)}


# NumPy scalar types whose type alone fixes the dtype (datetime and timedelta carry a unit, and
# str_, bytes_, void a length): a warm call with one is keyed by its type on the fast path.
NUMPY_SCALAR_TYPES = frozenset(t for t in np.sctypeDict.values()
                               if issubclass(t, (np.bool_, np.number)) and not issubclass(t, np.timedelta64))

NUMPY_SCALAR = "numpy scalar"  # the fourth entry of the spec of a NumPy scalar argument
# The fourth entry of the spec of an array in non-native byte order: computed natively, but its
# `.dtype` in the function reads the order (and results made from it keep it), so it traces apart.
BYTE_SWAPPED = "byte-swapped"


def _leaf_spec(leaf: Any, where: str) -> tuple:
    """The cache-key entry of one dynamic argument leaf."""
    if isinstance(leaf, (bool, int, float, complex)) and not isinstance(leaf, np.generic):
        t = bool if isinstance(leaf, bool) else int if isinstance(leaf, int) else float if isinstance(leaf, float) else complex
        return ("py", t)
    if isinstance(leaf, (np.ndarray, np.generic)):
        if type(leaf) is not _ndarray and isinstance(leaf, _ndarray):
            check_array_subclass(type(leaf), where)  # np.matrix, masked arrays: TypeError
        # Byte-swapped data (">f4" on a little-endian host) is the same dtype to NumPy's rules.
        dt = leaf.dtype if leaf.dtype.isnative else leaf.dtype.newbyteorder("=")
        if isinstance(leaf, np.generic):
            # A NumPy scalar is not a 0-d array to NumPy: it is immutable (`s += 1` rebinds) and
            # setitem stores it by value (np.float64(300.7) into int8 raises): traced as one.
            return ("array", check_dtype(dt, where), (), NUMPY_SCALAR)
        return ("array", check_dtype(dt, where), tuple(leaf.shape)) + (() if leaf.dtype.isnative else (BYTE_SWAPPED,))
    if getattr(type(leaf), "_jk_device_array", False):  # jk.DeviceArray: passed on without a copy
        return ("array", check_dtype(leaf.dtype, where), leaf.shape)
    if isinstance(leaf, (list, tuple)) or (hasattr(leaf, "__array__") or hasattr(leaf, "__array_interface__")):
        # (Lists and tuples are pytrees; one arrives here only inside an unregistered container.)
        raise TypeError(f"{where}: jitkernel cannot pass a {type(leaf).__name__} to a jitted function: pass an "
                        "array (np.asarray(...)), or mark the argument static (static_argnums / static_argnames)")
    raise TypeError(f"{where}: jitkernel cannot pass a value of type {type(leaf).__name__} to a jitted "
                    "function; pass arrays, scalars or pytrees of them, or mark the argument static")


def _leaf_array(leaf: Any, spec: tuple) -> np.ndarray:
    if spec[0] == "py":
        if spec[1] is int and not (-2**63 <= leaf < 2**63):
            # A Python int argument is traced as an int64 (NEP 50's default integer); NumPy
            # would take a larger one into a uint64 or object array, which this is not.
            raise OverflowError(f"Python integer {leaf} out of bounds for int64: a Python int argument of a "
                                "jitted function is passed as an int64; pass np.uint64(v) for values up to "
                                "2**64 - 1, or mark the argument static (static_argnames)")
        return np.asarray(leaf, dtype=_PY_SCALAR_DTYPES[spec[1]])
    if getattr(type(leaf), "_jk_device_array", False):
        return leaf  # the cuda backend uses its buffer; other backends convert it (np.asarray)
    return np.asarray(leaf, dtype=spec[1])  # a copy in native byte order only when it is not


def _value_bits(value: Any) -> str:
    """The bits that tell equal-looking static values apart, for diagnostics."""
    if isinstance(value, np.generic):
        return f"{value.dtype}:{value.tobytes().hex()}"
    if isinstance(value, float):
        return "0x" + struct.pack(">d", value).hex()
    if isinstance(value, complex):
        return f"({_value_bits(value.real)}, {_value_bits(value.imag)})"
    if isinstance(value, (tuple, frozenset)):
        return "(" + ", ".join(_value_bits(v) for v in value) + ")"
    return repr(value)


def _static_change(old: Any, new: Any) -> str:
    """`3 -> 4`; when the reprs agree, what differs (`nan -> nan (bits 0x7ff8... -> 0xfff8...)`)."""
    a, b = repr(old), repr(new)
    if a != b:
        return f"{a} -> {b}"
    if type(old) is not type(new):
        return f"{a} ({type(old).__name__}) -> {b} ({type(new).__name__})"
    return f"{a} -> {b} (bits {_value_bits(old)} -> {_value_bits(new)})"


class Signature:
    """How one call's arguments key the cache: tree structure, per-leaf (dtype, shape) or Python
    scalar type, and the static arguments' values (by `static_key`: type and bits, not `==`)."""

    __slots__ = ("key", "treedef", "specs", "statics", "static_keys", "names")

    def __init__(self, treedef: TreeDef, specs: tuple, statics: tuple, names: tuple) -> None:
        self.treedef, self.specs, self.statics, self.names = treedef, specs, statics, names
        self.static_keys = tuple((k, static_key(v)) for k, v in statics)
        self.key = (treedef, specs, self.static_keys)

    def describe(self) -> str:
        parts = []
        for name, spec in zip(self.names, self.specs):
            if spec[0] == "py":
                parts.append(f"{name}: {spec[1].__name__}")
            else:
                parts.append(f"{name}: {spec[1]}{list(spec[2])}")
        parts += [f"{k}={v!r}" for k, v in self.statics]
        return ", ".join(parts)


def _form(spec: tuple, other: tuple) -> str:
    """What an array spec's fourth entry says (against the other side's), for signature_diff."""
    if spec[3:] == (NUMPY_SCALAR,):
        return "a NumPy scalar"
    if spec[3:] == (BYTE_SWAPPED,):
        return "byte-swapped"
    return "a 0-d array" if other[3:] == (NUMPY_SCALAR,) else "native byte order"


def _describe_spec(spec: tuple) -> tuple[str, str]:
    if spec[0] == "py":
        return "python scalar", spec[1].__name__
    return "array", f"{spec[1]}{spec[2]}"


def signature_diff(old: Signature, new: Signature) -> list[str]:
    """Why `new` missed the cache, relative to `old`, in NumPy notation, one reason per argument:
    `x: shape (1000,) -> (2000,)`, `x: dtype float32 -> float64`, `n: static value 3 -> 4`."""
    if old.treedef != new.treedef or old.names != new.names:
        return [f"argument tree structure changed: {old.treedef} -> {new.treedef}"]
    reasons = []
    for name, a, b in zip(new.names, old.specs, new.specs):
        if a == b:
            continue
        if a[0] == b[0] == "array":
            if a[1] != b[1]:
                reasons.append(f"{name}: dtype {a[1]} -> {b[1]}")
            if a[2] != b[2]:
                reasons.append(f"{name}: shape {a[2]} -> {b[2]}")
            if a[3:] != b[3:]:
                reasons.append(f"{name}: {_form(a, b)} -> {_form(b, a)}")
        elif a[0] == b[0] == "py":
            reasons.append(f"{name}: Python scalar type {a[1].__name__} -> {b[1].__name__}")
        else:
            ka, va = _describe_spec(a)
            kb, vb = _describe_spec(b)
            reasons.append(f"{name}: {ka} {va} -> {kb} {vb}")
    old_static, new_static = dict(old.statics), dict(new.statics)
    old_keys, new_keys = dict(old.static_keys), dict(new.static_keys)
    for k in sorted(set(old_static) | set(new_static)):
        if k not in old_static or k not in new_static:
            reasons.append(f"{k}: static argument {'added' if k in new_static else 'removed'}")
        elif old_keys[k] != new_keys[k]:
            reasons.append(f"{k}: static value {_static_change(old_static[k], new_static[k])}")
    return reasons or ["signature changed"]


def size_changes(old: Signature, new: Signature) -> list[tuple[str, int, int, int]] | None:
    """(argument, axis, old size, new size) for every size that differs, when nothing else does
    (same tree, dtypes, ranks, Python scalar types and static values); None otherwise, and
    None when nothing differs."""
    if old.treedef != new.treedef or old.names != new.names or old.static_keys != new.static_keys:
        return None
    changes = []
    for name, a, b in zip(new.names, old.specs, new.specs):
        if a == b:
            continue
        if a[0] != "array" or b[0] != "array" or a[1] != b[1] or len(a[2]) != len(b[2]) or a[3:] != b[3:]:
            return None
        changes += [(name, d, x, y) for d, (x, y) in enumerate(zip(a[2], b[2])) if x != y]
    return changes or None


def size_only_change(old: Signature, new: Signature) -> list[tuple[str, int]] | None:
    """The (argument, axis) pairs whose sizes differ when nothing else does, or None. None too
    when a differing size is 0 or 1 on either side: a shape-generic entry never serves those
    (a size-1 dimension broadcasts, a size-0 one empties the computation)."""
    changes = size_changes(old, new)
    if changes is None or any(min(x, y) < 2 for _, _, x, y in changes):
        return None
    return [(name, d) for name, d, _, _ in changes]


def _with_sizes(sig: Signature, dims: set[tuple[str, int]], bump: int) -> Signature:
    """`sig` with the sizes of `dims` increased by `bump` (a probe signature, see Jitted._dynamic_base)."""
    specs = []
    for name, spec in zip(sig.names, sig.specs):
        if spec[0] == "array" and any(n == name for n, _ in dims):
            spec = (spec[0], spec[1], tuple(s + bump if (name, d) in dims else s for d, s in enumerate(spec[2])),
                    *spec[3:])
        specs.append(spec)
    return Signature(sig.treedef, tuple(specs), sig.statics, sig.names)


class SignatureMixin:
    """The arguments of one call: which are static, their names, the signature they key."""

    def _arg_name(self, i: int) -> str:
        return self._positional[i] if i < len(self._positional) else f"args[{i}]"

    def _signature(self, args: tuple, kwargs: dict) -> tuple[Signature, list[np.ndarray]]:
        dyn_args = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        statics = tuple((self._arg_name(i), args[i]) for i in sorted(self.static_argnums) if i < len(args))
        given = {k: v for k, v in kwargs.items() if k in self.static_argnames}
        for i, p in enumerate(self._positional):
            # A static parameter left at its default keys the cache by that default value.
            if p in self.static_argnames and i >= len(args) and p not in given:
                default = next(q.default for q in self._params if q.name == p)
                if default is not inspect.Parameter.empty:
                    given[p] = default
        statics += tuple(sorted(given.items()))
        for k, v in statics:
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"{self.__name__}: static argument {k} must be hashable, got "
                                f"{type(v).__name__}") from None
        leaves, treedef = tree_flatten((dyn_args, dyn_kwargs))
        names = self._leaf_names(dyn_args, dyn_kwargs)
        specs = tuple(_leaf_spec(leaf, f"{self.__name__} argument {n}") for leaf, n in zip(leaves, names))
        arrays = [_leaf_array(leaf, s) for leaf, s in zip(leaves, specs)]
        return Signature(treedef, specs, statics, tuple(names)), arrays

    def _leaf_names(self, dyn_args: tuple, dyn_kwargs: dict) -> list[str]:
        names: list[str] = []
        dyn_positions = [i for i in range(len(dyn_args) + len(self.static_argnums)) if i not in self.static_argnums]
        for i, a in zip(dyn_positions, dyn_args):
            _append_leaf_names(a, self._arg_name(i), names)
        for k in sorted(dyn_kwargs):
            _append_leaf_names(dyn_kwargs[k], k, names)
        return names

    def _dynamic_leaves(self, args: tuple, kwargs: dict) -> list:
        """The caller's own argument leaves, in the order of the program's inputs."""
        dyn = (tuple(a for i, a in enumerate(args) if i not in self.static_argnums),
               {k: v for k, v in kwargs.items() if k not in self.static_argnames})
        return tree_flatten(dyn)[0]

    def _read_only_containers(self, dyn_args: tuple, dyn_kwargs: dict) -> tuple[tuple, dict]:
        """The rebuilt argument pytrees with their dicts and lists read-only, each named as the
        user wrote it (a mutation would be lost: trace/container_arguments.py)."""
        dyn_positions = [i for i in range(len(dyn_args) + len(self.static_argnums)) if i not in self.static_argnums]
        args = tuple(guard_containers(a, self._arg_name(i), self.__name__) for i, a in zip(dyn_positions, dyn_args))
        kwargs = {k: guard_containers(v, k, self.__name__) for k, v in dyn_kwargs.items()}
        return args, kwargs

    def _int_arguments(self, args: tuple, kwargs: dict) -> tuple[set[int], set[str]] | None:
        """(positions, keyword names) of the top-level integer arguments (Python ints, NumPy
        integer scalars) that are not static; None when there are none."""
        def is_int(a: Any) -> bool:
            return isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))
        nums = {i for i, a in enumerate(args) if is_int(a) and i not in self.static_argnums}
        names = {k for k, a in kwargs.items() if is_int(a) and k not in self.static_argnames}
        return (nums, names) if nums or names else None


def _append_leaf_names(node: Any, path: str, names: list[str]) -> None:
    """The names of `node`'s leaves (`x[0]['k']`), in tree_flatten's order. A module function: a
    nested one calling itself would be a reference cycle left behind by every checked call."""
    if node is None:
        return
    if isinstance(node, (tuple, list)) and not hasattr(node, "_fields"):
        for i, c in enumerate(node):
            _append_leaf_names(c, f"{path}[{i}]", names)
    elif isinstance(node, dict):
        for k in sorted(node):
            _append_leaf_names(node[k], f"{path}[{k!r}]", names)
    else:
        names.append(path)
