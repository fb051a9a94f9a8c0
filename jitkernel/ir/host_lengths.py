"""Lengths that only the data decides and that nothing bounds (`np.repeat(x, r)` with traced
int64 `r`: the length is `r.sum()`), read on the host.

The padded representation of data-dependent shapes (numpy/_datadep.py) needs a static largest
length; the sum of int64 repeats has none. Such a length is instead a *static* length the
program is compiled for, checked when the program runs:

- while tracing, each such site (numbered in trace order) takes the length the jitted function
  assumes for it (`HOST_LENGTHS`, set by jitted/compile_cache.py around a trace), or a first
  guess, which the trace records there;
- the step that computes it (`datadep_call` "repeat_exact") runs NumPy's own function on the
  host, so NumPy's errors come first (negative repeats), then compares the length with the
  compiled one and raises `HostLengthChanged(site, length)` when they differ, before anything
  is returned or written back to the caller;
- the jitted function (jitted/dispatch.py) catches it, traces and compiles the function again
  for that length (once per set of lengths: kept as variants of the signature) and runs it.

So the rest of the program sees an exact static shape (any axis, fused and native), and every
new length costs one compilation, as a static argument would.
"""
from __future__ import annotations

import contextvars

# site index -> the static length the current trace compiles that site for (None: not in a jitted call's trace)
HOST_LENGTHS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("jitkernel_host_lengths", default=None)


class HostLengthChanged(Exception):
    """A length read on the host differs from the one the program was compiled for. The jitted
    function catches it and compiles the program for the new length; seen only where the call
    cannot be compiled again (a program run outside its jitted function)."""

    def __init__(self, site: int, length: int, expected: int, where: str) -> None:
        super().__init__(f"{where}: the result has length {length} at run time, but this program was compiled for "
                         f"{expected}; call the jitted function itself, which compiles it again for the new length")
        self.site, self.length, self.expected, self.where = site, length, expected, where
