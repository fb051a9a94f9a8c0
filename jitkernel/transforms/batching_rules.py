"""Imports every module of batching rules (each registers into batching.BATCH_RULES)."""
from . import batching_elementwise  # noqa: F401
from . import batching_structural  # noqa: F401
from . import batching_indexing  # noqa: F401
from . import batching_control  # noqa: F401
