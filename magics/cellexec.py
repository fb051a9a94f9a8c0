"""Running a cell body the way IPython runs a cell, without a nested `run_cell`.

The body is transformed (`%magics`, `!cmd`), registered with IPython's compiler cache under the
running cell's number (so tracebacks say `Cell In[n], line k` and `inspect.getsource` works),
parsed with a leading blank line standing in for the `%%jit` line (line numbers match what the
user sees), AST-transformed, and executed with `exec` in the user namespace: exceptions
propagate, so the cell fails (see docs/ipython-notes.md §1).
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Any

import IPython
from IPython.core.error import UsageError

import jitkernel
from jitkernel.tracebacks import hide_engine_frames

_MAGICS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_IPYTHON_DIR = os.path.dirname(os.path.abspath(IPython.__file__)) + os.sep


@dataclass
class CellCode:
    """A parsed cell body: its AST (line 1 = the magic line), filename and transformed source."""

    tree: ast.Module
    filename: str
    source: str


def parse_cell(shell: Any, magic: str, line: str, cell: str) -> CellCode:
    """Transform and parse `cell` (the body of `%%{magic} {line}`), registering its source."""
    source = shell.transform_cell(cell)
    full = f"%%{magic} {line}\n{cell}"
    er = getattr(shell.displayhook, "exec_result", None)
    number = er.execution_count if er is not None else shell.execution_count
    filename = shell.compile.cache(full, number, raw_code=full)
    try:
        tree = shell.compile.ast_parse("\n" + source, filename=filename)
    except SyntaxError as e:
        raise CellSyntaxError(e, number) from None
    tree = shell.transform_ast(tree)
    return CellCode(tree, filename, source)


def split_last_expression(tree: ast.Module) -> tuple[ast.Module, ast.expr | None]:
    """(the statements before a final expression statement, that expression) or (tree, None)."""
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        return ast.Module(tree.body[:-1], type_ignores=[]), tree.body[-1].value
    return tree, None


def run_cell_body(shell: Any, code: CellCode) -> Any:
    """Execute the body in the user namespace; return the value of a final expression (None
    when the body ends with a statement)."""
    __tracebackhide__ = True
    body, last = split_last_expression(code.tree)
    exec(shell.compile(body, code.filename, "exec"), shell.user_ns)
    if last is None:
        return None
    return eval(shell.compile(ast.Expression(last), code.filename, "eval"), shell.user_ns)


def prune_engine_frames(exc: BaseException) -> BaseException:
    """Drop the frames of jitkernel's engine, of this extension and of IPython from `exc`'s
    traceback and those of its chained exceptions (`jitkernel.tracebacks`), so a traced cell's
    error shows the cell's lines only. `jk.config.update("traceback", "full")` keeps them all."""
    return hide_engine_frames(exc, extra_dirs=(_MAGICS_DIR, _IPYTHON_DIR))


def show_cell_frames_only(shell: Any, exc: BaseException) -> None:
    """Make IPython show `exc` with the user's cell frames only. The magic's own frames are
    pruned now; the frames IPython adds above the magic (the cell's `run_cell_magic(...)` line,
    `interactiveshell.py`) are added after the magic re-raises, so the exception renders itself
    (`_render_traceback_`, IPython's hook) from the frames left now. UsageErrors and exceptions
    that render themselves already are left alone."""
    if jitkernel.config.traceback == "full" or isinstance(exc, UsageError) or hasattr(exc, "_render_traceback_"):
        return
    user_tb = prune_engine_frames(exc).__traceback__

    def render() -> list[str]:
        return shell.InteractiveTB.structured_traceback(type(exc), exc, user_tb, tb_offset=0)
    try:
        exc._render_traceback_ = render  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # an exception type without instance attributes
        pass


class CellSyntaxError(Exception):
    """A syntax error in a %%jit body. Not a SyntaxError subclass on purpose: IPython shows
    those with its own frames; this renders as `File "Cell In[n]", line k` and the caret only."""

    def __init__(self, error: SyntaxError, number: int) -> None:
        super().__init__(f"{error.msg} (Cell In[{number}], line {error.lineno})")
        self.error = SyntaxError(error.msg, (f"Cell In[{number}]", error.lineno, error.offset, error.text,
                                             error.end_lineno, error.end_offset))

    def _render_traceback_(self) -> list[str]:
        import traceback
        return [line.rstrip("\n") for line in traceback.format_exception_only(SyntaxError, self.error)]
