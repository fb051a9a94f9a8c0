"""A `%%jit` cell with top-level `def`s: every top-level function is jitted as it is defined
(an outermost decorator is added to each `def`, so the rest of the cell already sees the jitted
version), and the cell otherwise runs as usual."""
from __future__ import annotations

import ast
from typing import Any, Callable

from IPython.core.error import UsageError

import jitkernel as jk
from jitkernel.api import Jitted

from .cellexec import CellCode, prune_engine_frames, run_cell_body
from .options import CellOptions

WRAP_NAME = "__jitkernel_cell_jit__"  # bound in the user namespace only while the cell runs


def top_level_defs(tree: ast.Module) -> list[ast.FunctionDef]:
    """The cell's top-level (non-async) function definitions."""
    return [s for s in tree.body if isinstance(s, ast.FunctionDef)]


def _params(d: ast.FunctionDef) -> set[str]:
    a = d.args
    return {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}


def check_static(defs: list[ast.FunctionDef], static: tuple[str, ...]) -> None:
    """Every --static name must be a parameter of at least one function of the cell."""
    params = set().union(*(_params(d) for d in defs)) if defs else set()
    missing = [n for n in static if n not in params]
    if missing:
        raise UsageError(f"%%jit: --static {', '.join(missing)}: not a parameter of any function in this cell "
                         f"({', '.join(d.name for d in defs)})")


def run_defs_cell(shell: Any, code: CellCode, options: CellOptions,
                  on_jitted: Callable[[Jitted], None]) -> tuple[Any, list[Jitted]]:
    """Run the cell, jitting each top-level function; returns (value of a final expression,
    the jitted functions in definition order). `on_jitted` is called with each one."""
    __tracebackhide__ = True
    defs = top_level_defs(code.tree)
    check_static(defs, options.static)
    for d in defs:
        deco = ast.copy_location(ast.Name(WRAP_NAME, ast.Load()), d)
        d.decorator_list.insert(0, deco)
    ast.fix_missing_locations(code.tree)
    jitted: list[Jitted] = []

    def wrap(fn: Any) -> Any:
        if isinstance(fn, Jitted):  # already @jk.jit-decorated in the cell: keep its options
            f = fn
        elif callable(fn) and hasattr(fn, "__code__"):
            params = set(fn.__code__.co_varnames[:fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount])
            f = jk.jit(fn, **options.jit_kwargs(params))
        else:  # another decorator turned it into something else: leave it alone
            return fn
        jitted.append(f)
        on_jitted(f)
        return f

    previous = shell.user_ns.get(WRAP_NAME, None)
    shell.user_ns[WRAP_NAME] = wrap
    try:
        value = run_cell_body(shell, code)
    except Exception as e:
        prune_engine_frames(e)
        raise
    finally:
        if previous is None:
            shell.user_ns.pop(WRAP_NAME, None)
        else:
            shell.user_ns[WRAP_NAME] = previous
    return value, jitted
