"""The helpers every generated translation unit starts with (no #include: nvcc's implicit
cuda_runtime.h provides the math functions and intrinsics; the emulator's shim header provides
the same names on the host).

The helper functions carry NumPy semantics the C operators lack: wrap-around integer arithmetic
is written at the use site (render in unsigned types), float16 rounding is a function here.
Division, remainder, shifts, power, sign, integer reciprocal and float maximum/minimum
follow the shared rules of backends/semantic_rules.py: their helpers are written per dtype by
semantic_c.py, into the translation units that call them.
"""
from __future__ import annotations

PRELUDE = r"""
/* ---- jitkernel CUDA prelude: NumPy semantics the C operators lack -------------------- */
#if defined(__CUDACC__) && !defined(JK_EMULATOR)
#define JK_DEV __device__ __forceinline__
/* float16 <-> float conversions through PTX (no cuda_fp16.h: the source has no #include). */
JK_DEV float jk_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
JK_DEV unsigned short jk_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
JK_DEV unsigned short jk_d2h(double d) { unsigned short h; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d)); return h; }
JK_DEV unsigned int jk_status_or(unsigned int* s, unsigned int v) { return atomicOr(s, v); }
template <class T> JK_DEV T jk_shfl_down(T v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
JK_DEV bool jk_shfl_down(bool v, int d) { return __shfl_down_sync(0xffffffffu, (int)v, d) != 0; }
JK_DEV signed char jk_shfl_down(signed char v, int d) { return (signed char)__shfl_down_sync(0xffffffffu, (int)v, d); }
JK_DEV unsigned char jk_shfl_down(unsigned char v, int d) { return (unsigned char)__shfl_down_sync(0xffffffffu, (unsigned)v, d); }
JK_DEV short jk_shfl_down(short v, int d) { return (short)__shfl_down_sync(0xffffffffu, (int)v, d); }
JK_DEV unsigned short jk_shfl_down(unsigned short v, int d) { return (unsigned short)__shfl_down_sync(0xffffffffu, (unsigned)v, d); }
#endif

/* A float16 value held in a float: rounded to float16 and back (NumPy rounds after every op). */
JK_DEV float jk_rh(float x) { return jk_h2f(jk_f2h(x)); }
JK_DEV float jk_rh_d(double x) { return jk_h2f(jk_d2h(x)); }
JK_DEV bool jk_signbit(float x) { return __float_as_int(x) < 0; }
JK_DEV bool jk_signbit(double x) { return __double_as_longlong(x) < 0; }

/* A traced index (fusion/dynamic.py's check kernels): wrapped when negative, then 0 <= s <= limit,
   or status bit `code` is set (the first failure also records s, the axis and n after the flags:
   backends/cpu/runtime.StatusWord) and 0 is returned, so no access leaves the array. */
JK_DEV long long jk_index_check(long long s, long long n, long long limit, long long axis,
                                unsigned int* status, unsigned int code) {
  const long long w = s < 0 ? s + n : s;
  if (w >= 0 && w <= limit) return w;
  if (!(jk_status_or(status, code) & code)) {
    long long* detail = (long long*)status;
    detail[1] = s; detail[2] = axis; detail[3] = n;
  }
  return 0;
}
/* ---- end of prelude ------------------------------------------------------------------- */
"""
