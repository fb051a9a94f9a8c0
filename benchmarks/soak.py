"""Differential soak: thousands of random NumPy programs, each run by plain NumPy and by
`jk.jit` (the LLVM cpu backend and the NumPy reference interpreter); every difference is a
mismatch, written out with a runnable reproducer.

    .venv/bin/python -m benchmarks.soak                      # 10,000 programs, seed 0
    .venv/bin/python -m benchmarks.soak --count 2000 --seed 7
    .venv/bin/python -m benchmarks.soak --show 123 --seed 7  # print program 123 and its reproducer

A program is Python source text (`def f(a0, a1, s0): ...`) plus, per call, argument recipes
(Python expressions that build the arrays and scalars), so a mismatch is reported as a script
anyone can paste. Programs are drawn from seeded generators (`--seed`, program index) and cover
what the issue-7 soak found broken: mixed signedness (uint8..uint64 against int8..int64,
comparisons, iinfo extremes, 2**64-1, -1), weak Python scalars (literals and arguments,
out-of-range ints NumPy rejects or accepts), float16/32/64, where/clip/maximum/minimum with
scalars, signed zeros, inf/nan/huge values in reductions, dynamic sizes (one jitted function
called on a sequence of sizes), threads (`threads` 2 or 3 on arrays big enough to split, and
calls from 4 Python threads at once, 8 for the raising-call race), static arguments that compare
equal, and (family `edges`) byte-swapped ('>f8') and explicitly ordered arguments
through views, copies, gathers, sorts, `*_like`, arithmetic and in-place writes, axes out of
range, negative and repeated, and shapes that do not fit (reshape, broadcasting, indices,
matmul). Every family draws byte-swapped arguments now and then. `--families` restricts the draw (e.g. `--families reduce`); `--show N` with the same
`--seed`/`--families` prints program N and a shrunk reproducer of each of its mismatches.
10,000 programs take 4-8 minutes on a 2-core machine.

The check, per call: same result kind (NumPy scalar vs ndarray), dtype, shape; integers and
bools exact; floats bit-exact where every op is correctly rounded (+ - * / sqrt casts
selections), within a tolerance derived from the program otherwise; NaN positions and infinity
signs equal; the sign of zeros equal except after max/min/clip (NumPy's own answer there depends
on the memory layout); dtypes include the byte order (NumPy keeps a '>f8' argument's order in
copies, views and gathers, and computes native elsewhere). After each call the caller's array
arguments must hold what NumPy left in its own (dtype and bits). When NumPy raises, the jitted
call must raise NumPy's public class or a subclass of it (`issubclass`: AxisError, not just its
ValueError base; "exception-subclass" otherwise); raising where NumPy returns is
"spurious-exception". `UnsupportedOperationError` and `TracerError` (jitkernel's "not compiled") count as
"unsupported", never as a pass or a mismatch. Long float reductions over values whose partial
sums or products can overflow in some order are compared only where both sides are finite
("order-dependent overflow", counted apart): NumPy's own order depends on the layout there.

Programs run in worker subprocesses of up to --chunk programs each (a segfault or hang is
recorded against the program that was running, and the soak continues), with a temporary
JITKERNEL_CACHE_DIR. Results: benchmarks/results/soak-<seed>-<count>.{json,txt}."""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
BACKENDS = ("cpu", "interpret")

# ----------------------------------------------------------------------------- value pools

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
ALL_DTYPES = ["bool"] + INT_DTYPES + FLOAT_DTYPES

# Python int literals: small, each dtype's edges, and values just past them (NumPy 2 rejects
# those in arithmetic with a narrower array and accepts them in comparisons).
INT_LITERALS = [0, 1, -1, 2, 3, 7, -5, 100, 127, 128, -128, -129, 255, 256, 1000, -1000, 32767, 32768,
                -32769, 65535, 65536, 2**31 - 1, -2**31, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, -2**63,
                2**63, 2**64 - 1, -2**63 - 1, 2**64]
SMALL_INTS = [0, 1, -1, 2, 3, 7, -5, 100]
FLOAT_LITERALS = ["0.0", "-0.0", "0.5", "-1.5", "2.0", "3.25", "1e300", "-1e300", "1e-300", "65504.0", "70000.0",
                  "3.4e38", "1e39", "np.inf", "-np.inf", "np.nan", "1e-8", "5e-324"]
NUMPY_SCALARS = ["np.int8(-1)", "np.int8(-128)", "np.uint8(255)", "np.uint64(2**64 - 1)", "np.int64(-2**63)",
                 "np.uint32(2**32 - 1)", "np.int32(7)", "np.int16(-300)", "np.uint16(3)", "np.float16(-0.0)",
                 "np.float32(0.1)", "np.float64(1e300)", "np.float16(65504.0)", "np.float32(-np.inf)",
                 "np.bool_(True)", "np.uint64(5)", "np.int64(-1)"]
_EPS = {"float16": 9.8e-4, "float32": 1.2e-7, "float64": 2.3e-16}
_TOL = {"float16": (1e-2, 1e-2), "float32": (2e-5, 1e-5), "float64": (1e-12, 1e-12)}


def _fmt_scalar(v: Any, kind: str) -> str:
    if kind == "b":
        return "True" if v else "False"
    if kind in "iu":
        return str(int(v))
    dt = np.asarray(v).dtype
    short = str(v)  # the shortest repr for the value's own dtype, where it reads back exactly
    v = float(v)
    if np.isnan(v):
        return "np.nan"
    if np.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    try:
        same = np.asarray(float(short)).astype(dt) == np.asarray(v).astype(dt)
    except ValueError:
        same = False
    return short if same else repr(v)


def array_literal(x: np.ndarray, dtype: str | None = None) -> str:
    """A Python expression that rebuilds `x` exactly (dtype, shape, values, sign of zeros)."""
    dt = dtype or x.dtype.name
    dts = f"np.{dt}" if dtype is None else repr(dt)
    body = ", ".join(_fmt_scalar(v, x.dtype.kind) for v in x.reshape(-1))
    if x.ndim == 1:
        return f"np.array([{body}], dtype={dts})"
    return f"np.array([{body}], dtype={dts}).reshape({x.shape})"


def draw_values(rng: np.random.Generator, dtype: str, shape: tuple, style: str) -> np.ndarray:
    """Random values of `dtype`: 'small' (ints in [-10, 10], floats in [-10, 10]), 'extreme'
    (edges of the dtype mixed in: iinfo min/max, -1, 0, NaN, +-inf, -0.0, huge, tiny), 'full'
    (integers over the whole range), 'unit' (floats in [0.9, 1.1], for long products)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if style == "small":
            x = rng.integers(max(-10, info.min), 10, size=n, endpoint=True).astype(dt)
        else:
            x = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)
            if style == "extreme" and n:
                edges = np.array([v for v in (info.min, info.max, 0, -1, 1, info.max - 1, info.min + 1, 2**31, 2**63)
                                  if info.min <= v <= info.max], dtype=dt)
                picks = rng.random(n) < 0.5
                x[picks] = rng.choice(edges, size=int(picks.sum()))
        return x.reshape(shape)
    if style == "unit":
        return rng.uniform(0.9, 1.1, size=shape).astype(dt)
    if style == "overflow":  # finite values whose sum or product overflows in some orders
        fi = np.finfo(dt)
        pool = np.array([fi.max, -fi.max, fi.max / 2, -fi.max / 2, float(fi.max) ** 0.5, float(fi.tiny) ** 0.5,
                         fi.tiny, 0.0, -0.0, 1.0, -3.0, 1e-3], dtype=dt)
        return rng.choice(pool, size=shape)
    x = np.round(rng.uniform(-10, 10, size=n), int(rng.integers(0, 4))).astype(dt)
    if style in ("extreme", "huge") and n:
        fi = np.finfo(dt)
        specials = [np.nan, np.inf, -np.inf, -0.0, 0.0]
        if style == "huge":
            specials += [fi.max, -fi.max, fi.max / 4, -fi.max / 3, fi.tiny, 1 / fi.max]
        picks = rng.random(n) < 0.3
        x[picks] = rng.choice(np.array(specials, dtype=dt), size=int(picks.sum()))
    return x.reshape(shape)


def wrap_layout(recipe: str, layout: str, ndim: int) -> str:
    """The same values in another memory layout (a view, as a user's slice would give)."""
    if ndim == 0 or layout == "C":
        return recipe
    if layout == "F":
        return f"np.asfortranarray({recipe})"
    if layout == "reversed":
        return f"np.ascontiguousarray({recipe}[{', '.join(['::-1'] * ndim)}])[{', '.join(['::-1'] * ndim)}]"
    if layout == "strided":
        return f"np.repeat({recipe}, 2, axis=-1)[..., ::2]"
    raise AssertionError(layout)


# ----------------------------------------------------------------------------- programs as data

@dataclass
class Program:
    index: int
    family: str
    params: list[str]
    body: list[str]  # lines of the function body, the last one a `return`
    calls: list[list[str]]  # per call: one Python expression per parameter
    mode: str = "single"  # single | dynamic | threads | concurrent | static
    static_argnums: tuple = ()
    threads: int = 0  # jk.config threads for this program (0: leave as is)
    tols: list[dict] = field(default_factory=list)  # per call: rtol, atol, exact, signbit, strict
    max_traces: int = 0  # dynamic mode: the README's promise (0: not checked)
    n_threads: int = 4  # concurrent mode: Python threads calling at once
    repeat: int = 1  # concurrent mode: times each thread makes its calls

    def source(self, name: str = "f") -> str:
        return "\n".join([f"def {name}({', '.join(self.params)}):"] + ["    " + ln for ln in self.body])

    def reproducer(self, backend: str, upto: int | None = None) -> str:
        """A standalone script: the program, its calls (up to the failing one) and a comparison."""
        calls = self.calls if upto is None else self.calls[:upto + 1]
        jit_kw = f", static_argnums={self.static_argnums}" if self.static_argnums else ""
        lines = ["import numpy as np, jitkernel as jk"]
        if self.threads:
            lines.append(f'jk.config.update("threads", {self.threads})')
        lines += [self.source(), f'jf = jk.jit(f, backend="{backend}"{jit_kw})']
        if len(calls) == 1:
            lines.append(f"args = [{', '.join(calls[0])}]")
            lines.append("print('numpy:', repr(f(*args)))\nprint('jit:  ', repr(jf(*args)))")
        else:
            lines.append("calls = [")
            lines += [f"    [{', '.join(c)}]," for c in calls]
            lines.append("]")
            if self.mode == "concurrent":
                lines += ["import threading",
                          "def expect(args):",
                          "    try:\n        return repr(f(*args))\n    except Exception as e:\n        return type(e).__name__",
                          "def got(args):",
                          "    try:\n        return repr(jf(*args))\n    except Exception as e:\n        return type(e).__name__",
                          "want = [expect(a) for a in calls]",
                          "bad = []",
                          f"def worker(t):\n    for _ in range({self.repeat}):\n        for k in range(t, len(calls), {self.n_threads}):",
                          "            g = got(calls[k])\n            if g != want[k]:\n                bad.append((k, g, want[k]))",
                          f"ts = [threading.Thread(target=worker, args=(t,)) for t in range({self.n_threads})]",
                          "[t.start() for t in ts]; [t.join() for t in ts]",
                          "print(len(bad), 'wrong outcomes', bad[:3])"]
            else:
                lines.append("for args in calls:\n    print('numpy:', repr(f(*args)))\n    print('jit:  ', repr(jf(*args)))")
        return "\n".join(lines)


@dataclass
class Var:
    name: str
    values: list  # NumPy's value in each call (None once that call raised)
    exact: bool  # computed with correctly rounded ops only
    minmax: bool = False  # went through max/min/clip (NumPy's sign of zero is layout dependent)
    contiguous: bool = True  # every input it depends on is C-contiguous


def numpy_eval(expr: str, env: dict) -> Any:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eval(expr, {"np": np}, env)


def make_env(params: list[str], call: list[str]) -> dict:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {p: eval(r, {"np": np}) for p, r in zip(params, call)}


# Ops whose result depends on the sign of a zero operand (1 / -0.0 is -inf, copysign, signbit).
_SIGN_EXPOSING = re.compile(r" / | // | % |\*\*|reciprocal|copysign|signbit|arctan2")


class Builder:
    """Grows one elementwise program line by line, evaluating each candidate line with NumPy
    on every call's inputs: lines NumPy rejects everywhere are dropped, lines it rejects for some
    calls end those calls (the jitted call must raise the same), discontinuous ops (comparisons,
    float -> int casts, floor, sign, //, %) only read exactly computed values."""

    def __init__(self, rng: np.random.Generator, params: list[str], calls: list[list[str]],
                 scalar_params: list[str]) -> None:
        self.rng, self.params, self.calls = rng, params, calls
        self.envs = [make_env(params, c) for c in calls]
        self.alive = [True] * len(calls)
        self.raised: list[str | None] = [None] * len(calls)
        self.body: list[str] = []
        self.vars: list[Var] = []
        self.scalar_params = scalar_params
        self.magnitude = 1.0
        self.eps = 0.0
        for p in params:
            vals = [e[p] for e in self.envs]
            if p in scalar_params:
                continue
            contiguous = all(isinstance(v, np.ndarray) and v.flags.c_contiguous and v.dtype.isnative for v in vals)
            self.vars.append(Var(p, vals, True, contiguous=contiguous))
        self.ended = False

    # -- operands
    def pick(self, need_exact: bool = False, kinds: str | None = None) -> Var | None:
        cands = [v for v in self.vars if (v.exact or not need_exact)
                 and (kinds is None or self.kind(v) in kinds)]
        if not cands:
            return None
        if self.rng.random() < 0.5:
            return cands[-1]
        return cands[int(self.rng.integers(0, len(cands)))]

    def kind(self, v: Var) -> str:
        live = [x for x in v.values if x is not None]
        return np.asarray(live[0]).dtype.kind if live else "?"

    def scalar(self, kind: str) -> str:
        r = self.rng.random()
        if self.scalar_params and r < 0.25:
            return str(self.rng.choice(self.scalar_params))
        if r < 0.35:
            return str(self.rng.choice(NUMPY_SCALARS))
        if kind in "iub" and r < 0.85:
            return str(self.rng.choice(INT_LITERALS if self.rng.random() < 0.6 else SMALL_INTS))
        if r < 0.93:
            return str(self.rng.choice(FLOAT_LITERALS))
        return str(self.rng.choice(["True", "False"]))

    def operand(self, need_exact: bool, kind: str) -> tuple[str, Var | None]:
        if self.rng.random() < 0.55:
            v = self.pick(need_exact)
            if v is not None:
                return v.name, v
        return self.scalar(kind), None

    # -- one line
    def candidate(self) -> tuple[str, list[Var | None], bool, bool] | None:
        """(expression, operand vars, exact, minmax) for one random op, or None."""
        rng = self.rng
        x = self.pick()
        if x is None:
            return None
        kx = self.kind(x)
        r = rng.random()
        if r < 0.30:  # arithmetic with another array or a scalar, either side
            op = str(rng.choice(["+", "-", "*", "+", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>"]))
            disc = op in ("//", "%", "&", "|", "^", "<<", ">>")
            if disc and not x.exact:
                return None
            if op == "**":
                b, bv = (str(rng.choice(["2", "3", "0", "-1", "0.5", "2.0", "-2", "1"])), None) if rng.random() < 0.7 \
                    else self.operand(True, kx)
                exact = x.exact and b in ("2", "0", "1", "-1", "0.5", "2.0") and (bv is None)
            elif op in ("<<", ">>"):
                b, bv = (str(rng.choice(["1", "3", "7", "0", "63", "65"])), None) if rng.random() < 0.7 \
                    else self.operand(True, kx)
                exact = True
            else:
                b, bv = self.operand(disc, kx)
                exact = x.exact and (bv is None or bv.exact)
            a, b, av, bv = (x.name, b, x, bv) if rng.random() < 0.7 else (b, x.name, bv, x)
            if op == "**" and av is not x:
                exact = False  # a scalar base: NumPy calls pow (exp2 for 2 ** x), not a fast path
            return f"{a} {op} {b}", [av, bv], exact, False
        if r < 0.48:  # comparisons (mixed signedness, out-of-range Python ints)
            if not x.exact:
                return None
            op = str(rng.choice(["<", "<=", "==", "!=", ">", ">="]))
            b, bv = self.operand(True, kx)
            if bv is not None and not bv.exact:
                return None
            a, b = (x.name, b) if rng.random() < 0.7 else (b, x.name)
            return f"{a} {op} {b}", [x, bv], True, False
        if r < 0.60:  # maximum / minimum / fmax / fmin / copysign
            fn = str(rng.choice(["maximum", "minimum", "maximum", "minimum", "fmax", "fmin", "copysign"]))
            b, bv = self.operand(False, kx)
            exact = x.exact and (bv is None or bv.exact)
            args = (x.name, b) if rng.random() < 0.7 else (b, x.name)
            return f"np.{fn}({args[0]}, {args[1]})", [x, bv], exact, fn != "copysign"
        if r < 0.70:  # where with an array condition, scalar or array branches
            c = self.pick(True, "b")
            cond = c.name if c is not None and rng.random() < 0.5 else None
            deps: list[Var | None] = [c] if cond else []
            if cond is None:
                if not x.exact:
                    return None
                b, bv = self.operand(True, kx)
                cond = f"{x.name} {rng.choice(['>', '<', '==', '>='])} {b}"
                deps = [x, bv]
            t, tv = self.operand(False, kx)
            e, ev = self.operand(False, kx)
            exact = all(v is None or v.exact for v in (tv, ev))
            return f"np.where({cond}, {t}, {e})", deps + [tv, ev], exact, False
        if r < 0.77:  # clip with scalar / None / array bounds
            lo = "None" if rng.random() < 0.25 else self.operand(False, kx)[0]
            hi = "None" if rng.random() < 0.25 else self.operand(False, kx)[0]
            deps = [x] + [v for v in self.vars if v.name in (lo, hi)]
            return f"np.clip({x.name}, {lo}, {hi})", deps, all(v.exact for v in deps), True
        if r < 0.87:  # unary
            fn = str(rng.choice(["-{}", "np.abs({})", "np.square({})", "np.sign({})", "np.floor({})", "np.ceil({})",
                                 "np.trunc({})", "np.rint({})", "np.sqrt({})", "np.isnan({})", "np.isinf({})",
                                 "np.signbit({})", "~{}", "np.logical_not({})", "np.positive({})", "np.reciprocal({})"]))
            disc = any(k in fn for k in ("sign", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "~"))
            if disc and not x.exact:
                return None
            return fn.format(x.name), [x], x.exact, False
        if r < 0.95:  # casts: float -> int only of values in range (NumPy leaves the rest undefined)
            dt = str(rng.choice(ALL_DTYPES + ["int8", "uint8", "float16", "uint64"]))
            if kx == "f" and dt != "bool" and np.dtype(dt).kind in "iu":
                info = np.iinfo(dt)
                with np.errstate(all="ignore"):
                    ok = x.exact and all(v is None or (np.isfinite(v).all() and (np.size(v) == 0 or (
                        float(np.min(v)) > info.min - 1 and float(np.max(v)) < info.max + 1)))
                        for v in x.values)
                if not ok:
                    return None
            if kx == "f" and dt == "bool" and not x.exact:
                return None
            return f"{x.name}.astype(np.{dt})", [x], x.exact, False
        # transcendental functions on clipped inputs: inexact
        fn = str(rng.choice(["np.sin(np.clip({}, -6, 6))", "np.exp(np.clip({}, -4, 4))", "np.tanh({})",
                             "np.log1p(np.abs({}))", "np.cos({})"]))
        if kx not in "f":
            return None
        return fn.format(x.name), [x], False, False

    def add_line(self, raise_ok: float = 0.15) -> bool:
        cand = self.candidate()
        if cand is None:
            return False
        expr, deps, exact, minmax = cand
        if any(d is not None and d.minmax and self.kind(d) == "f" for d in deps) and _SIGN_EXPOSING.search(expr):
            return False  # NumPy's sign of a zero out of max/min/clip depends on the layout: keep it hidden
        values: list = []
        for k, env in enumerate(self.envs):
            if not self.alive[k]:
                values.append(None)
                continue
            try:
                values.append(np.asarray(numpy_eval(expr, env)))
            except Exception as e:  # noqa: BLE001 - NumPy rejects this op for this call
                values.append(e)
        fails = [k for k, v in enumerate(values) if isinstance(v, Exception)]
        if len(fails) == sum(self.alive):  # NumPy rejects it for every call still running
            if self.rng.random() < raise_ok and isinstance(values[fails[0]], (OverflowError, ValueError, TypeError)):
                self.body.append(f"return {expr}")
                self.ended = True
                return True
            return False
        name = f"v{len(self.body)}"
        for k in fails:
            self.alive[k] = False
            values[k] = None
        live = [v for v in values if v is not None]
        if any(v.size > 600_000 for v in live):
            return False
        for k, v in enumerate(values):
            if v is not None:
                self.envs[k][name] = v
        self.body.append(f"{name} = {expr}")
        dv = [d for d in deps if d is not None]
        self.vars.append(Var(name, values, exact, minmax or any(d.minmax for d in dv),
                             all(d.contiguous for d in dv) if dv else True))
        for v in live:
            if v.dtype.kind == "f" and v.size:
                fin = np.abs(v[np.isfinite(v)])
                if fin.size:
                    self.magnitude = max(self.magnitude, float(fin.max()))
                self.eps = max(self.eps, _EPS[v.dtype.name])
        return True

    def grow(self, n_lines: int, raise_ok: float = 0.15) -> None:
        tries = 0
        while len(self.body) < n_lines and not self.ended and tries < 8 * n_lines:
            tries += 1
            self.add_line(raise_ok)

    def finish(self, reduce: bool, reduce_p: float = 0.5) -> tuple[list[str], list[dict]]:
        """End with a return (an optional reduction of the last value); per-call tolerances."""
        if self.ended:
            return self.body, [self.tolerance(None, None, None, k) for k in range(len(self.calls))]
        if not self.body:  # nothing valid: return an input
            self.body.append(f"v0 = {self.vars[0].name}")
            self.vars.append(Var("v0", list(self.vars[0].values), True, contiguous=self.vars[0].contiguous))
        last = self.vars[-1]
        if reduce and self.rng.random() < reduce_p:
            red = self.reduction(last)
            if red is not None:
                expr, name = red
                self.body.append(f"return {expr}")
                return self.body, [self.tolerance(last, name, expr, k) for k in range(len(self.calls))]
        self.body.append(f"return {last.name}")
        return self.body, [self.tolerance(last, None, None, k) for k in range(len(self.calls))]

    def reduction(self, x: Var) -> tuple[str, str] | None:
        rng = self.rng
        live = [v for v in x.values if v is not None]
        if not live:
            return None
        ndim = live[0].ndim
        kind = self.kind(x)
        names = ["sum", "prod", "mean", "max", "min", "var", "std", "argmax", "argmin", "any", "all"]
        name = str(rng.choice(names))
        if name in ("argmax", "argmin", "max", "min", "any", "all") and not x.exact and name not in ("max", "min"):
            return None
        if name in ("argmax", "argmin") and not x.exact:
            return None
        axis = "None" if ndim == 0 or rng.random() < 0.35 else str(int(rng.integers(-ndim, ndim)))
        if ndim >= 2 and rng.random() < 0.15 and name not in ("argmax", "argmin"):
            axis = "(0, 1)"
        kw = [f"axis={axis}"] if axis != "None" or rng.random() < 0.5 else []
        if name not in ("argmax", "argmin") and rng.random() < 0.3:
            kw.append("keepdims=True")
        if name in ("sum", "prod", "mean") and rng.random() < 0.15:
            # float -> int conversion of NaN or out-of-range values is undefined: ints of ints only
            # (and no int mean: NumPy divides in float64 and casts back, undefined near 2**64)
            pool = ["float64", "float32"] + (["int64", "int8", "uint64"] if kind in "biu" and name != "mean" else [])
            kw.append(f"dtype=np.{rng.choice(pool)}")
        if name in ("var", "std") and rng.random() < 0.3:
            kw.append(f"ddof={int(rng.integers(0, 3))}")
        if rng.random() < 0.5:
            return f"np.{name}({x.name}{''.join(', ' + k for k in kw)})", name
        return f"{x.name}.{name}({', '.join(kw)})", name

    def tolerance(self, x: Var | None, red: str | None, expr: str | None, k: int) -> dict:
        """How call k's result is compared (see the module docstring)."""
        src = x if x is not None else (self.vars[-1] if self.vars else None)
        exact = src.exact if src is not None else True
        minmax = src.minmax if src is not None else False
        tol = {"exact": exact, "signbit": not minmax, "strict": True, "rtol": 0.0, "atol": 0.0}
        eps = max(self.eps, 2.3e-16)
        if not exact:
            tol["rtol"], tol["atol"] = max(1e-5, 64 * eps), 64 * eps * self.magnitude
        if red is None or x is None or x.values[k] is None:
            return tol
        v = x.values[k]
        if red in ("max", "min"):
            tol["signbit"] = False
            return tol
        if red in ("argmax", "argmin", "any", "all"):
            return tol
        if v.dtype.kind in "biu" and red in ("sum", "prod") and "dtype=np.float" not in (expr or ""):
            return tol  # exact (wrapping) integer sums and products
        n = self._reduced_count(v, expr or "")
        fin = np.abs(v[np.isfinite(v)]).astype(np.float64) if v.dtype.kind == "f" else np.abs(v.astype(np.float64))
        big = float(fin.max()) if fin.size else 0.0
        out_dt = "float64" if v.dtype.kind in "biu" else v.dtype.name
        for m in re.findall(r"dtype=np\.(\w+)", expr or ""):
            out_dt = m if m.startswith("float") else out_dt
        e = max(_EPS[out_dt], eps if not exact else 0.0, _EPS.get(v.dtype.name, 0.0))
        scale = max(big, self.magnitude if not exact else 0.0, 1.0)
        if red in ("var", "std"):
            scale = scale * scale * 4
        tol["exact"] = False
        tol["rtol"] = max(_TOL[out_dt][0], 64 * e)
        tol["atol"] = max(_TOL[out_dt][1], 8 * (n + 4) * e * scale)
        if red == "std":
            tol["atol"] = float(np.sqrt(tol["atol"]))
            tol["rtol"] = max(tol["rtol"], 1e-3 if out_dt != "float64" else 1e-8)
        tol["strict"] = self._order_independent(v, red, n, x.contiguous)
        return tol

    @staticmethod
    def _reduced_count(v: np.ndarray, expr: str) -> int:
        m = re.search(r"axis=(\(0, 1\)|-?\d+)", expr)
        if not m or v.ndim == 0:
            return max(1, v.size)
        try:
            if m.group(1) == "(0, 1)":
                return max(1, v.shape[0] * v.shape[1])
            return max(1, v.shape[int(m.group(1))])
        except IndexError:  # NumPy raises AxisError for this call: no value to compare
            return 1

    @staticmethod
    def _order_independent(v: np.ndarray, red: str, n: int, contiguous: bool) -> bool:
        """True when the kind of answer (finite / inf / nan) cannot depend on the summation order;
        or when NumPy adds sequentially (fewer than 8 elements, C-contiguous operands), where
        jitkernel promises NumPy's order."""
        if n < 8 and contiguous:
            return True
        if v.dtype.kind != "f":
            return True
        fmax = float(np.finfo(np.float32 if v.dtype == np.float16 and red in ("mean",) else v.dtype).max)
        fin = np.abs(v[np.isfinite(v)]).astype(np.float64)
        big = float(fin.max()) if fin.size else 0.0
        if red in ("sum", "mean"):
            return n * big < fmax / 2
        if red in ("var", "std"):
            return 4 * n * big * big < fmax / 2
        if red == "prod":
            nz = fin[fin > 0]
            small = float(nz.min()) if nz.size else 1.0
            with np.errstate(all="ignore"):
                return bool(np.log(max(big, 1.0)) * n < np.log(fmax) - 1
                            and np.log(min(small, 1.0)) * n > np.log(float(np.finfo(v.dtype).tiny)) + 1)
        return True


# ----------------------------------------------------------------------------- generators

def _shapes(rng: np.random.Generator, n_arrays: int, max_dim: int = 6) -> list[tuple]:
    ndim = int(rng.choice([0, 1, 1, 1, 2, 2, 3]))
    base = tuple(int(rng.integers(0 if rng.random() < 0.05 else 1, max_dim + 1)) for _ in range(ndim))
    out = []
    for _ in range(n_arrays):
        k = ndim if rng.random() < 0.6 else int(rng.integers(0, ndim + 1))
        out.append(tuple(1 if rng.random() < 0.2 else d for d in base[ndim - k:]))
    return out


def _dtype_pool(rng: np.random.Generator, family: str) -> list[str]:
    if family == "mixed_int":
        return [str(rng.choice(["uint8", "uint16", "uint32", "uint64"])),
                str(rng.choice(["int8", "int16", "int32", "int64"])), str(rng.choice(INT_DTYPES + ["bool"]))]
    if family == "float":
        return [str(rng.choice(FLOAT_DTYPES)) for _ in range(3)]
    if family == "reduce":  # mostly floats: overflow, NaN and signed zeros are float matters
        return [str(rng.choice(FLOAT_DTYPES if rng.random() < 0.7 else ALL_DTYPES)) for _ in range(3)]
    return [str(rng.choice(ALL_DTYPES)) for _ in range(3)]


def _array_recipe(rng: np.random.Generator, dtype: str, shape: tuple, family: str, layout: str | None = None) -> str:
    style = {"mixed_int": ["extreme", "full", "small"], "float": ["extreme", "small", "huge"],
             "weak": ["small", "extreme"], "reduce": ["huge", "overflow", "overflow", "extreme", "small", "unit"]}.get(
        family, ["small", "extreme"])
    x = draw_values(rng, dtype, shape, str(rng.choice(style)))
    big_endian = rng.random() < 0.08 and dtype not in ("bool", "int8", "uint8")  # read as values, not native bytes
    rec = array_literal(x, (">" + np.dtype(dtype).str[1:]) if big_endian else None)
    if layout is None:
        layout = str(rng.choice(["C", "C", "C", "F", "reversed", "strided"]))
    return wrap_layout(rec, layout, len(shape))


def _scalar_recipes(rng: np.random.Generator, kind: str, n_calls: int) -> list[str]:
    """A Python scalar argument: the same type in every call, values that vary."""
    if kind == "int":
        pool = INT_LITERALS if rng.random() < 0.5 else SMALL_INTS
        return [str(rng.choice(pool)) for _ in range(n_calls)]
    if kind == "float":
        return [str(rng.choice(FLOAT_LITERALS[:13])) for _ in range(n_calls)]
    if kind == "bool":
        return [str(rng.choice(["True", "False"])) for _ in range(n_calls)]
    t = str(rng.choice(["np.float32", "np.int8", "np.uint64", "np.float16", "np.int64"]))
    vals = ["3", "1", "0"] if "int" in t else ["0.5", "-0.0", "2.0", "np.inf"]
    return [f"{t}({rng.choice(vals)})" for _ in range(n_calls)]


def gen_elementwise(index: int, rng: np.random.Generator, family: str) -> Program:
    """Programs over 1-3 arrays and 0-2 Python scalar arguments, called 1-3 times with new
    values of the same shapes and types (the warm path)."""
    n_arrays = int(rng.integers(1, 4))
    n_scalars = int(rng.choice([0, 0, 1, 2])) if family != "weak" else int(rng.integers(1, 3))
    shapes = _shapes(rng, n_arrays)
    dtypes = _dtype_pool(rng, family)
    rng.shuffle(dtypes)
    n_calls = int(rng.integers(1, 4))
    layouts = [str(rng.choice(["C", "C", "C", "F", "reversed", "strided"])) for _ in range(n_arrays)]
    skinds = [str(rng.choice(["int", "int", "float", "bool", "npscalar"])) for _ in range(n_scalars)]
    sc = [_scalar_recipes(rng, k, n_calls) for k in skinds]
    params = [f"a{i}" for i in range(n_arrays)] + [f"s{i}" for i in range(n_scalars)]
    calls = [[_array_recipe(rng, dtypes[i], shapes[i], family, layouts[i]) for i in range(n_arrays)]
             + [sc[j][c] for j in range(n_scalars)] for c in range(n_calls)]
    b = Builder(rng, params, calls, params[n_arrays:])
    b.grow(int(rng.integers(0, 3)) if family == "reduce" else int(rng.integers(1, 7)))
    body, tols = b.finish(reduce=True, reduce_p=0.9 if family == "reduce" else 0.25)
    return Program(index, family, params, body, calls, tols=tols)


def gen_reduce(index: int, rng: np.random.Generator) -> Program:
    return gen_elementwise(index, rng, "reduce")


def gen_dynamic(index: int, rng: np.random.Generator) -> Program:
    """One jitted function called on a sequence of sizes of one dimension (shared by its
    arguments), so that dynamic shapes engage: values of each call are fresh."""
    n_arrays = int(rng.integers(1, 3))
    fam = str(rng.choice(["mixed_int", "float", "any", "reduce"]))
    dtypes = _dtype_pool(rng, fam)
    rng.shuffle(dtypes)
    seq_kind = rng.random()
    if seq_kind < 0.35:
        sizes = [1, 2, 3, 4, 5]
    elif seq_kind < 0.7:
        sizes = [int(rng.integers(2, 40)) for _ in range(5)]
    else:
        sizes = [int(s) for s in rng.choice([0, 1, 2, 3, 7, 8, 9, 16, 17, 33, 64, 100], size=5)]
    two_d = rng.random() < 0.4
    other = int(rng.integers(1, 5))
    lead = rng.random() < 0.5
    params = [f"a{i}" for i in range(n_arrays)]
    trailing = [i > 0 and rng.random() < 0.3 for i in range(n_arrays)]  # a broadcast operand of fewer dims
    calls = []
    for n in sizes:
        shape = ((n, other) if lead else (other, n)) if two_d else (n,)
        row = []
        for i in range(n_arrays):
            sh = shape[1:] if trailing[i] else shape
            row.append(_array_recipe(rng, dtypes[i], sh, fam, "C"))
        calls.append(row)
    b = Builder(rng, params, calls, [])
    b.grow(int(rng.integers(1, 6)))
    body, tols = b.finish(reduce=True, reduce_p=0.4)
    max_traces = 2 if sizes == [1, 2, 3, 4, 5] and n_arrays == 1 and not two_d else 0
    return Program(index, "dynamic", params, body, calls, mode="dynamic", tols=tols, max_traces=max_traces)


def gen_threads(index: int, rng: np.random.Generator) -> Program:
    """Arrays of 2**18 elements or more (the runtime splits the outer loop), threads 2 or 3."""
    dt = str(rng.choice(["float32", "float64", "int32", "int64", "uint8", "float16"]))
    shapes = [(600, 512), (300_001,), (513, 700), (3, 300, 300)]
    shape = shapes[int(rng.integers(0, len(shapes)))]
    n_arrays = int(rng.integers(1, 3))
    params = [f"a{i}" for i in range(n_arrays)] + ["s0"]
    calls = []
    for c in range(2):
        row = []
        for i in range(n_arrays):
            seed = int(rng.integers(0, 2**31))
            sh = shape if i == 0 or rng.random() < 0.5 else shape[-1:]
            if np.dtype(dt).kind == "f":
                row.append(f"np.random.default_rng({seed}).uniform(-10, 10, {sh}).astype(np.{dt})")
            else:
                lo = -5 if np.dtype(dt).kind == "i" else 0
                row.append(f"np.random.default_rng({seed}).integers({lo}, 100, {sh}).astype(np.{dt})")
        row.append(str(rng.choice(["2", "3", "0.5", "-1"])))
        calls.append(row)
    b = Builder(rng, params, calls, ["s0"])
    b.grow(int(rng.integers(1, 5)), raise_ok=0.0)
    body, tols = b.finish(reduce=True, reduce_p=0.5)
    return Program(index, "threads", params, body, calls, mode="threads", threads=int(rng.choice([2, 3])), tols=tols)


def gen_concurrent(index: int, rng: np.random.Generator) -> Program:
    """One jitted function called from 4 Python threads at once, 3 calls each; some calls raise
    (integer power with a negative exponent) while others must not; shapes may differ per
    thread so that recompiles race."""
    n_calls = 12
    if rng.random() < 0.5:
        # The status-word race (one status word per call): 8 threads, 960 short calls in all, every
        # other one raising (an integer power with a negative exponent); measured on main, 4
        # threads rarely overlap in native code, 8 do.
        dt = str(rng.choice(["int8", "int32", "int64"]))
        params, body = ["a0", "a1"], ["return a0 ** a1"]
        calls = []
        n = int(rng.choice([4, 10, 10, 33]))
        for c in range(16):
            e = draw_values(rng, "int8", (min(n, 8),), "small") % 4
            if c % 2:
                e[int(rng.integers(0, e.size))] = -1
            calls.append([f"np.arange({n}, dtype=np.{dt}) % 5", f"np.resize({array_literal(e.astype(dt))}, {n})"])
        return Program(index, "concurrent", params, body, calls, mode="concurrent", n_threads=8, repeat=60,
                       tols=[{"exact": True, "signbit": True, "strict": True, "rtol": 0, "atol": 0}] * 16)
    fam = str(rng.choice(["mixed_int", "float", "any"]))
    dtypes = _dtype_pool(rng, fam)
    same_shape = rng.random() < 0.5
    shape0 = (int(rng.integers(1, 9)),)
    params = ["a0", "a1", "s0"]
    calls = []
    for c in range(n_calls):
        shape = shape0 if same_shape else (int(rng.integers(1, 9)),)
        calls.append([_array_recipe(rng, dtypes[0], shape, fam, "C"), _array_recipe(rng, dtypes[1], shape, fam, "C"),
                      str(rng.choice(SMALL_INTS))])
    b = Builder(rng, params, calls, ["s0"])
    b.grow(int(rng.integers(1, 5)))
    body, tols = b.finish(reduce=True, reduce_p=0.3)
    return Program(index, "concurrent", params, body, calls, mode="concurrent", tols=tols)


STATIC_BODIES = [
    "return np.full_like(a0, k)",
    "return a0 + np.full((), k)",
    "return a0 * k",
    "return np.where(a0 > 0, k, a0)",
    "return np.maximum(a0, k)",
    "return k - a0",
    "return np.full(3, k) + a0[:1]",
    "return a0.astype(np.float32) + k",
    "return np.clip(a0, k, None)",
    "return a0 / k if k else a0",
    "return np.zeros_like(a0) + k",
]
STATIC_SEQUENCES = [
    ["0.0", "-0.0"], ["-0.0", "0.0"], ["1", "1.0", "True"], ["True", "1", "1.0"], ["0", "False", "0.0", "-0.0"],
    ["np.nan", "np.nan"], ["2", "np.int8(2)", "np.float32(2)"], ["1.0", "np.float16(1.0)", "1"], ["3", "3.0"],
    ["np.float64(-0.0)", "0.0"], ["255", "np.uint8(255)", "255.0"], ["-1", "np.int64(-1)", "-1.0", "np.uint64(2**64 - 1)"],
]


def gen_static(index: int, rng: np.random.Generator) -> Program:
    """A static argument (static_argnums=1) given values that compare equal but differ in type or
    sign: each call must behave as NumPy does for that very value."""
    dt = str(rng.choice(ALL_DTYPES))
    x = draw_values(rng, dt, (int(rng.integers(1, 5)),), "small")
    body = [str(rng.choice(STATIC_BODIES))]
    seq = list(STATIC_SEQUENCES[int(rng.integers(0, len(STATIC_SEQUENCES)))])
    if rng.random() < 0.3:
        seq = seq[::-1]
    calls = [[array_literal(x), s] for s in seq]
    tols = [{"exact": True, "signbit": "maximum" not in body[0] and "clip" not in body[0], "strict": True,
             "rtol": 0, "atol": 0}] * len(calls)
    return Program(index, "static", ["a0", "k"], body, calls, mode="static", static_argnums=(1,), tols=tols)


# Byte order, NumPy's exception classes, spurious and wrong exceptions. Each
# template is a body; `{ax}`, `{ax2}`, `{k}`, `{shape}` are filled in per program.
BYTEORDER_BODIES = [
    # NumPy keeps the argument's dtype (byte order included): views, copies, gathers, sorts
    "return a0", "return a0.T", "return a0[1:]", "return a0[::-1]", "return a0.reshape(-1)", "return a0.ravel()",
    "return a0.flatten()", "return a0.copy()", "return np.copy(a0)", "return np.asarray(a0)", "return np.array(a0)",
    "return np.expand_dims(a0, 0)", "return a0[None]", "return np.swapaxes(a0, 0, -1)",
    "return np.moveaxis(a0, 0, -1)", "return np.squeeze(a0)", "return a0[..., 0]", "return np.flip(a0)",
    "return np.broadcast_to(a0, (2,) + a0.shape)", "return np.sort(a0, axis=-1)", "return a0[np.array([0, -1])]",
    "return a0[a0 > 0]", "return np.take(a0, [0])", "return np.repeat(a0, 2)", "return np.tile(a0, 2)",
    "return np.roll(a0, 1)", "return np.pad(a0, 1)", "return np.unique(a0)", "return np.zeros_like(a0)",
    "return np.ones_like(a0)", "return np.full_like(a0, 3)", "return np.delete(a0, 0)", "return a0.T.reshape(-1)",
    "return np.take_along_axis(a0, np.argsort(a0, axis=-1), axis=-1)", "return np.compress([True], a0, axis=0)",
    # NumPy computes a new native array
    "return a0 + 1", "return -a0", "return a0 * a0", "return a0.sum()", "return a0.sum(axis=0)", "return a0.max(axis=-1)",
    "return a0.mean()", "return np.cumsum(a0)", "return a0 == a0", "return np.abs(a0)", "return a0.argmax()",
    "return a0.astype(np.float64)", "return np.concatenate([a0, a0])", "return np.stack([a0, a0])",
    "return np.where(a0 > 0, a0, 0)", "return np.clip(a0, 0, 3)", "return a0 + a1", "return np.concatenate([a0, a1])",
    "return np.maximum(a0, a1)", "return a0.min(axis=0, keepdims=True)", "return a0[0] if a0.ndim else a0",
    # writes into the (byte-swapped) argument: the caller's array must end as NumPy leaves it
    "a0 += 1\nreturn a0", "a0[0] = 7\nreturn a0.sum()", "a0[...] = 3\nreturn a0", "a0[a0 > 1] = 0\nreturn a0",
    "a0.fill(2)\nreturn a0", "np.copyto(a0, a1)\nreturn a0", "v = a0[1:]\nv *= 2\nreturn a0",
    "a0.T[0] = 1\nreturn a0 * 2", "a0 *= a1\nreturn a0[::-1]", "np.put(a0, [0], [5])\nreturn a0",
    # writes into a copy or a new array of the argument's dtype: still NumPy's byte order
    "v = a0.copy()\nv[0] = 5\nreturn v", "v = np.zeros_like(a0)\nv[...] = a0\nreturn v.T",
    "v = np.sort(a0, axis=-1)\nv += 1\nreturn v",
]
AXIS_BODIES = [
    "return a0.sum(axis={ax})", "return np.prod(a0, axis={ax}, keepdims=True)", "return a0.mean(axis={ax})",
    "return a0.max(axis={ax})", "return np.min(a0, axis={ax})", "return a0.argmax(axis={ax})",
    "return np.argmin(a0, axis={ax})", "return np.any(a0 > 0, axis={ax})", "return a0.all(axis={ax})",
    "return a0.std(axis={ax})", "return np.var(a0, axis={ax})", "return np.cumsum(a0, axis={ax})",
    "return np.cumprod(a0, axis={ax})", "return np.sort(a0, axis={ax})", "return np.argsort(a0, axis={ax})",
    "return np.flip(a0, axis={ax})", "return np.expand_dims(a0, {ax})", "return np.squeeze(a0, axis={ax})",
    "return np.moveaxis(a0, {ax}, {ax2})", "return np.swapaxes(a0, {ax}, {ax2})",
    "return np.concatenate([a0, a0], axis={ax})", "return np.stack([a0, a0], axis={ax})",
    "return np.take(a0, [0], axis={ax})", "return np.diff(a0, axis={ax})", "return np.count_nonzero(a0, axis={ax})",
    "return np.ptp(a0, axis={ax})", "return np.roll(a0, 1, axis={ax})", "return np.repeat(a0, 2, axis={ax})",
    "return np.nansum(a0, axis={ax})", "return np.average(a0, axis={ax})", "return np.median(a0, axis={ax})",
    "return np.transpose(a0, ({ax}, {ax2}))", "return np.sum(a0, axis=({ax}, {ax2}))",
    "return np.max(a0, axis=({ax}, {ax2}), keepdims=True)", "return np.partition(a0, 0, axis={ax})",
    "return np.take_along_axis(a0, np.argsort(a0, axis={ax}), axis={ax})", "return np.flip(a0, axis=({ax}, {ax2}))",
    "return np.cumsum(a0, axis={ax}).sum(axis={ax2})", "return np.mean(a0 * 2, axis=({ax},))",
]
SHAPE_BODIES = [
    "return a0.reshape({shape})", "return np.reshape(a0, {shape})", "return a0.reshape(-1, -1)",
    "return a0 + a1", "return a0[{k}]", "return a0[0, 0, 0, 0]", "return a0[np.array([{k}])]",
    "return np.concatenate([a0, a1])", "return np.stack([a0, a1])", "return a0 @ a1", "return np.dot(a0, a1)",
    "return np.broadcast_to(a0, {shape})", "return np.take(a0, [{k}])", "return np.where(a0 > 0, a0, a1)",
    "return a0.astype(np.int64) ** -1", "return np.zeros({shape})", "return a0[..., {k}]", "return a0[:, {k}]",
    "a0[{k}] = 1\nreturn a0", "a0 += a1\nreturn a0", "a0[...] = a1\nreturn a0", "return np.full({shape}, 1.5) + a0",
    "return np.ones_like(a0).reshape({shape})", "return a0.reshape({shape}).sum(axis=-1)",
    "return np.outer(a0, a1).reshape({shape})", "return np.matmul(a0, a1.T)", "return a0[a1 > 0]",
    "return np.tile(a0, {k})", "return np.repeat(a0, {k})", "return np.take(a0, [{k}], mode='wrap')",
]
BYTEORDER_DTYPES = ["int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "float32", "float64",
                    "bool", "uint8", "int8"]


def _edge_array(rng: np.random.Generator, dtype: str, shape: tuple, order: str) -> str:
    """An array recipe in byte order `order` ('>' non-native on little-endian hosts, '<', '='
    or '' for the plain dtype name), in a random memory layout."""
    x = draw_values(rng, dtype, shape, str(rng.choice(["small", "extreme"])))
    dt = None if not order or np.dtype(dtype).itemsize == 1 else order + np.dtype(dtype).str[1:]
    layout = str(rng.choice(["C", "C", "F", "reversed", "strided"]))
    return wrap_layout(array_literal(x, dt), layout, len(shape))


def gen_edges(index: int, rng: np.random.Generator) -> Program:
    """Byte-swapped arguments through views, copies, gathers, arithmetic and in-place writes
    (result dtypes must carry NumPy's byte order, caller's arrays end as NumPy leaves them);
    axes in and out of range, negative and repeated (AxisError, not just ValueError); shapes
    that do not fit (reshape, broadcasting, indices out of range, matmul)."""
    kind = str(rng.choice(["byteorder", "byteorder", "axis", "shape"]))
    ndim = int(rng.choice([0, 1, 1, 2, 2, 3])) if kind != "byteorder" else int(rng.choice([0, 1, 1, 2, 2, 3]))
    shape = tuple(int(rng.integers(0 if rng.random() < 0.1 else 1, 5)) for _ in range(ndim))
    n_calls = int(rng.integers(1, 3))
    if kind == "byteorder":
        body = str(rng.choice(BYTEORDER_BODIES))
        dts = [str(rng.choice(BYTEORDER_DTYPES)), str(rng.choice(BYTEORDER_DTYPES))]
        orders = [str(rng.choice([">", ">", ">", "<", "="])), str(rng.choice([">", "", ""]))]
        shapes = [shape, shape if rng.random() < 0.8 else shape[1:]]
    else:
        body = str(rng.choice(AXIS_BODIES if kind == "axis" else SHAPE_BODIES))
        dts = [str(rng.choice(["float64", "int64", "float32", "int32", "uint8", "bool"])) for _ in range(2)]
        orders = [str(rng.choice(["", "", "", ">"])) for _ in range(2)]
        other = tuple(int(rng.integers(0, 4)) for _ in range(int(rng.integers(0, 3))))
        shapes = [shape, shape if rng.random() < 0.4 else other]
        axes = [int(rng.integers(-ndim - 2, ndim + 2)) for _ in range(2)]
        if rng.random() < 0.1:
            axes[1] = axes[0]  # repeated axis: ValueError "repeated axis" / "duplicate value in 'axis'"
        size = int(np.prod(shape))
        new_shape = str(rng.choice([f"({size},)", f"({size + 1},)", f"(-1, {max(1, size)})", "(2, -1)", "(0, -1)",
                                    f"({size}, 1, -1)", "-1", "(3, 3)", "(-2,)"]))
        k = int(rng.choice([0, 1, -1, 3, 4, 5, -6, 100]))
        body = body.format(ax=axes[0], ax2=axes[1], shape=new_shape, k=k)
    params = ["a0", "a1"] if "a1" in body else ["a0"]
    calls = [[_edge_array(rng, dts[i], shapes[i], orders[i]) for i in range(len(params))] for _ in range(n_calls)]
    # Float sums, means and products are compared within a tolerance (NumPy's summation order
    # depends on the layout: F-ordered or strided arguments); everything else bit-exact.
    floats = [d for d in dts[:len(params)] if np.dtype(d).kind == "f"]
    reduces = any(f in body for f in ("sum", "prod", "mean", "std", "var", "average", "median", "dot", "@", "matmul"))
    inexact = reduces and bool(floats) or any(f in body for f in ("mean", "std", "var", "average", "median"))
    eps = max([_EPS[d] for d in floats] + [2.3e-16])
    finite = [np.abs(np.asarray(v, np.float64)) for c in calls for v in make_env(params, c).values()
              if np.asarray(v).dtype.kind in "iuf"]
    magnitude = max([1.0] + [float(np.max(x[np.isfinite(x)], initial=0.0)) for x in finite])
    tol = {"exact": not inexact,
           # NumPy's sign of a zero product in a 0-d np.dot depends on the layout (BLAS or not), and
           # of a zero out of max/min/clip too (the module docstring)
           "signbit": not any(f in body for f in ("dot", "@", "matmul", "outer", "clip", "max", "min", "ptp")),
           "strict": True, "rtol": max(1e-5, 64 * eps), "atol": 64 * 64 * eps * magnitude}
    return Program(index, "edges", params, body.split("\n"), calls, tols=[tol] * n_calls)


FAMILIES = [  # (name, weight, generator)
    ("mixed_int", 20, lambda i, r: gen_elementwise(i, r, "mixed_int")),
    ("weak", 15, lambda i, r: gen_elementwise(i, r, "weak")),
    ("float", 15, lambda i, r: gen_elementwise(i, r, "float")),
    ("any", 10, lambda i, r: gen_elementwise(i, r, "any")),
    ("reduce", 15, gen_reduce),
    ("dynamic", 10, gen_dynamic),
    ("threads", 4, gen_threads),
    ("concurrent", 5, gen_concurrent),
    ("static", 6, gen_static),
    ("edges", 12, gen_edges),
]


def generate(seed: int, index: int, families: str = "") -> Program:
    """Program `index` of the soak with `seed` (drawn from the comma-separated `families` only,
    if given): the same program on every machine and run."""
    rng = np.random.default_rng([seed, index])
    chosen = [fam for fam in FAMILIES if not families or fam[0] in families.split(",")]
    if not chosen:
        raise ValueError(f"no family in {families!r}; families: {', '.join(f[0] for f in FAMILIES)}")
    weights = np.array([w for _, w, _ in chosen], dtype=float)
    k = int(rng.choice(len(chosen), p=weights / weights.sum()))
    return chosen[k][2](index, rng)


# ----------------------------------------------------------------------------- the check

@dataclass
class Finding:
    index: int
    family: str
    backend: str
    cls: str  # mismatch class ("dtype", "value", "missing-exception", ...) or "unsupported"
    message: str
    call: int
    reproducer: str = ""
    source: str = ""


def _builtin_base(e: BaseException) -> type:
    return next(t for t in type(e).__mro__ if t.__module__ == "builtins")


def _public_numpy_class(e: BaseException) -> type:
    """The most derived public class of NumPy's exception `e`: its own class where NumPy
    documents it (a builtin, `np.exceptions.AxisError`, `np.linalg.LinAlgError`, ...), else the
    nearest public base (NumPy's private `_UFuncNoLoopError` is only promised as a TypeError).
    The jitted call must raise this class or a subclass of it (issubclass, not the builtin base:
    ValueError where NumPy raises AxisError is a mismatch)."""
    public = {c for c in vars(np.exceptions).values() if isinstance(c, type)} | {np.linalg.LinAlgError}
    return next(t for t in type(e).__mro__ if t.__module__ == "builtins" or t in public)


def _is_unsupported(e: BaseException) -> bool:
    import jitkernel as jk
    return isinstance(e, (jk.UnsupportedOperationError, jk.TracerError))


def _is_limit(e: BaseException, args: list) -> bool:
    """docs/numpy-support.md: Python int arguments of 2**63 or more are rejected (NumPy would take
    them against uint64): a documented limit, counted apart from mismatches."""
    return isinstance(e, OverflowError) and any(
        type(a) is int and not -2**63 <= a < 2**63 for a in args)


NOT_MISMATCH = ("unsupported", "limit", "order-dependent")


def compare(got: Any, exp: Any, tol: dict) -> tuple[str, str] | None:
    """None when `got` matches NumPy's `exp` under `tol`, else (class, message)."""
    if isinstance(exp, tuple):
        if not isinstance(got, tuple) or len(got) != len(exp):
            return "structure", f"expected a tuple of {len(exp)}, got {type(got).__name__}"
        for g, e in zip(got, exp):
            r = compare(g, e, tol)
            if r:
                return r
        return None
    if isinstance(exp, (bool, int, float)) and not isinstance(exp, np.generic):
        exp = np.asarray(exp)[()]
    if isinstance(exp, np.ndarray) and exp.ndim == 0:
        if not isinstance(got, (np.generic, np.ndarray)) or np.ndim(got) != 0:
            return "kind", f"expected a 0-d result, got {type(got).__name__}"
    elif isinstance(exp, np.ndarray):
        if type(got) is not np.ndarray:
            return "kind", f"expected an ndarray, got {type(got).__name__}: {got!r}"
    elif isinstance(exp, np.generic):
        if not isinstance(got, np.generic):
            return "kind", f"expected a NumPy scalar {type(exp).__name__}, got {type(got).__name__}: {got!r}"
    if isinstance(exp, np.ndarray) and exp.ndim == 0 and isinstance(got, np.generic):
        # jitkernel returns every 0-d result as a NumPy scalar, always native (a 0-d '>f8'
        # argument returned as is: docs/numpy-support.md, "0-d results are NumPy scalars").
        exp = exp.astype(exp.dtype.newbyteorder("="))
    if got.dtype != exp.dtype:
        return "dtype", f"dtype {got.dtype.str} != NumPy's {exp.dtype.str}"
    if got.shape != exp.shape:
        return "shape", f"shape {got.shape} != NumPy's {exp.shape}"
    g, e = np.asarray(got), np.asarray(exp)
    if e.dtype.kind in "biu":
        if not np.array_equal(g, e):
            bad = np.argwhere(g != e)
            first = tuple(int(i) for i in bad[0]) if bad.size else ()
            return "value-int", f"{len(bad)} of {e.size} differ; first at {first}: got {g[first]!r}, NumPy {e[first]!r}"
        return None
    g64, e64 = g.astype(np.float64), e.astype(np.float64)
    gnan, enan = np.isnan(g64), np.isnan(e64)
    gfin, efin = np.isfinite(g64), np.isfinite(e64)
    tolerated = 0
    if not tol.get("strict", True):
        # an overflow whose occurrence (and inf - inf) depends on the order of a long sum or
        # product: compare where both sides are finite, count the rest
        keep = gfin & efin | (gnan & enan) | ((g64 == e64) & ~gfin)
        tolerated = int((~keep).sum())
        g64, e64, gnan, enan, gfin, efin = g64[keep], e64[keep], gnan[keep], enan[keep], gfin[keep], efin[keep]
    if not np.array_equal(gnan, enan):
        k = int(np.flatnonzero(gnan != enan)[0])
        return "nan", f"NaN positions differ; first: got {g64.reshape(-1)[k]!r}, NumPy {e64.reshape(-1)[k]!r}"
    inf_e, inf_g = np.isinf(e64), np.isinf(g64)
    if not np.array_equal(inf_e, inf_g) or not np.array_equal(g64[inf_e], e64[inf_e]):
        k = int(np.flatnonzero((inf_e != inf_g) | (inf_e & (g64 != e64)))[0])
        return "inf", f"infinities differ; first: got {g64.reshape(-1)[k]!r}, NumPy {e64.reshape(-1)[k]!r}"
    fin = efin & gfin
    with np.errstate(all="ignore"):
        err = np.abs(g64 - e64)
        if tol.get("exact", True):
            bad = fin & (g64 != e64)
        else:
            bad = fin & ~(err <= tol["atol"] + tol["rtol"] * np.abs(e64))
    if bad.any():
        k = tuple(int(i) for i in np.argwhere(bad)[0])
        how = "bit-exact" if tol.get("exact", True) else f"rtol={tol['rtol']:.3g} atol={tol['atol']:.3g}"
        return "value-float", (f"{int(bad.sum())} of {e.size} {e.dtype} elements differ ({how}); first at {k}: "
                               f"got {g64[k]!r}, NumPy {e64[k]!r}")
    if tol.get("signbit", True):
        zeros = fin & (e64 == 0) & (g64 == 0)
        if not np.array_equal(np.signbit(g64[zeros]), np.signbit(e64[zeros])):
            return "signed-zero", "sign of zero differs: got " + repr(g64[zeros][:4]) + ", NumPy " + repr(e64[zeros][:4])
    if tolerated:
        return "order-dependent", f"{tolerated} elements overflow differently (inf/nan vs finite) in a long reduction"
    return None


def _expected(f: Any, args: list) -> tuple[Any, BaseException | None]:
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(*args), None
    except Exception as e:  # noqa: BLE001 - the jitted call must raise the same builtin type
        return None, e


def _outcome(jf: Any, args: list, expected: Any, exc: BaseException | None, tol: dict) -> tuple[str, str] | None:
    """None on a match; ("unsupported" | "limit", why) or (mismatch class, message) otherwise."""
    try:
        got = jf(*args)
    except Exception as e:  # noqa: BLE001 - compared with what NumPy did
        if _is_unsupported(e):
            return "unsupported", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        if exc is not None and isinstance(e, _public_numpy_class(exc)):
            return None
        if _is_limit(e, args):
            return "limit", f"{type(e).__name__}: {str(e)[:200]}"
        if exc is not None and isinstance(e, _builtin_base(exc)):  # e.g. ValueError where NumPy raises AxisError
            return "exception-subclass", (f"NumPy raised {_public_numpy_class(exc).__name__}, jit raised "
                                          f"{type(e).__name__} (only its builtin base): {str(e)[:200]}")
        if exc is not None:
            return "exception-type", f"NumPy raised {type(exc).__name__}, jit raised {type(e).__name__}: {str(e)[:200]}"
        return "spurious-exception:" + type(e).__name__, f"NumPy returned a result, jit raised {type(e).__name__}: " \
                                                          f"{str(e)[:300]}"
    if exc is not None:
        return "missing-exception", f"NumPy raised {type(exc).__name__} ({str(exc)[:120]}), jit returned {got!r:.200}"
    try:
        return compare(got, expected, tol)
    except Exception as e:  # noqa: BLE001 - a harness bug: say so rather than hide it
        return "harness-error", f"{type(e).__name__}: {e}"


def _caller_arrays(got: list, numpy_left: list, params: list[str]) -> tuple[str, str] | None:
    """The caller's array arguments after the jitted call against NumPy's after its call: same
    dtype (byte order included) and the same bits (a write NumPy makes must land, in the caller's
    byte order; one NumPy does not make must not)."""
    for name, g, e in zip(params, got, numpy_left):
        if not isinstance(e, np.ndarray):
            continue
        if g.dtype != e.dtype:
            return "caller-array", f"argument {name}: dtype {g.dtype.str} after the call, NumPy's {e.dtype.str}"
        if g.tobytes() != e.tobytes():
            bad = np.flatnonzero(np.frombuffer(g.tobytes(), np.uint8) != np.frombuffer(e.tobytes(), np.uint8))
            k = int(bad[0]) // max(1, e.itemsize)
            return "caller-array", (f"argument {name} after the call differs from NumPy's at flat index {k}: "
                                    f"{g.reshape(-1)[k]!r} vs NumPy's {e.reshape(-1)[k]!r}")
    return None


def _compile_source(prog: Program) -> Any:
    ns: dict = {"np": np}
    exec(compile(prog.source(), f"<soak program {prog.index}>", "exec"), ns)  # noqa: S102 - generated code
    return ns["f"]


class _CompileCounter:
    """Counts LLVM compiles while a dynamic-shapes program runs. The README's promise is about
    compiled kernels ("a third size reuses them"): a shape-generic reuse traces and fuses the
    new size again but compiles nothing, so traces are not what is bounded. The interpret
    backend compiles nothing at all and is not counted."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, event: Any) -> None:
        import jitkernel as jk
        if isinstance(event, jk.events.CompileEvent):
            self.count += 1


def run_program(prog: Program, backends: tuple = BACKENDS) -> list[Finding]:
    """Run `prog` with NumPy and jitted on each backend; one Finding per mismatch or unsupported
    call (the first per backend: later calls of the same function repeat it)."""
    import jitkernel as jk
    f = _compile_source(prog)
    argsets = [list(make_env(prog.params, c).values()) for c in prog.calls]
    expected = [_expected(f, a) for a in argsets]
    findings = []
    old_threads = jk.config.threads
    if prog.threads:
        jk.config.update("threads", prog.threads)
    try:
        for backend in backends:
            jf = jk.jit(f, backend=backend, static_argnums=prog.static_argnums)
            if prog.mode == "concurrent":
                if prog.repeat > 1:  # the status race, not 8 simultaneous cold compiles
                    _outcome(jf, argsets[0], *expected[0], prog.tols[0])
                res = _run_concurrent(jf, argsets, expected, prog.tols, prog.n_threads,
                                      prog.repeat if backend == "cpu" else 1)
            else:
                counter = _CompileCounter()
                unsub = jk.events.subscribe(counter) if prog.max_traces and backend == "cpu" else None
                # Fresh arguments per backend: after the call they must hold what NumPy left in its own.
                fresh = [list(make_env(prog.params, c).values()) for c in prog.calls]
                try:
                    # (after a raise, NumPy has made the writes before it and a jitted call none: not compared)
                    res = [(k, _outcome(jf, fresh[k], *expected[k], prog.tols[k])
                            or (_caller_arrays(fresh[k], argsets[k], prog.params) if expected[k][1] is None else None))
                           for k in range(len(argsets))]
                finally:
                    if unsub:
                        unsub()
                # a byte-swapped argument traces apart from a native one (the function may read its
                # byte order; docs/numpy-support.md "Byte order"): one more trace per order pattern
                orders = {tuple(a.dtype.isnative for a in args if isinstance(a, np.ndarray)) for args in argsets}
                allowed = prog.max_traces + len(orders) - 1
                if prog.max_traces and counter.count > allowed and all(r is None for _, r in res):
                    res.append((len(argsets) - 1, ("recompile-count", f"sizes 1..5 compiled {counter.count} times "
                                                   f"(README: at most {prog.max_traces}, plus one per further "
                                                   "byte-order pattern)")))
            for k, r in res:
                if r is not None:
                    findings.append(Finding(prog.index, prog.family, backend, r[0], r[1], k))
                    break
    finally:
        jk.config.update("threads", old_threads)
    return findings


def _run_concurrent(jf: Any, argsets: list, expected: list, tols: list, n_threads: int = 4,
                    repeat: int = 1) -> list:
    """Calls split over `n_threads` threads that start together, each making its calls `repeat`
    times; the first bad outcome per call, in call order."""
    results: list = [None] * len(argsets)
    barrier = threading.Barrier(n_threads)

    def worker(t: int) -> None:
        try:
            barrier.wait(timeout=30)
        except threading.BrokenBarrierError:
            pass
        for _ in range(repeat):
            for k in range(t, len(argsets), n_threads):
                r = _outcome(jf, argsets[k], *expected[k], tols[k])
                if r is not None and results[k] is None:
                    results[k] = ("concurrent-" + r[0]) if r[0] not in NOT_MISMATCH else r[0], r[1]

    threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if any(t.is_alive() for t in threads):
        return [(0, ("concurrent-hang", "a thread did not finish within 120 s"))]
    return list(enumerate(results))


def shrink(prog: Program, finding: Finding) -> Program:
    """A smaller program with the same mismatch class on the same backend: only the calls up to
    the failing one (all of them where history matters), and the shortest prefix of the body
    whose last value already shows the difference, with the lines it does not need removed."""
    calls = prog.calls[:finding.call + 1] if prog.mode in ("dynamic", "static") else [prog.calls[finding.call]]
    tols = prog.tols[:finding.call + 1] if prog.mode in ("dynamic", "static") else [prog.tols[finding.call]]
    base = Program(prog.index, prog.family, prog.params, prog.body, calls, prog.mode, prog.static_argnums,
                   prog.threads, tols, prog.max_traces, prog.n_threads, prog.repeat)
    if prog.mode == "concurrent" or not _reproduces(base, finding):
        return prog
    if not all(re.match(r"v\d+ = ", ln) for ln in prog.body[:-1]):
        return base  # statements (in-place writes) the line shrinker does not model
    assigns = [ln for ln in prog.body[:-1]]
    for j in range(len(assigns)):
        name = assigns[j].split(" = ", 1)[0]
        body = _needed(assigns[:j + 1], name) + [f"return {name}"]
        cand = Program(prog.index, prog.family, prog.params, body, calls, prog.mode, prog.static_argnums, prog.threads,
                       [dict(t, exact=t["exact"], strict=True) for t in tols], 0)
        if _reproduces(cand, finding):
            return _drop_unused(cand, finding)
    body = _needed(assigns, None, prog.body[-1]) + [prog.body[-1]]
    small = Program(prog.index, prog.family, prog.params, body, calls, prog.mode, prog.static_argnums, prog.threads,
                    tols, prog.max_traces)
    return _drop_unused(small, finding) if _reproduces(small, finding) else base


def _drop_unused(prog: Program, finding: Finding) -> Program:
    """The program without the parameters its body never reads (and their arguments)."""
    if prog.static_argnums:
        return prog
    used = [k for k, p in enumerate(prog.params) if any(re.search(rf"\b{p}\b", ln) for ln in prog.body)]
    if len(used) == len(prog.params) or not used:
        return prog
    cand = Program(prog.index, prog.family, [prog.params[k] for k in used], prog.body,
                   [[c[k] for k in used] for c in prog.calls], prog.mode, prog.static_argnums, prog.threads,
                   prog.tols, prog.max_traces)
    return cand if _reproduces(cand, finding) else prog


def _needed(assigns: list[str], name: str | None, ret: str | None = None) -> list[str]:
    """The assignments `name` (or the return expression `ret`) depends on, in order."""
    need = {name} if name else set(re.findall(r"\bv\d+\b", ret or ""))
    keep = []
    for ln in reversed(assigns):
        lhs, rhs = ln.split(" = ", 1)
        if lhs in need:
            keep.append(ln)
            need |= set(re.findall(r"\bv\d+\b", rhs))
    return keep[::-1]


def _reproduces(prog: Program, finding: Finding) -> bool:
    """Whether `prog` shows `finding`'s class on its backend (its message then becomes the
    smaller program's)."""
    try:
        fs = run_program(prog, (finding.backend,))
    except Exception:  # noqa: BLE001
        return False
    for x in fs:
        if x.cls == finding.cls:
            prog.shrunk_message = x.message  # type: ignore[attr-defined]
            return True
    return False


# ----------------------------------------------------------------------------- worker and driver

def run_range(seed: int, start: int, stop: int, out: Any = None, do_shrink: bool = True, families: str = "") -> dict:
    """Run programs [start, stop) in this process; write one JSON line per program to `out`."""
    warnings.simplefilter("ignore")
    summary = {"programs": 0, "findings": []}
    for i in range(start, stop):
        if out is not None:
            out.write(json.dumps({"start": i}) + "\n")
            out.flush()
        try:
            prog = generate(seed, i, families)
            fs = run_program(prog)
        except Exception as e:  # noqa: BLE001 - a harness bug, reported as such
            prog = Program(i, "?", [], ["return None"], [[]])
            fs = [Finding(i, prog.family, "-", "harness-error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}", 0)]
        for fd in fs:
            if fd.cls in NOT_MISMATCH:  # counted, not reported with a reproducer
                fd.source = prog.source()
                continue
            small = shrink(prog, fd) if do_shrink and fd.cls not in NOT_MISMATCH + ("harness-error",) else prog
            upto = None if small.mode not in ("dynamic", "static") else len(small.calls) - 1
            fd.reproducer = small.reproducer(fd.backend, upto) if fd.backend != "-" else prog.reproducer("cpu")
            if small is not prog and getattr(small, "shrunk_message", fd.message) != fd.message:
                fd.message = f"{small.shrunk_message}  [as generated: {fd.message}]"
            fd.source = small.source()
        summary["programs"] += 1
        summary["findings"] += [asdict(x) for x in fs]
        if out is not None:
            out.write(json.dumps({"done": i, "findings": [asdict(x) for x in fs]}) + "\n")
            out.flush()
    return summary


def _worker_main(args: argparse.Namespace) -> None:
    with open(args.out, "a") as out:
        run_range(args.seed, args.start, args.stop, out, not args.no_shrink, args.families)


def drive(seed: int, count: int, chunk: int, hang_s: float, shrink_: bool, quiet: bool, families: str = "") -> dict:
    """Run `count` programs in worker subprocesses; a dead or stuck worker is recorded as a crash
    or hang of the program it was running, and a new worker continues after it."""
    cache = tempfile.mkdtemp(prefix="jitkernel-soak-cache-")
    log = tempfile.NamedTemporaryFile("w+", prefix="soak-", suffix=".jsonl", delete=False)
    log.close()
    env = dict(os.environ, JITKERNEL_CACHE_DIR=cache, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    findings: list[dict] = []
    done: set[int] = set()
    t0 = time.perf_counter()
    nxt = 0
    try:
        while nxt < count:
            stop = min(count, nxt + chunk)
            cmd = [sys.executable, "-m", "benchmarks.soak", "--worker", "--seed", str(seed), "--start", str(nxt),
                   "--stop", str(stop), "--out", log.name, "--families", families] + (["--no-shrink"] if not shrink_ else [])
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            last_size, last_change = -1, time.monotonic()
            while proc.poll() is None:
                time.sleep(0.2)
                size = os.path.getsize(log.name)
                if size != last_size:
                    last_size, last_change = size, time.monotonic()
                elif time.monotonic() - last_change > hang_s:
                    proc.kill()
                    proc.wait()
                    break
            started, finished = None, None
            new_findings = []
            with open(log.name) as fh:
                for line in fh:
                    rec = json.loads(line)
                    if "start" in rec:
                        started = rec["start"]
                    elif rec["done"] not in done:
                        done.add(rec["done"])
                        finished = rec["done"]
                        new_findings += rec["findings"]
            findings += new_findings
            if not quiet:
                for fd in new_findings:
                    if fd["cls"] not in NOT_MISMATCH:
                        print(f"  #{fd['index']} {fd['family']} {fd['backend']}: {fd['cls']}: {fd['message'][:150]}",
                              flush=True)
            if started is not None and started not in done and (finished is None or started > finished):
                how = "hang" if proc.returncode in (-9, None) else f"crash (exit {proc.returncode})"
                try:
                    prog = generate(seed, started, families)
                except Exception:  # noqa: BLE001 - the generator itself failed: a harness bug
                    prog, how = Program(started, "?", [], ["return None"], [[]]), "harness-error"
                stderr = (proc.stderr.read() if proc.stderr else "")[-1500:]
                findings.append(asdict(Finding(started, prog.family, "?", how.split(" ")[0], f"{how}\n{stderr}", 0,
                                               prog.reproducer("cpu"), prog.source())))
                if not quiet:
                    print(f"  #{started} {prog.family}: {how}", flush=True)
                done.add(started)
                nxt = started + 1
            else:
                nxt = stop
            if proc.stderr:
                proc.stderr.close()
            if not quiet:
                print(f"[{len(done)}/{count}] {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        os.unlink(log.name)
    return {"seed": seed, "count": count, "families": families or "all", "programs": len(done),
            "seconds": time.perf_counter() - t0, "findings": findings}


def summarize(result: dict) -> str:
    fs = result["findings"]
    mism = [f for f in fs if f["cls"] not in NOT_MISMATCH]
    unsup = [f for f in fs if f["cls"] in NOT_MISMATCH]
    by_cls: dict[str, int] = {}
    for f in mism:
        key = f"{f['cls']} [{f['family']}, {f['backend']}]"
        by_cls[key] = by_cls.get(key, 0) + 1
    progs_bad = len({f["index"] for f in mism})
    lines = [f"soak: seed {result['seed']}, families {result.get('families', 'all')}, {result['programs']} programs, {result['seconds']:.0f} s "
             f"({1000 * result['seconds'] / max(1, result['programs']):.0f} s per 1,000), "
             f"{progs_bad} programs with a mismatch ({len(mism)} findings), "
             f"{len(unsup)} unsupported or documented-limit calls ({len({f['index'] for f in unsup})} programs)"]
    programs_by_cls: dict[str, set] = {}
    for f in mism:
        programs_by_cls.setdefault(f["cls"], set()).add(f["index"])
    lines.append("programs per mismatch class:")
    for k, v in sorted(programs_by_cls.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(v):5d}  {k}")
    lines.append("findings per class [family, backend]:")
    for k, v in sorted(by_cls.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {v:5d}  {k}")
    unsup_kinds: dict[str, int] = {}
    for f in unsup:
        msg = f["cls"] + ": " + re.sub(r"\d+", "N", f["message"])[:90]
        unsup_kinds[msg] = unsup_kinds.get(msg, 0) + 1
    if unsup_kinds:
        lines.append("unsupported (jitkernel says so) and documented limits:")
        for k, v in sorted(unsup_kinds.items(), key=lambda kv: -kv[1])[:12]:
            lines.append(f"  {v:5d}  {k}")
    return "\n".join(lines)


def write_results(result: dict, path_base: str) -> None:
    """`<base>.json`: every finding (compact); `<base>.txt`: the summary, then one reproducer per
    mismatching program and class (the backends that show it named together)."""
    os.makedirs(os.path.dirname(path_base), exist_ok=True)
    slim = dict(result, findings=[{k: v for k, v in f.items() if k != "source"} for f in result["findings"]])
    with open(path_base + ".json", "w") as fh:  # the reproducer holds the source
        json.dump(slim, fh, separators=(",", ":"))
    groups: dict[tuple, list[dict]] = {}
    for f in result["findings"]:
        if f["cls"] not in NOT_MISMATCH:
            groups.setdefault((f["index"], f["cls"]), []).append(f)
    with open(path_base + ".txt", "w") as fh:
        fh.write(summarize(result) + "\n\n")
        for (index, cls), fs in groups.items():
            f = fs[0]
            backends = ", ".join(x["backend"] for x in fs)
            fh.write(f"### program {index} ({f['family']}), backend {backends}: {cls}\n{f['message']}\n\n"
                     f"{f['reproducer']}\n\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=10_000, help="programs to run (default 10,000)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    p.add_argument("--chunk", type=int, default=1000, help="programs per worker process (default 1,000)")
    p.add_argument("--hang", type=float, default=120.0, help="seconds without progress counted as a hang")
    p.add_argument("--no-shrink", action="store_true", help="report mismatching programs as generated")
    p.add_argument("--out-base", default=None, help="results path without extension "
                   "(default benchmarks/results/soak-<seed>-<count>)")
    p.add_argument("--families", default="", help="comma-separated families to draw from (default: all): "
                   + ", ".join(f[0] for f in FAMILIES))
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--show", type=int, default=None, help="print program N and run it in this process")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--stop", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _worker_main(args)
        return 0
    if args.show is not None:
        os.environ.setdefault("JITKERNEL_CACHE_DIR", tempfile.mkdtemp(prefix="jitkernel-soak-cache-"))
        prog = generate(args.seed, args.show, args.families)
        print(f"# program {args.show} ({prog.family}, mode {prog.mode})\n{prog.reproducer('cpu')}\n")
        res = run_range(args.seed, args.show, args.show + 1, families=args.families)
        print("no finding" if not res["findings"] else f"{len(res['findings'])} finding(s)")
        for fd in res["findings"]:
            print(f"{fd['backend']}: {fd['cls']}: {fd['message']}\n--- reproducer:\n{fd['reproducer']}\n")
        return 0
    result = drive(args.seed, args.count, args.chunk, args.hang, not args.no_shrink, args.quiet, args.families)
    tag = f"-{args.families.replace(',', '+')}" if args.families else ""
    base = args.out_base or os.path.join(RESULTS, f"soak-{args.seed}-{args.count}{tag}")
    write_results(result, base)
    print(summarize(result))
    print(f"results: {base}.txt, {base}.json")
    return 0 if not [f for f in result["findings"] if f["cls"] not in NOT_MISMATCH] else 1


if __name__ == "__main__":
    sys.exit(main())
