"""Imports every module of differentiation rules (each registers into ad.JVP_RULES / VJP_RULES)."""
from . import ad_elementwise  # noqa: F401  ufuncs, convert, select, complex parts, seed movement rules
from . import ad_structural  # noqa: F401  reduce_prod/max/min, slice, concatenate, update_slice, dot_general
from . import ad_control_flow  # noqa: F401  cond, scan, fori_loop, while_loop (helper adlib)
from . import ad_indexing  # noqa: F401  dynamic slices, gathers, scatters, put*, place (helper adlib)
from . import ad_library  # noqa: F401  accumulate, sort, linalg (helper adlib)
