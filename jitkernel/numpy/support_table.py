"""The table of every NumPy function and ufunc method with its status inside a jitted function,
generated from the registry so it cannot drift:

    python -m jitkernel.numpy.support_table > docs/numpy-support-table.md

- Functions (the public callables of `numpy`, `numpy.linalg`, `numpy.fft`): the implementation
  the `__array_function__` protocol finds (jitkernel.numpy's names and
  `_dispatch.register_function`). An implementation may carry `__jk_support__`, a string
  starting "partly: ..." or "unsupported: ..." saying what is missing (or a function returning
  one, or None when nothing is); one that is NumPy's own
  function (zeros, arange, eye, ...) runs at trace time on static arguments (a constant).
- Ufuncs: every method (`__call__`, reduce, accumulate, reduceat, outer, at) is *probed*: a tiny
  program using it is traced (`jk.make_ir`, no compilation) on float64, int64 and bool arrays,
  and the method is supported when one of them traces.

tests/test_support_table.py fails when docs/numpy-support-table.md differs from the output.

>>> rows = function_rows(np.linalg)
>>> any(name == "numpy.linalg.trace" for name, _, _ in rows)
True
"""
from __future__ import annotations

import sys
import types
import warnings
from typing import Any

import numpy as np
from ..errors import UnsupportedOperationError
from ._dispatch import _table

# Why a family of NumPy functions is not supported (functions not listed: "not implemented").
_REASONS = {
    "files, text and printing: outside the compiled subset": {
        "load", "save", "savez", "savez_compressed", "loadtxt", "savetxt", "genfromtxt", "fromfile",
        "fromregex", "frombuffer", "fromstring", "fromiter", "memmap", "array2string", "array_repr",
        "array_str", "format_float_positional", "format_float_scientific", "base_repr",
        "binary_repr", "set_printoptions", "get_printoptions", "printoptions", "info",
        "show_config", "show_runtime", "test", "get_include", "lookfor", "source", "typename",
        "getbufsize", "setbufsize", "geterr", "seterr", "geterrcall", "seterrcall",
        "set_string_function", "byte_bounds", "isfortran", "may_share_memory", "shares_memory"},
    "dtypes and Python objects, not arrays: call it outside or on static values": {
        "can_cast", "result_type", "promote_types", "min_scalar_type", "issubdtype", "isdtype",
        "mintypecode", "common_type", "isscalar", "iterable", "from_dlpack", "asmatrix", "bmat",
        "broadcast_shapes", "get_array_wrap", "ndindex"},
    "the result dtype depends on the values (real when every imaginary part is within tol, else "
    "complex), which a compiled function cannot have: inside jit take `x.real` after checking "
    "`np.allclose(x.imag, 0)` outside it, or call real_if_close outside jit": {"real_if_close"},
    "outside the compiled subset: datetime / Python objects / iterator objects": {
        "busday_count", "busday_offset", "is_busday", "datetime_as_string", "datetime_data",
        "frompyfunc", "nested_iters"},
    "needs the eigenvalues of the companion matrix (np.linalg.eigvals, unsupported: its result is "
    "real or complex depending on the values), and the number of roots depends on the zero "
    "coefficients": {"roots"},
}
_REASON_OF = {name: reason for reason, names in _REASONS.items() for name in names}


def reason_of(name: str) -> str | None:
    """Why the NumPy function `name` is not supported, when the table gives a reason."""
    return _REASON_OF.get(name)

# Functions whose implementation (in modules other helpers own) supports only part of
# NumPy's signature; implementations may instead carry their own `__jk_support__`.
_NOTES = {
    "reshape": "partly: C order only",
    "ravel": "partly: C order only",
    "concatenate": "partly: out= unsupported",
    "empty_like": "supported: gives zeros (never uninitialised memory)",
    "round": "partly: integer round with negative decimals unsupported",
    "around": "partly: integer round with negative decimals unsupported",
}

UFUNC_METHODS = ("__call__", "reduce", "accumulate", "reduceat", "outer", "at")


def public_callables(module: types.ModuleType) -> list[str]:
    """Public callable names of a NumPy module, classes and ufuncs and submodules excluded."""
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = []
    for name in sorted(set(names)):
        if name.startswith("_"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = getattr(module, name, None)
        if obj is None or not callable(obj) or isinstance(obj, (type, np.ufunc, types.ModuleType)):
            continue
        out.append(name)
    return out


def _status(module: types.ModuleType, name: str, table: dict) -> tuple[str, str]:
    obj = getattr(module, name)
    obj = getattr(obj, "__jitkernel_original__", obj)  # not a wrapper installed while tracing
    impl = table.get(obj)
    if impl is None:
        return "unsupported", _REASON_OF.get(name, "not implemented")
    note = getattr(impl, "__jk_support__", None)
    if callable(note):  # decided now (what it needs may be registered by another module)
        note = note()
    note = note or (_NOTES.get(name) if module is np else None)
    if impl is obj:
        return "static", "static arguments only: NumPy computes it at trace time (a constant)"
    if note is None:
        return "supported", ""
    status, _, rest = note.partition(":")
    return status.strip().split()[0], rest.strip() or note


def function_rows(module: types.ModuleType) -> list[tuple[str, str, str]]:
    """(qualified name, status, notes) for every public function of `module`."""
    table = _table()
    prefix = module.__name__
    return [(f"{prefix}.{name}",) + _status(module, name, table) for name in public_callables(module)]


FUNCTION_MODULES = (np, np.linalg, np.fft)


def unsupported_rows() -> list[tuple[types.ModuleType, str, Any, str]]:
    """(module, name, NumPy's function, reason) of every function the table lists as
    unsupported (trace/unsupported.py makes them raise at the user's call)."""
    rows = []
    for module in FUNCTION_MODULES:
        for qualified, status, reason in function_rows(module):
            if status == "unsupported":
                name = qualified.rsplit(".", 1)[1]
                obj = getattr(module, name)
                rows.append((module, name, getattr(obj, "__jitkernel_original__", obj), reason))
    return rows


# ----------------------------------------------------------------------------- ufunc probes

def _probe_inputs(dtype: Any) -> np.ndarray:
    return np.array([1, 2, 3], dtype=dtype)


def _probe(ufunc: np.ufunc, method: str) -> str:
    """"yes" when some dtype traces, "no" when none does, "-" when NumPy has no such method
    for this ufunc (reduce of a unary ufunc, ...)."""
    from .. import make_ir
    if method in ("reduce", "accumulate", "reduceat", "outer") and (ufunc.nin != 2 or ufunc.nout != 1):
        return "-"
    programs = {
        "__call__": lambda x: ufunc(*_call_operands(ufunc, x)),
        "reduce": lambda x: ufunc.reduce(x),
        "accumulate": lambda x: ufunc.accumulate(x),
        "reduceat": lambda x: ufunc.reduceat(x, [0, 2]),
        "outer": lambda x: ufunc.outer(x, x),
        "at": lambda x: _at(ufunc, x),
    }
    numpy_runs = False
    for dtype in (np.float64, np.int64, np.bool_):
        x = _probe_inputs(dtype)
        try:  # NumPy has no loop for this dtype: try the next one
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                programs[method](x)
        except Exception:
            continue
        numpy_runs = True
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                make_ir(programs[method])(x)
            return "yes"
        except (UnsupportedOperationError, NotImplementedError, AttributeError):
            return "no"
        except Exception:
            continue
    return "no" if numpy_runs or method == "__call__" else "-"


def _call_operands(ufunc: np.ufunc, x: Any) -> list:
    """x for each operand of an elementwise ufunc; for a gufunc (matvec's "(m,n),(n)->(m)"),
    operands with x's dtype and its core dimensions, each of length 3."""
    if ufunc.signature is None:
        return [x] * ufunc.nin
    ins = ufunc.signature.split("->")[0]
    dims = [part.strip("()").split(",") for part in ins.split("),(")]
    return [np.ones(tuple(3 for d in core if d.strip()), x.dtype) for core in dims]


# Ufuncs refused on purpose, with the reason the table gives.
UFUNC_NOTES = {
    "isnat": "refused: defined for datetime64/timedelta64 only, which jitkernel does not trace; "
             "on every dtype it traces NumPy raises the same TypeError",
}


def _at(ufunc: np.ufunc, x: Any) -> Any:
    y = x.copy()
    if ufunc.nin == 1:
        ufunc.at(y, [0, 1])
    else:
        ufunc.at(y, [0, 1], x[:2])
    return y


def ufunc_rows() -> list[tuple[str, dict[str, str]]]:
    """(name, {method: "yes" | "no" | "-"}) for every ufunc in the numpy namespace."""
    names = sorted({getattr(np, n).__name__ for n in dir(np) if isinstance(getattr(np, n, None), np.ufunc)})
    return [(name, {m: _probe(getattr(np, name), m) for m in UFUNC_METHODS}) for name in names]


def ufunc_aliases() -> dict[str, list[str]]:
    """Other names of each ufunc in the numpy namespace (np.abs for np.absolute, ...)."""
    aliases: dict[str, list[str]] = {}
    for n in sorted(dir(np)):
        uf = getattr(np, n, None)
        if isinstance(uf, np.ufunc) and n != uf.__name__:
            aliases.setdefault(uf.__name__, []).append(n)
    return aliases


# ----------------------------------------------------------------------------- output

_MARK = {"yes": "yes", "no": "no", "-": "-"}


def generate() -> str:
    """The whole markdown document (docs/numpy-support-table.md)."""
    lines = [
        "# NumPy support table (generated)",
        "",
        "Generated from the registry by `python -m jitkernel.numpy.support_table > docs/numpy-support-table.md`;",
        "do not edit by hand. `tests/test_support_table.py` fails when this file is stale: after adding",
        "or changing a function, run the command above and commit the result. Status: **supported**;",
        "**partly** (what is missing is named); **static** (NumPy's own function runs at trace time on",
        "static arguments: the result is a constant); **unsupported** (raises",
        "`UnsupportedOperationError` naming the function; the reason is given). Details and",
        "differences: docs/numpy-support.md.",
        f"NumPy {np.__version__}.",
        "",
    ]
    counts: dict[str, int] = {}
    sections = []
    for module in FUNCTION_MODULES:
        rows = function_rows(module)
        body = [f"## `{module.__name__}`", "", "| function | status | notes |", "|---|---|---|"]
        for name, status, note in rows:
            counts[status] = counts.get(status, 0) + 1
            body.append(f"| `{name}` | {status} | {note} |")
        sections.append("\n".join(body))
    urows = ufunc_rows()
    body = ["## ufuncs and their methods", "",
            "Each method is probed by tracing it on small float64, int64 or bool arrays (`-`: NumPy has",
            "no such method for this ufunc).", "",
            "| ufunc | " + " | ".join(f"`{m}`" for m in UFUNC_METHODS) + " | notes |",
            "|---|" + "---|" * len(UFUNC_METHODS) + "---|"]
    aliases = ufunc_aliases()
    for name, methods in urows:
        also = "".join(f", `{a}`" for a in aliases.get(name, []))
        body.append(f"| `numpy.{name}`{also} | " + " | ".join(_MARK[methods[m]] for m in UFUNC_METHODS)
                    + f" | {UFUNC_NOTES.get(name, '')} |")
    sections.append("\n".join(body))
    total = sum(counts.values())
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("supported", "partly", "static", "unsupported"))
    called = sum(1 for _, m in urows if m["__call__"] == "yes")
    lines.append(f"Functions: {total} ({summary}). Ufuncs: {len(urows)} ({called} callable inside jit).")
    lines.append("")
    return "\n".join(lines) + "\n" + "\n\n".join(sections) + "\n"


def main(argv: list[str] | None = None) -> int:
    sys.stdout.write(generate())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
