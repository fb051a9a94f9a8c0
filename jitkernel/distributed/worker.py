"""What runs inside a Dask task: one block program, specialised to the block shapes it meets and
compiled in this process, edge blocks on the inner blocks' shape-generic code (`_cached`).

A `BlockProgram` is a piece of the traced Program (one fused segment, see partition.py) whose
array axes carry *letters* (Dask's blockwise index names). Its equations are written at the
full array's shapes; `specialize` rebuilds them at one block's shapes: every letter's block size
comes from the input blocks (a letter no input carries is whole), the shape params of
`broadcast_in_dim`, `reshape` and `slice` become the output block's shape, and every equation's
shape rule is run again (a mismatch is an internal error, never a wrong answer). The block
program is compiled with `pipeline.compile_program`, so the persistent compile cache
(`JITKERNEL_CACHE_DIR`) serves other processes and later sessions: a worker process of
`dask.distributed` compiles each block shape once (or loads it from that cache), and tasks never
trace the user's function again.

A BlockProgram pickles (Vars, Eqns, dtypes and tuples), which is how it reaches worker processes:
it is one key of the Dask graph, shipped once per worker, that every block task names.
"""
from __future__ import annotations

import atexit
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import events
from ..backends import SHAPE_GENERIC, size_probe
from ..config import config
from ..errors import CompileError, UnsupportedOperationError
from ..ir import AType, Program
from ..ir.control_flow import CONTROL_FLOW_PRIMITIVES
from ..ir.program import Eqn, Var
from ..ir.primitives import infer_avals
from ..pipeline import compile_program, reuse_program
from ..tree import tree_flatten
from .block_shapes import SHAPE_PARAMS, PartitionInternalError, specialize_params
from .process_label import where

# The reduction that finds an arg reduction's extreme value, and NumPy's arg reduction of it.
_EXTREME = {"argmax": "reduce_max", "argmin": "reduce_min"}
_NUMPY_ARG = {"argmax": np.argmax, "argmin": np.argmin}


@dataclass(eq=False)
class BlockProgram:
    """One fused segment of a traced program, run once per block (see module docstring).

    entries: ("eqn", eqn, out_letters) | ("partial", eqn, partial_var, letters, reduced): a
    partial is the reduction (or product) of one block, reshaped so that the reduced
    (contracted) axes, positions `reduced` of `letters`, are kept as size 1; combined later.
    """

    name: str
    token: str
    backend: str
    fastmath: bool
    invars: list[Var]
    in_letters: list[tuple[int, ...]]
    constvars: list[Var]
    consts: list[np.ndarray]
    entries: list[tuple]
    outvars: list[Var]
    out_letters: list[tuple[int, ...]]
    letter_size: dict[int, int] = field(default_factory=dict)  # full length of every letter
    disk_cache: bool = True  # the jitted function's disk_cache flag (and jk.config's, where it runs)
    sub_letters: dict[Var, tuple[int, ...]] = field(default_factory=dict)  # blockwise control flow's sub-programs

    def block_sizes(self, in_shapes: list[tuple[int, ...]]) -> dict[int, int]:
        sizes = dict(self.letter_size)
        for letters, shape in zip(self.in_letters, in_shapes):
            for letter, n in zip(letters, shape):
                sizes[letter] = n
        return sizes


def _shape(letters: tuple[int, ...], sizes: dict[int, int], ones: tuple[int, ...] = ()) -> tuple[int, ...]:
    return tuple(1 if d in ones else sizes[letter] for d, letter in enumerate(letters))


def specialize(bp: BlockProgram, in_shapes: list[tuple[int, ...]]) -> Program:
    """`bp` rewritten at the block shapes `in_shapes` (one per input)."""
    sizes = bp.block_sizes(in_shapes)
    new: dict[Var, Var] = {}
    invars = []
    for v, shape in zip(bp.invars, in_shapes):
        new[v] = Var(AType(shape, v.aval.dtype))
        invars.append(new[v])
    for v in bp.constvars:
        new[v] = Var(v.aval)
    eqns: list[Eqn] = []

    def bind(prim: str, inputs: list[Var], params: dict, expected: list[tuple[int, ...]] | None) -> list[Var]:
        if prim in SHAPE_PARAMS and expected is not None:
            params = dict(params, **{SHAPE_PARAMS[prim]: expected[0]})
        if prim in CONTROL_FLOW_PRIMITIVES:  # sub-programs at the block shapes too
            params = specialize_params(prim, params, bp.sub_letters, sizes)
        avals = infer_avals(prim, [v.aval for v in inputs], params)
        if expected is not None and [a.shape for a in avals] != [tuple(s) for s in expected]:
            raise PartitionInternalError(
                f"{bp.name}: block program of {prim} gives shapes {[a.shape for a in avals]}, the partition "
                f"expects {expected} (please report this)")
        outs = [Var(a) for a in avals]
        eqns.append(Eqn(prim, inputs, outs, params))
        return outs

    for entry in bp.entries:
        kind, eqn = entry[0], entry[1]
        inputs = [new[v] for v in eqn.inputs]
        if kind == "eqn":
            expected = [_shape(letters, sizes) for letters in entry[2]]
            for o, n in zip(eqn.outputs, bind(eqn.prim, inputs, eqn.params, expected)):
                new[o] = n
        elif kind == "partial_arg":  # argmax/argmin: the block's index and extreme value, kept as size 1
            index, value, letters, reduced = entry[2], entry[3], entry[4], entry[5]
            keep = [_shape(letters, sizes, reduced)]
            (local,) = bind(eqn.prim, inputs, eqn.params, None)
            (new[index],) = bind("reshape", [local], {"new_shape": ()}, keep)
            (best,) = bind(_EXTREME[eqn.prim], inputs, {"axes": reduced}, None)
            (new[value],) = bind("reshape", [best], {"new_shape": ()}, keep)
        else:  # a partial: this block's reduction / product, the reduced axes kept as size 1
            partial_var, letters, reduced = entry[2], entry[3], entry[4]
            acc = partial_var.aval.dtype  # NumPy's accumulator (partition.partial_dtype): float16 in float32
            if acc != eqn.outputs[0].aval.dtype:
                inputs = [bind("convert", [v], {"dtype": acc}, None)[0] if v.aval.dtype != acc else v for v in inputs]
            (out,) = bind(eqn.prim, inputs, eqn.params, None)
            (new[partial_var],) = bind("reshape", [out], {"new_shape": ()}, [_shape(letters, sizes, reduced)])
    outvars = [new[v] for v in bp.outvars]
    return Program(invars, [new[v] for v in bp.constvars], list(bp.consts), eqns, outvars, name=bp.name)


# -- one compile per (block program, block shapes) in this process ----------------------------
_COMPILED: dict[tuple, Any] = {}
MAX_COMPILED = 512  # entries kept per process (each holds its machine code)
_LOCK = threading.Lock()
# Released before the interpreter tears modules down: the compiled modules' finalizers need the
# CPU backend's functions, which are gone by the time module globals are cleared.
atexit.register(_COMPILED.clear)
# compiles: block/combine programs built in this process (LLVM, or loaded from the disk cache:
# disk_hits of them); hits: tasks that found theirs compiled already; blocks: block tasks run.
# reuses: new block shapes run on the shape-generic machine code of another shape (no compile).
STATS = {"compiles": 0, "disk_hits": 0, "hits": 0, "reuses": 0, "blocks": 0}
# Members of a family (programs that differ in sizes only: one block program's edge and inner
# blocks, one combine's concatenated shapes): [(shapes, compiled)], the newest last.
_FAMILIES: dict[tuple, list[tuple[tuple, Any]]] = {}
atexit.register(_FAMILIES.clear)


def _cached(key: tuple, family: tuple, shapes: tuple, make_program: Any, probe: tuple | None, n_outputs: int,
            backend: str, name: str, fastmath: bool = False, disk_cache: bool = True) -> Any:
    """The compiled code of `key` in this process: built once per key, under the lock so that the
    threads of one worker build it once. A new member of a family first tries the shape-generic
    machine code of an earlier member (the dynamic-shape machinery of docs/recompilation.md: its
    kernel program is compared constant by constant, so a mismatch compiles, never runs wrong);
    otherwise it is compiled, shape-generic against an earlier member that differs in sizes only
    or, for the first member, against a probe: the program at the `probe` shapes, fused but not
    compiled (as `Jitted` probes, docs/recompilation.md). So the edge blocks of a chunked array run on
    the machine code of its inner blocks. `make_program(shapes)` builds a member's program."""
    compiled = _COMPILED.get(key)
    if compiled is not None:
        STATS["hits"] += 1
        return compiled
    with _LOCK:
        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = _COMPILED[key] = _build(family, shapes, make_program, probe, n_outputs, backend, name,
                                               fastmath, disk_cache)
        return compiled


def _forget(compiled: Any) -> None:
    """Drop an evicted entry from its family (a family holds the members it may reuse)."""
    for family, members in list(_FAMILIES.items()):
        kept = [m for m in members if m[1] is not compiled]
        if len(kept) != len(members):
            if kept:
                _FAMILIES[family] = kept
            else:
                del _FAMILIES[family]


def _sizes_only(a: tuple, b: tuple) -> bool:
    """Two members' shapes differ in sizes only, each differing size >= 2 on both sides (a size
    0 or 1 changes the kernels' structure: broadcasting, empty loops)."""
    return len(a) == len(b) and all(len(x) == len(y) for x, y in zip(a, b)) and \
        all(min(m, n) >= 2 for x, y in zip(a, b) for m, n in zip(x, y) if m != n)


def _build(family: tuple, shapes: tuple, make_program: Any, probe: tuple | None, n_outputs: int, backend: str,
           name: str, fastmath: bool, disk_cache: bool) -> Any:
    program = make_program(shapes)
    members = _FAMILIES.setdefault(family, [])
    previous = None
    try:
        generic = backend in SHAPE_GENERIC  # imports the backend: fails on a worker without LLVM
    except Exception as e:  # noqa: BLE001 - say which worker and why
        raise _worker_error(name, e) from e
    if generic and config.dynamic_shapes:
        related = [old for old_shapes, old in reversed(members) if _sizes_only(old_shapes, shapes)]
        for old in related:
            template = getattr(old.executable, "template", None)
            if template is not None:
                _, out_tree = tree_flatten(tuple(range(n_outputs)))
                reused = reuse_program(program, out_tree, backend, template, name=name)
                if reused is not None:
                    STATS["reuses"] += 1
                    members.append((shapes, reused))
                    return reused
        previous = related[0] if related else None
        if previous is None and probe is not None and _sizes_only(probe, shapes):
            try:
                previous = size_probe(make_program(probe), backend)
            except Exception:  # noqa: BLE001 - a probe that does not build: compile specialised
                previous = None
    compiled = _compile(program, n_outputs, backend, name, fastmath, disk_cache, previous)
    members.append((shapes, compiled))
    return compiled


def _compile(program: Program, n_outputs: int, backend: str, name: str, fastmath: bool = False,
             disk_cache: bool = True, previous: Any = None) -> Any:
    """compile_program, counting the persistent cache's hits (events of this thread's compile)."""
    _, out_tree = tree_flatten(tuple(range(n_outputs)))
    me = threading.get_ident()

    def count(event: Any) -> None:
        if isinstance(event, events.CacheEvent) and event.level == "disk" and event.hit \
                and threading.get_ident() == me:
            STATS["disk_hits"] += 1
    unsubscribe = events.subscribe(count)
    hits, t0 = STATS["disk_hits"], time.time()
    try:
        compiled = compile_program(program, out_tree, backend, name=name, fastmath=fastmath,
                                   disk_cache=disk_cache and config.disk_cache, previous=previous)
    except UnsupportedOperationError:
        raise  # about the program, not the worker
    except Exception as e:  # a worker without LLVM, a wrong CPU, ...: say which worker and why
        raise _worker_error(name, e) from e
    finally:
        unsubscribe()
    log = compile_log()  # read and cleared by profile.recorded_run_block; bounded without it
    if len(log) >= 64:
        log.clear()
    log.append((t0, time.time() - t0, STATS["disk_hits"] > hits))
    STATS["compiles"] += 1
    while len(_COMPILED) >= MAX_COMPILED:  # oldest first: plans of chunkings no longer used
        _forget(_COMPILED.pop(next(iter(_COMPILED))))
    return compiled


_LOCAL = threading.local()


def compile_log() -> list[tuple[float, float, bool]]:
    """This thread's compiles since profile.py last cleared it: (time.time() start, seconds,
    whether the persistent cache served it)."""
    log = getattr(_LOCAL, "compiles", None)
    if log is None:
        log = _LOCAL.compiles = []
    return log


class WorkerCompileError(CompileError):
    """A block program a worker could not compile (no LLVM, a wrong CPU, ...): the message names
    the worker (address, pid) and the cause."""


def _worker_error(name: str, e: Exception) -> WorkerCompileError:
    return WorkerCompileError(f"{where()} could not compile block program {name}: {type(e).__name__}: {e}")


def stats() -> dict[str, int]:
    """Compiles, cache hits and blocks run by block programs in this process (a worker: call it
    with `client.run(jitkernel.distributed.worker.stats)`)."""
    return dict(STATS)


def reset_stats() -> None:
    for k in STATS:
        STATS[k] = 0


def compiled_block(bp: BlockProgram, in_types: tuple) -> Any:
    shapes = tuple(shape for shape, _ in in_types)
    family = (bp.token, tuple(dtype for _, dtype in in_types))
    return _cached((bp.token, in_types), family, shapes, lambda s: specialize(bp, list(s)),
                   _probe_shapes(bp, shapes), len(bp.outvars), bp.backend, bp.name, bp.fastmath, bp.disk_cache)


def _probe_shapes(bp: BlockProgram, shapes: tuple) -> tuple | None:
    """`shapes` with every chunked letter one longer (where it is 2 or more): the block shapes
    whose kernel program, compared with this one's, shows which constants are block sizes. Whole
    letters keep their size, so row lengths stay compile-time constants. None: nothing to vary."""
    sizes = bp.block_sizes(list(shapes))
    chunked = {letter for letter, n in sizes.items() if 2 <= n < bp.letter_size.get(letter, n + 1)}
    probe = tuple(tuple(n + 1 if letter in chunked else n for letter, n in zip(letters, shape))
                  for letters, shape in zip(bp.in_letters, shapes))
    return probe if probe != shapes else None


def _native(block: Any) -> np.ndarray:
    a = np.asarray(block)
    return a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))


def _one_thread(executable: Any, arrays: list) -> list:
    """`executable(arrays)` with its kernels on this thread only. Dask already runs one task per
    thread (of its thread pool or of each worker); a block's kernels split over `config.threads`
    as well oversubscribed the CPUs: 2 single-threaded workers ran 4 kernel threads on 2 cores,
    and 1 worker used 2 cores (docs/distributed.md, "Measured")."""
    # imported here: this module must import on a worker without LLVM, so that such a worker
    # reports WorkerCompileError naming itself instead of failing to unpickle the task
    from ..backends.cpu.runtime import thread_cap
    previous = getattr(thread_cap, "threads", None)
    thread_cap.threads = 1
    try:
        return executable(arrays)
    finally:
        thread_cap.threads = previous


def run_block(bp: BlockProgram, *blocks: Any) -> tuple[np.ndarray, ...]:
    """The task of one block: the block program's outputs for these input blocks."""
    arrays = [_native(b) for b in blocks]
    arrays = [a.astype(v.aval.dtype, copy=False) for a, v in zip(arrays, bp.invars)]
    compiled = compiled_block(bp, tuple((a.shape, a.dtype) for a in arrays))
    STATS["blocks"] += 1
    return tuple(np.asarray(o) for o in _one_thread(compiled.executable, arrays))


# -- the combine levels of a tree reduction: our reduce kernel per concatenated shape ----------
def _reduce_program(prim: str, shape: tuple[int, ...], dtype: np.dtype, axes: tuple[int, ...], keepdims: bool) -> Program:
    x = Var(AType(shape, dtype))
    (r,) = infer_avals(prim, [x.aval], {"axes": axes})
    red = Var(r)
    eqns = [Eqn(prim, [x], [red], {"axes": axes})]
    out = red
    if keepdims:
        kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
        out = Var(AType(kept, dtype))
        eqns.append(Eqn("reshape", [red], [out], {"new_shape": kept}))
    return Program([x], [], [], eqns, [out], name=f"combine_{prim}")


def combine(x: np.ndarray, axis: tuple[int, ...] | int | None = None, keepdims: bool = False, *,
            prim: str, backend: str) -> np.ndarray:
    """One level of a tree reduction (dask.array.reduction's combine/aggregate): `prim` over
    `axis` of the concatenated partials, with a compiled reduce kernel."""
    x = _native(x)
    axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(sorted(a % x.ndim for a in axes))
    family = ("combine", prim, backend, x.dtype, axes, keepdims)
    # the partials' count along `axes` varies from level to level: probe it one larger
    probe = tuple(n + 1 if d in axes and n >= 2 else n for d, n in enumerate(x.shape))
    compiled = _cached(family + (x.shape,), family, (x.shape,),
                       lambda s: _reduce_program(prim, s[0], x.dtype, axes, keepdims),
                       (probe,) if probe != x.shape else None, 1, backend, f"combine_{prim}")
    return np.asarray(_one_thread(compiled.executable, [x])[0])


def identity_chunk(x: np.ndarray, axis: Any = None, keepdims: bool = True, **_: Any) -> np.ndarray:
    """The `chunk` step of dask.array.reduction: the block programs already made the partials."""
    return x


def arg_combine(indices: list, values: list, *, offsets: tuple[int, ...], axis: int, prim: str) -> np.ndarray:
    """The combine of an arg reduction over blocks: `indices[j]`, `values[j]` are block j's local
    index and extreme (size 1 along `axis`). NumPy's argmax/argmin of the extremes picks the first
    block holding the extreme (a NaN first, as NumPy's argmax does); that block's local index plus
    its offset is the global index. A few small arrays: NumPy, not a compiled kernel."""
    v = np.concatenate([np.asarray(b) for b in values], axis=axis)
    i = np.concatenate([np.asarray(b) for b in indices], axis=axis)
    i = i + np.asarray(offsets, dtype=i.dtype).reshape([-1 if d == axis else 1 for d in range(i.ndim)])
    best = _NUMPY_ARG[prim](v, axis=axis)
    return np.take_along_axis(i, np.expand_dims(best, axis), axis=axis).squeeze(axis)
