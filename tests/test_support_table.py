"""docs/numpy-support-table.md is generated from the registry and must not drift."""
from pathlib import Path

import numpy as np

from jitkernel.numpy import support_table

TABLE = Path(__file__).resolve().parents[1] / "docs" / "numpy-support-table.md"


def test_committed_table_is_the_generated_one():
    expected = support_table.generate()
    assert TABLE.read_text() == expected, (
        "docs/numpy-support-table.md is stale: regenerate it with "
        "`python -m jitkernel.numpy.support_table > docs/numpy-support-table.md`")


def test_table_reflects_the_registry():
    rows = {name: (status, note) for name, status, note in support_table.function_rows(np)}
    assert rows["numpy.triu"][0] == "supported"
    assert rows["numpy.pad"][0] == "partly" and "linear_ramp" in rows["numpy.pad"][1]
    assert rows["numpy.eye"][0] == "static"
    assert rows["numpy.nanmedian"][0] == "partly"
    # (np.nonzero, np.unique, the set functions: data-dependent lengths, numpy/_datadep.py)
    assert rows["numpy.unique"][0] == "partly" and "axis=" in rows["numpy.unique"][1]
    assert rows["numpy.intersect1d"][0] == "supported" and rows["numpy.unique_all"][0] == "supported"
    assert rows["numpy.fromfile"][0] == "unsupported" and "files" in rows["numpy.fromfile"][1]
    # every public callable of numpy is listed
    assert len(rows) == len(support_table.public_callables(np))


def test_ufunc_methods_are_probed():
    methods = dict(support_table.ufunc_rows())
    assert methods["add"]["__call__"] == "yes" and methods["add"]["reduce"] == "yes"
    assert methods["sin"]["reduce"] == "-"  # NumPy has no reduce for a unary ufunc
    assert methods["divmod"]["__call__"] == "yes"
