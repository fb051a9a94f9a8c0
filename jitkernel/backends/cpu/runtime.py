"""The CPU executable: buffers, native segments and library steps, with as little Python per
call as possible (measured: a 10-element call costs about a microsecond here).

Native segments receive the arrays' `id()`s and read each data pointer themselves, which costs
nothing, where `ndarray.ctypes.data` costs about 2 µs per array. An output or temporary array is
reused by the next call only when nothing but the executable still references it (the caller
dropped it, no other call is using it), which avoids page faults on large fresh arrays without
ever aliasing a live result; a concurrent call sees the extra reference and allocates its own.

Everything a call writes belongs to that call: its status word (taken like the reusable arrays,
only when no other call holds it), the per-thread words of a split segment, and, after an
interrupt, every buffer that worker threads may still touch (the submitted work holds them until
the native code has returned). See "Calls: threads, interrupts, fork" in docs/architecture.md.
"""
from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from ...config import config
from ...fusion.kernel_ir import Compute, KernelProgram, LibraryCall, RowKernel
from ...fusion.dynamic import range_of
from ...fusion.loops import control_work, is_control
from ...fusion.versioning import written_buffers
from ...ir.primitives import dot_general_numpy
from .in_place_updates import in_place_impl
from .blas_threads import blas_threads
from .histograms import native_histogram
from .library_batches import split_products, split_stacks
from .matvec_pairs import matvec_pair
from ..status import StatusWord, merge_status, raise_status
from .render import DATA_OFFSET, PARALLEL_MIN_ELEMENTS, Segment

# How a library step's function is made: (primitive, params) -> impl(*inputs, **params).
LibraryImpl = Callable[[str, dict], Callable[..., Any]]


def _check_data_offset() -> None:
    probe = np.arange(3.0)
    if ctypes.c_void_p.from_address(id(probe) + DATA_OFFSET).value != probe.ctypes.data:
        raise ImportError(f"NumPy's array layout is not the expected one (data pointer not at offset "
                          f"{DATA_OFFSET}); this NumPy build is not supported by the CPU backend")


_check_data_offset()
_getrefcount = sys.getrefcount


def _pin_vector_math_library() -> object:
    """LLVM dlcloses the libraries it loaded (libmvec, vector_math.py) in its static destructors
    at exit, while a long call interrupted earlier may still run its vector sin on a background
    thread: a reference of our own keeps libmvec mapped until the process is gone."""
    try:
        return ctypes.CDLL("libmvec.so.1")
    except OSError:
        return None


_LIBMVEC = _pin_vector_math_library()


def _free_refcount() -> int:
    """getrefcount of an array referenced only by a list slot and the local being tested."""
    holder = [np.empty(1)]
    prev = holder[0]
    return _getrefcount(prev)


_FREE_REFCOUNT = _free_refcount()

# Work units (loop-nest elements times (1 + expression nodes)) of one chunk of a split segment:
# the granularity at which a long call notices an interrupt. 2^23 units is about 1-20 ms here.
CHUNK_WORK = 1 << 23
# At most this many chunks per segment (2^39 work units, hours of work): the list of chunks is
# built at compile time, and a program too large to run (`np.ones(2**50)`, whose allocation
# raises NumPy's MemoryError when it runs) would otherwise exhaust memory building it.
MAX_CHUNKS = 1 << 16
# A segment that cannot be split (its outer loop is reduced) and is estimated above this runs on
# a worker thread while the calling thread waits interruptibly.
LONG_WORK = 1 << 25


# Segments that never write a status word get this address (nothing reads it).
_NO_STATUS = StatusWord()


class CpuExecutable:
    """Runs a KernelProgram. Inputs may have any strides (non-contiguous ones are copied to C
    order first); outputs are fresh (or provably unreferenced) C-contiguous arrays.

    The per-call code is generated Python, specialised to this program (buffers are locals, no
    loops over steps): the same trick `collections.namedtuple` uses, for the same reason."""

    def __init__(self, kp: KernelProgram, steps: list, library: object, params: np.ndarray | None = None, *,
                 library_impl: LibraryImpl) -> None:
        self.kp = kp
        self.steps = steps
        self._library = library  # keeps the machine code alive as long as this executable
        # Run-time parameters of shape-generic kernels (unused slot when specialised).
        self.params = np.zeros(1, np.int64) if params is None else np.ascontiguousarray(params, np.int64)
        self._last: list = [None] * (max(kp.buffers, default=-1) + 1)  # reusable arrays, by buffer id
        # A second array per output: a training loop holds the previous call's results while it
        # calls again, so `last` is busy; the one from two calls ago has been dropped by then.
        self._spare: list = [None] * len(self._last)
        self._status: list = [StatusWord()]  # reusable status word (same rule as the arrays)
        self.source, namespace = self._generate(kp, steps, library, library_impl)
        exec(compile(self.source, f"<jitkernel executable {kp.name}>", "exec"), namespace)
        # Taken out of their namespace, which is their globals: no cycle, so a dropped executable
        # (and its machine code) is freed at once, not at the next garbage collection.
        self.run = namespace.pop("run")
        self.run_single = namespace.pop("run_single", None)

    def _generate(self, kp: KernelProgram, steps: list, library: object,
                  library_impl: LibraryImpl) -> tuple[str, dict]:
        """The runner's source and the namespace it runs in. The namespace holds no reference to
        the executable (no cycle), but holds the library: the runner needs its machine code."""
        ns: dict = {"np": np, "empty": np.empty, "getrefcount": _getrefcount, "FREE": _FREE_REFCOUNT,
                    "last": self._last, "spare": self._spare, "status": self._status, "Word": StatusWord,
                    "raise_status": raise_status, "to_c": _to_c_order, "dot_general": _dot_general,
                    "matvec_pair": matvec_pair,
                    "split": _run_split, "on_worker": _run_on_worker, "library": library,
                    "check_library_result": check_library_result}
        head = ["def run(arrays):"]
        # Complex arguments and results hold the float (..., 2) buffers of the kernels: the same
        # bytes, and kernels read data pointers, so only library steps need float views.
        views = getattr(kp, "complex_views", {})
        library_inputs = {b for st in steps if isinstance(st, LibraryCall) for b in st.inputs}
        library_outputs = {b for st in steps if isinstance(st, LibraryCall) for b in st.outputs}
        for i, bid in enumerate(kp.inputs):
            dt = np.dtype((views[bid] if bid in views else kp.buffers[bid].dtype).str)
            ns[f"dt{bid}"] = dt
            head.append(f"    b{bid} = arrays[{i}]")
            if not kp.buffers[bid].shape:
                # A NumPy scalar has no data pointer for a native segment to read (only 0-d
                # inputs can be one: a loop bound, a carry passed as np.int64(3)).
                ns["ndarray"] = np.ndarray
                head.append(f"    if type(b{bid}) is not ndarray:")
                head.append(f"        b{bid} = np.asarray(b{bid})")
            head.append(f"    if (b{bid}.dtype is not dt{bid} and b{bid}.dtype != dt{bid}) or not b{bid}.flags.c_contiguous:")
            head.append(f"        b{bid} = to_c(b{bid}, dt{bid})")
            if bid in views and bid in library_inputs:  # a library step takes the float (..., 2) view
                ns[f"fdt{bid}"], ns[f"fshape{bid}"] = kp.buffers[bid].dtype, kp.buffers[bid].shape
                head.append(f"    b{bid} = b{bid}.reshape(-1).view(fdt{bid}).reshape(fshape{bid})")
        for bid in kp.outputs:
            if bid in views:  # a complex result: the caller gets the complex view of the floats
                ns[f"cdt{bid}"], ns[f"cshape{bid}"] = views[bid], kp.buffers[bid].shape[:-1]
        out = {b: f"b{b}.view(cdt{b}).reshape(cshape{b})" if b in views and b in library_outputs else f"b{b}"
               for b in kp.outputs}
        for bid, c in kp.consts:
            ns[f"b{bid}"] = np.array(c, order="C")
        for b in kp.buffers.values():
            if b.role in ("temp", "output", "check") and b.id not in library_outputs:
                ns[f"shape{b.id}"], ns[f"dt{b.id}"] = b.shape, b.dtype
                if b.id in views:  # written by kernels, returned as the complex array itself
                    ns[f"shape{b.id}"], ns[f"dt{b.id}"] = b.shape[:-1], views[b.id]
                head += reuse_lines(b.id, b.id in kp.outputs)
        with_status = any(isinstance(s, Segment) and getattr(s, "sets_status", True) for s in steps)
        body = self._step_lines(kp, steps, library, ns, library_impl)
        if with_status:
            # The call's own status word; a word left behind by an interrupted call (it may hold
            # a flag, or workers may still write it) is replaced, never reused.
            head += ["    st = status[0]",
                     "    if getrefcount(st) != FREE:",
                     "        st = status[0] = Word()",
                     "    try:"]
            body = ["    " + line for line in body]
            body += ["    except BaseException:",
                     "        status[0] = Word()",
                     "        raise",
                     "    if st.value:",
                     "        raise_status(st)"]
        text = "\n".join(head[1:] + body)
        # run returns the list of outputs; run_single the first output itself.
        source = head[0] + "\n" + text + "\n    return [" + ", ".join(out[b] for b in kp.outputs) + "]\n"
        if kp.outputs:
            source += "def run_single(arrays):\n" + text + f"\n    return {out[kp.outputs[0]]}\n"
        return source, ns

    def _step_lines(self, kp: KernelProgram, steps: list, library: object, ns: dict,
                    library_impl: LibraryImpl) -> list[str]:
        lines = []
        for n, step in enumerate(steps):
            if isinstance(step, Segment):
                sets_status = getattr(step, "sets_status", True)
                range_types = [ctypes.c_int64, ctypes.c_int64] if step.parallel else []
                param_types = [ctypes.c_void_p] if step.has_params else []
                seg = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(step.buffers)), *range_types,
                                       ctypes.c_void_p, *param_types)(library.addresses[step.name])
                # Whoever holds the function (a worker thread after an interrupt, too) holds the
                # machine code and the parameter array whose address the calls pass.
                seg.keep = (library, self.params)
                ns[f"seg{n}"] = seg
                arrays = "(" + "".join(f"b{b}, " for b in step.buffers) + ")"
                params = (self.params.ctypes.data,) if step.has_params else ()
                work = _segment_work(kp, step)
                if step.parallel:
                    outer = int(kp.steps[step.step_index].domain[0])
                    ns[f"chunks{n}"] = _chunks(outer, max(1, -(-work // CHUNK_WORK)))
                    ns[f"params{n}"] = params
                    word = "st" if sets_status else "None"
                    lines.append(f"    split(seg{n}, {arrays}, chunks{n}, params{n}, {word})")
                else:
                    args = ", ".join(f"id(b{b})" for b in step.buffers)
                    addr = "st.addr" if sets_status else str(_NO_STATUS.addr)
                    extra = f", {params[0]}" if params else ""
                    direct = f"seg{n}({args}, {addr}{extra})"
                    ns[f"params{n}"] = params
                    word = "st" if sets_status else "None"
                    worker = f"on_worker(seg{n}, {arrays}, params{n}, {word})"
                    at_call = work_at_call(kp, step) if work >= LONG_WORK else None
                    if work < LONG_WORK:
                        lines.append(f"    {direct}")
                    elif at_call is None:
                        lines.append(f"    {worker}")
                    else:  # the trip counts come from values the call has: decided per call
                        estimate, names = at_call
                        ns[f"work{n}"] = estimate
                        lines += [f"    if work{n}({', '.join(f'b{b}' for b in names)}) >= {LONG_WORK}:",
                                  f"        {worker}", "    else:", f"        {direct}"]
            else:
                lines += _library_lines(kp, step, n, ns, library_impl)
        return lines

    def __call__(self, arrays: list | tuple) -> list[np.ndarray]:
        return self.run(arrays)


# -- work estimates ---------------------------------------------------------------------------

def reuse_lines(bid: int, output: bool) -> list[str]:
    """The runner's lines that take array `b{bid}`: the one kept from the last call when nothing
    else references it, else (an output) the spare one from the call before, else a new one.
    The reference taken by the test itself is counted in FREE, so a concurrent call holding the
    array sees a higher count and allocates its own."""
    b = f"b{bid}"
    if not output:
        return [f"    {b} = last[{bid}]",
                f"    if {b} is None or getrefcount({b}) != FREE:",
                f"        {b} = last[{bid}] = empty(shape{bid}, dt{bid})"]
    return [f"    {b} = last[{bid}]",
            f"    if {b} is None or getrefcount({b}) != FREE:",
            f"        {b} = spare[{bid}]",
            f"        if {b} is None or getrefcount({b}) != FREE:",
            f"            {b} = empty(shape{bid}, dt{bid})",
            f"        spare[{bid}] = last[{bid}]",
            f"        last[{bid}] = {b}"]


def reusable_product(kp: KernelProgram, step: LibraryCall) -> bool:
    """Whether a dot_general can write into a reused buffer: a real or integer result that is a
    buffer of its own (complex results are float views of their buffers, written differently)."""
    (b,) = step.outputs
    buf = kp.buffers[b]
    return buf.dtype.kind in "fiub" and b not in getattr(kp, "complex_views", {}) and \
        all(isinstance(d, int) for d in buf.shape) and b not in step.inputs


def _library_lines(kp: KernelProgram, step: LibraryCall, n: int, ns: dict, library_impl: LibraryImpl) -> list[str]:
    """The runner's lines for one library step. dot_general calls NumPy's matmul directly (the
    hot case); every other library primitive runs its reference implementation, which is NumPy
    (LAPACK, sorting, ...), so its semantics are the interpreter's by construction. Kernels
    index C-ordered buffers of the declared dtype, so a result that is not one is converted."""
    ns[f"params{n}"] = step.params
    ins = ", ".join(f"b{b}" for b in step.inputs)
    outs = "".join(f"b{b}, " for b in step.outputs)
    call_lines = _CALL_LINES.get(step.prim, _impl_call_lines)
    lines, checked = call_lines(kp, step, n, ns, ins, outs, library_impl)
    for k, b in enumerate(step.outputs):
        if b not in checked:
            continue
        ns[f"dt_lib{n}_{k}"] = kp.buffers[b].dtype
        ns[f"shape_lib{n}_{k}"] = tuple(kp.buffers[b].shape)
        # A result of another dtype or shape than its shape rule promised is a bug in the
        # primitive; casting or reshaping it here would hide it as a silently different answer.
        lines.append(f"    if b{b}.dtype != dt_lib{n}_{k} or b{b}.shape != shape_lib{n}_{k}:")
        lines.append(f"        check_library_result({step.prim!r}, {k}, b{b}, dt_lib{n}_{k}, shape_lib{n}_{k})")
        lines.append(f"    if not b{b}.flags.c_contiguous:")
        lines.append(f"        b{b} = to_c(b{b}, dt_lib{n}_{k})")
    return lines


def _dot_general_call_lines(kp: KernelProgram, step: LibraryCall, n: int, ns: dict, ins: str, outs: str,
                            library_impl: LibraryImpl) -> tuple[list[str], list[int]]:
    """NumPy's matmul, into a reused buffer where it can; only a returned result is checked
    (matmul's result has the buffer's dtype; only a returned one may be strided)."""
    checked = [b for b in step.outputs if b in kp.outputs]
    if reusable_product(kp, step):
        # The product goes into the buffer kept from the last call when nothing else holds it
        # (the rule of every other reused array, module docstring): no fresh pages per call.
        (b,) = step.outputs
        ns[f"shape{b}"], ns[f"dt{b}"] = tuple(kp.buffers[b].shape), kp.buffers[b].dtype
        return reuse_lines(b, b in kp.outputs) + [f"    dot_general({ins}, out=b{b}, **params{n})"], checked
    return [f"    {outs}= dot_general({ins}, **params{n}),"], checked


def _impl_call_lines(kp: KernelProgram, step: LibraryCall, n: int, ns: dict, ins: str, outs: str,
                     library_impl: LibraryImpl) -> tuple[list[str], list[int]]:
    """The step's function: a scatter into a dead kernel-written temporary writes in place
    (in_place_updates.py), control flow runs compiled sub-programs (control_flow.py), anything
    else the reference implementation. Every result is checked."""
    impl = library_impl(step.prim, step.params)
    ns[f"impl{n}"] = in_place_impl(kp, step) or split_stacks(
        step.prim, step.params, native_histogram(step.prim, step.params, impl, _call_threads, _worker_pool),
        _call_threads, _worker_pool)
    return [f"    {outs}= impl{n}({ins + ', ' if ins else ''}**params{n})"], list(step.outputs)  # (a print may have no values)


def _matvec_pair_call_lines(kp: KernelProgram, step: LibraryCall, n: int, ns: dict, ins: str, outs: str,
                            library_impl: LibraryImpl) -> tuple[list[str], list[int]]:
    """Two products of one matrix in one sweep (matvec_pairs.py); only returned results are
    checked, as for dot_general."""
    left = "None" if step.params["cols_of_rows"] else f"b{step.inputs[2]}"
    matrix, right = step.inputs[:2]
    return ([f"    {outs}= matvec_pair(b{matrix}, b{right}, {left}, **params{n})"],
            [b for b in step.outputs if b in kp.outputs])


# Library steps whose runner lines are their own (every other one calls its function, above).
_CALL_LINES = {"dot_general": _dot_general_call_lines, "matvec_pair": _matvec_pair_call_lines}


def check_library_result(prim: str, k: int, value: Any, dtype: np.dtype, shape: tuple) -> None:
    """Raise: output `k` of a library step has another dtype or shape than its buffer."""
    raise TypeError(
        f"internal error: library step {prim!r} returned {np.dtype(value.dtype)}{list(np.shape(value))} "
        f"for output {k}, its shape rule says {np.dtype(dtype)}{list(shape)}; please report this bug")


def _kernel_work(kernel, consts: dict | None = None) -> int:
    """Elements of the loop nest times (1 + distinct expression nodes): a rough time estimate."""
    if is_control(kernel):
        # A loop whose trip count is not a constant counts as long, so that the call runs on a
        # worker thread and the caller can still be interrupted (Ctrl-C).
        return control_work(kernel, consts or {}, _kernel_work, LONG_WORK)
    phases = kernel.phases if isinstance(kernel, RowKernel) else [kernel]
    total = 0
    for phase in phases:
        elements = 1
        for e in phase.domain:
            elements *= e if isinstance(e, int) else PARALLEL_MIN_ELEMENTS
        seen: set[int] = set()
        stack = [s.value for s in phase.stores]
        while stack:
            nd = stack.pop()
            if id(nd) not in seen:
                seen.add(id(nd))
                if isinstance(nd, Compute):
                    stack.extend(nd.args)
        total += elements * (1 + len(seen))
    return total


def _segment_work(kp: KernelProgram, seg: Segment) -> int:
    """Work of a segment, from the executable's own (specialised) kernels where they line up
    with the segment's, else from the segment's (run-time extents counted as large)."""
    concrete = kp.steps[seg.step_index: seg.step_index + len(seg.kernels)] if seg.step_index >= 0 else []
    kernels = concrete if len(concrete) == len(seg.kernels) and not any(
        isinstance(k, LibraryCall) for k in concrete) else seg.kernels
    consts = {bid: value for bid, value in kp.consts}
    return sum(_kernel_work(k, consts) for k in kernels)


def work_at_call(kp: KernelProgram, seg: Segment) -> tuple[Callable[..., int], list[int]] | None:
    """(estimate, buffers) for a segment whose loops' trip counts are not constants but follow
    from 0-d integer buffers it receives (a program input `T`, a value an earlier step computed):
    `estimate(*arrays)` is the segment's work with those values, the bounds the segment's own
    scalar kernels compute from them included (interval arithmetic, fusion/dynamic.py range_of).
    None when no such buffer exists. A loop that still has no trip count counts as LONG_WORK."""
    concrete = kp.steps[seg.step_index: seg.step_index + len(seg.kernels)] if seg.step_index >= 0 else []
    kernels = concrete if len(concrete) == len(seg.kernels) and not any(
        isinstance(k, LibraryCall) for k in concrete) else seg.kernels
    written = written_buffers(kernels)
    names = [b for b in seg.buffers if b in kp.buffers and not kp.buffers[b].shape and b not in written
             and kp.buffers[b].dtype.kind in "iu" and kp.buffers[b].role != "const"]
    if not names:
        return None
    consts = {bid: int(np.asarray(v).reshape(()).item()) for bid, v in kp.consts
              if np.ndim(v) == 0 and np.asarray(v).dtype.kind in "iu"}
    scalar_stores = [st for k in kernels if not is_control(k) and not isinstance(k, (RowKernel, LibraryCall))
                     and not k.domain for st in k.stores if st.reduce is None and not st.offset.terms]
    memo: dict[int, int] = {}

    def kernel_work(k: Any, env: dict) -> int:
        if is_control(k):
            return control_work(k, env, kernel_work, LONG_WORK)
        if id(k) not in memo:
            memo[id(k)] = _kernel_work(k)
        return memo[id(k)]

    def estimate(*arrays: np.ndarray) -> int:
        env = dict(consts)
        env.update((b, int(a)) for b, a in zip(names, arrays))
        ranges = {b: (v, v) for b, v in env.items()}
        for st in scalar_stores:
            r = range_of(ranges, st.value)
            if r is not None and r[0] == r[1]:
                env[st.buffer], ranges[st.buffer] = r[0], r
        return sum(kernel_work(k, env) for k in kernels)
    return estimate, names


def _chunks(outer: int, n: int) -> tuple[tuple[int, int], ...]:
    """`n` contiguous ranges covering [0, outer), boundaries on multiples of 64 where the loop is
    long enough (vector-aligned starts); at most MAX_CHUNKS of them."""
    n = max(1, min(n, outer, MAX_CHUNKS))
    align = 64 if outer >= 64 * n else 1
    bounds = [0] + [outer * t // n // align * align for t in range(1, n)] + [outer]
    return tuple((lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo)


# -- the worker pool --------------------------------------------------------------------------

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def _worker_pool(workers: int) -> ThreadPoolExecutor:
    """A pool with at least `workers` threads (one pool per process, grown on demand)."""
    global _pool, _pool_size
    pool = _pool
    if pool is not None and _pool_size >= workers:
        return pool
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="jitkernel")
            _pool_size = workers
            if old is not None:
                old.shutdown(wait=False)  # queued work still runs; its threads end afterwards
        return _pool


def _forget_pool_in_child() -> None:
    """After fork the child has none of the parent's threads: start a fresh pool on demand."""
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


class _SplitCall:
    """One call of a split segment: the chunks still to run, one status word per thread, and
    the arrays, which this object keeps alive for as long as any worker holds it."""

    def __init__(self, seg: Callable, arrays: tuple, chunks: tuple, params: tuple, threads: int) -> None:
        self.seg, self.arrays, self.params = seg, arrays, params
        self.ids = [id(a) for a in arrays]
        # Whole status words: a kernel that sets the IndexError flag also writes the index, axis
        # and size behind the flag (status.STATUS_INDEX_DETAIL), which bare int32s have no room for.
        self.words = [StatusWord() for _ in range(threads)]
        self.todo = iter(chunks)  # shared: each next() hands one chunk to one thread (atomic)
        self.abort = False

    def work(self, t: int) -> None:
        seg, ids, params, todo = self.seg, self.ids, self.params, self.todo
        addr = self.words[t].addr
        for lo, hi in todo:
            if self.abort:
                return
            seg(*ids, lo, hi, addr, *params)


# A cap on the threads of the calls made on this thread, where a caller sets one: the block
# tasks of a Dask graph run on one thread each (Dask's parallelism is across blocks), see
# jitkernel/distributed/worker.py. Unset: `config.threads`.
thread_cap = threading.local()


def _call_threads() -> int:
    """The threads a call made on this thread may use: its `thread_cap`, else `config.threads`."""
    return getattr(thread_cap, "threads", None) or config.threads


# dot_general with large products split across the worker threads when the BLAS runs on one
# (library_batches.py); every other product is NumPy's matmul as it stands.
_dot_general = functools.partial(dot_general_numpy,
                                 matmul=split_products(_call_threads, _worker_pool, blas_threads))


def _run_split(seg: Callable, arrays: tuple, chunks: tuple, params: tuple, status: StatusWord | None) -> None:
    """Run a segment's outer loop chunk by chunk, on `config.threads` threads (or this thread's
    `thread_cap`; the caller's included; ctypes releases the GIL during each native call). An
    interrupt (KeyboardInterrupt) is raised between two chunks; workers still inside a chunk
    finish it, then stop, and hold the arrays until they do."""
    if not chunks:
        # An empty outer loop: a shape-generic segment, made parallel for the sizes it was
        # compiled at, whose extent is 0 at this call's sizes (`x[2:]` of a length-2 axis).
        return
    threads = min(_call_threads(), chunks[-1][1])
    if threads <= 1:
        ids = [id(a) for a in arrays]
        addr = status.addr if status is not None else _NO_STATUS.addr
        for lo, hi in chunks:  # only this thread touches the buffers: an interrupt may stop it anywhere
            seg(*ids, lo, hi, addr, *params)
        return
    if len(chunks) < threads:
        chunks = _chunks(chunks[-1][1], threads)
    call = _SplitCall(seg, arrays, chunks, params, threads)
    pool = _worker_pool(threads - 1)
    futures = []
    try:
        futures = _submit_uninterrupted(pool, call.work, range(1, threads))
        call.work(0)
        for f in futures:
            f.result()  # an interruptible wait
    except BaseException:
        call.abort = True
        raise
    if status is not None:
        merge_status(status, call.words)


def _submit_uninterrupted(pool: ThreadPoolExecutor, fn: Callable, args: range) -> list:
    """`pool.submit(fn, a)` for each `a`, with no KeyboardInterrupt raised inside `submit`: one
    raised while it starts a worker thread left that thread out of the executor's records, and
    the interpreter then waited for it for ever at exit (SIGINT just as a
    call began). On the main thread with Python's own handling of SIGINT, a SIGINT that comes
    meanwhile is held and raised again right after, where the caller stops the call."""
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous) or threading.current_thread() is not threading.main_thread():
        return [pool.submit(fn, a) for a in args]  # no KeyboardInterrupt can come here
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        return [pool.submit(fn, a) for a in args]
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


def _call_segment(seg: Callable, keep: tuple, ids: list, tail: tuple, done: threading.Event) -> None:
    try:
        seg(*ids, *tail)  # `keep` (arrays, status word) lives in this frame until the call returns
    finally:
        done.set()


def _run_on_worker(seg: Callable, arrays: tuple, params: tuple, status: StatusWord | None) -> None:
    """A long segment that cannot be split: run it on a thread of its own while this thread waits
    interruptibly. After an interrupt the native call runs to its end in the background, holding
    the arrays and the status word; the thread is a daemon, so it never delays the exit."""
    ids = [id(a) for a in arrays]
    addr = status.addr if status is not None else _NO_STATUS.addr
    done = threading.Event()
    threading.Thread(target=_call_segment, args=(seg, (arrays, status), ids, (addr, *params), done),
                     name="jitkernel-long-call", daemon=True).start()
    done.wait()


def _to_c_order(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.array(a, dtype=dt, order="C")
