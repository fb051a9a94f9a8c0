"""Complex exp, log and sqrt as C statements following glibc's algorithms (NumPy calls cexp/clog/
csqrt of the C library), C99 Annex G special cases included; complex_ops.py renders them as
kernels, complex_functions.py builds the other complex functions on them.

A body reads x, y (the argument's parts) and sets re, im; `{NAME}` placeholders are the
constants of the float dtype (`glibc_constants`).
"""
from __future__ import annotations

import numpy as np

from . import ctype


def glibc_constants(dt: np.dtype) -> dict[str, str]:
    """The value of each `{NAME}` of the bodies for float dtype `dt` (C literals, libm suffix)."""
    f = dt.itemsize == 4
    lit = lambda v: ctype.literal(v, dt)  # noqa: E731
    info = np.finfo(dt)
    th = int((info.maxexp - 1) * np.log(2.0))  # glibc's t: exp(t) is finite, exp(t + 1) may not be
    return {"T": ctype.reg(dt), "f": "f" if f else "", "INF": lit(float("inf")), "NAN": lit(float("nan")),
            "MAX": lit(float(info.max)), "MIN": lit(float(info.tiny)), "EPS": lit(float(info.eps)),
            "HALF": lit(0.5), "ONE": lit(1.0), "ZERO": lit(0.0), "TWO": lit(2.0), "FOUR": lit(4.0),
            "PI": lit(np.pi), "LN2": lit(np.log(2.0)), "MANT": str(info.nmant + 1),
            "TH": str(th), "ETH": lit(float(np.exp(np.float64(th)))),
            "MUL": "__fmul_rn" if f else "__dmul_rn", "X2Y2M1": X2Y2M1_F if f else X2Y2M1_D}


# glibc's __x2y2m1 (x*x + y*y - 1 for clog/catan/catanh near |z| = 1), reading jk_u, jk_v and
# setting jk_w. float: in double, where the products are exact; double: the squares split
# exactly by fma, the five terms summed smallest first with Dekker's two-sum, re-sorted by
# magnitude after each step, as glibc does.
X2Y2M1_F = ("{ const double du = jk_u, dv = jk_v; "
             "jk_w = (float)(__dmul_rn(du - 1.0, du + 1.0) + __dmul_rn(dv, dv)); }")
X2Y2M1_D = """{
  double v[5];
  v[1] = __dmul_rn(jk_u, jk_u); v[0] = fma(jk_u, jk_u, -v[1]);
  v[3] = __dmul_rn(jk_v, jk_v); v[2] = fma(jk_v, jk_v, -v[3]);
  v[4] = -1.0;
  for (int i = 1; i < 5; ++i)
    for (int j = i; j > 0 && fabs(v[j - 1]) > fabs(v[j]); --j) { const double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
  for (int i = 0; i <= 3; ++i) {
    const double hi = v[i + 1] + v[i], lo = (v[i + 1] - hi) + v[i];
    v[i + 1] = hi; v[i] = lo;
    for (int k = i + 2; k < 5; ++k)
      for (int j = k; j > i + 1 && fabs(v[j - 1]) > fabs(v[j]); --j) {
        const double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
      }
  }
  jk_w = v[4] + v[3] + v[2] + v[1] + v[0];
}"""


CEXP = """
if (isfinite(x)) {
  if (isfinite(y)) {
    {T} s, c;
    if (y != {ZERO}) { sincos{f}(y, &s, &c); } else { s = y; c = {ONE}; }
    {T} xr = x;
    if (xr > {TH}) {  /* exp(x) overflows but exp(x) * cos(y) may not: scale */
      xr -= {TH}; s = s * {ETH}; c = c * {ETH};
      if (xr > {TH}) { xr -= {TH}; s = s * {ETH}; c = c * {ETH}; }
    }
    if (xr > {TH}) { re = {MAX} * c; im = {MAX} * s; }
    else { const {T} e = exp{f}(xr); re = e * c; im = e * s; }
  } else { re = {NAN}; im = {NAN}; }
} else if (isinf(x)) {
  if (isfinite(y)) {
    const {T} v = signbit(x) ? {ZERO} : {INF};
    if (y == {ZERO}) { re = v; im = y; }
    else { {T} s, c; sincos{f}(y, &s, &c); re = copysign{f}(v, c); im = copysign{f}(v, s); }
  } else if (!signbit(x)) { re = {INF}; im = y - y; }
  else { re = {ZERO}; im = copysign{f}({ZERO}, y); }
} else {
  re = {NAN}; im = (y == {ZERO}) ? y : {NAN};
}
"""

CSQRT = """
if (!isfinite(x) || !isfinite(y)) {
  if (isinf(y)) { re = {INF}; im = y; }
  else if (isinf(x)) {
    if (x < {ZERO}) { re = isnan(y) ? {NAN} : {ZERO}; im = copysign{f}({INF}, y); }
    else { re = x; im = isnan(y) ? {NAN} : copysign{f}({ZERO}, y); }
  } else { re = {NAN}; im = {NAN}; }
} else if (y == {ZERO}) {
  if (x < {ZERO}) { re = {ZERO}; im = copysign{f}(sqrt{f}(-x), y); }
  else { re = fabs{f}(sqrt{f}(x)); im = copysign{f}({ZERO}, y); }
} else if (x == {ZERO}) {
  const {T} r = fabs{f}(y) >= {TWO} * {MIN} ? sqrt{f}({HALF} * fabs{f}(y)) : {HALF} * sqrt{f}({TWO} * fabs{f}(y));
  re = r; im = copysign{f}(r, y);
} else {
  {T} a = x, b = y, d, r, s;
  int scale = 0;
  if (fabs{f}(a) > {MAX} / {FOUR}) { scale = 1; a = scalbn{f}(a, -2); b = scalbn{f}(b, -2); }
  else if (fabs{f}(b) > {MAX} / {FOUR}) {
    scale = 1; a = fabs{f}(a) >= {FOUR} * {MIN} ? scalbn{f}(a, -2) : {ZERO}; b = scalbn{f}(b, -2);
  } else if (fabs{f}(a) < {TWO} * {MIN} && fabs{f}(b) < {TWO} * {MIN}) {
    scale = -(({MANT} + 1) / 2); a = scalbn{f}(a, -2 * scale); b = scalbn{f}(b, -2 * scale);
  }
  d = hypot{f}(a, b);
  if (a > {ZERO}) {
    r = sqrt{f}({HALF} * (d + a));
    if (scale == 1 && fabs{f}(b) < {ONE}) { s = b / r; r = scalbn{f}(r, scale); scale = 0; }
    else s = {HALF} * (b / r);
  } else {
    s = sqrt{f}({HALF} * (d - a));
    if (scale == 1 && fabs{f}(b) < {ONE}) { r = fabs{f}(b / s); s = scalbn{f}(s, scale); scale = 0; }
    else r = fabs{f}({HALF} * (b / s));
  }
  if (scale) { r = scalbn{f}(r, scale); s = scalbn{f}(s, scale); }
  re = r; im = copysign{f}(s, y);
}
"""

CLOG = """
if (x == {ZERO} && y == {ZERO}) {
  im = copysign{f}(signbit(x) ? {PI} : {ZERO}, y);
  re = -{ONE} / fabs{f}(x);
} else if (!isnan(x) && !isnan(y)) {
  {T} ax = fabs{f}(x), ay = fabs{f}(y);
  int scale = 0;
  if (ax < ay) { const {T} t = ax; ax = ay; ay = t; }
  if (ax > {MAX} / {TWO}) { scale = -1; ax = scalbn{f}(ax, scale); ay = ay >= {MIN} * {TWO} ? scalbn{f}(ay, scale) : {ZERO}; }
  else if (ax < {MIN} && ay < {MIN}) { scale = {MANT}; ax = scalbn{f}(ax, scale); ay = scalbn{f}(ay, scale); }
  if (ax == {ONE} && scale == 0) { re = log1p{f}(ay * ay) / {TWO}; }
  else if (ax > {ONE} && ax < {TWO} && ay < {ONE} && scale == 0) {
    {T} d2m1 = {MUL}(ax - {ONE}, ax + {ONE});
    if (ay >= {EPS}) d2m1 += {MUL}(ay, ay);
    re = log1p{f}(d2m1) / {TWO};
  } else if (ax < {ONE} && ax >= {HALF} && ay < {EPS} / {TWO} && scale == 0) {
    re = log1p{f}((ax - {ONE}) * (ax + {ONE})) / {TWO};
  } else if (ax < {ONE} && ax >= {HALF} && scale == 0 && {MUL}(ax, ax) + {MUL}(ay, ay) >= {HALF}) {
    /* x*x + y*y - 1 without cancellation: glibc's __x2y2m1 */
    const {T} jk_u = ax, jk_v = ay;
    {T} jk_w;
    {X2Y2M1}
    re = log1p{f}(jk_w) / {TWO};
  } else {
    re = log{f}(hypot{f}(ax, ay)) - (({T})scale) * {LN2};
  }
  im = atan2{f}(y, x);
} else {
  im = {NAN};
  re = (isinf(x) || isinf(y)) ? {INF} : {NAN};
}
"""
