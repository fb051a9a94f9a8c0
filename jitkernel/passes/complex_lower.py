"""Complex lowering: complex values become (real, imag) float pairs before fusion.

The graph IR keeps complex primitives (NumPy's complex loops are their reference, and the
`interpret` backend runs them). Compiled backends schedule `lower_complex(program)` instead,
so fusion and every renderer (the CPU's LLVM today, CUDA later) only ever see float32/float64
expressions and never a complex buffer inside a kernel:

- a complex argument or result is a float array of shape (..., 2) holding the complex array's
  own bytes (the runtime passes views: `lower_complex` returns which inputs and outputs are
  packed), read and written by kernels through stride-2 index maps; complex constants are split
  at compile time;
- arithmetic, comparisons, `abs`, `sign`, casts, selects and movement are expanded here
  into float operations, with exactly the operations of NumPy 2's complex loops on this CPU
  (multiply and square with fused multiply-adds as its AVX-512 loops, division by Smith's
  algorithm with its 0/0 case, absolute by its scaled hypot, ordering lexicographic with its
  NaN rules): the one place these semantics are decided for compiled code;
- `power` by a constant integer exponent n + 0j (|n| < 100) is NumPy's `nc_pow` (products
  without fused multiply-adds, binary powering, 1 / z^|n| by the complex divide);
- inside loop bodies, a small complex product (`@` of static shapes, at most
  loop_dots.MAX_WORK multiply-adds) is NumPy's multiply of each pair of terms summed over the
  contracting axes: fused reductions instead of a library call per trip;
- anything else complex (exp, log, sqrt, other powers, trig and their inverses: C99 Annex G
  special cases included; sums in NumPy's complex pairwise order, products, max/min
  reductions, argmax/argmin, matmul outside loops) runs NumPy's own loop as a
  `complex_library` step on packed operands: the interpreter's values by construction;
- control flow (`lower_bodies`, the CPU and CUDA schedules) is lowered body and all: a complex
  operand, carry or result crosses it as two float ones, so a loop whose body only computes
  runs as a native loop over float kernels (a carry updated in place stays two float arrays).
  Without `lower_bodies` (the TPU backend) a loop holding complex values is one
  `complex_library` step run by the interpreter.

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.passes import optimize
>>> prog = optimize(jk.make_ir(lambda z: z * z + 1)(np.ones(4, np.complex128)))
>>> lowered, packed = lower_complex(prog)
>>> [str(v.aval) for v in lowered.invars], packed.inputs
(['f64[4,2]'], {0: dtype('complex128')})
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Union

import numpy as np

from ..ir import Eqn, Program, Var
from ..ir.datadep_prims import DATADEP_PRIMITIVES
from ..ir.complex_prims import component_dtype, is_complex, library_params, packed_aval
from ..ir.debug_prims import PackedComplex
from ..ir.primitives import infer_avals
from ..ir.types import AType
from .dot_operands import free_dims, placed
from .loop_dots import small_dot

Value = Union[Var, tuple]  # a real Var, or a (real, imag) pair of float Vars

_MOVEMENT = ("broadcast_in_dim", "reshape", "transpose", "slice")
_COMPARE = ("less", "less_equal", "greater", "greater_equal")


def has_complex(program: Program) -> bool:
    """Whether any variable of `program` or of its sub-programs is complex (a cheap scan: most
    programs have none)."""
    if any(v.aval.dtype.kind == "c" for v in program.invars + program.constvars):
        return True
    return any(any(v.aval.dtype.kind == "c" for v in e.outputs) or _complex_inside(e) for e in program.eqns)


def _sub_programs(params: dict) -> list[Program]:
    """The Programs among an equation's params (control flow: cond branches, loop bodies)."""
    found = []
    for p in params.values():
        for q in (p if isinstance(p, tuple) else (p,)):
            if isinstance(q, Program):
                found.append(q)
    return found


_CONTROL_PRIMS = ("fori_loop", "while_loop", "cond", "scan")


def _complex_inside(eqn: Eqn) -> bool:
    return any(has_complex(p) for p in _sub_programs(eqn.params))


def _holds_data_dependent_steps(eqn: Eqn) -> bool:
    """Whether a loop or branch holds a data-dependent step (a selection carried by a loop,
    numpy/_datadep.py) at any depth: a library step, so the CPU drives it from Python anyway;
    lowered body and all, its sub-programs are compiled instead of interpreted whole."""
    work = _sub_programs(eqn.params)
    while work:
        program = work.pop()
        for e in program.eqns:
            if e.prim in DATADEP_PRIMITIVES:
                return True
            work.extend(_sub_programs(e.params))
    return False


@dataclass
class Packed:
    """Which inputs and outputs of a lowered program are complex arrays packed as float
    (..., 2) arrays: position -> the complex dtype the caller passes or receives."""

    inputs: dict[int, np.dtype] = field(default_factory=dict)
    outputs: dict[int, np.dtype] = field(default_factory=dict)


def lower_complex(program: Program, lower_bodies: bool = False, in_loop: bool = False) -> tuple[Program, Packed]:
    """`program` with every complex value computed as a (real, imag) pair of floats, and which
    of its inputs and outputs are packed complex arrays (none for a program without complex).

    `lower_bodies`: control flow holding complex values is lowered body and all (the CPU and
    CUDA backends, whose loops run compiled bodies); otherwise the whole loop is one
    complex_library step. `in_loop`: `program` is a loop body (or inside one), where small
    complex products become fused reductions instead of a library call per trip."""
    if not has_complex(program):
        return program, Packed()
    return _Lowering(program, lower_bodies, in_loop).run()


_LOOP_PRIMS = ("fori_loop", "while_loop", "scan")


def _part_aval(aval: AType) -> AType:
    return AType(aval.shape, component_dtype(aval.dtype))


def _operand_groups(eqn: Eqn) -> dict[str, tuple[int, int]]:
    """The params of a control-flow equation that count a group of its operands, each with the
    group's (first input position, length)."""
    p = eqn.params
    if eqn.prim == "fori_loop":
        return {"nconsts": (2, p["nconsts"])}
    if eqn.prim == "while_loop":
        return {"cond_nconsts": (0, p["cond_nconsts"]), "body_nconsts": (p["cond_nconsts"], p["body_nconsts"])}
    if eqn.prim == "scan":
        return {"nconsts": (0, p["nconsts"]), "ncarry": (p["nconsts"], p["ncarry"])}
    return {}  # cond: its operands are one group, counted by nothing


class _Lowering:
    def __init__(self, program: Program, lower_bodies: bool = False, in_loop: bool = False,
                 split: bool = False) -> None:
        self.program = program
        self.lower_bodies = lower_bodies
        self.in_loop = in_loop
        self.split = split  # complex inputs and outputs as two real ones (a body), not packed
        self.eqns: list[Eqn] = []
        self.env: dict[Var, Value] = {}
        self.constvars: list[Var] = []
        self.consts: list[np.ndarray] = []
        self.const_values = dict(zip(program.constvars, program.consts))
        # constants and their broadcasts: the value each holds everywhere (power's exponent)
        self.uniform: dict[Var, np.ndarray] = {v: c for v, c in self.const_values.items() if np.size(c) == 1}
        for e in program.eqns:
            if e.prim in ("broadcast_in_dim", "reshape") and e.inputs[0] in self.uniform:
                self.uniform[e.outputs[0]] = self.uniform[e.inputs[0]]
        self.literals: dict[tuple, Var] = {}
        self.packed: dict[tuple[int, int], Var] = {}  # (id(re), id(im)) -> a packed var holding them

    # -- building --------------------------------------------------------------------------
    def emit(self, prim: str, inputs: list[Var], /, **params) -> list[Var]:
        avals = infer_avals(prim, [v.aval for v in inputs], params)
        outs = [Var(a) for a in avals]
        self.eqns.append(Eqn(prim, list(inputs), outs, params))
        return outs

    def op(self, prim: str, /, *inputs: Var, **params) -> Var:
        return self.emit(prim, list(inputs), **params)[0]

    def literal(self, value: float, like: Var) -> Var:
        """A constant of `like`'s dtype and shape (a 0-d constant broadcast: fusion reads it as a
        literal)."""
        dt, shape = like.aval.dtype, like.aval.shape
        key = (dt.str, np.asarray(value, dt).tobytes(), shape)
        if key not in self.literals:
            v = Var(AType((), dt))
            self.constvars.append(v)
            self.consts.append(np.asarray(value, dt))
            if shape:
                v = self.op("broadcast_in_dim", v, shape=shape, broadcast_dimensions=())
            self.literals[key] = v
        return self.literals[key]

    def placed(self, x: Var, order: list[int], shape: tuple, dims: list[int]) -> Var:
        """dot_operands.placed: `x` arranged and broadcast as one operand of a product's terms."""
        return placed(x, order, shape, dims, lambda prim, v, _shape, **p: self.op(prim, v, **p))

    def new_const(self, value: np.ndarray) -> Var:
        v = Var(AType(value.shape, value.dtype))
        self.constvars.append(v)
        self.consts.append(value)
        return v

    # -- values ----------------------------------------------------------------------------
    def value(self, v: Var) -> Value:
        if v in self.env:
            return self.env[v]
        if not is_complex(v.aval.dtype):
            return v
        c = np.asarray(self.const_values[v])  # arguments are unpacked in run()
        pair = (self.new_const(np.array(c.real, order="C")), self.new_const(np.array(c.imag, order="C")))
        self.env[v] = pair
        return pair

    def unpack(self, p: Var) -> tuple:
        """The (real, imag) parts of packed p (..., 2): stride-2 slices, no copy."""
        shape = p.aval.shape[:-1]
        parts = []
        for k in (0, 1):
            part = self.op("slice", p, starts=(0,) * len(shape) + (k,), steps=(1,) * (len(shape) + 1),
                           shape=shape + (1,))
            parts.append(self.op("reshape", part, new_shape=shape))
        pair = tuple(parts)
        self.packed[(id(pair[0]), id(pair[1]))] = p
        return pair

    def pack(self, pair: tuple) -> Var:
        """A packed (..., 2) var holding `pair` (the one it was unpacked from, if any)."""
        known = self.packed.get((id(pair[0]), id(pair[1])))
        if known is not None:
            return known
        shape = pair[0].aval.shape
        columns = [self.op("reshape", x, new_shape=shape + (1,)) for x in pair]
        return self.op("concatenate", *columns, axis=len(shape))

    def run(self) -> tuple[Program, Packed]:
        packed = Packed()
        invars = []
        for i, v in enumerate(self.program.invars):
            if is_complex(v.aval.dtype) and self.split:
                pair = self.env[v] = tuple(Var(_part_aval(v.aval)) for _ in range(2))
                invars += pair
            elif is_complex(v.aval.dtype):
                p = Var(packed_aval(v.aval))
                packed.inputs[i] = v.aval.dtype
                self.env[v] = self.unpack(p)
                invars.append(p)
            else:
                invars.append(v)
        for eqn in self.program.eqns:
            self.lower_eqn(eqn)
        outvars = []
        for k, v in enumerate(self.program.outvars):
            val = self.value(v)
            if isinstance(val, tuple) and self.split:
                outvars += val
                continue
            if isinstance(val, tuple):
                packed.outputs[k] = v.aval.dtype
                val = self.pack(val)
            outvars.append(val)
        real_consts = [(v, c) for v, c in zip(self.program.constvars, self.program.consts)
                       if not is_complex(v.aval.dtype)]
        lowered = dataclasses.replace(
            self.program, invars=invars, constvars=[v for v, _ in real_consts] + self.constvars,
            consts=[c for _, c in real_consts] + self.consts, eqns=self.eqns, outvars=outvars)
        return lowered, packed

    def lower_eqn(self, eqn: Eqn) -> None:
        if _complex_inside(eqn):
            if eqn.prim in _CONTROL_PRIMS and (self.lower_bodies or _holds_data_dependent_steps(eqn)):
                self.bind(eqn, self.control(eqn))
                return
            # A loop or branch computing with complex values: the interpreter runs it (NumPy's
            # loops) as one complex_library step (the CPU: its loops of kernels are native).
            self.bind(eqn, self.library(eqn, [self.value(v) for v in eqn.inputs]))
            return
        touches = any(is_complex(v.aval.dtype) for v in eqn.inputs + eqn.outputs)
        if not touches:
            inputs = [self.value(v) for v in eqn.inputs]
            if all(a is b for a, b in zip(inputs, eqn.inputs)):
                self.eqns.append(eqn)
            else:
                self.eqns.append(Eqn(eqn.prim, inputs, eqn.outputs, eqn.params))
            return
        rule = _RULES.get(eqn.prim)
        args = [self.value(v) for v in eqn.inputs]
        results = rule(self, args, eqn) if rule is not None else None
        if results is None:
            results = self.library(eqn, args)
        self.bind(eqn, results)

    def control(self, eqn: Eqn) -> list[Value]:
        """A loop or branch with its sub-programs lowered: a complex operand, carry or result
        crosses it as two real ones, (real, imag) in its place, so bodies compute on the parts
        directly (a carry updated in place stays two float arrays, with no packing per trip),
        and the counts of the primitive's operand groups (`nconsts`, ...) count parts."""
        inputs = []
        for a in (self.value(v) for v in eqn.inputs):
            inputs += a if isinstance(a, tuple) else [a]
        params = {}
        in_loop = self.in_loop or eqn.prim in _LOOP_PRIMS
        for key, val in eqn.params.items():
            if isinstance(val, Program):
                val = self.sub_program(val, in_loop)
            elif isinstance(val, tuple) and val and all(isinstance(q, Program) for q in val):
                val = tuple(self.sub_program(q, in_loop) for q in val)
            params[key] = val
        for key, (start, count) in _operand_groups(eqn).items():
            params[key] = sum(2 if is_complex(v.aval.dtype) else 1 for v in eqn.inputs[start:start + count])
        outs = []
        for v in eqn.outputs:
            outs += [Var(_part_aval(v.aval)), Var(_part_aval(v.aval))] if is_complex(v.aval.dtype) else [Var(v.aval)]
        self.eqns.append(Eqn(eqn.prim, inputs, outs, params))
        results, k = [], 0
        for v in eqn.outputs:
            width = 2 if is_complex(v.aval.dtype) else 1
            results.append(tuple(outs[k:k + 2]) if width == 2 else outs[k])
            k += width
        return results

    def sub_program(self, program: Program, in_loop: bool) -> Program:
        """A body or branch lowered with its complex inputs and outputs split into parts."""
        if not has_complex(program):
            return program
        return _Lowering(program, self.lower_bodies, in_loop, split=True).run()[0]

    def bind(self, eqn: Eqn, results: list[Value]) -> None:
        for v, r in zip(eqn.outputs, results):
            self.env[v] = r

    def library(self, eqn: Eqn, args: list[Value]) -> list[Value]:
        """Run the complex primitive through NumPy on the pairs (complex_library)."""
        layout = tuple(isinstance(a, tuple) for a in args)
        inputs = [self.pack(a) if isinstance(a, tuple) else a for a in args]
        outs = self.emit("complex_library", inputs, **library_params(eqn.prim, eqn.params, layout))
        return [self.unpack(o) if is_complex(v.aval.dtype) else o for v, o in zip(eqn.outputs, outs)]

    # -- float helpers ---------------------------------------------------------------------
    def isnan(self, x: Var) -> Var:
        return self.op("isnan", x)

    def not_(self, x: Var) -> Var:
        return self.op("logical_not", x)

    def and_(self, *xs: Var) -> Var:
        out = xs[0]
        for x in xs[1:]:
            out = self.op("logical_and", out, x)
        return out

    def or_(self, *xs: Var) -> Var:
        out = xs[0]
        for x in xs[1:]:
            out = self.op("logical_or", out, x)
        return out

    def select(self, p: Var, a: Var, b: Var) -> Var:
        return self.op("select", p, a, b)

    def nonzero(self, z: tuple) -> Var:
        """C's `re || im`: a NaN part counts as true."""
        zero = self.literal(0.0, z[0])
        return self.or_(self.op("not_equal", z[0], zero), self.op("not_equal", z[1], zero))

    def compare(self, name: str, a: tuple, b: tuple) -> Var:
        """NumPy's CGT/CGE/CLT/CLE: lexicographic, a NaN imaginary part blocks the real test."""
        (ar, ai), (br, bi) = a, b
        strict = "greater" if name.startswith("greater") else "less"
        real_test = self.and_(self.op(strict, ar, br), self.not_(self.isnan(ai)), self.not_(self.isnan(bi)))
        tie = self.and_(self.op("equal", ar, br), self.op(name, ai, bi))
        return self.or_(real_test, tie)


def _pair(x: Value, lw: _Lowering, like: Var) -> tuple:
    """A real value taking part in a complex rule (only select's operands can be mixed)."""
    return x if isinstance(x, tuple) else (x, lw.literal(0.0, like))


# -- rules: (lowering, args, eqn) -> list of results, or None for the library fallback --------

Rule = Callable[[_Lowering, list, Eqn], Union[list, None]]
_RULES: dict[str, Rule] = {}


def rule(*names: str):
    def deco(fn: Rule) -> Rule:
        for n in names:
            _RULES[n] = fn
        return fn
    return deco


@rule("debug_callback")
def _debug_callback(lw, args, eqn):
    """jk.debug.print of complex values: the step itself on the packed pairs (a complex_library
    step would be dropped as unread), unpacked to complex again on the host."""
    inputs = [lw.pack(a) if isinstance(a, tuple) else a for a in args]
    dtypes = tuple(str(v.aval.dtype) if is_complex(v.aval.dtype) else None for v in eqn.inputs)
    return lw.emit("debug_callback", inputs, call=PackedComplex(eqn.params["call"], dtypes))


@rule("add", "subtract")
def _add(lw, args, eqn):
    (ar, ai), (br, bi) = args
    return [(lw.op(eqn.prim, ar, br), lw.op(eqn.prim, ai, bi))]


def _multiply_pairs(lw: _Lowering, a: tuple, b: tuple) -> tuple:
    """NumPy's complex multiply (AVX-512 loop): re = fma(ar, br, -(ai*bi)), im = fma(ar, bi, ai*br)."""
    (ar, ai), (br, bi) = a, b
    re = lw.op("fma", ar, br, lw.op("negative", lw.op("multiply", ai, bi)))
    im = lw.op("fma", ar, bi, lw.op("multiply", ai, br))
    return re, im


@rule("multiply")
def _multiply(lw, args, eqn):
    return [_multiply_pairs(lw, args[0], args[1])]


@rule("square")
def _square(lw, args, eqn):
    return [_multiply_pairs(lw, args[0], args[0])]


@rule("divide")
def _divide(lw, args, eqn):
    """NumPy's complex divide: Smith's algorithm; 0 / 0 divides each part by |b| (inf or nan)."""
    (ar, ai), (br, bi) = args
    abr, abi = lw.op("absolute", br), lw.op("absolute", bi)
    zero = lw.literal(0.0, br)
    big = lw.op("greater_equal", abr, abi)  # |br| >= |bi|: rat = bi / br
    num, den = lw.select(big, bi, br), lw.select(big, br, bi)
    p, q = lw.select(big, ar, ai), lw.select(big, ai, ar)
    rat = lw.op("divide", num, den)
    scl = lw.op("divide", lw.literal(1.0, br), lw.op("add", den, lw.op("multiply", num, rat)))
    re = lw.op("multiply", lw.op("add", p, lw.op("multiply", q, rat)), scl)
    t = lw.op("multiply", p, rat)
    im = lw.op("multiply", lw.select(big, lw.op("subtract", q, t), lw.op("subtract", t, q)), scl)
    both_zero = lw.and_(lw.op("equal", abr, zero), lw.op("equal", abi, zero))
    re = lw.select(both_zero, lw.op("divide", ar, abr), re)
    im = lw.select(both_zero, lw.op("divide", ai, abi), im)
    return [(re, im)]


@rule("reciprocal")
def _reciprocal(lw, args, eqn):
    """NumPy's complex reciprocal (its own Smith-like loop, not 1 / z)."""
    ((ar, ai),) = args
    big = lw.op("less_equal", lw.op("absolute", ai), lw.op("absolute", ar))  # r = ai / ar
    num, den = lw.select(big, ai, ar), lw.select(big, ar, ai)
    r = lw.op("divide", num, den)
    d = lw.op("add", den, lw.op("multiply", num, r))
    one = lw.literal(1.0, ar)
    re = lw.op("divide", lw.select(big, one, r), d)
    im = lw.op("divide", lw.select(big, lw.op("negative", r), lw.literal(-1.0, ar)), d)
    return [(re, im)]


def _product_unfused(lw: _Lowering, a: tuple, b: tuple) -> tuple:
    """NumPy's `nc_prod` (its complex power's products): re = ar*br - ai*bi, im = ar*bi + ai*br,
    each product rounded (no fused multiply-add, unlike the multiply loop)."""
    (ar, ai), (br, bi) = a, b
    return (lw.op("subtract", lw.op("multiply", ar, br), lw.op("multiply", ai, bi)),
            lw.op("add", lw.op("multiply", ar, bi), lw.op("multiply", ai, br)))


def _integer_exponent(lw: _Lowering, v: Var) -> int | None:
    """n when `v` is a constant complex exponent n + 0j (one value, maybe broadcast), |n| < 100:
    the exponents for which NumPy's complex power multiplies instead of calling cpow."""
    c = lw.uniform.get(v)
    if c is None:
        return None
    c = complex(np.asarray(c).reshape(-1)[0])
    if c.imag != 0 or not np.isfinite(c.real) or c.real != np.trunc(c.real):
        return None
    n = c.real
    return int(n) if abs(n) < 100 else None


@rule("power")
def _power(lw, args, eqn):
    """z ** n for a constant integer exponent n + 0j, as NumPy's `nc_pow`: 1 for n = 0 (any z);
    a zero z gives 0 for n > 0 and nan + nanj for n < 0; z itself for n = 1; else products by
    binary powering (`nc_prod`), and for n < 0 one over the result (NumPy's complex divide).
    Any other exponent runs NumPy's power (cpow: the library step)."""
    n = _integer_exponent(lw, eqn.inputs[1])
    if n is None or not isinstance(args[0], tuple):
        return None
    a = args[0]
    zero, one = lw.literal(0.0, a[0]), lw.literal(1.0, a[0])
    if n == 0:
        return [(one, zero)]
    if n == 1:
        result = a
    elif n == 2:
        result = _product_unfused(lw, a, a)
    elif n == 3:
        result = _product_unfused(lw, a, _product_unfused(lw, a, a))
    else:
        m, bit, acc, p = abs(n), 1, (one, zero), a
        while True:
            if m & bit:
                acc = _product_unfused(lw, acc, p)  # from 1 + 0j, as NumPy (1 * z is not z for inf)
            bit <<= 1
            if m < bit:
                break
            p = _product_unfused(lw, p, p)
        result = acc
        if n < 0:
            result = _divide(lw, [(one, zero), result], eqn)[0]
    is_zero = lw.and_(lw.op("equal", a[0], zero), lw.op("equal", a[1], zero))
    at_zero = zero if n > 0 else lw.literal(np.nan, a[0])
    return [(lw.select(is_zero, at_zero, result[0]), lw.select(is_zero, at_zero, result[1]))]


@rule("negative")
def _negative(lw, args, eqn):
    ((ar, ai),) = args
    return [(lw.op("negative", ar), lw.op("negative", ai))]


@rule("conjugate")
def _conjugate(lw, args, eqn):
    ((ar, ai),) = args
    return [(ar, lw.op("negative", ai))]


@rule("absolute")
def _absolute(lw, args, eqn):
    """NumPy's AVX-512 complex absolute: an infinite part wins over a NaN, then a NaN part gives
    NaN, else larger * sqrt(fma(ratio, ratio, 1)) with ratio = smaller / larger (0 when larger
    is 0 or smaller is infinite)."""
    ((ar, ai),) = args
    re, im = lw.op("absolute", ar), lw.op("absolute", ai)
    inf, nan = lw.literal(np.inf, re), lw.literal(np.nan, re)
    re_inf, im_inf = lw.op("equal", re, inf), lw.op("equal", im, inf)
    im = lw.select(re_inf, inf, im)
    re = lw.select(im_inf, inf, re)
    re_ok, im_ok = lw.not_(lw.isnan(re)), lw.not_(lw.isnan(im))
    im = lw.select(re_ok, im, nan)
    re = lw.select(im_ok, re, nan)
    larger, smaller = lw.op("maximum", re, im), lw.op("minimum", im, re)
    divide = lw.not_(lw.or_(lw.op("equal", larger, lw.literal(0.0, re)), lw.op("equal", smaller, inf)))
    ratio = lw.select(divide, lw.op("divide", smaller, larger), lw.literal(0.0, re))
    scale = lw.op("sqrt", lw.op("fma", ratio, ratio, lw.literal(1.0, re)))
    return [lw.op("multiply", scale, larger)]


@rule("sign")
def _sign(lw, args, eqn):
    """NumPy 2's complex sign z / |z| (|z| by hypot), with its cases for nan, inf and 0."""
    ((ar, ai),) = args
    h = lw.op("hypot", ar, ai)
    zero, one, nan = lw.literal(0.0, ar), lw.literal(1.0, ar), lw.literal(np.nan, ar)
    minus_one = lw.literal(-1.0, ar)
    unit_re = lw.select(lw.op("greater", ar, zero), one, minus_one)
    unit_im = lw.select(lw.op("greater", ai, zero), one, minus_one)
    re_inf, im_inf = lw.op("isinf", ar), lw.op("isinf", ai)
    # |z| infinite: both parts infinite -> nan; only re -> (+-1, 0); only im -> (0, +-1).
    inf_re = lw.select(re_inf, lw.select(im_inf, nan, unit_re), zero)
    inf_im = lw.select(re_inf, lw.select(im_inf, nan, zero), unit_im)
    is_zero = lw.op("equal", h, zero)
    re = lw.select(is_zero, zero, lw.op("divide", ar, h))
    im = lw.select(is_zero, zero, lw.op("divide", ai, h))
    h_inf, h_nan = lw.op("isinf", h), lw.isnan(h)
    re = lw.select(h_nan, nan, lw.select(h_inf, inf_re, re))
    im = lw.select(h_nan, nan, lw.select(h_inf, inf_im, im))
    return [(re, im)]


@rule("equal")
def _equal(lw, args, eqn):
    (ar, ai), (br, bi) = args
    return [lw.and_(lw.op("equal", ar, br), lw.op("equal", ai, bi))]


@rule("not_equal")
def _not_equal(lw, args, eqn):
    (ar, ai), (br, bi) = args
    return [lw.or_(lw.op("not_equal", ar, br), lw.op("not_equal", ai, bi))]


@rule(*_COMPARE)
def _ordered(lw, args, eqn):
    return [lw.compare(eqn.prim, args[0], args[1])]


@rule("maximum", "minimum", "fmax", "fmin")
def _max_min(lw, args, eqn):
    """NumPy's complex maximum/minimum keep the first operand when it has a NaN part (NaN
    propagates) or compares >= (<=); fmax/fmin keep it when the second has a NaN part."""
    a, b = args
    order = "greater_equal" if eqn.prim in ("maximum", "fmax") else "less_equal"
    nan_of = b if eqn.prim in ("fmax", "fmin") else a
    keep = lw.or_(lw.isnan(nan_of[0]), lw.isnan(nan_of[1]), lw.compare(order, a, b))
    return [(lw.select(keep, a[0], b[0]), lw.select(keep, a[1], b[1]))]


@rule("isnan", "isinf")
def _is_either(lw, args, eqn):
    ((ar, ai),) = args
    return [lw.or_(lw.op(eqn.prim, ar), lw.op(eqn.prim, ai))]


@rule("isfinite")
def _isfinite(lw, args, eqn):
    ((ar, ai),) = args
    return [lw.and_(lw.op("isfinite", ar), lw.op("isfinite", ai))]


@rule("logical_not")
def _logical_not(lw, args, eqn):
    return [lw.not_(lw.nonzero(args[0]))]


@rule("logical_and", "logical_or", "logical_xor")
def _logical(lw, args, eqn):
    a, b = (lw.nonzero(x) for x in args)
    return [lw.op(eqn.prim, a, b)]


@rule("real")
def _real(lw, args, eqn):
    return [args[0][0]]


@rule("imag")
def _imag(lw, args, eqn):
    return [args[0][1]]


@rule("make_complex")
def _make_complex(lw, args, eqn):
    return [(args[0], args[1])]


@rule("convert")
def _convert(lw, args, eqn):
    (x,) = args
    dst = np.dtype(eqn.params["dtype"])
    if is_complex(dst):
        part = component_dtype(dst)
        if isinstance(x, tuple):
            return [tuple(p if p.aval.dtype == part else lw.op("convert", p, dtype=part) for p in x)]
        re = x if x.aval.dtype == part else lw.op("convert", x, dtype=part)
        return [(re, lw.literal(0.0, re))]
    if dst == np.bool_:
        return [lw.nonzero(x)]
    re = x[0]  # complex -> real drops the imaginary part (NumPy warns: ComplexWarning, at trace time)
    return [re if re.aval.dtype == dst else lw.op("convert", re, dtype=dst)]


@rule("select")
def _select(lw, args, eqn):
    p, a, b = args
    a, b = _pair(a, lw, eqn.inputs[1]), _pair(b, lw, eqn.inputs[2])
    return [(lw.select(p, a[0], b[0]), lw.select(p, a[1], b[1]))]


@rule("where_valid")
def _where_valid(lw, args, eqn):
    """Padding nobody reads (ir/symdim_prims.py), for each part: the mask is real."""
    mask, x = args
    x = _pair(x, lw, eqn.inputs[1])
    return [(lw.op("where_valid", mask, x[0]), lw.op("where_valid", mask, x[1]))]


# reduce_sum has no rule on purpose: NumPy sums a complex array with its own pairwise loop over
# the interleaved parts (4 accumulators per part and blocks of 64 values, where a float sum has 8
# and 128), so a sum of each part alone would round differently. It runs as NumPy's own sum
# (the library fallback); its elementwise producers still fuse into the kernel feeding it.


@rule(*_MOVEMENT)
def _per_part(lw, args, eqn):
    """Movement ops act on each part alone."""
    ((ar, ai),) = args
    return [(lw.op(eqn.prim, ar, **eqn.params), lw.op(eqn.prim, ai, **eqn.params))]


@rule("dynamic_slice", "gather")
def _index_per_part(lw, args, eqn):
    """A window or a gather of a complex array at run-time positions: each part alone (the
    positions, real operands, are shared)."""
    (ar, ai), rest = args[0], args[1:]
    return [(lw.op(eqn.prim, ar, *rest, **eqn.params), lw.op(eqn.prim, ai, *rest, **eqn.params))]


@rule("dynamic_update_slice")
def _update_per_part(lw, args, eqn):
    (xr, xi), (ur, ui), starts = args[0], args[1], args[2:]
    return [(lw.op(eqn.prim, xr, ur, *starts, **eqn.params), lw.op(eqn.prim, xi, ui, *starts, **eqn.params))]


@rule("dot_general")
def _dot_general(lw, args, eqn):
    """A small complex product inside a loop body: NumPy's complex multiply of each pair of
    terms, summed over the contracting axes, as fused float reductions (the real products of
    loop bodies become reductions the same way, passes/loop_dots.py) instead of a library call
    per trip. Outside loops, and above `MAX_WORK` multiply-adds, it stays NumPy's matmul."""
    if not lw.in_loop or not small_dot(eqn):
        return None
    lhs, rhs = eqn.inputs
    (lc, rc), (lb, rb) = eqn.params["contracting"], eqn.params["batch"]
    lfree, rfree = free_dims(lhs.aval.ndim, lc, lb), free_dims(rhs.aval.ndim, rc, rb)
    nb, nl, nr, nc = len(lb), len(lfree), len(rfree), len(lc)
    shape = tuple(eqn.outputs[0].aval.shape) + tuple(lhs.aval.shape[d] for d in lc)
    contract_axes = tuple(range(nb + nl + nr, len(shape)))
    lhs_dims = list(range(nb + nl)) + list(contract_axes)
    rhs_dims = list(range(nb)) + list(range(nb + nl, nb + nl + nr)) + list(contract_axes)
    a = tuple(lw.placed(x, list(lb) + lfree + list(lc), shape, lhs_dims) for x in args[0])
    b = tuple(lw.placed(x, list(rb) + rfree + list(rc), shape, rhs_dims) for x in args[1])
    terms = _multiply_pairs(lw, a, b)
    if not nc:
        return [terms]
    return [tuple(lw.op("reduce_sum", t, axes=contract_axes) for t in terms)]


@rule("concatenate")
def _concatenate(lw, args, eqn):
    res = lw.op("concatenate", *[a[0] for a in args], **eqn.params)
    ims = lw.op("concatenate", *[a[1] for a in args], **eqn.params)
    return [(res, ims)]
