"""Imports every module of batching rules (each registers into batching.BATCH_RULES)."""
from . import batching_elementwise  # noqa: F401
