"""trace -> optimise -> schedule (fusion) -> render -> compile: one function per stage, run in
order for each new signature, each publishing its event."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import events
from .backends import DEVICE_ARRAY_BACKENDS, get_backend, size_probe
from .backends.cuda import device_text
from .forking import compile_section
from .ir import Program
from .passes import optimize
from .tree import TreeDef, tree_unflatten
from .errors import UnsupportedOperationError
from .trace.views import replay_view


class AliasedArguments(ValueError):
    """Raised before a call of a function that writes an argument when two arguments are the
    same array; Jitted runs a variant traced with one Memory for both (never seen by users)."""


class CheckedPathNeeded(AliasedArguments):
    """Raised by a fast entry when its program does not fit this call: traced for other argument
    strides (a reshape or ravel of an argument that is a view for one layout and a copy for
    another), or a written argument is an array the function also reads as a global or closure
    variable. The call takes the checked path, which picks or traces the variant (never seen by
    users)."""


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """The same memory with the same layout: the same array under two names."""
    if a is b:
        return True
    return (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


# np.shares_memory's work bound: enough for every pair of slices of one array (a[::2], a[1::2]);
# a pair too hard to decide within it is treated as overlapping (refused, never wrong).
SHARES_MEMORY_MAX_WORK = 1 << 16
# The most elements whose byte offsets are enumerated to decide whether a hand-made layout
# (as_strided) overlaps itself; a larger one that fails the fast test is refused.
SELF_OVERLAP_MAX_ELEMENTS = 1 << 20


def shares_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a and b have an element in common (exactly, within the work bound)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=SHARES_MEMORY_MAX_WORK))
    except np.exceptions.TooHardError:
        return True


def overlaps_itself(a: np.ndarray) -> bool:
    """Whether two elements of `a` share memory (np.lib.stride_tricks.as_strided with a zero or
    too small stride). Contiguous and ordinary strided arrays are decided by their strides alone;
    a hand-made layout by its elements' byte offsets."""
    if a.flags.c_contiguous or a.flags.f_contiguous or a.size <= 1:
        return False
    axes = sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n > 1)
    extent = a.itemsize
    for stride, n in axes:  # each axis steps over the whole block of the smaller ones: disjoint
        if stride < extent:
            break
        extent = stride * (n - 1) + extent
    else:
        return False
    if any(stride == 0 for stride, _ in axes) or a.size > SELF_OVERLAP_MAX_ELEMENTS:
        return True
    offsets = np.zeros(1, np.int64)
    for stride, n in axes:
        offsets = (offsets[:, None] + stride * np.arange(n, dtype=np.int64)).ravel()
    offsets.sort()
    return bool(np.any(np.diff(offsets) < a.itemsize))


def same_array_positions(leaves: list) -> tuple[int, ...] | None:
    """For each argument leaf, the first leaf that is the same array; None if no two are."""
    first: list[int] = []
    for j, a in enumerate(leaves):
        k = j
        if isinstance(a, np.ndarray):
            k = next((i for i in range(j) if isinstance(leaves[i], np.ndarray) and same_array(leaves[i], a)), j)
        elif getattr(type(a), "_jk_device_array", False):  # the same DeviceArray twice
            k = next((i for i in range(j) if leaves[i] is a), j)
        first.append(first[k] if k != j else j)
    return tuple(first) if any(k != j for j, k in enumerate(first)) else None


class Compiled:
    """One compiled signature of a jitted function: the programs at each stage, the backend's
    executable, and the output tree. Calling it runs the executable."""

    def __init__(self, name: str, backend: str, program: Program, optimized: Program,
                 out_tree: TreeDef, executable: Any, texts: dict[str, Callable[[], str]]) -> None:
        self.name, self.backend = name, backend
        self.program, self.optimized, self.out_tree = program, optimized, out_tree
        self.executable = executable
        self._texts = texts
        self.calls = 0
        self.function_id = 0  # the owning Jitted's function_id (set by it), carried by the events

    def text(self, stage: str) -> str:
        if stage == "ir":
            return str(self.program) + self._writes_line()
        if stage == "optimized":
            return str(self.optimized) + self._writes_line()
        if stage in ("cuda", "ptx") and stage not in self._texts:  # rendered on demand (docs/gpu.md)
            return device_text(self.optimized, stage, getattr(self.executable, "kp", None))
        if stage not in self._texts:
            raise ValueError(f"stage {stage!r} is not available for the {self.backend} backend")
        return self._texts[stage]() + (self._writes_line() if stage == "kernels" else "")

    def _writes_line(self) -> str:
        """`writes: x, y`: the arguments this function writes (their final values are the
        program's last outputs, copied back into the caller's arrays)."""
        names = self.program.written_names or tuple(f"args[{i}]" for i, _ in self.program.written_args)
        return f"\nwrites: {', '.join(names)}" if names else ""

    def fast_entry(self, scalar_dtypes: list, signature: str = "") -> Callable[[tuple], Any]:
        """A call path for positional arguments whose signature is already known to match:
        Python scalars are converted, the executable runs, outputs are finished. With event
        subscribers it publishes the memory-cache hit and the run (about a microsecond)."""
        run = getattr(self.executable, "run", self.executable)
        convert = [(i, dt) for i, dt in enumerate(scalar_dtypes) if dt is not None]
        single = self.out_tree.kind == "leaf" and self.optimized.outvars[0].aval.ndim > 0 \
            and not self.program.trimmed_outputs and not self.program.output_views
        run_single = getattr(self.executable, "run_single", None)
        finish = self.finish
        subscribers = events.SUBSCRIBERS
        name, backend, function_id = self.name, self.backend, self.function_id
        clock, publish, CacheEvent, RunEvent = events.clock, events.publish, events.CacheEvent, events.RunEvent

        def observed(outs: Callable[[], Any]) -> Any:
            t0 = clock()
            publish(CacheEvent(name, t0, 0.0, True, "memory", signature, function_id=function_id))
            t1 = clock()
            result = outs()
            publish(RunEvent(name, t1, clock() - t1, False, backend, function_id=function_id))
            self.calls += 1
            return result

        written = self.program.written_args
        if written:
            return self._writing_entry(run, convert, subscribers, observed)
        if single and not convert and run_single is not None and not self.program.int_arg_bounds:
            def entry_single(args: tuple) -> Any:
                if subscribers:
                    return observed(lambda: run_single(args))
                return run_single(args)
            return entry_single

        check = self.check_inputs if self.program.int_arg_bounds else None

        def entry(args: tuple) -> Any:
            if check is not None:
                check(args)
            if convert:
                args = list(args)
                for i, dt in convert:
                    args[i] = np.asarray(args[i], dt)
            if subscribers:
                return observed(lambda: run(args)[0] if single else finish(run(args), args))
            if single:
                return run(args)[0]
            return finish(run(args), args)
        return entry

    def _writing_entry(self, run: Callable, convert: list, subscribers: list, observed: Callable) -> Callable[[tuple], Any]:
        """The fast path of a function that writes arguments: checked, run, written back."""
        check = self.check_inputs if self.program.int_arg_bounds else None
        check_targets, write_back, finish = self.check_targets, self.write_back, self.finish

        def entry(args: tuple) -> Any:
            if check is not None:
                check(args)
            check_targets(args)
            arrays = args
            if convert:
                arrays = list(args)
                for i, dt in convert:
                    arrays[i] = np.asarray(arrays[i], dt)
            if subscribers:
                return observed(lambda: _run_and_write(arrays, args))
            results = run(arrays)
            write_back(results, args)
            return finish(results, args)

        def _run_and_write(arrays: Any, args: tuple) -> Any:
            results = run(arrays)
            write_back(results, args)
            return finish(results, args)
        return entry

    def check_targets(self, targets: Any) -> None:
        """Before a call that writes arguments: each written one must be a writeable array
        (NumPy's `ValueError: assignment destination is read-only`), and must not share memory
        with another argument (the compiled program treats its arguments as separate arrays)."""
        written = self.program.written_args
        for i, _ in written:
            t = targets[i]
            if isinstance(t, np.generic):
                raise TypeError(f"'numpy.{t.dtype.name}' object does not support item assignment")
            if getattr(type(t), "_jk_device_array", False):
                continue  # a DeviceArray takes its new buffer (write_back)
            if not t.flags.writeable:
                raise ValueError("assignment destination is read-only")
            if isinstance(t, np.ndarray) and overlaps_itself(t):
                raise self._self_overlap_error(i)
        if len(targets) < 2:
            return
        for i, _ in written:
            for j, other in enumerate(targets):
                if j != i and other is targets[i] and getattr(type(other), "_jk_device_array", False):
                    raise AliasedArguments(f"{self.name}: arguments {i} and {j} are the same device array")
                if j != i and isinstance(other, np.ndarray) and isinstance(targets[i], np.ndarray) \
                        and shares_memory(targets[i], other):
                    if same_array(targets[i], other):
                        raise AliasedArguments(f"{self.name}: arguments {i} and {j} are the same array")
                    raise ValueError(
                        f"{self.name}: arguments {i} and {j} are overlapping views of one array, and the function "
                        f"writes argument {i}. jitkernel compiles arguments as separate arrays (the same array "
                        "passed twice is supported, partly overlapping views are not), so a write through one "
                        "would not be seen through the other as in NumPy; pass a copy (np.copy(a)) for one of them.")

    def _self_overlap_error(self, i: int) -> Exception:
        names = dict(zip((k for k, _ in self.program.written_args), self.program.written_names))
        name = names.get(i, f"args[{i}]")
        return UnsupportedOperationError(
            f"{self.name}: argument {name!r} overlaps itself (two of its elements are the same memory, as "
            "np.lib.stride_tricks.as_strided makes with a zero or too small stride), and the function writes "
            "it. jitkernel computes a written argument as an array of distinct elements, which would not give "
            f"NumPy's result; pass a copy (np.copy({name})). Reading such an array is supported.")

    def write_back(self, outs: list[np.ndarray], targets: Any) -> None:
        """Copy the final value of every written argument into the caller's array (after the
        whole call succeeded: a call that raises leaves its arguments unchanged). np.copyto
        handles strides and byte order."""
        for i, k in self.program.written_args:
            if getattr(type(targets[i]), "_jk_device_array", False):
                targets[i]._assign(outs[k])  # the call's new buffer (docs/gpu.md, device arrays)
            elif outs[k] is not targets[i]:  # else the kernels wrote the caller's array in place
                np.copyto(targets[i], outs[k], casting="unsafe")

    def finish(self, outs: list[np.ndarray], targets: Any = None) -> Any:
        """The call's result from the program's outputs; `targets` (the caller's own arguments)
        give the outputs that are an argument or a view of one as that view (NumPy's aliasing)."""
        if targets is not None and self.program.output_views:
            outs = self.argument_views(outs, targets)
        if self.program.trimmed_outputs:
            outs = trim_outputs(outs, self.program.trimmed_outputs)
        # NumPy returns scalars, not 0-d arrays, from ufuncs and reductions: so do we.
        return tree_unflatten(self.out_tree, [o[()] if o.ndim == 0 else o for o in outs])

    def argument_views(self, outs: list, targets: Any) -> list:
        """Replace each output that the function returned as an argument or a view of one by that
        view of the caller's array (after write_back: it shows the final values)."""
        outs = list(outs)
        for k, i, chain in self.program.output_views:
            array = targets[i]
            if isinstance(array, np.ndarray):  # (a DeviceArray or a scalar keeps the program's result)
                view = replay_view(array, chain)
                if view is not None:
                    outs[k] = view
        return outs

    def check_inputs(self, args: Any) -> None:
        """Python int arguments cast to a narrower integer type must fit it, as in NumPy
        (bounds from TraceContext.weak_int_cast; None: any value is accepted on that side)."""
        for i, dt, lo, hi in self.program.int_arg_bounds:
            v = int(args[i])
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise OverflowError(f"Python integer {v} out of bounds for {dt}")

    def __call__(self, arrays: list[np.ndarray], targets: Any = None) -> Any:
        """Run on `arrays` (the arguments in native byte order); written arguments are copied
        back into `targets` (the caller's own arrays, `arrays` when not given)."""
        if self.program.int_arg_bounds:
            self.check_inputs(arrays)
        if self.backend not in DEVICE_ARRAY_BACKENDS and any(getattr(type(a), "_jk_device_array", False) for a in arrays):
            arrays = [np.asarray(a) for a in arrays]  # a host backend copies DeviceArrays back first
        if self.program.written_args:
            targets = arrays if targets is None else targets
            self.check_targets(targets)
        if events.SUBSCRIBERS:
            t0 = events.clock()
            outs = self.executable(arrays)
            events.publish(events.RunEvent(self.name, t0, events.clock() - t0, self.calls == 0, self.backend,
                                           function_id=self.function_id))
        else:
            outs = self.executable(arrays)
        if self.program.written_args:
            self.write_back(outs, targets)
        self.calls += 1
        return self.finish(outs, targets if targets is not None else arrays)


def trim_outputs(outs: list[np.ndarray], trims: tuple) -> list[np.ndarray]:
    """Data-dependent outputs (numpy/_datadep.py) are padded buffers: the caller gets a fresh
    array of exactly the first `count` rows, as NumPy returns a fresh array from x[mask]."""
    outs = list(outs)
    for k, c in trims:
        if getattr(type(outs[k]), "_jk_device_array", False):  # stays on its device
            outs[k] = outs[k]._leading(int(outs[c]))
        else:
            outs[k] = outs[k][:int(outs[c])].copy()
    return outs


@compile_section
def compile_program(program: Program, out_tree: TreeDef, backend: str, *, name: str,
                    fastmath: bool = False, disk_cache: bool = True, previous: Compiled | None = None) -> Compiled:
    """Optimise `program` and compile it with `backend` ("cpu" or "interpret"). `previous`: an
    entry of the same function whose signature differs in sizes only (see Jitted._miss), or a
    size probe (`backends.size_probe`). Both sides of that comparison are optimised without the
    value-dependent rewrites (`optimize(size_generic=True)`): an entry compiled on its own is
    probed again from its traced program."""
    optimized = _optimize(program, name, size_generic=previous is not None)
    if isinstance(previous, Compiled):
        previous = size_probe(previous.program, backend)
    executable, texts = get_backend(backend).compile(
        optimized, name=name, fastmath=fastmath, disk_cache=disk_cache,
        previous=previous.executable if previous is not None else None)
    return Compiled(name, backend, program, optimized, out_tree, executable, texts)


@compile_section
def reuse_program(program: Program, out_tree: TreeDef, backend: str, template: object, *, name: str) -> Compiled | None:
    """Run a freshly traced program on an existing shape-generic template, or None."""
    optimized = _optimize(program, name, size_generic=True)
    reused = get_backend(backend).reuse(optimized, template, name=name)
    if reused is None:
        return None
    executable, texts = reused
    return Compiled(name, backend, program, optimized, out_tree, executable, texts)


def _optimize(program: Program, name: str, size_generic: bool = False) -> Program:
    t0 = events.clock()
    optimized = optimize(program, size_generic=size_generic)
    if events.SUBSCRIBERS:
        events.publish(events.OptimizeEvent(name, t0, events.clock() - t0, len(program.eqns), len(optimized.eqns)))
    return optimized
