"""The TPU backends (docs/tpu.md): the optimised graph IR of a program lowered to one XLA
computation through JAX (`jax.lax`, one lowering rule per primitive in rules*.py), compiled for
a Google TPU (`tpu`) or, for tests without one, for JAX's CPU platform (`tpu-interpret`).

Registered in backends/__init__.py; JAX is an optional dependency (the `tpu` extra), imported
only when one of these backends compiles.
"""
