"""Imports every module of differentiation rules (each registers into ad.JVP_RULES / VJP_RULES)."""
from . import ad_elementwise  # noqa: F401  ufuncs, convert, select, reductions, movement, dot_general
from . import ad_control_flow  # noqa: F401  cond, scan, fori_loop, while_loop (helper adlib)
from . import ad_indexing  # noqa: F401  dynamic slices, gathers, scatters, put*, place (helper adlib)
