"""The Dask graph of a partition plan (partition.py): one task per block of every segment, the
tree combines through `dask.array.reduction`, and lazy Dask arrays for the program's outputs.
Nothing runs here; the graph runs on whatever scheduler Dask uses."""
from __future__ import annotations

import functools
import itertools
import operator
from typing import Any

import numpy as np

from .partition import (ArgCombineStep, CombineStep, DaskStep, Plan, SegmentStep, Source, apply_dask_step,
                        without_empty_chunks)
from .. import events
from .profile import combine_token, recorded_combine, recorded_run_block, register_graph
from .worker import arg_combine, combine, identity_chunk, run_block


def _source(step: Source, leaves: list[Any], values: dict, da: Any) -> Any:
    if step.kind == "alias":
        return values[step.payload]
    if step.kind == "arg":
        value = leaves[step.payload]
        if type(value).__module__.startswith("dask"):
            chunks = tuple(without_empty_chunks(tuple(c)) for c in value.chunks)  # the plan's chunks
            return value if chunks == tuple(value.chunks) else value.rechunk(chunks)
        value = np.asarray(value, dtype=step.var.aval.dtype)
        return da.from_array(value, chunks=value.shape, name=False)
    if step.kind == "const":
        value = np.asarray(step.payload)
        return da.from_array(value, chunks=value.shape, name=False)
    p = step.payload  # iota: lazily, one block (Dask's rechunk splits it where it meets chunks)
    shape, dim = tuple(p["shape"]), p["dimension"]
    line = da.arange(shape[dim], dtype=p["dtype"], chunks=max(shape[dim], 1))
    line = line.reshape(tuple(n if d == dim else 1 for d, n in enumerate(shape)))
    return da.broadcast_to(line, shape, chunks=tuple((n,) for n in shape))


def _segment(step: SegmentStep, values: dict, da: Any) -> None:
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
    bp = step.bp
    ins = []
    for v, target in zip(step.inputs, step.in_chunks):
        a = values[v]
        ins.append(a if tuple(a.chunks) == tuple(target) else a.rechunk(target))
    token = tokenize(bp.token, *[a.name for a in ins])
    seg = f"jk-{bp.name}-{token}"
    prog_key = f"jk-program-{bp.token}"
    grid_letters = [letter for letter, _ in step.grid]
    profiled = bool(events.SUBSCRIBERS)  # profiling off: the graph is exactly run_block's
    dsk: dict = {prog_key: bp}
    # Only the grid points some output block reads: letters an output does not carry are at block
    # 0 (independent inputs a, b give len(a) + len(b) tasks, not their product).
    outs: list[dict] = []
    for k, (v, letters, chunks) in enumerate(step.outputs):
        out: dict = {}
        for bidx in itertools.product(*[range(len(c)) for c in chunks]):
            pos = dict(zip(letters, bidx))
            idx = tuple(pos.get(letter, 0) for letter in grid_letters)
            out[(f"jk-out{k}-{token}", *bidx)] = (operator.getitem, (seg, *idx), k)
            if (seg, *idx) not in dsk:
                pos = dict(zip(grid_letters, idx))
                keys = [(a.name, *[pos.get(letter, 0) for letter in letters]) for a, letters in zip(ins, bp.in_letters)]
                dsk[(seg, *idx)] = (run_block, prog_key, *keys) if not profiled else \
                    (recorded_run_block, f"{bp.name}[{','.join(map(str, idx))}]", prog_key, *keys)
        outs.append(out)
    if profiled:  # transfers of these keys (and of the inputs read) are this function's
        register_graph(bp.token, [seg, *[f"jk-out{k}-{token}" for k in range(len(outs))],
                                              *[a.name for a in ins]])
    graph = HighLevelGraph.from_collections(seg, dsk, dependencies=ins)
    for k, ((v, letters, chunks), out) in enumerate(zip(step.outputs, outs)):
        name = f"jk-out{k}-{token}"
        layers = dict(graph.layers)
        layers[name] = out
        deps = dict(graph.dependencies)
        deps[name] = {seg}
        values[v] = da.Array(HighLevelGraph(layers, deps), name, chunks, dtype=v.aval.dtype,
                             meta=np.empty((0,) * v.aval.ndim, v.aval.dtype))


def _combine(step: CombineStep, values: dict, da: Any, backend: str) -> None:
    partials = values[step.partial]
    fn = functools.partial(combine, prim=step.prim, backend=backend)
    if events.SUBSCRIBERS:  # profiling: each combine level recorded too (profile.py)
        fn = functools.partial(recorded_combine, combine_token(step), prim=step.prim, backend=backend)
    acc, dtype = step.partial.aval.dtype, step.out.aval.dtype  # NumPy's accumulator, the result's dtype
    result = da.reduction(partials, identity_chunk, fn, combine=fn, axis=step.axes, keepdims=False,
                          dtype=acc, concatenate=True, meta=np.empty((0,) * step.out.aval.ndim, acc),
                          name=f"jk-{step.prim}")
    # rounded once, after the whole combine, as NumPy's float16 loops round their float32 sum
    values[step.out] = result if acc == dtype else result.astype(dtype)


def _arg_combine(step: ArgCombineStep, values: dict, da: Any) -> None:
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
    index, value = values[step.index], values[step.value]
    name = f"jk-{step.prim}-{tokenize(index.name, value.name)}"
    fn = functools.partial(arg_combine, offsets=step.offsets, axis=step.axis, prim=step.prim)
    n = len(step.offsets)
    dsk: dict = {}
    for bidx in itertools.product(*[range(len(c)) for c in step.chunks]):
        keys = [tuple(bidx[:step.axis]) + (j,) + tuple(bidx[step.axis:]) for j in range(n)]
        dsk[(name, *bidx)] = (fn, [(index.name, *k) for k in keys], [(value.name, *k) for k in keys])
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[index, value])
    dtype = step.out.aval.dtype
    values[step.out] = da.Array(graph, name, step.chunks, dtype=dtype, meta=np.empty((0,) * step.out.aval.ndim, dtype))


def build(plan: Plan, leaves: list[Any], backend: str) -> list[Any]:
    """Dask arrays of the program's outputs, for the argument leaves `leaves` (Dask arrays,
    NumPy arrays, scalars) in the program's input order."""
    import dask.array as da
    values: dict = {}
    for step in plan.steps:
        if isinstance(step, Source):
            values[step.var] = _source(step, leaves, values, da)
        elif isinstance(step, SegmentStep):
            _segment(step, values, da)
        elif isinstance(step, ArgCombineStep):
            _arg_combine(step, values, da)
        elif isinstance(step, DaskStep):
            values[step.eqn.outputs[0]] = apply_dask_step(step.eqn, [values[v] for v in step.eqn.inputs], da)
        else:
            _combine(step, values, da, backend)
    return [values[v] for v in plan.program.outvars]
