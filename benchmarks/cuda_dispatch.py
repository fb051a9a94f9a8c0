"""Host-side cost of a warm `backend="cuda"` call, measured without a GPU (docs/gpu.md, "Dispatch").

The goal on a GPU is a warm dispatch of at most 15 us a call (benchmarks/gpu.py measures it
there, PyCUDA's launch included). Here the same code above the PyCUDA layer runs on an emulated
GPU (device_array.emulate_gpu): a call's time is jitkernel's host work plus the emulator's
launch, which runs the kernel on the CPU. This script times the calls and, in the same calls,
the time inside the launches, and reports the difference: what jitkernel itself spends per call (fast-path lookup, the step runner,
argument buffers, the result DeviceArray), the part a GPU run cannot make faster.

    python -m benchmarks.cuda_dispatch [--calls 5000] [--repeats 7]

Prints one line per case: the median per-call time over the repeats, and of it the time spent
outside the emulator's launch (timed around each launch in the same calls).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import jitkernel as jk
from jitkernel.backends.cuda.emulator import LaunchPolicy
from jitkernel.device_array import emulate_gpu


class LaunchClock:
    """Wraps the emulator device's `launch` to add up the time spent inside it (the launch still
    runs): in the same calls, call time minus launch time is jitkernel's own host work, whatever
    the emulator's noise."""

    def __init__(self, device) -> None:
        self.device, self.inner, self.seconds = device, device.launch, 0.0
        device.launch = self

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.inner(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0

    def close(self) -> None:
        del self.device.launch  # the class's method again


def host_work_us(f, args: tuple, calls: int, repeats: int) -> tuple[float, float]:
    """Median over `repeats` of (call time, call time minus launch time) per call, in us."""
    device = f.last_compiled().executable.runner.device
    totals, hosts = [], []
    clock = LaunchClock(device)
    try:
        for _ in range(repeats):
            clock.seconds = 0.0
            t0 = time.perf_counter()
            for _ in range(calls):
                f(*args)
            total = time.perf_counter() - t0
            totals.append(total / calls * 1e6)
            hosts.append((total - clock.seconds) / calls * 1e6)
    finally:
        clock.close()
    return statistics.median(totals), statistics.median(hosts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    opts = parser.parse_args(argv)
    # One block of one warp: the emulator's own launch as cheap as it gets (its threads are real
    # threads or barrier-split loops), so the difference is not lost in its noise.
    with emulate_gpu(LaunchPolicy(32, 1)) as gpu:
        f = jk.jit(lambda x, y: x * 2 + y, backend="cuda")
        host = np.ones(4, np.float32)
        dev = jk.device_put(host, gpu)
        cases = [("DeviceArray arguments", (dev, dev)), ("NumPy arguments (copied in)", (host, host))]
        print(f"warm backend='cuda' call on an emulated GPU, x * 2 + y of 4 float32 "
              f"(median of {opts.repeats} x {opts.calls} calls)")
        for label, args in cases:
            f(*args)
            f(*args)  # the second call registers the fast entry
            call, host = host_work_us(f, args, opts.calls, opts.repeats)
            print(f"  {label:<28} call {call:8.2f} us   of which jitkernel's host work {host:6.2f} us "
                  "(the rest: the emulator running the kernel)")

if __name__ == "__main__":
    main()
