"""The emulator's shim header: the CUDA names the generated source uses, on the host.

Blocks of a launch run in sequence; the threads of a block are real threads (one std::thread
per CUDA thread, reused for every block of the launch), `__syncthreads` is a std::barrier over
the block, `__shfl_down_sync` an exchange through a per-warp slot array between two per-warp
barriers, `__shared__` a function-local `static` (one block runs at a time). Launches are
serialised by a mutex. Slow, and meant to be: it checks indexing, synchronisation and
semantics of the very source nvcc compiles, at small sizes.
"""
from __future__ import annotations

SHIM = r"""
/* ---- jitkernel CUDA emulator shim (host C++20) ---------------------------------------- */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <barrier>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#define JK_EMULATOR 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define JK_DEV static inline
struct jk_dim3 { unsigned x, y, z; };
namespace jk_emu {
inline thread_local jk_dim3 thread_idx{0, 0, 0}, block_idx{0, 0, 0};
inline jk_dim3 block_dim{1, 1, 1}, grid_dim{1, 1, 1};
inline std::barrier<>* block_barrier = nullptr;
inline std::barrier<>* warp_barrier[32];
inline uint64_t warp_slots[32][32];
inline std::mutex launch_mutex;

inline void launch(unsigned grid, unsigned block, const std::function<void()>& body) {
  std::lock_guard<std::mutex> guard(launch_mutex);
  grid_dim = {grid, 1, 1};
  block_dim = {block, 1, 1};
  std::barrier<> bar(block);
  block_barrier = &bar;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  for (unsigned w = 0; w < (block + 31) / 32; ++w) {
    warps.emplace_back(new std::barrier<>(32));
    warp_barrier[w] = warps.back().get();
  }
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < block; ++t) {
    threads.emplace_back([&, t] {
      thread_idx = {t, 0, 0};
      for (unsigned b = 0; b < grid; ++b) {
        block_idx = {b, 0, 0};
        body();
        bar.arrive_and_wait();  /* the next block reuses the shared memory */
      }
    });
  }
  for (auto& th : threads) th.join();
}
}  // namespace jk_emu
#define threadIdx jk_emu::thread_idx
#define blockIdx jk_emu::block_idx
#define blockDim jk_emu::block_dim
#define gridDim jk_emu::grid_dim
static inline void __syncthreads() { jk_emu::block_barrier->arrive_and_wait(); }
template <class T> static inline T jk_shfl_down(T v, int d) {
  const unsigned lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
  static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
  memcpy(&jk_emu::warp_slots[w][lane], &v, sizeof(T));
  jk_emu::warp_barrier[w]->arrive_and_wait();
  T r = v;
  if (lane + (unsigned)d < 32u) memcpy(&r, &jk_emu::warp_slots[w][lane + d], sizeof(T));
  jk_emu::warp_barrier[w]->arrive_and_wait();
  return r;
}
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
static inline long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline float jk_h2f(unsigned short h) { _Float16 x; memcpy(&x, &h, 2); return (float)x; }
static inline unsigned short jk_f2h(float f) { _Float16 x = (_Float16)f; unsigned short h; memcpy(&h, &x, 2); return h; }
static inline unsigned short jk_d2h(double d) { _Float16 x = (_Float16)d; unsigned short h; memcpy(&h, &x, 2); return h; }
static inline unsigned int jk_status_or(unsigned int* s, unsigned int v) { return __atomic_fetch_or(s, v, __ATOMIC_RELAXED); }
/* ---- end of shim ---------------------------------------------------------------------- */
"""
