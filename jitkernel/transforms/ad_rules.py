"""Imports every module of differentiation rules (each registers into ad.JVP_RULES / VJP_RULES)."""
from . import ad_elementwise  # noqa: F401  ufuncs, convert, select, complex parts, seed movement rules
from . import ad_structural  # noqa: F401  reduce_prod/max/min, slice, concatenate, update_slice, dot_general
