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
from types import TracebackType
from typing import Any

import jitkernel

_ENGINE_DIR = os.path.dirname(os.path.abspath(jitkernel.__file__)) + os.sep


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
    """Drop the jitkernel engine's frames that lie between two user frames from `exc`'s
    traceback (trace -> compile -> call plumbing), so a traced cell's error reads
    `Cell In[n], line 1` -> `Cell In[n], line k`. Frames where the error was raised are kept."""
    entries: list[TracebackType] = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    is_engine = [e.tb_frame.f_code.co_filename.startswith(_ENGINE_DIR) for e in entries]
    last_user = max((i for i, eng in enumerate(is_engine) if not eng), default=-1)
    kept = [e for i, e in enumerate(entries) if not (is_engine[i] and i < last_user)]
    for a, b in zip(kept, kept[1:]):
        a.tb_next = b
    if kept:
        kept[-1].tb_next = None
        exc.__traceback__ = kept[0]
    return exc


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
