"""NumPy's histogram of equal bins as a compiled loop: NumPy's bins and sums, in NumPy's order.

`np.histogram(a, bins=n)` (and `range=`, `weights=`, `density=`) with float64 data finds each
element's bin in NumPy vector passes over blocks of 65,536 elements (numpy/lib/_histograms_impl.py):
keep `first <= x <= last`, `f = ((x - first) / (last - first)) * n`, the index `int(f)`, the
last edge's index moved into the last bin, then one step down where `x` is below its bin's left
edge and one step up where it is not below the next edge (the rounding of `f` corrected against
the edges themselves), and `np.bincount` adds the weights of each block bin by bin in element
order, each block's sums then added to the totals in block order. The CPU runtime runs the same
arithmetic, the same comparisons and the same additions in the same order, one element at a
time in a compiled loop (`jk_hist_f64`, compiled once per process like pairwise.py), with the
blocks dealt to the worker threads and their sums added in block order on the calling thread:
the answer is NumPy's bit for bit. The edges and every error are NumPy's own
(`np.histogram_bin_edges`, called first).

Other histograms run NumPy's function: edges given as an array, data other than float64,
weights other than float64, or a `range` whose ends are not exactly float64 numbers.

>>> import numpy as np
>>> from jitkernel.ir import primitives
>>> run = native_histogram("histogram", {"bins": 4}, primitives.get("histogram").impl, lambda: 1, None)
>>> x = np.array([0.0, 0.1, 0.5, 0.5, 0.99, 1.0])
>>> hist, edges = run(x, bins=4, range=None, density=False, weighted=False)
>>> hist.tolist(), bool(np.array_equal(edges, np.histogram(x, 4)[1]))
([2, 0, 2, 2], True)
"""
from __future__ import annotations

import ctypes
import threading
from concurrent.futures import Executor
from typing import Any, Callable

import llvmlite.ir as ir
import numpy as np

from . import compiler
from .library_batches import run_parts
from .types import F64, I64, PTR

BLOCK = 65536  # NumPy's histogram block: each block's sums are added to the totals in order
_SYMBOLS = ("jk_hist_count_f64", "jk_hist_weight_f64")
_F64 = np.dtype(np.float64)
_lock = threading.Lock()
_library = None
_functions: dict[str, Callable] = {}


def native_histogram(prim: str, params: dict, impl: Callable[..., tuple], threads: Callable[[], int],
                     pool: Callable[[int], Executor] | None) -> Callable[..., tuple]:
    """`impl` of library step `prim`, with the equal-bin float64 histograms of the module
    docstring compiled; everything else (and every other step) is `impl`."""
    if prim != "histogram" or params.get("bins") is None:
        return impl

    def run(a: np.ndarray, *rest: np.ndarray, bins: int, range: Any, density: bool, weighted: bool) -> tuple:  # noqa: A002
        weights = rest[-1] if weighted else None
        if a.dtype != _F64 or (weights is not None and weights.dtype != _F64) or not _exact_range(range):
            return impl(a, *rest, bins=bins, range=range, density=density, weighted=weighted)
        edges = np.histogram_bin_edges(a, bins, range)  # NumPy's edges, NumPy's errors
        if edges.dtype != _F64:
            return impl(a, *rest, bins=bins, range=range, density=density, weighted=weighted)
        n = _bins(np.ascontiguousarray(a), None if weights is None else np.ascontiguousarray(weights),
                  edges, bins, threads(), pool)
        if density:  # NumPy's own lines
            db = np.array(np.diff(edges), float)
            return n / db / n.sum(), edges
        return n, edges
    return run


def _exact_range(range: Any) -> bool:  # noqa: A002
    """Whether the ends of `range` (None: the data's own) are float64 numbers exactly, so that
    NumPy's comparisons and subtraction with them are the float64 ones (a huge int is not)."""
    if range is None:
        return True
    try:
        return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                   and abs(float(v)) < 2.0 ** 53 and float(v) == v for v in range)
    except (TypeError, ValueError, OverflowError):
        return False


def _bins(a: np.ndarray, weights: np.ndarray | None, edges: np.ndarray, nbins: int, threads: int,
          pool: Callable[[int], Executor] | None) -> np.ndarray:
    """The histogram's counts (intp) or weight sums (float64) of `a` in the bins `edges`."""
    first, last = float(edges[0]), float(edges[-1])
    denom = last - first  # NumPy's (last_edge - first_edge): the ends are edges[0] and edges[-1]
    fn = _function(_SYMBOLS[weights is not None])
    blocks = [(lo, min(lo + BLOCK, a.shape[0])) for lo in range(0, a.shape[0], BLOCK)]
    acc = np.float64 if weights is not None else np.int64
    sums = np.zeros((max(len(blocks), 1), nbins), acc)

    def run_blocks(ks: range) -> None:
        # The arrays themselves, not only their addresses, are held here: a part still running
        # on a worker after an interrupt keeps them alive until it is done.
        for k in ks:
            lo, hi = blocks[k]
            fn(a.ctypes.data + 8 * lo, weights.ctypes.data + 8 * lo if weights is not None else 0, hi - lo,
               edges.ctypes.data, nbins, first, last, denom, sums.ctypes.data + 8 * nbins * k)

    parts = max(1, min(threads, len(blocks))) if pool is not None else 1
    bounds = [len(blocks) * t // parts for t in range(parts + 1)]
    chunks = [(range(lo, hi),) for lo, hi in zip(bounds, bounds[1:])]
    if parts <= 1 or run_parts(pool(parts - 1), run_blocks, chunks, {}) is None:
        sums.fill(0)  # (a part that failed may have added to its blocks: all of them again, here)
        run_blocks(range(len(blocks)))
    if weights is None:
        return sums.sum(axis=0, dtype=np.intp)  # counts: exact in any order
    n = np.zeros(nbins, np.float64)
    for row in sums:  # `n += np.bincount(...)` block by block, as NumPy
        n += row
    return n


def _function(name: str) -> Callable:
    """The compiled block function `name`, compiled for this CPU and linked on first use."""
    global _library
    with _lock:
        if _library is None:
            tm = compiler.shared_target_machine()
            mod = compiler.parse_and_verify(module_ir(tm.triple, str(tm.target_data)))
            compiler.optimize(mod)
            _library = compiler.JitLibrary(compiler.emit_object(mod), list(_SYMBOLS))
            proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_double, ctypes.c_double, ctypes.c_double,
                                     ctypes.c_void_p)
            for symbol, address in _library.addresses.items():
                _functions[symbol] = proto(address)
        return _functions[name]


def module_ir(triple: str, data_layout: str) -> str:
    """The LLVM module of the two block functions (counts, float64 weight sums):
    `f(a, w, len, edges, nbins, first, last, denom, out)` adds each kept element's weight (or 1)
    to `out[bin]`, in element order."""
    module = ir.Module(name="jk_histograms")
    module.triple, module.data_layout = triple, data_layout
    for symbol, weighted in zip(_SYMBOLS, (False, True)):
        _define(module, symbol, weighted)
    return str(module)


def _define(module: ir.Module, symbol: str, weighted: bool) -> None:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, PTR, I64, F64, F64, F64, PTR]), symbol)
    fn.attributes.add("nounwind")
    a, w, length, edges, nbins, first, last, denom, out = fn.args
    acc = F64 if weighted else I64
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loop, body, binned, after = (fn.append_basic_block(n) for n in ("loop", "body", "binned", "after"))
    entry = b.block
    nbins_f = b.sitofp(nbins, F64)
    one, zero = ir.Constant(I64, 1), ir.Constant(I64, 0)
    b.branch(loop)

    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(zero, entry)
    b.cbranch(b.icmp_signed("<", i, length), body, after)

    b.position_at_end(body)
    x = b.load(b.gep(a, [i], inbounds=True, source_etype=F64), typ=F64)
    keep = b.and_(b.fcmp_ordered(">=", x, first), b.fcmp_ordered("<=", x, last))
    nxt = b.add(i, one)
    b.cbranch(keep, binned, loop)
    i.add_incoming(nxt, body)

    b.position_at_end(binned)
    # NumPy: f_indices = ((x - first_edge) / norm_denom) * norm_numerator; astype(intp)
    idx = b.fptosi(b.fmul(b.fdiv(b.fsub(x, first), denom), nbins_f), I64)
    last_bin = b.sub(nbins, one)
    idx = b.select(b.icmp_signed("==", idx, nbins), last_bin, idx)  # indices[indices == n] -= 1
    left = b.load(b.gep(edges, [idx], inbounds=True, source_etype=F64), typ=F64)
    idx = b.select(b.fcmp_ordered("<", x, left), b.sub(idx, one), idx)  # decrement
    right = b.load(b.gep(edges, [b.add(idx, one)], inbounds=True, source_etype=F64), typ=F64)
    up = b.and_(b.fcmp_ordered(">=", x, right), b.icmp_signed("!=", idx, last_bin))
    idx = b.select(up, b.add(idx, one), idx)  # increment
    slot = b.gep(out, [idx], inbounds=True, source_etype=acc)
    if weighted:
        weight = b.load(b.gep(w, [i], inbounds=True, source_etype=F64), typ=F64)
        b.store(b.fadd(b.load(slot, typ=F64), weight), slot)
    else:
        b.store(b.add(b.load(slot, typ=I64), one), slot)
    b.branch(loop)
    i.add_incoming(nxt, binned)

    b.position_at_end(after)
    b.ret_void()
