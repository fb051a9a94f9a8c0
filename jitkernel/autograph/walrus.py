"""Pass 0 of the conversion (transform.py): named expressions (`:=`) where the other passes would
move them into a nested function, where they would bind a name of that function instead of
the user's.

- `while test:` whose test holds a `:=` becomes `while True:` with `if not test: [else]; break`
  first in its body: the test runs in the loop body, so the name it binds is loop state, seen
  by the body and after the loop (`while (v := x[i]) > 0:`).
- A conditional expression, `and`/`or`, or a comparison chain with a `:=` in an operand that
  Python evaluates only sometimes (`y if c else (w := e)`, `a and (b := e)`, `a < (b := e) < c`)
  becomes statements before its statement: `if`s that assign a temporary, which the statement
  reads instead. Statement `if`s are converted as usual (traced or not), so a name bound on one
  path only keeps its earlier value on the other, as in Python.

The lifted construct runs before the rest of its statement: where Python would evaluate other
parts of that statement first (a call before it in `f(g(), a if c else (w := e))`), they now
run after it; the values are the same unless those parts have side effects.
"""
from __future__ import annotations

import ast
import itertools
from typing import Callable

from .analysis import contains, rewrite_blocks

AG = "ag__"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def _load(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)


def _operand(decided_by: str, value: ast.expr) -> ast.Call:
    """ag__.operand(decided_by, value): an `and`/`or` operand's value, or its truth value once a
    traced operand decided (what runtime.and_ / or_ give)."""
    return ast.Call(func=ast.Attribute(value=_load(AG), attr="operand", ctx=ast.Load()),
                    args=[_load(decided_by), value], keywords=[])


def _lazy_parts(node: ast.AST) -> list[ast.expr]:
    """The operands of `node` that Python evaluates only sometimes."""
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, ast.BoolOp):
        return node.values[1:]
    if isinstance(node, ast.Compare) and len(node.ops) >= 2:
        return node.comparators[1:]
    return []


def _has_walrus(nodes: list[ast.expr]) -> bool:
    return contains(nodes, (ast.NamedExpr,)) is not None


def _first_lazy_walrus(node: ast.AST) -> ast.expr | None:
    """The outermost (then leftmost) lazy construct with a `:=` in a lazy operand, in the
    expressions of `node` itself (not in nested scopes: lambdas, comprehensions)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _SCOPES) or isinstance(child, ast.stmt):
            continue
        if _has_walrus(_lazy_parts(child)):
            return child
        found = _first_lazy_walrus(child)
        if found is not None:
            return found
    return None


class _Replace(ast.NodeTransformer):
    def __init__(self, old: ast.AST, new: ast.expr) -> None:
        self.old, self.new = old, new

    def visit(self, node: ast.AST) -> ast.AST:
        return ast.copy_location(self.new, node) if node is self.old else super().visit(node)


class NamedExpressions:
    """Rewrites a function body (see the module docstring); `located(stmt, like)` gives new
    statements the user's line."""

    def __init__(self, located: Callable[[ast.AST, ast.AST], ast.AST]) -> None:
        self._ids = itertools.count(1)
        self._located = located
        self.converted = 0

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out.extend(self._stmt(s))
        return out

    def _stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [s]  # (nested functions are converted on their own)
        if isinstance(s, ast.While) and _has_walrus([s.test]):
            s = self._while_true(s)
        rewrite_blocks(s, self.block)
        if isinstance(s, ast.While):
            return [s]  # its test runs on every iteration: nothing can move before it
        lazy = _first_lazy_walrus(s)
        if lazy is None:
            return [s]
        temp = f"ag__lazy{next(self._ids)}"
        before = [self._located(x, s) for x in self._statements(lazy, temp)]
        _Replace(lazy, _load(temp)).visit(s)
        self.converted += 1
        return self.block(before) + self._stmt(s)

    def _while_true(self, s: ast.While) -> ast.While:
        """`while test: body else: E` as `while True: if not test: E; break` + body (E runs when
        the test fails, as Python's `else`). An `else` that itself breaks or continues (an
        outer loop's jump) keeps the loop as it is."""
        if s.orelse and contains(s.orelse, (ast.Break, ast.Continue), into_loops=False):
            return s
        leave = ast.If(test=ast.UnaryOp(op=ast.Not(), operand=s.test), body=s.orelse + [ast.Break()], orelse=[])
        loop = ast.While(test=ast.Constant(value=True), body=[self._located(leave, s)] + s.body, orelse=[])
        self.converted += 1
        return self._located(ast.copy_location(loop, s), s)

    def _statements(self, node: ast.expr, temp: str) -> list[ast.stmt]:
        """Statements that leave the value of `node` in `temp`, evaluating its operands as
        Python does."""
        if isinstance(node, ast.IfExp):
            return [ast.If(test=node.test, body=[_assign(temp, node.body)], orelse=[_assign(temp, node.orelse)])]
        if isinstance(node, ast.BoolOp):
            return [_assign(temp, node.values[0])] + self._bool_rest(node.values[1:], temp, isinstance(node.op, ast.And))
        return self._chain(node, temp)

    def _bool_rest(self, values: list[ast.expr], temp: str, is_and: bool) -> list[ast.stmt]:
        if not values:
            return []
        go_on = [_assign(temp, _operand(temp, values[0]))] + self._bool_rest(values[1:], temp, is_and)
        stop = [_assign(temp, _operand(temp, _load(temp)))]
        return [ast.If(test=_load(temp), body=go_on if is_and else stop, orelse=stop if is_and else go_on)]

    def _chain(self, node: ast.Compare, temp: str) -> list[ast.stmt]:
        """`a < b < c`: `b` evaluated once, `c` only when `a < b` (Python's chain)."""
        right = f"{temp}_operand"
        first = [_assign(right, node.comparators[0]),
                 _assign(temp, ast.Compare(left=node.left, ops=[node.ops[0]], comparators=[_load(right)]))]

        def rest(k: int) -> list[ast.stmt]:
            if k == len(node.ops):
                return []
            left = f"{temp}_left{k}"
            go_on = [_assign(left, _load(right)), _assign(right, node.comparators[k]),
                     _assign(temp, _operand(temp, ast.Compare(left=_load(left), ops=[node.ops[k]],
                                                              comparators=[_load(right)])))] + rest(k + 1)
            return [ast.If(test=_load(temp), body=go_on, orelse=[_assign(temp, _operand(temp, _load(temp)))])]
        return first + rest(1)
