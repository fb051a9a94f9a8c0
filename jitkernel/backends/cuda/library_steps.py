"""Which library steps the GPU runs: BODY_LIBRARY_PRIMS (those fusion may leave inside a loop or
branch body on the CUDA backends) and LIBRARY_STEPS (what the GPU runs of each, for the coverage
table).

>>> BODY_LIBRARY_PRIMS <= set(LIBRARY_STEPS)
True
"""
from __future__ import annotations


# Library steps the CUDA renderer implements (library_rules.LIBRARY_RULES), so that fusion may
# leave them inside a loop or branch body: flow_steps.py runs any step kind there (docs/gpu.md,
# "Control flow on the GPU"). A body holding any other library step keeps the loop a library
# step, which flow.py's rule refuses naming that step.
BODY_LIBRARY_PRIMS = frozenset({"dot_general", "complex_library", "gather", "scatter", "scatter_ufunc", "accumulate",
                                "take", "take_along_axis", "sort", "argsort",
                                "searchsorted", "take_static", "raise_if", "debug_callback"})


# What the GPU runs of each library step (the rules of library_rules.LIBRARY_RULES); every other
# library step raises naming it (the coverage table, docs/primitive-coverage.md, prints this).
LIBRARY_STEPS = {
    "dot_general": "tiled matmul kernel (render_matmul.py)",
    "complex_library": "complex functions in C (complex_functions.py)",
    "gather": "gather kernel (indexing.py)", "scatter": "scatter kernel (indexing.py)",
    "scatter_ufunc": "ufunc.at kernel for add, subtract, multiply, maximum, minimum (indexing.py)",
    "accumulate": "scan kernel (accumulate.py)", "take": "take kernel (take.py)",
    "take_along_axis": "take kernel (take.py)", "take_static": "take kernel (take.py)",
    "sort": "sort kernel (sort.py)", "argsort": "sort kernel (sort.py)",
    "searchsorted": "binary search kernel (search.py)", "raise_if": "status check (checks.py)",
    "debug_callback": "values copied to the host, the Python callback run there (host_callback.py)",
    "datadep_pure": "boolean selection and nonzero only (compaction.py)",
    "datadep_call": "boolean selection and nonzero only (compaction.py)",
}
