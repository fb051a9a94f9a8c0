"""The emulator's shim header: the CUDA names the generated source uses, on the host.

Blocks of a launch run in sequence. The threads of a block are fibers (ucontext) of one OS
thread, each running until it waits at a barrier: `__syncthreads` releases the block once every
live thread waits there, a warp shuffle (`__shfl_down_sync`) writes the lane's value to a
per-warp slot and waits at the warp's barrier (released when all 32 lanes wait; slots are
double-buffered, so one barrier per shuffle suffices). `__shared__` is a function-local
`static` (one block runs at a time). A thread that reads shared memory another thread writes
without a barrier in between reads it before the write (threads run in order up to their next
barrier), so a missing barrier gives a wrong result here deterministically; a barrier not
reached by every thread aborts the launch with a message (CUDA would hang or be undefined).
Real data races between threads cannot happen here: compute-sanitizer's racecheck is the tool
for those on a GPU. Launches are serialised by a mutex.
"""
from __future__ import annotations

SHIM = r"""
/* ---- jitkernel CUDA emulator shim (host C++20) ---------------------------------------- */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <functional>
#include <memory>
#include <mutex>
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
enum State { RUNNABLE, AT_BLOCK, AT_WARP, DONE };
struct Fiber { ucontext_t ctx; State state; };
constexpr size_t STACK = 512 * 1024;
inline jk_dim3 thread_idx{0, 0, 0}, block_idx{0, 0, 0}, block_dim{1, 1, 1}, grid_dim{1, 1, 1};
inline std::vector<Fiber> fibers;
inline std::vector<std::unique_ptr<char[]>> stacks;
inline ucontext_t scheduler;
inline unsigned current = 0;
inline const std::function<void()>* kernel_body = nullptr;
inline uint64_t warp_slots[2][32][32];
inline unsigned char shuffle_parity[1024];
inline std::mutex launch_mutex;

inline void wait(State why) {
  fibers[current].state = why;
  swapcontext(&fibers[current].ctx, &scheduler);
}
inline void entry() {
  (*kernel_body)();
  fibers[current].state = DONE;
  swapcontext(&fibers[current].ctx, &scheduler);
}
/* Run one block: every runnable fiber until it waits; then release a full warp barrier, or
   the block barrier once every live thread waits at it. */
inline void run_block(unsigned block) {
  for (unsigned t = 0; t < block; ++t) {
    getcontext(&fibers[t].ctx);
    fibers[t].ctx.uc_stack.ss_sp = stacks[t].get();
    fibers[t].ctx.uc_stack.ss_size = STACK;
    fibers[t].ctx.uc_link = nullptr;
    makecontext(&fibers[t].ctx, (void (*)())entry, 0);
    fibers[t].state = RUNNABLE;
    shuffle_parity[t] = 0;
  }
  for (;;) {
    bool ran = false;
    for (unsigned t = 0; t < block; ++t) {
      if (fibers[t].state != RUNNABLE) continue;
      current = t;
      thread_idx = {t, 0, 0};
      swapcontext(&scheduler, &fibers[t].ctx);
      ran = true;
    }
    if (ran) continue;
    bool released = false;
    for (unsigned w = 0; w * 32 < block; ++w) {
      bool all = true;
      for (unsigned t = w * 32; t < w * 32 + 32 && t < block; ++t) all = all && fibers[t].state == AT_WARP;
      if (all) {
        for (unsigned t = w * 32; t < w * 32 + 32 && t < block; ++t) fibers[t].state = RUNNABLE;
        released = true;
      }
    }
    if (released) continue;
    unsigned live = 0, at_block = 0;
    for (unsigned t = 0; t < block; ++t) {
      live += fibers[t].state != DONE;
      at_block += fibers[t].state == AT_BLOCK;
    }
    if (live == 0) return;
    if (at_block == live && live == block) {
      for (unsigned t = 0; t < block; ++t) fibers[t].state = RUNNABLE;
      continue;
    }
    fprintf(stderr, "jitkernel cuda-emulator: block %u: a barrier is not reached by every thread "
            "(%u live, %u at __syncthreads)\n", block_idx.x, live, at_block);
    abort();
  }
}
inline void launch(unsigned grid, unsigned block, const std::function<void()>& body) {
  std::lock_guard<std::mutex> guard(launch_mutex);
  if (block == 0 || block > 1024 || block % 32) {
    fprintf(stderr, "jitkernel cuda-emulator: block size %u is not a multiple of 32 up to 1024\n", block);
    abort();
  }
  grid_dim = {grid, 1, 1};
  block_dim = {block, 1, 1};
  kernel_body = &body;
  if (fibers.size() < block) fibers.resize(block);
  while (stacks.size() < block) stacks.emplace_back(new char[STACK]);
  for (unsigned b = 0; b < grid; ++b) {
    block_idx = {b, 0, 0};
    run_block(block);
  }
}
/* The host wrappers' entry (emulator.launchers): a plain function of the argument array, so
   that no kernel instantiates a std::function of its own (that made g++ 5x slower). */
inline void launch_fn(unsigned grid, unsigned block, void (*fn)(void**), void** args) {
  launch(grid, block, [fn, args] { fn(args); });
}
}  // namespace jk_emu
#define threadIdx jk_emu::thread_idx
#define blockIdx jk_emu::block_idx
#define blockDim jk_emu::block_dim
#define gridDim jk_emu::grid_dim
static inline void __syncthreads() { jk_emu::wait(jk_emu::AT_BLOCK); }
template <class T> static inline T jk_shfl_down(T v, int d) {
  static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
  const unsigned t = threadIdx.x, lane = t & 31u, w = t >> 5;
  const unsigned p = jk_emu::shuffle_parity[t];
  jk_emu::shuffle_parity[t] = (unsigned char)(p ^ 1u);
  memcpy(&jk_emu::warp_slots[p][w][lane], &v, sizeof(T));
  jk_emu::wait(jk_emu::AT_WARP);  /* every lane has written this shuffle's slot */
  T r = v;
  if (lane + (unsigned)d < 32u) memcpy(&r, &jk_emu::warp_slots[p][w][lane + d], sizeof(T));
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
