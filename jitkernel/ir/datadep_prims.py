"""`datadep_call`: one library step that runs a NumPy function on the exact prefixes of
data-dependent values (docs/architecture.md, "Data-dependent shapes").

A data-dependent value (`x[mask]`, `np.nonzero(m)`, `np.unique(x)`, `data[ptr[i]:ptr[i+1]]`)
lives in the program as a *padded* buffer of static shape `(N, *rest)` (N the largest length it
can have) plus a 0-d int64 *count*: only `buf[:count]` is the value. Shapes in the program stay
static, so it is traced and compiled once for every count: the count is a run-time value.

`datadep_call(*counts, *operands; fn, kw, layout, outs, where)`:
- `counts`: `ncounts` 0-d integers; `layout[k]` says which count trims operand k (-1: none);
- the step runs `FUNCTIONS[fn](*trimmed, **dict(kw))` (NumPy itself, on the exact prefixes);
- `outs` describes the results: `("static", shape, dtype)` a value of static shape,
  `("pad", shape, dtype)` a result whose leading length is at most `shape[0]` (zero padded),
  `("len", (), "int64")` the actual leading length of the "pad" result just before it.
- `where`: the user's line and what the step computes, for `as_text("kernels")` / explain;
  `split`: whether the step produces a data-dependent length (a selection, nonzero, unique, a
  window) rather than using one.

Both backends run this impl (a library step on the CPU), so values, dtypes, NaN placement, tie
order and NumPy's run-time errors (an empty max, an out-of-bounds index, a count mismatch) are
NumPy's by construction.

>>> import numpy as np
>>> from jitkernel.ir import primitives
>>> p = primitives.get("datadep_call")
>>> buf, n = p.impl(np.array([1.0, -2.0, 3.0]), np.array([True, False, True]), ncounts=0, fn="mask_select",
...                 kw=(), layout=(-1, -1), outs=(("pad", (3,), "float64"), ("len", (), "int64")), where="")
>>> buf, n
(array([1., 3., 0.]), array(2))
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .control_flow import sub_programs
from .host_lengths import HostLengthChanged
from .primitives import Primitive, register
from .types import AType

# name -> function of the trimmed operands returning one array per non-"len" output.
FUNCTIONS: dict[str, Callable[..., Any]] = {}


def datadep_function(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `fn` under `name` for `datadep_call` (a decorator)."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        FUNCTIONS[name] = fn
        return fn
    return deco


def _rule(in_avals: list[AType], *, ncounts: int, fn: str, kw: tuple, layout: tuple, outs: tuple,
          where: str, split: bool = False, unread_padding: tuple = ()) -> list[AType]:
    if fn not in FUNCTIONS:
        raise TypeError(f"datadep_call: unknown function {fn!r}")
    for a in in_avals[:ncounts]:
        if a.shape != () or a.dtype.kind not in "iu":
            raise TypeError(f"datadep_call: a count is a 0-d integer, not {a}")
    if len(layout) != len(in_avals) - ncounts:
        raise TypeError("datadep_call: one layout entry per operand")
    return [AType(tuple(shape), np.dtype(dtype)) for _, shape, dtype in outs]


def _impl(*arrays: np.ndarray, ncounts: int, fn: str, kw: tuple, layout: tuple, outs: tuple,
          where: str, split: bool = False, unread_padding: tuple = ()) -> list[np.ndarray]:
    """The function on the exact prefixes; each "pad" output padded again to its full length,
    with zeros, or left as it was allocated where no reader reads past the count
    (`unread_padding`: positions among `outs`, set by passes/count_bounds.py; a fresh zeroed
    buffer per call of a selection in a loop was a pass over the whole buffer per trip)."""
    counts = [int(c) for c in arrays[:ncounts]]
    operands = [a if k < 0 else a[:counts[k]] for a, k in zip(arrays[ncounts:], layout)]
    result = FUNCTIONS[fn](*operands, **dict(kw))
    results = iter(result if isinstance(result, tuple) else (result,))
    produced: list[np.ndarray] = []
    last_length = 0
    for position, (kind, shape, dtype) in enumerate(outs):
        if kind == "len":
            produced.append(np.asarray(last_length, np.int64))
            continue
        value = np.asarray(next(results))
        if value.dtype != np.dtype(dtype):
            raise TypeError(f"internal error: datadep_call {fn} returned {value.dtype}, expected {dtype}; "
                            "please report this")
        if kind == "static":
            if value.shape != tuple(shape):
                raise TypeError(f"internal error: datadep_call {fn} returned shape {value.shape}, "
                                f"expected {tuple(shape)}; please report this")
            # Never a view of an input; an array that owns its memory and is no input (a
            # setitem's fresh copy) is returned as it is: a second copy of it is a pass over the
            # whole target per step.
            owned = value.base is None and value.flags.writeable and not any(value is a for a in arrays)
            produced.append(value if owned else np.array(value, copy=True))
            continue
        if value.shape[1:] != tuple(shape[1:]) or value.shape[0] > shape[0]:
            raise TypeError(f"internal error: datadep_call {fn} returned shape {value.shape}, at most "
                            f"{tuple(shape)}; please report this")
        padded = (np.empty if position in unread_padding else np.zeros)(shape, dtype)
        padded[:value.shape[0]] = value
        last_length = value.shape[0]
        produced.append(padded)
    return produced


# A step may raise NumPy's errors on the data (an empty max, an index out of bounds): kept
# alive when unread, and never run at compile time by fold_constants.
register(Primitive("datadep_call", "library", _rule, _impl, unread="step"))
# The same step for functions that never raise (a selection, nonzero, a window, sort, sum):
# dead-code elimination drops it when nothing reads it (`x[m].sum()` reduces x densely, so the
# selection step is not needed; numpy/_datadep.py).
register(Primitive("datadep_pure", "library", _rule, _impl))
DATADEP_PRIMITIVES = frozenset({"datadep_call", "datadep_pure"})
PURE_FUNCTIONS = frozenset({"mask_select", "nonzero", "window"})
PURE_NUMPY_FUNCTIONS = frozenset({"sort", "argsort", "unique", "argwhere", "cumsum", "cumprod", "ravel",
                                  "flatnonzero", "sum", "prod", "any", "all", "mean", "count_nonzero",
                                  "intersect1d", "union1d", "setdiff1d", "setxor1d", "isin", "unique_values",
                                  "unique_counts", "unique_inverse", "unique_all", "trim_zeros"})


# ----------------------------------------------------------------------------- the functions


@datadep_function("mask_select")
def _mask_select(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return x[mask]


@datadep_function("nonzero")
def _nonzero(x: np.ndarray) -> tuple:
    return tuple(np.nonzero(x))


@datadep_function("window")
def _window(x: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    return x[int(start):int(stop)]


@datadep_function("call")
def _call(*operands: np.ndarray, name: str, kwargs: tuple = (), module: str = "numpy") -> Any:
    """`numpy.<name>(*operands, **kwargs)`; tuple results are one output per item."""
    mod = np if module == "numpy" else getattr(np, module)
    out = getattr(mod, name)(*operands, **dict(kwargs))
    return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)


@datadep_function("repeat_exact")
def _repeat_exact(x: np.ndarray, repeats: np.ndarray, *, axis: int | None, length: int, site: int,
                  where: str) -> np.ndarray:
    """numpy.repeat whose result length (along `axis`) the program was compiled for: NumPy's
    own errors first, then HostLengthChanged when the length differs (ir/host_lengths.py)."""
    out = np.repeat(x, repeats, axis)
    actual = out.shape[0 if axis is None or x.ndim == 0 else axis]
    if actual != length:
        raise HostLengthChanged(site, actual, length, where)
    return out


@datadep_function("getitem")
def _getitem(x: np.ndarray, *index_arrays: np.ndarray, index: tuple) -> np.ndarray:
    return np.ascontiguousarray(x[_rebuild(index, index_arrays)])


@datadep_function("setitem")
def _setitem(x: np.ndarray, value: np.ndarray, *index_arrays: np.ndarray, index: tuple) -> np.ndarray:
    out = np.array(x, copy=True)
    out[_rebuild(index, index_arrays)] = value
    return out


@datadep_function("setitem_selected")
def _setitem_selected(x: np.ndarray, *operands: np.ndarray, index: tuple, parts: tuple) -> np.ndarray:
    """`setitem` whose value and index arrays are given one per entry of `parts`: "plain" (the
    array itself) or ("sel", rank) (two operands `a, m`: the selection `a[m]`, computed in the
    order of the ranks, before the assignment; passes/selected_scatters.py)."""
    slots: list = []
    selections = []
    it = iter(operands)
    for part in parts:
        if part == "plain":
            slots.append(next(it))
        else:
            a, m = next(it), next(it)
            selections.append((part[1], len(slots), a, m))
            slots.append(None)
    done: dict[int, np.ndarray] = {}
    for rank, k, a, m in sorted(selections, key=lambda s: s[0]):
        if rank not in done:
            done[rank] = a[m]
        slots[k] = done[rank]
    return _setitem(x, slots[0], *slots[1:], index=index)


def _rebuild(index: tuple, arrays: tuple) -> tuple:
    """An index from its hashable form: ("array", k) is the k-th array, ("slice", a, b, c) a
    slice, ("int", i) an int, ("none",) a new axis, ("ellipsis",)."""
    out = []
    for entry in index:
        kind = entry[0]
        if kind == "array":
            out.append(arrays[entry[1]])
        elif kind == "slice":
            out.append(slice(*entry[1:]))
        elif kind == "int":
            out.append(entry[1])
        elif kind == "none":
            out.append(None)
        else:
            out.append(Ellipsis)
    return tuple(out)


def describe_split(params: dict, short: bool = False) -> str:
    """How `as_text("kernels")`, the fusion record and `%jit_explain` show a `datadep_call`
    step. A *split* produces a data-dependent length (the rest of the program runs with it as a
    run-time value); other steps run NumPy on exact prefixes of such values. `short`: the file's
    base name and no source text (the fusion plot)."""
    where = params["where"]
    if short:
        what, _, location = where.partition(" at ")
        path, _, rest = location.partition(":")
        where = f"{what} at {path.rsplit('/', 1)[-1]}:{rest.split(':', 1)[0]}"
    pads = [int(shape[0]) for kind, shape, _ in params["outs"] if kind == "pad"]
    ncounts = params["ncounts"]
    trimmed = f" on {ncounts} run-time length{'s' if ncounts > 1 else ''}" if ncounts else ""
    if params.get("split"):
        if short:
            return f"split: {where}, length <= {max(pads)}"
        return (f"[split: {where}: data-dependent length <= {max(pads)}, known at run time"
                f"{';' + trimmed if trimmed else ''}; fn={params['fn']}]")
    if short:
        return ""
    return f"[exact prefix: {where}{trimmed}; fn={params['fn']}]"


def split_points(program: Any) -> list[str]:
    """One line per `datadep_call` step of `program` and its sub-programs (loop bodies,
    branches): where a data-dependent length becomes known, for `%jit_explain`."""
    found: list[str] = []
    work = [program]
    while work:
        prog = work.pop()
        for eqn in prog.eqns:
            if eqn.prim in DATADEP_PRIMITIVES and eqn.params.get("split"):
                found.append(describe_split(eqn.params))
            work.extend(sub_programs(eqn.params))
    return found
