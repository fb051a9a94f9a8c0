"""Benchmarks of jitkernel against NumPy, numexpr, Numba and JAX: `python -m benchmarks.run`."""
