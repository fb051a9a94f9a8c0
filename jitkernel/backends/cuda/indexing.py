"""Gather and scatter steps on the GPU (docs/gpu.md, "Indexing and in-place updates on the GPU").

The library steps of advanced indexing (ir/index_prims.py) for any index of integer arrays,
integers, slices, newaxis and ellipsis (`x[i]`, `x[:, i]`, `x[i, ::2, j]`, `x[0, :, i] = v`,
`np.add.at(x, (slice(None), i), v)` and the other binary `ufunc.at`) are rendered as kernels
with NumPy's semantics; index_layout.py places the result's dimensions by NumPy's rule:

- every index is checked (a negative one wraps once, anything else out of range sets the status
  word's index bit and records index, axis and size): NumPy's IndexError with its message;
- `gather`: one thread per output element (grid-stride);
- `scatter` / `scatter_ufunc`: a copy kernel (the step is functional: the target is copied into
  the output), then one thread per point of the result's non-index dimensions, which visits
  the index points sequentially in C order. Repeated indices therefore behave as in NumPy
  exactly: the last `x[i] = v` wins, and `np.add.at` accumulates in index order, bit for bit
  (no atomics, no dependence on the launch shape). The cost: the parallelism of a scatter is
  the size of its non-index dimensions (a 1-D target runs on one thread).

`np.take` and `np.take_along_axis` are take.py's, ufunc.accumulate (cumsum) accumulate.py's,
sort and argsort sort.py's, searchsorted search.py's, raise_if checks.py's,
boolean selections (x[mask], np.nonzero) compaction.py's.
Everything else (boolean masks in gathers and scatters, Python bools in an index, `np.put`, `np.putmask`,
unary `ufunc.at`, and library steps such as linalg and fft) raises
UnsupportedOperationError naming the step: never a silent round trip through the host.
"""
from __future__ import annotations

import numpy as np

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from ..status import STATUS_INDEX
from . import ctype, index_layout, ops
from .dynamic_params import _ll, extent, extent_product
from .launch import Launch
from .library_kernels import grid_stride, kernel_signature
from .library_rules import library_rule, unsupported_step
from .names import kernel_name

SCATTER_UFUNCS = ("add", "subtract", "multiply", "maximum", "minimum")


@library_rule("gather")
def render_gather(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, list]:
    """`x[index]`: one thread per output element."""
    return _IndexWriter(kp, step, n, placeholder, n_lead=1, n_tail=0).gather()


@library_rule("scatter")
def render_scatter(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, list]:
    """`x[index] = v`: the copy, then the index points in order."""
    return _IndexWriter(kp, step, n, placeholder, n_lead=1, n_tail=1).scatter()


@library_rule("scatter_ufunc")
def render_scatter_ufunc(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, list]:
    """The binary `ufunc.at` of SCATTER_UFUNCS (a unary one, without a value, is refused): the
    copy, then the index points in order, each combined with the value."""
    if not step.params.get("has_value"):
        raise unsupported_step(kp, step, n)
    if step.params["ufunc"] not in SCATTER_UFUNCS:
        raise unsupported_step(kp, step, n, f" for ufunc {step.params['ufunc']!r}")
    return _IndexWriter(kp, step, n, placeholder, n_lead=1, n_tail=1).scatter()


class _IndexWriter:
    """The gather or scatter kernels of one advanced-indexing step, for any index of integer
    arrays, integers, slices, newaxis and ellipsis (index_layout.py places the dimensions)."""

    def __init__(self, kp: KernelProgram, step: LibraryCall, n: int, placeholder: str, n_lead: int,
                 n_tail: int) -> None:
        self.kp, self.step, self.n = kp, step, n
        self.x = step.inputs[0]
        self.idx = step.inputs[n_lead:len(step.inputs) - n_tail]
        self.value = step.inputs[-1] if n_tail else None
        (self.out,) = step.outputs
        self.base = kernel_name(placeholder, step.name)
        if any(kp.buffers[b].dtype.kind not in "iu" for b in self.idx):
            # A boolean mask (x[mask] = v) picks the True positions in order; read as integers its
            # 0s and 1s would name rows 0 and 1: refused, never a wrong answer.
            raise unsupported_step(kp, step, n, " for a boolean mask index (x[mask] = v)")
        for b in [self.x, self.out, *self.idx] + ([self.value] if self.value is not None else []):
            ctype.check_dtype(kp.buffers[b].dtype)
        self.xshape = self.shape_of(self.x)
        try:
            self.lay = index_layout.layout(self.xshape, step.params["index"], [self.shape_of(b) for b in self.idx])
        except index_layout.NotRendered as e:
            raise unsupported_step(kp, step, n, f" for this index form ({e})") from None
        self.bshape = list(self.lay.bshape)
        # A non-empty index into an empty axis raises for every value (NumPy's IndexError when
        # the step runs; the program's result shape is a stand-in then): one checking kernel.
        points = int(self._prod(self.bshape)) > 0
        self.raises_only = points and any(
            p.kind == "A" and int(self.xshape[axis]) == 0 for axis, p in enumerate(self.lay.picks))
        # NumPy checks every index even when the other dimensions of the result are empty (no
        # thread of the gather or put kernel would): the checking kernel alone then.
        rest = [d.size for d in self.lay.out_dims if d.kind != "B"]
        self.check_only = self.raises_only or (points and int(self._prod(rest)) == 0)
        want = self.lay.out_shape if step.prim == "gather" else tuple(self.xshape)
        if not self.raises_only and tuple(int(d) for d in self.shape_of(self.out)) != tuple(int(d) for d in want):
            raise unsupported_step(kp, step, n, " for this index form (result shape)")

    # -- pieces ------------------------------------------------------------------------------
    def shape_of(self, b: int) -> list:
        """A buffer's shape: ints, or `Ext`s where a size is a run-time parameter."""
        return [extent(d) for d in self.kp.buffers[b].shape]

    def signature(self, name: str, bufs: list[int]) -> tuple[str, list[tuple]]:
        return kernel_signature(self.kp, name, bufs, {self.out})

    @staticmethod
    def _prod(dims: list) -> int:
        return extent_product(list(dims))

    def coordinates(self, flat: str, dims: list[int], ind: str) -> list[str]:
        """`c<d> = ` the coordinate along result dimension d (of those in `dims`, C order) of
        the flat position `flat` in their product."""
        sizes = [self.lay.out_dims[d].size for d in dims]
        return [f"{ind}const long long c{d} = ({flat} / {_ll(self._prod(sizes[i + 1:]))}) % {_ll(sizes[i])};"
                for i, d in enumerate(dims)]

    def source(self, ind: str) -> list[str]:
        """`jk_at`: the offset in x of the result point whose coordinates c<d> are set, every
        index array value checked as NumPy checks it (a bad one sets the status word)."""
        lay, nb = self.lay, len(self.bshape)
        bdim = {d.j: i for i, d in enumerate(lay.out_dims) if d.kind == "B"}
        lines, terms = [], []
        for axis, pick in enumerate(lay.picks):
            stride = _ll(self._prod(self.xshape[axis + 1:]))
            if pick.kind == "S":
                d = lay.out_dims[pick.dim]
                terms.append(f"({d.start}LL + {d.step}LL * c{pick.dim}) * {stride}")
            elif pick.kind == "I":
                terms.append(f"{pick.value}LL * {stride}")
            else:
                b = self.idx[pick.k]
                shape = self.shape_of(b)
                shape = [1] * (nb - len(shape)) + shape  # broadcast against the index shape
                off = " + ".join(f"c{bdim[j]} * {_ll(self._prod(shape[j + 1:]))}" for j in range(nb)
                                 if int(shape[j]) != 1) or "0LL"
                size = self.xshape[axis]
                lines.append(f"{ind}const long long a{axis} = jk_index_check((long long)b{b}[{off}], {_ll(size)}, "
                             f"{_ll(size)} - 1LL, {axis}LL, jk_status, {STATUS_INDEX}u);")
                terms.append(f"a{axis} * {stride}")
        return lines + [f"{ind}const long long jk_at = {' + '.join(terms) or '0LL'};"]

    # -- kernels -----------------------------------------------------------------------------
    def index_error(self) -> tuple[str, list]:
        """The kernel of an index into an empty axis: one thread checks the index arrays in
        axis order, each value in order, until one is out of range (every value into the empty
        axis is), so the status word records NumPy's first bad index. Nothing is read or written."""
        sig, params = self.signature(self.base + "_check", list(self.idx))
        lines = [f"\n/* {self.step.name}: an index into an empty axis: NumPy's IndexError, nothing else */",
                 sig + " {", "  if (blockIdx.x != 0 || threadIdx.x != 0) return;"]
        for axis, pick in enumerate(self.lay.picks):
            if pick.kind != "A":
                continue
            b, size = self.idx[pick.k], self.xshape[axis]
            count = _ll(self._prod(self.shape_of(b)))
            lines += [f"  for (long long q = 0; q < {count} && !(jk_status[0] & {STATUS_INDEX}u); ++q)",
                      f"    jk_index_check((long long)b{b}[q], {_ll(size)}, {_ll(size)} - 1LL, {axis}LL, jk_status, "
                      f"{STATUS_INDEX}u);"]
        lines.append("}")
        return "\n".join(lines), [Launch(self.base + "_check", "elementwise", 1, params)]

    def gather(self) -> tuple[str, list]:
        if self.check_only:
            return self.index_error()
        dims = list(range(len(self.lay.out_dims)))
        total = self._prod(list(self.lay.out_shape))
        sig, params = self.signature(self.base, [self.x, *self.idx, self.out])
        # sizes formatted: a run-time extent formats as its C text, so the source stays shape-generic
        lines = [f"\n/* {self.step.name}: gather x[{', '.join(f'{d}' for d in self.xshape)}] -> "
                 f"[{', '.join(f'{d}' for d in self.lay.out_shape)}] */",
                 sig + " {", f"  const long long n = {_ll(total)};"] + grid_stride("n")
        lines += self.coordinates("t", dims, "    ") + self.source("    ")
        lines += [f"    b{self.out}[t] = b{self.x}[jk_at];", "  }", "}"]
        return "\n".join(lines), [Launch(self.base, "elementwise", total, params)]

    def scatter(self) -> tuple[str, list]:
        if self.raises_only:
            return self.index_error()
        kp, step, lay = self.kp, self.step, self.lay
        if self.check_only:  # nothing is written: the copy, and NumPy's index checks
            copy_text, copy_launches = self.copy_kernel()
            check_text, check_launches = self.index_error()
            return copy_text + check_text, copy_launches + check_launches
        xd, vd = kp.buffers[self.x].dtype, kp.buffers[self.value].dtype
        weak = step.params.get("weak")
        if weak is not None and vd != xd and xd.kind in "iu" and vd.kind in "iub" and not self.fits(xd):
            # NumPy raises OverflowError for a Python int out of the target's range.
            raise unsupported_step(kp, step, self.n, " for a Python int that may not fit the target's integer dtype")
        if step.prim == "scatter_ufunc" and vd != xd and weak is None:
            raise unsupported_step(kp, step, self.n, " for ufunc.at with a value of another dtype")
        copy_text, copy_launches = self.copy_kernel()
        put = self.base + "_put"
        lines = [copy_text]
        sig, params = self.signature(put, [*self.idx, self.value, self.out])
        bdims = [d for d, o in enumerate(lay.out_dims) if o.kind == "B"]
        rest = [d for d, o in enumerate(lay.out_dims) if o.kind != "B"]
        n_points = self._prod(self.bshape)
        n_rest = self._prod([lay.out_dims[d].size for d in rest])
        # One thread per point of the non-index dimensions (distinct points never collide), each
        # visiting the index points in C order: NumPy's order for repeated indices.
        lines += [sig + " {"] + grid_stride(_ll(n_rest), "s")
        lines += self.coordinates("s", rest, "    ")
        lines += [f"    for (long long q = 0; q < {_ll(n_points)}; ++q) {{  /* C order: NumPy's order */"]
        lines += self.coordinates("q", bdims, "      ") + self.source("      ")
        lines += [f"      if (jk_status[0] & {STATUS_INDEX}u) continue;  /* a bad index: NumPy writes nothing */"]
        v = self.load_value()
        v = ops.convert(v, vd, xd) if vd != xd else v
        if step.prim == "scatter":
            new = v
        else:
            old = self.load(self.out, "jk_at", xd)
            new = ops.lower(step.params["ufunc"], [old, "jk_v"], [xd, xd], xd, [None, None])
            lines.append(f"      const {ctype.reg(xd)} jk_v = {v};")
        lines.append(f"      {self.store(self.out, 'jk_at', new, xd)}")
        lines += ["    }", "  }", "}"]
        return "\n".join(lines), copy_launches + [Launch(put, "elementwise", n_rest, params)]

    def copy_kernel(self) -> tuple[str, list]:
        """The target copied into the output (the step is functional)."""
        n_all = self._prod(self.xshape)
        copy = self.base + "_copy"
        sig, params = self.signature(copy, [self.x, self.out])
        lines = [f"\n/* {self.step.name}: the target copied, then the index points in order (deterministic) */",
                 sig + " {"] + grid_stride(_ll(n_all)) + [f"    b{self.out}[t] = b{self.x}[t];", "  }", "}"]
        return "\n".join(lines), [Launch(copy, "elementwise", n_all, params)]

    def fits(self, xd: np.dtype) -> bool:
        """Is the written value a constant of the program that `xd` holds exactly?"""
        const = next((np.asarray(c) for bid, c in self.kp.consts if bid == self.value), None)
        if const is None or const.size == 0:
            return False
        info = np.iinfo(xd)
        return bool(info.min <= int(const.min()) and int(const.max()) <= info.max)

    def load_value(self) -> str:
        """The value written at the result point whose coordinates c<d> are set: NumPy
        broadcasts the value against the result's shape (right-aligned)."""
        vshape = self.shape_of(self.value)
        target = list(self.lay.out_shape)
        if len(vshape) > len(target):
            extra, vshape = vshape[:len(vshape) - len(target)], vshape[len(vshape) - len(target):]
            if any(int(d) != 1 for d in extra):
                raise unsupported_step(self.kp, self.step, self.n, " for this value shape")
        vshape = [1] * (len(target) - len(vshape)) + vshape
        terms = []
        for d in range(len(target)):
            if int(vshape[d]) != 1:
                if int(vshape[d]) != int(target[d]):
                    raise unsupported_step(self.kp, self.step, self.n, " for this value shape")
                terms.append(f"c{d} * {_ll(self._prod(vshape[d + 1:]))}")
        return self.load(self.value, " + ".join(terms) or "0LL", self.kp.buffers[self.value].dtype)

    @staticmethod
    def load(b: int, at: str, dt: np.dtype) -> str:
        return ctype.load(f"b{b}[{at}]", dt)

    @staticmethod
    def store(b: int, at: str, value: str, dt: np.dtype) -> str:
        return ctype.store(f"b{b}[{at}]", value, dt)
