"""The names of kernels in a translation unit: `jk_<tag>_<step name as a C identifier>`.

The tag is a hash of the rendered text, known only once every step is rendered: the renderers
write PLACEHOLDER where it goes, and render.render_program replaces it.

>>> kernel_name(PLACEHOLDER, "reduce_sum.3")
'jk___JKP___reduce_sum_3'
"""
from __future__ import annotations

import re

PLACEHOLDER = "__JKP__"


def c_name(text: str) -> str:
    """`text` as a C identifier: every other character becomes `_`."""
    return re.sub(r"[^0-9A-Za-z_]", "_", text)


def kernel_name(placeholder: str, step_name: str) -> str:
    """The base name of a step's kernels (its launches add suffixes: `_copy`, `_check`, ...)."""
    return f"jk_{placeholder}_{c_name(step_name)}"
