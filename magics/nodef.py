"""A `%%jit` cell without top-level `def`s, traced as one function.

The cell's inputs are the names it reads before assigning them (statement by statement) that
hold arrays or numbers in the user namespace, plus the `--static` names; its outputs are the
names it assigns (written back when they hold arrays or numbers) and the value of a final
expression. The body becomes

    def cell_<outputs>(<inputs>):
        <the cell's statements, at their own line numbers>
        return <collect>(locals(), <outputs>, <final expression or None>)

compiled under the cell's filename, so errors point at the cell's lines.
"""
from __future__ import annotations

import ast
import sys
import types
from dataclasses import dataclass
from typing import Any

import numpy as np
from IPython.core.error import UsageError

from jitkernel.trace import Tracer

from .cellexec import CellCode, split_last_expression

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def is_value(v: Any) -> bool:
    """Arrays and numbers: what a no-def cell reads as inputs and writes back."""
    return isinstance(v, (Tracer, np.ndarray, np.generic)) or type(v) in (bool, int, float)


def _loads(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _stores(node: ast.AST) -> list[str]:
    """Names bound in the cell's own scope (not inside lambdas, comprehensions, nested defs)."""
    out: list[str] = []
    stack = [node]
    while stack:
        nd = stack.pop()
        if isinstance(nd, ast.Name) and isinstance(nd.ctx, ast.Store):
            out.append(nd.id)
        elif isinstance(nd, (ast.Import, ast.ImportFrom)):
            out += [(a.asname or a.name).split(".")[0] for a in nd.names]
        if isinstance(nd, _SCOPES) and nd is not node:
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(nd))))
    return out


@dataclass
class CellPlan:
    """What a no-def cell reads and writes."""

    name: str
    inputs: tuple[str, ...]  # in order of first read; includes the static names
    static: tuple[str, ...]
    outputs: tuple[str, ...]  # in order of first assignment


def plan_cell(tree: ast.Module, user_ns: dict, static: tuple[str, ...]) -> CellPlan:
    """Inputs, outputs and function name of a no-def cell, given the current namespace."""
    assigned: dict[str, None] = {}
    reads: dict[str, None] = {}
    for stmt in tree.body:
        for n in _loads(stmt):
            if n not in assigned:
                reads.setdefault(n, None)
        for n in _stores(stmt):
            assigned.setdefault(n, None)
    for n in static:
        if n not in reads:
            raise UsageError(f"%%jit: --static {n}: the cell does not read {n!r} before assigning it")
        if n not in user_ns:
            raise UsageError(f"%%jit: --static {n}: {n!r} is not defined")
    inputs = tuple(n for n in reads if n in user_ns and (n in static or is_value(user_ns[n])))
    outputs = tuple(assigned)
    ident = "_".join(outputs[:3]) if outputs else ""
    return CellPlan(f"cell_{ident}" if ident else "cell", inputs, static, outputs)


def _collect(local_vars: dict, names: tuple[str, ...], last: Any) -> tuple[dict, Any]:
    outs = {n: local_vars[n] for n in names if n in local_vars and is_value(local_vars[n])}
    return outs, (last if is_value(last) else None)


def _function_def(name: str, args: ast.arguments, body: list[ast.stmt]) -> ast.FunctionDef:
    node = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None, type_comment=None)
    if sys.version_info >= (3, 12):
        node.type_params = []
    return node


def build_function(code: CellCode, plan: CellPlan, user_ns: dict, compiler: Any = compile) -> types.FunctionType:
    """The Python function of the cell (globals = the user namespace; nothing is added to it).
    `compiler` is IPython's `shell.compile` in a shell (it keeps the session's __future__ flags)."""
    body, last = split_last_expression(code.tree)
    stmts = list(body.body)
    end = code.tree.body[-1] if code.tree.body else None
    ret = ast.Return(ast.Call(
        func=ast.Name("__jitkernel_collect__", ast.Load()),
        args=[ast.Call(ast.Name("locals", ast.Load()), [], []),
              ast.Tuple([ast.Constant(n) for n in plan.outputs], ast.Load()),
              last if last is not None else ast.Constant(None)],
        keywords=[]))
    if end is not None:
        ast.copy_location(ret, end)
    args = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in plan.inputs], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    inner = _function_def(plan.name, args, stmts + [ret])
    factory_args = ast.arguments(posonlyargs=[], args=[ast.arg("__jitkernel_collect__")], vararg=None,
                                 kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    factory = _function_def("__jitkernel_cell__", factory_args, [inner, ast.Return(ast.Name(plan.name, ast.Load()))])
    for node in (inner, factory, factory.body[1]):
        node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = 1, 0, 1, 0
    module = ast.fix_missing_locations(ast.Module([factory], type_ignores=[]))
    compiled = compiler(module, code.filename, "exec")
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    make = types.FunctionType(factory_code, user_ns, "__jitkernel_cell__")
    fn = make(_collect)
    fn.__qualname__ = plan.name
    # Tracebacks show the cell's lines like those of an ordinary cell: the function is not in
    # the cell's text, so source tools (stack_data) only find its lines as a module scope.
    fn.__code__ = fn.__code__.replace(co_name="<module>", co_qualname="<module>")
    return fn
