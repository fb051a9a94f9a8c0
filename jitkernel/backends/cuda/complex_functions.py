"""Complex power, trigonometric and hyperbolic functions and their inverses,
log10/log2/log1p/expm1/exp2 and rint on the CUDA backend (docs/gpu.md, "Complex numbers on
the GPU").

Each kernel computes what NumPy 2 computes for complex64/complex128 on this platform, branch
for branch, so that finite results agree within a few ulps and the special values (NaN,
infinities, the sign of every zero) are NumPy's:

- `sinh`, `cosh`, `tanh`: NumPy calls the C library's csinh/ccosh/ctanh (npy_csinh ...); the
  kernels follow glibc's algorithms: C99 Annex G special cases, exp(x) scaled in steps of
  exp(t) where it would overflow while the product does not, tanh's denominator without
  sinh(x)^2 when it is negligible, 4 sin(y) cos(y) / exp(2x) for large |x|.
- `cos`, `tan`: Annex G's definitions, as glibc: cos(z) = cosh(iz), tan(z) = -i tanh(iz)
  (iz = -y + ix); `sin`: glibc's csin, csinh's algorithm with the parts swapped (its special
  cases differ from -i sinh(iz): sin(+-inf + i inf) = NaN + i inf).
- `arcsinh`, `arcsin`, `arccos`, `arccosh`: glibc's casinh/casin/cacos/cacosh around its
  __kernel_casinh (eight regions of the first quadrant, each without cancellation; clog and
  csqrt of complex_ops nested); `arctanh`, `arctan`: glibc's catanh/catan (1 - |z|^2 by
  __x2y2m1 near |z| = 1, complex_ops).
- `log10`, `log2`: NumPy's nc_log10/nc_log2: clog (complex_ops) with both parts multiplied by
  log10(e) / log2(e); `exp2`: nc_exp2, cexp of both parts times ln 2.
- `log1p`: NumPy's nc_log1p: (log(hypot(x + 1, y)), atan2(y, x + 1)); `expm1`: nc_expm1:
  (expm1(x) cos(y) - 2 sin(y/2)^2, exp(x) sin(y)); `rint`: nc_rint, each part rounded.
  NumPy (and glibc) round every product: products that feed an add are
  `__fmul_rn`/`__dmul_rn`, never an FMA.
- `power`: npy_cpow: a zero exponent gives 1, a zero base 0 (real exponent part > 0) or NaN,
  integral real exponents in (-100, 100) with a zero imaginary part by repeated squaring
  (1, 2, 3 unrolled; a negative exponent as 1 / z**n with NumPy's cdiv), anything else the C
  library's cpow: glibc's cexp(b * clog(a)) with C99's complex product (the NaN recovery of
  libgcc's __muldc3).
"""
from __future__ import annotations

import itertools

import numpy as np

from ...errors import UnsupportedOperationError
from ...fusion.kernel_ir import KernelProgram, LibraryCall
from . import ctype
from .complex_glibc import CEXP, CLOG, CSQRT, glibc_constants
from .launch import Launch

# Parts (s, c) = (sin y, cos y) as glibc's hyperbolic functions take them: y itself and 1 when
# |y| is below the smallest normal (sincos of a subnormal would round the same, but underflow).
_SINCOS_Y = "if (fabs{f}(y) > {MIN}) { sincos{f}(y, &s, &c); } else { s = y; c = {ONE}; }"

# exp(|x|) * (c, s) where exp(|x|) alone overflows: glibc's steps of exp(t), t = TH.
_SCALED = """
{T} rx = fabs{f}(x) - {TH};
const {T} et = exp{f}(({T}){TH});
s = s * (et / {TWO}); c = c * (et / {TWO});
if (rx > {TH}) { rx -= {TH}; s = s * et; c = c * et; }
if (rx > {TH}) { re = {MAX} * c; im = {MAX} * s; }
else { const {T} e = exp{f}(rx); re = e * c; im = e * s; }
"""

_CSINH = """
const bool neg = signbit(x);
if (isfinite(x)) {
  if (isfinite(y)) {
    {T} s, c;
    """ + _SINCOS_Y + """
    if (neg) c = -c;
    if (fabs{f}(x) > {TH}) {""" + _SCALED + """}
    else { re = sinh{f}(fabs{f}(x)) * c; im = cosh{f}(fabs{f}(x)) * s; }
  } else if (x == {ZERO}) { re = copysign{f}({ZERO}, x); im = y - y; }
  else { re = {NAN}; im = {NAN}; }
} else if (isinf(x)) {
  if (isfinite(y) && y != {ZERO}) {
    {T} s, c;
    """ + _SINCOS_Y + """
    re = copysign{f}({INF}, c); im = copysign{f}({INF}, s);
    if (neg) re = -re;
  } else if (y == {ZERO}) { re = copysign{f}({INF}, x); im = y; }
  else { re = {INF}; im = y - y; }
} else { re = {NAN}; im = (y == {ZERO}) ? y : {NAN}; }
"""

_CCOSH = """
if (isfinite(x)) {
  if (isfinite(y)) {
    {T} s, c;
    """ + _SINCOS_Y + """
    if (fabs{f}(x) > {TH}) {
      if (signbit(x)) s = -s;""" + _SCALED + """}
    else { re = cosh{f}(x) * c; im = sinh{f}(x) * s; }
  } else { im = (x == {ZERO}) ? {ZERO} : {NAN}; re = y - y; }
} else if (isinf(x)) {
  if (isfinite(y) && y != {ZERO}) {
    {T} s, c;
    """ + _SINCOS_Y + """
    re = copysign{f}({INF}, c); im = copysign{f}({INF}, s) * copysign{f}({ONE}, x);
  } else if (y == {ZERO}) { re = {INF}; im = y * copysign{f}({ONE}, x); }
  else { re = {INF}; im = y - y; }
} else { re = {NAN}; im = (y == {ZERO}) ? y : {NAN}; }
"""

_CTANH = """
if (!isfinite(x) || !isfinite(y)) {
  if (isinf(x)) {
    re = copysign{f}({ONE}, x);
    if (isfinite(y) && fabs{f}(y) > {ONE}) { {T} s, c; sincos{f}(y, &s, &c); im = copysign{f}({ZERO}, s * c); }
    else { im = copysign{f}({ZERO}, y); }
  } else if (y == {ZERO}) { re = x; im = y; }
  else { re = (x == {ZERO}) ? x : {NAN}; im = {NAN}; }
} else {
  {T} s, c;
  """ + _SINCOS_Y + """
  if (fabs{f}(x) > {TH2}) {
    /* tanh(x) rounds to +-1; the imaginary part is 4 sin(y) cos(y) / exp(2|x|), divided in
       steps of exp(2t) so that no intermediate overflows */
    const {T} e2t = exp{f}(({T})(2 * {TH2}));
    re = copysign{f}({ONE}, x);
    im = {FOUR} * s * c;
    const {T} rx = fabs{f}(x) - {TH2};
    im /= e2t;
    if (rx > {TH2}) { im /= e2t; } else { im /= exp{f}({TWO} * rx); }
  } else {
    {T} sh, ch;
    if (fabs{f}(x) > {MIN}) { sh = sinh{f}(x); ch = cosh{f}(x); } else { sh = x; ch = {ONE}; }
    const {T} den = fabs{f}(sh) > fabs{f}(c) * {EPS} ? {MUL}(sh, sh) + {MUL}(c, c) : c * c;
    re = sh * ch / den; im = s * c / den;
  }
}
"""


# glibc's csin: csinh's algorithm with the parts' roles swapped, written out because its
# special cases are not those of -i csinh(iz) everywhere (sin(+-inf + i inf) = NaN + i inf).
_CSIN = """
const bool neg = signbit(x);
const {T} ax = fabs{f}(x);
if (isfinite(y)) {
  if (isfinite(x)) {
    {T} s, c;
    if (ax > {MIN}) { sincos{f}(ax, &s, &c); } else { s = ax; c = {ONE}; }
    if (neg) s = -s;
    if (fabs{f}(y) > {TH}) {
      if (signbit(y)) c = -c;
      {T} ry = fabs{f}(y) - {TH};
      const {T} et = exp{f}(({T}){TH});
      s = s * (et / {TWO}); c = c * (et / {TWO});
      if (ry > {TH}) { ry -= {TH}; s = s * et; c = c * et; }
      if (ry > {TH}) { re = {MAX} * s; im = {MAX} * c; }
      else { const {T} e = exp{f}(ry); re = e * s; im = e * c; }
    } else { re = cosh{f}(y) * s; im = sinh{f}(y) * c; }
  } else if (y == {ZERO}) { re = ax - ax; im = y; }
  else { re = {NAN}; im = {NAN}; }
} else if (isinf(y)) {
  if (ax == {ZERO}) { re = copysign{f}({ZERO}, x); im = y; }
  else if (isfinite(ax)) {
    {T} s, c;
    if (ax > {MIN}) { sincos{f}(ax, &s, &c); } else { s = ax; c = {ONE}; }
    re = copysign{f}({INF}, s); im = copysign{f}({INF}, c);
    if (neg) re = -re;
    if (signbit(y)) im = -im;
  } else { re = ax - ax; im = {INF}; }
} else { re = (ax == {ZERO}) ? copysign{f}({ZERO}, x) : {NAN}; im = {NAN}; }
"""


def _scoped(body: str, x: str, y: str) -> str:
    """`body` (reads x, y; sets re, im) run on the parts (x, y) given as expressions of the
    outer x, y; it sets the outer re, im."""
    return (f"{{ const {{T}} jk_x = {x}, jk_y = {y};\n"
            f"  {{ const {{T}} x = jk_x, y = jk_y;\n{body}  }}\n}}\n")


def _rotated(body: str) -> str:
    """-i f(iz) for f = body: f at (-y, x), then (re, im) = (im f, -re f) (Annex G's sin, tan)."""
    return ("{ {T} jk_re, jk_im;\n"
            "  { const {T} jk_x = -y, jk_y = x;\n"
            "    { const {T} x = jk_x, y = jk_y; {T} re, im;\n" + body + "      jk_re = re; jk_im = im; } }\n"
            "  re = jk_im; im = -jk_re;\n}\n")


def _scaled_parts(body: str, factor: str) -> str:
    return body + f"re = re * {factor}; im = im * {factor};\n"


_LOG1P = """
const {T} xp1 = x + {ONE};
re = log{f}(hypot{f}(xp1, y));
im = atan2{f}(y, xp1);
"""

_EXPM1 = """
const {T} a = sin{f}(y / {TWO});
re = {MUL}(expm1{f}(x), cos{f}(y)) - {MUL}({TWO} * a, a);
im = exp{f}(x) * sin{f}(y);
"""

UNARY = {
    "sinh": _CSINH, "cosh": _CCOSH, "tanh": _CTANH,
    "sin": _CSIN, "cos": _scoped(_CCOSH, "-y", "x"), "tan": _rotated(_CTANH),
    "log10": _scaled_parts(CLOG, "{LOG10E}"), "log2": _scaled_parts(CLOG, "{LOG2E}"),
    "exp2": _scoped(CEXP, "x * {LN2}", "y * {LN2}"), "log1p": _LOG1P, "expm1": _EXPM1,
}

# -- the inverse functions: glibc's casinh/casin/cacos/cacosh (one kernel, __kernel_casinh)
# and catanh/catan. Nested calls are scoped blocks with names of their own.

_CALLS = itertools.count()  # unique names for the nested calls


def _call(body: str, x: str, y: str, out_re: str, out_im: str) -> str:
    """Run `body` (reads x, y; sets re, im) on the parts (x, y) (expressions of the caller's
    names) and store its result in out_re, out_im (names of the caller)."""
    k = next(_CALLS)
    return ("{ const {T} jk_a%d = %s, jk_b%d = %s; {T} jk_r%d, jk_i%d;\n"
            "  { const {T} x = jk_a%d, y = jk_b%d; {T} re, im;\n%s\n    jk_r%d = re; jk_i%d = im; }\n"
            "  %s = jk_r%d; %s = jk_i%d; }\n") % (k, x, k, y, k, k, k, k, body, k, k, out_re, k, out_im, k)


def _kernel_casinh(adj: bool) -> str:
    """glibc's __kernel_casinh of a finite nonzero (x, y): the first quadrant, then the
    region's formula (no cancellation), then the signs; with `adj` the imaginary part is
    subtracted from pi/2 (cacos, cacosh). Products that feed an add are rounded (no FMA)."""
    a = "1" if adj else "0"
    return ("""
const {T} rx = fabs{f}(x), ix = fabs{f}(y);
if (rx >= {ONE} / {EPS} || ix >= {ONE} / {EPS}) {
  /* x + sqrt(1 + x*x) is 2x to working precision: log(2x) without overflow */
  {T} wr = rx, wi = ix;
  if (ADJ) { const {T} t = wr; wr = copysign{f}(wi, y); wi = t; }
  """ + _call(CLOG, "wr", "wi", "re", "im") + """
  re += {LN2};
} else if (rx >= {HALF} && ix < {EPS} / 8) {
  const {T} s = hypot{f}({ONE}, rx);
  re = log{f}(rx + s);
  im = ADJ ? atan2{f}(s, y) : atan2{f}(ix, s);
} else if (rx < {EPS} / 8 && ix >= ({T})1.5) {
  const {T} s = sqrt{f}({MUL}(ix + 1, ix - 1));
  re = log{f}(ix + s);
  im = ADJ ? atan2{f}(rx, copysign{f}(s, y)) : atan2{f}(s, rx);
} else if (ix > 1 && ix < ({T})1.5 && rx < {HALF}) {
  if (rx < {EPS} * {EPS}) {
    const {T} ix2m1 = {MUL}(ix + 1, ix - 1);
    const {T} s = sqrt{f}(ix2m1);
    re = log1p{f}(2 * (ix2m1 + {MUL}(ix, s))) / 2;
    im = ADJ ? atan2{f}(rx, copysign{f}(s, y)) : atan2{f}(s, rx);
  } else {
    const {T} ix2m1 = {MUL}(ix + 1, ix - 1);
    const {T} rx2 = {MUL}(rx, rx);
    const {T} f = {MUL}(rx2, 2 + rx2 + {MUL}(2 * ix, ix));
    const {T} d = sqrt{f}({MUL}(ix2m1, ix2m1) + f);
    const {T} dp = d + ix2m1;
    const {T} dm = f / dp;
    const {T} r1 = sqrt{f}((dm + rx2) / 2);
    const {T} r2 = {MUL}(rx, ix) / r1;
    re = log1p{f}(rx2 + dp + 2 * ({MUL}(rx, r1) + {MUL}(ix, r2))) / 2;
    im = ADJ ? atan2{f}(rx + r1, copysign{f}(ix + r2, y)) : atan2{f}(ix + r2, rx + r1);
  }
} else if (ix == 1 && rx < {HALF}) {
  if (rx < {EPS} / 8) {
    re = log1p{f}(2 * (rx + sqrt{f}(rx))) / 2;
    im = ADJ ? atan2{f}(sqrt{f}(rx), copysign{f}({ONE}, y)) : atan2{f}({ONE}, sqrt{f}(rx));
  } else {
    const {T} rr = {MUL}(rx, rx);
    const {T} d = {MUL}(rx, sqrt{f}(4 + rr));
    const {T} s1 = sqrt{f}((d + rr) / 2);
    const {T} s2 = sqrt{f}((d - rr) / 2);
    re = log1p{f}(rr + d + 2 * ({MUL}(rx, s1) + s2)) / 2;
    im = ADJ ? atan2{f}(rx + s1, copysign{f}(1 + s2, y)) : atan2{f}(1 + s2, rx + s1);
  }
} else if (ix < 1 && rx < {HALF}) {
  if (ix >= {EPS}) {
    if (rx < {EPS} * {EPS}) {
      const {T} onemix2 = {MUL}(1 + ix, 1 - ix);
      const {T} s = sqrt{f}(onemix2);
      re = log1p{f}(2 * rx / s) / 2;
      im = ADJ ? atan2{f}(s, y) : atan2{f}(ix, s);
    } else {
      const {T} onemix2 = {MUL}(1 + ix, 1 - ix);
      const {T} rx2 = {MUL}(rx, rx);
      const {T} f = {MUL}(rx2, 2 + rx2 + {MUL}(2 * ix, ix));
      const {T} d = sqrt{f}({MUL}(onemix2, onemix2) + f);
      const {T} dp = d + onemix2;
      const {T} dm = f / dp;
      const {T} r1 = sqrt{f}((dp + rx2) / 2);
      const {T} r2 = {MUL}(rx, ix) / r1;
      re = log1p{f}(rx2 + dm + 2 * ({MUL}(rx, r1) + {MUL}(ix, r2))) / 2;
      im = ADJ ? atan2{f}(rx + r1, copysign{f}(ix + r2, y)) : atan2{f}(ix + r2, rx + r1);
    }
  } else {
    const {T} s = hypot{f}({ONE}, rx);
    re = log1p{f}({MUL}(2 * rx, rx + s)) / 2;
    im = ADJ ? atan2{f}(s, y) : atan2{f}(ix, s);
  }
} else {
  {T} wr = {MUL}(rx - ix, rx + ix) + 1, wi = {MUL}(2 * rx, ix);
  """ + _call(CSQRT, "wr", "wi", "wr", "wi") + """
  wr += rx; wi += ix;
  if (ADJ) { const {T} t = wr; wr = copysign{f}(wi, y); wi = t; }
  """ + _call(CLOG, "wr", "wi", "re", "im") + """
}
re = copysign{f}(re, x);
im = copysign{f}(im, ADJ ? {ONE} : y);
""").replace("ADJ", a)


_CASINH = """
if (!isfinite(x) || !isfinite(y)) {
  if (isinf(y)) { re = copysign{f}({INF}, x); im = isnan(x) ? {NAN} : copysign{f}(isfinite(x) ? {PI_2} : {PI_4}, y); }
  else if (!isfinite(x)) {
    re = x;
    im = ((isinf(x) && isfinite(y)) || (isnan(x) && y == {ZERO})) ? copysign{f}({ZERO}, y) : {NAN};
  } else { re = {NAN}; im = {NAN}; }
} else if (x == {ZERO} && y == {ZERO}) { re = x; im = y; }
else {
""" + _kernel_casinh(False) + """
}
"""

_CASIN = """
if (isnan(x) || isnan(y)) {
  if (x == {ZERO}) { re = x; im = y; }
  else if (isinf(x) || isinf(y)) { re = {NAN}; im = copysign{f}({INF}, y); }
  else { re = {NAN}; im = {NAN}; }
} else {
  {T} a, b;
  """ + _call(_CASINH, "-y", "x", "a", "b") + """
  re = b; im = -a;
}
"""

_CACOS = """
if (!isfinite(x) || !isfinite(y) || (x == {ZERO} && y == {ZERO})) {
  {T} a, b;
  """ + _call(_CASIN, "x", "y", "a", "b") + """
  re = {PI_2} - a;
  if (re == {ZERO}) re = {ZERO};
  im = -b;
} else {
  {T} a, b;
  """ + _call(_kernel_casinh(True), "-y", "x", "a", "b") + """
  re = b; im = a;
}
"""

_CACOSH = """
if (!isfinite(x) || !isfinite(y)) {
  if (isinf(y)) {
    re = {INF};
    im = isnan(x) ? {NAN} : copysign{f}(isinf(x) ? (x < {ZERO} ? {PI} - {PI_4} : {PI_4}) : {PI_2}, y);
  } else if (isinf(x)) { re = {INF}; im = isfinite(y) ? copysign{f}(signbit(x) ? {PI} : {ZERO}, y) : {NAN}; }
  else { re = {NAN}; im = (x == {ZERO}) ? {PI_2} : {NAN}; }
} else if (x == {ZERO} && y == {ZERO}) { re = {ZERO}; im = copysign{f}({PI_2}, y); }
else {
  {T} a, b;
  """ + _call(_kernel_casinh(True), "-y", "x", "a", "b") + """
  if (signbit(y)) { re = a; im = -b; } else { re = -a; im = b; }
}
"""

# 1 - |z|^2 with the parts ordered (absx >= absy), as glibc's catan/catanh compute it:
# __x2y2m1 where cancellation would be large.
_ONE_MINUS_ABS2 = """
{T} absx = fabs{f}(x), absy = fabs{f}(y), den;
if (absx < absy) { const {T} t = absx; absx = absy; absy = t; }
if (absy < {EPS} / 2) { den = {MUL}(1 - absx, 1 + absx); if (den == 0) den = {ZERO}; }
else if (absx >= 1) { den = {MUL}(1 - absx, 1 + absx) - {MUL}(absy, absy); }
else if (absx >= ({T})0.75 || absy >= {HALF}) {
  const {T} jk_u = absx, jk_v = absy;
  {T} jk_w;
  {X2Y2M1}
  den = -jk_w;
} else { den = {MUL}(1 - absx, 1 + absx) - {MUL}(absy, absy); }
"""

# glibc's catanh: Annex G special cases; for huge parts the leading terms; else
# re = log((1+x)^2 + y^2) / ((1-x)^2 + y^2)) / 4 (log1p near 1), im = atan2(2y, 1 - |z|^2) / 2.
_CATANH = """
if (!isfinite(x) || !isfinite(y)) {
  if (isinf(y)) { re = copysign{f}({ZERO}, x); im = copysign{f}({PI_2}, y); }
  else if (isinf(x)) { re = copysign{f}({ZERO}, x); im = isfinite(y) ? copysign{f}({PI_2}, y) : {NAN}; }
  else if (x == {ZERO}) { re = copysign{f}({ZERO}, x); im = {NAN}; }
  else { re = {NAN}; im = {NAN}; }
} else if (x == {ZERO} && y == {ZERO}) { re = x; im = y; }
else if (fabs{f}(x) >= 16 / {EPS} || fabs{f}(y) >= 16 / {EPS}) {
  im = copysign{f}({PI_2}, y);
  if (fabs{f}(y) <= 1) re = 1 / x;
  else if (fabs{f}(x) <= 1) re = x / y / y;
  else { const {T} h = hypot{f}(x / 2, y / 2); re = x / h / h / 4; }
} else {
  if (fabs{f}(x) == 1 && fabs{f}(y) < {EPS} * {EPS}) {
    re = copysign{f}({HALF}, x) * ({LN2} - log{f}(fabs{f}(y)));
  } else {
    const {T} i2 = fabs{f}(y) >= {EPS} * {EPS} ? {MUL}(y, y) : {ZERO};
    const {T} np1 = 1 + x, dm1 = 1 - x;
    const {T} num = i2 + {MUL}(np1, np1), dd = i2 + {MUL}(dm1, dm1);
    const {T} q = num / dd;
    re = q < {HALF} ? ({T})0.25 * log{f}(q) : ({T})0.25 * log1p{f}((4 * x) / dd);
  }
""" + _ONE_MINUS_ABS2 + """
  im = {HALF} * atan2{f}(2 * y, den);
}
"""

# glibc's catan: catanh's formulas with the parts' roles exchanged (its own special cases).
_CATAN = """
if (!isfinite(x) || !isfinite(y)) {
  if (isinf(x)) { re = copysign{f}({PI_2}, x); im = copysign{f}({ZERO}, y); }
  else if (isinf(y)) { re = isfinite(x) ? copysign{f}({PI_2}, x) : {NAN}; im = copysign{f}({ZERO}, y); }
  else if (y == {ZERO}) { re = {NAN}; im = copysign{f}({ZERO}, y); }
  else { re = {NAN}; im = {NAN}; }
} else if (x == {ZERO} && y == {ZERO}) { re = x; im = y; }
else if (fabs{f}(x) >= 16 / {EPS} || fabs{f}(y) >= 16 / {EPS}) {
  re = copysign{f}({PI_2}, x);
  if (fabs{f}(x) <= 1) im = 1 / y;
  else if (fabs{f}(y) <= 1) im = y / x / x;
  else { const {T} h = hypot{f}(x / 2, y / 2); im = y / h / h / 4; }
} else {
""" + _ONE_MINUS_ABS2 + """
  re = {HALF} * atan2{f}(2 * x, den);
  if (fabs{f}(y) == 1 && fabs{f}(x) < {EPS} * {EPS}) {
    im = copysign{f}({HALF}, y) * ({LN2} - log{f}(fabs{f}(x)));
  } else {
    const {T} r2 = fabs{f}(x) >= {EPS} * {EPS} ? {MUL}(x, x) : {ZERO};
    const {T} np1 = y + 1, dm1 = y - 1;
    const {T} num = r2 + {MUL}(np1, np1), dd = r2 + {MUL}(dm1, dm1);
    const {T} q = num / dd;
    im = q < {HALF} ? ({T})0.25 * log{f}(q) : ({T})0.25 * log1p{f}((4 * y) / dd);
  }
}
"""

UNARY.update({"arcsinh": _CASINH, "arcsin": _CASIN, "arccos": _CACOS, "arccosh": _CACOSH, "arctanh": _CATANH,
              "arctan": _CATAN,
              "rint": "re = rint{f}(x); im = rint{f}(y);\n"})  # NumPy's nc_rint: each part rounded

# -- power: npy_cpow. Base (x, y), exponent (u, v). ---------------------------------------------

def _cmul(r: str, i: str, ar: str, ai: str, br: str, bi: str) -> str:
    """NumPy's cmul: products rounded, no FMA."""
    return (f"{{ const {{T}} jk_r = {{MUL}}({ar}, {br}) - {{MUL}}({ai}, {bi}), "
            f"jk_i = {{MUL}}({ar}, {bi}) + {{MUL}}({ai}, {br}); {r} = jk_r; {i} = jk_i; }}")


# C99 Annex G's complex product (libgcc's __muldc3): the plain product, and where both parts
# come out NaN, infinities recovered from the operands' infinite parts.
_C99_MUL = """
{T} pa = u, pb = v, pc = jk_lr, pd = jk_li;
const {T} ac = pa * pc, bd = pb * pd, ad = pa * pd, bc = pb * pc;
{T} pr = ac - bd, pi = ad + bc;
if (isnan(pr) && isnan(pi)) {
  bool recalc = false;
  if (isinf(pa) || isinf(pb)) {
    pa = copysign{f}(isinf(pa) ? {ONE} : {ZERO}, pa); pb = copysign{f}(isinf(pb) ? {ONE} : {ZERO}, pb);
    if (isnan(pc)) pc = copysign{f}({ZERO}, pc);
    if (isnan(pd)) pd = copysign{f}({ZERO}, pd);
    recalc = true;
  }
  if (isinf(pc) || isinf(pd)) {
    pc = copysign{f}(isinf(pc) ? {ONE} : {ZERO}, pc); pd = copysign{f}(isinf(pd) ? {ONE} : {ZERO}, pd);
    if (isnan(pa)) pa = copysign{f}({ZERO}, pa);
    if (isnan(pb)) pb = copysign{f}({ZERO}, pb);
    recalc = true;
  }
  if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
    if (isnan(pa)) pa = copysign{f}({ZERO}, pa);
    if (isnan(pb)) pb = copysign{f}({ZERO}, pb);
    if (isnan(pc)) pc = copysign{f}({ZERO}, pc);
    if (isnan(pd)) pd = copysign{f}({ZERO}, pd);
    recalc = true;
  }
  if (recalc) { pr = {INF} * ({MUL}(pa, pc) - {MUL}(pb, pd)); pi = {INF} * ({MUL}(pa, pd) + {MUL}(pb, pc)); }
}
"""

_CPOW = """
if (u == {ZERO} && v == {ZERO}) { re = {ONE}; im = {ZERO}; }
else if (x == {ZERO} && y == {ZERO}) {
  if (u > {ZERO}) { re = {ZERO}; im = {ZERO}; } else { re = {NAN}; im = {NAN}; }
} else if (v == {ZERO} && u > -100 && u < 100 && u == trunc{f}(u)) {
  const int n = (int)u;
  if (n == 1) { re = x; im = y; }
  else if (n == 2) { """ + _cmul("re", "im", "x", "y", "x", "y") + """ }
  else if (n == 3) {
    {T} sr, si;
    """ + _cmul("sr", "si", "x", "y", "x", "y") + """
    """ + _cmul("re", "im", "x", "y", "sr", "si") + """
  } else {
    const int m = n < 0 ? -n : n;
    {T} ar = {ONE}, ai = {ZERO}, pr = x, pi = y;
    for (int mask = 1;; ) {
      if (m & mask) """ + _cmul("ar", "ai", "ar", "ai", "pr", "pi") + """
      mask <<= 1;
      if (m < mask) break;
      """ + _cmul("pr", "pi", "pr", "pi", "pr", "pi") + """
    }
    re = ar; im = ai;
    if (u < {ZERO}) {
      /* NumPy's cdiv(1, r): Smith's algorithm, (1/|re|, 0/|im|) for a zero r */
      const {T} br = re, bi = im;
      if (fabs{f}(br) >= fabs{f}(bi)) {
        if (br == {ZERO} && bi == {ZERO}) { re = {ONE} / fabs{f}(br); im = {ZERO} / fabs{f}(bi); }
        else {
          const {T} rat = bi / br, scl = {ONE} / (br + {MUL}(bi, rat));
          re = ({ONE} + {MUL}({ZERO}, rat)) * scl; im = ({ZERO} - {MUL}({ONE}, rat)) * scl;
        }
      } else {
        const {T} rat = br / bi, scl = {ONE} / (bi + {MUL}(br, rat));
        re = ({MUL}({ONE}, rat) + {ZERO}) * scl; im = ({MUL}({ZERO}, rat) - {ONE}) * scl;
      }
    }
  }
} else {
  /* the C library's cpow: cexp(b * clog(a)) */
  {T} jk_lr, jk_li;
  { {T} re, im;
""" + CLOG + """
    jk_lr = re; jk_li = im; }
""" + _C99_MUL + """
  { const {T} x = pr, y = pi;
""" + CEXP + """
  }
}
"""

FUNCTIONS = tuple(UNARY) + ("power",)


def _constants(dt: np.dtype) -> dict[str, str]:
    out = glibc_constants(dt)
    lit = lambda v: ctype.literal(v, dt)  # noqa: E731
    out.update({"LOG10E": lit(np.log10(np.e)), "LOG2E": lit(np.log2(np.e)),
                "PI_2": lit(np.pi / 2), "PI_4": lit(np.pi / 4),
                # glibc ctanh's t: exp(2t) is finite
                "TH2": str(int((np.finfo(dt).maxexp - 1) * np.log(2.0) / 2))})
    return out


def _expand(body: str, dt: np.dtype) -> str:
    for key, value in _constants(dt).items():
        body = body.replace("{" + key + "}", value)
    return body


def render_function(kp: KernelProgram, step: LibraryCall, prim: str, n: int, name: str) -> tuple[str, list]:
    """The kernel of one complex function step: a grid-stride loop over the elements of packed
    operands of the result's shape (a power's base and exponent both complex)."""
    layout = tuple(step.params["in_layout"])
    arity = 2 if prim == "power" else 1
    out = tuple(kp.buffers[step.outputs[0]].shape)
    if layout != (True,) * arity or any(tuple(kp.buffers[b].shape) != out for b in step.inputs):
        raise UnsupportedOperationError(
            f"complex numpy.{prim} (step {n} of {kp.name}): the CUDA kernel takes complex operands of the result's "
            f"shape {out[:-1]}, got layout {layout}, shapes {[tuple(kp.buffers[b].shape[:-1]) for b in step.inputs]}; "
            "run it with backend='cpu'")
    dt = kp.buffers[step.outputs[0]].dtype
    r, mem = ctype.reg(dt), ctype.mem(dt)
    count = int(np.prod(out[:-1], dtype=np.int64))
    body = _expand(_CPOW if prim == "power" else UNARY[prim], dt)
    names = ["x", "y", "u", "v"]
    lines = [f"\n/* {step.name}: complex numpy.{prim} (NumPy's algorithm: complex_functions.py) */",
             f'extern "C" __global__ void {name}(']
    lines += [f"    const {mem}* __restrict__ b{b}," for b in step.inputs]
    lines += [f"    {mem}* __restrict__ b{step.outputs[0]},", "    unsigned int* __restrict__ jk_status) {",
              f"  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < {count}LL;",
              "       t += (long long)blockDim.x * gridDim.x) {"]
    for k, b in enumerate(step.inputs):
        lines.append(f"    const {r} {names[2 * k]} = b{b}[2LL * t], {names[2 * k + 1]} = b{b}[2LL * t + 1LL];")
    lines.append(f"    {r} re, im;")
    lines += ["    " + line for line in body.strip().splitlines()]
    dst = step.outputs[0]
    lines += [f"    b{dst}[2LL * t] = re; b{dst}[2LL * t + 1LL] = im;", "  }", "}"]
    params = [("buf", b) for b in step.inputs] + [("buf", dst), ("status",)]
    return "\n".join(lines), [Launch(name, "elementwise", count, params)]
