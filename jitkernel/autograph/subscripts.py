"""The last rewrite of a converted function: subscripts go through the runtime helpers of
constant_arrays.py, so a NumPy array made inside the function (concrete while tracing) can be
indexed by, and store, traced values.

- every subscript read `a[i]` becomes `ag__.getitem(a, i)`, except inside an assignment
  target (`a[i][j] = v` writes through the view `a[i]`, which must stay NumPy's);
- a store `name[i] = v` / `name[i] op= v` into a local name becomes
      ag__sv = v; ag__si = i                 (Python's order: the value first; for `op=` the index)
      name = ag__.store_receiver(name, ag__si, ag__sv, "name")
      name[ag__si] = ag__sv                  (the user's statement, on its evaluated parts)
  so `name` is rebound to a traced copy when the store records traced values into it.

- a call of a read-only ndarray method (`c.take(i)`, `c.repeat(r)`, `c.dot(x)`, ...) becomes
  `ag__.method_call(c, "take", i)`, and `np.take(c, i)` / `np.repeat(c, r)` (whose NumPy
  dispatch looks at the array only) `ag__.function_call(np.take, c, i)`: with a concrete `c`
  and a traced argument they run on the traced constant (constant_arrays.py).

It runs after the control-flow passes (transform.py), on the function and the loop bodies and
branches they generated: their analyses (the state of a loop, views of arrays) read the
subscripts as the user wrote them, and a written array is a local of the generated function it
is written in (its state), so rebinding it there is rebinding the state.

>>> import ast
>>> fn = ast.parse("def f(x):\\n    c = g()\\n    c[x > 0] = x[0]\\n    return c[1:2]").body[0]
>>> route_subscripts(fn)
3
>>> print(ast.unparse(fn))
def f(x):
    c = g()
    ag__sv1 = ag__.getitem(x, 0)
    ag__si1 = x > 0
    c = ag__.store_receiver(c, ag__si1, ag__sv1, 'c')
    c[ag__si1] = ag__sv1
    return ag__.getitem(c, ag__.make_slice(1, 2, None))
"""
from __future__ import annotations

import ast
import itertools

from .analysis import function_locals, rewrite_blocks

AG = "ag__"
# ndarray methods that return a new array and never write into it (constant_arrays.method_call)
_METHODS = frozenset({"take", "repeat", "compress", "dot", "searchsorted", "choose", "clip"})
# NumPy functions whose __array_function__ dispatch ignores a traced index or count argument
_FUNCTIONS = frozenset({"take", "repeat"})


def _helper(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Attribute(value=ast.Name(id=AG, ctx=ast.Load()), attr=name, ctx=ast.Load()),
                    args=list(args), keywords=[])


def _index_value(index: ast.expr) -> ast.expr:
    """The index of a subscript as an ordinary expression: its slices become `make_slice(...)`
    (a slice is only syntax inside brackets)."""
    def one(e: ast.expr) -> ast.expr:
        if isinstance(e, ast.Slice):
            parts = [p if p is not None else ast.Constant(value=None) for p in (e.lower, e.upper, e.step)]
            return ast.copy_location(_helper("make_slice", *parts), e)
        return e
    if isinstance(index, ast.Tuple):
        return ast.copy_location(ast.Tuple(elts=[one(e) for e in index.elts], ctx=ast.Load()), index)
    return one(index)


class _Routes(ast.NodeTransformer):
    def __init__(self, ids: "itertools.count[int]") -> None:
        self.ids = ids
        self.locals: set[str] = set()
        self.rewritten = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        saved = self.locals
        self.locals = function_locals(node)
        node.body = self._block(node.body)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        self.locals = saved
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node  # (a class body's names are no function's locals)

    def _block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            r = self.visit(s)
            out.extend(r if isinstance(r, list) else [r])
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        rewrite_blocks(node, self._block, cases=True)
        for field, value in ast.iter_fields(node):
            if field in ("body", "orelse", "finalbody", "handlers", "cases"):
                continue
            if isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)
        f = node.func
        if not isinstance(f, ast.Attribute) or any(isinstance(a, ast.Starred) for a in node.args):
            return node
        if isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy"):
            if f.attr not in _FUNCTIONS:
                return node
            self.rewritten += 1
            return ast.copy_location(ast.Call(func=ast.Attribute(value=ast.Name(id=AG, ctx=ast.Load()),
                                                                 attr="function_call", ctx=ast.Load()),
                                              args=[f, *node.args], keywords=node.keywords), node)
        if f.attr not in _METHODS or (isinstance(f.value, ast.Name) and f.value.id.startswith(AG)):
            return node
        self.rewritten += 1
        return ast.copy_location(ast.Call(func=ast.Attribute(value=ast.Name(id=AG, ctx=ast.Load()),
                                                             attr="method_call", ctx=ast.Load()),
                                          args=[f.value, ast.Constant(value=f.attr), *node.args],
                                          keywords=node.keywords), node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if not isinstance(node.ctx, ast.Load):
            return self._target(node)
        node = self.generic_visit(node)
        self.rewritten += 1
        return ast.copy_location(_helper("getitem", node.value, _index_value(node.slice)), node)

    def _target(self, node: ast.AST) -> ast.AST:
        """An assignment target: only the expressions computed inside its index are routed; the
        subscripts it writes through stay as they are."""
        if isinstance(node, ast.Subscript):
            node.slice = self.visit(node.slice)
            node.value = self._target(node.value) if isinstance(node.value, (ast.Subscript, ast.Attribute)) \
                else self.visit(node.value)
        elif isinstance(node, ast.Attribute):
            node.value = self._target(node.value) if isinstance(node.value, (ast.Subscript, ast.Attribute)) \
                else self.visit(node.value)
        elif isinstance(node, (ast.Tuple, ast.List)):
            node.elts = [self._target(e) for e in node.elts]
        elif isinstance(node, ast.Starred):
            node.value = self._target(node.value)
        return node

    def _stored_name(self, target: ast.AST) -> str | None:
        if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and target.value.id in self.locals and not target.value.id.startswith(AG)):
            return target.value.id
        return None

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        name = self._stored_name(node.targets[0]) if len(node.targets) == 1 else None
        node.value = self.visit(node.value)
        node.targets = [self._target(t) for t in node.targets]
        if name is None:
            return node
        return self._prepared_store(node, node.targets[0], node.value, name, value_first=True)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        name = self._stored_name(node.target)
        node.value = self.visit(node.value)
        node.target = self._target(node.target)
        if name is None:
            return node
        return self._prepared_store(node, node.target, node.value, name, value_first=False)

    def _prepared_store(self, node: ast.stmt, target: ast.Subscript, value: ast.expr, name: str,
                        value_first: bool) -> list[ast.stmt]:
        n = next(self.ids)
        sv, si = f"{AG}sv{n}", f"{AG}si{n}"
        assign_value = ast.Assign(targets=[ast.Name(id=sv, ctx=ast.Store())], value=value)
        assign_index = ast.Assign(targets=[ast.Name(id=si, ctx=ast.Store())], value=_index_value(target.slice))
        prepare = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                             value=_helper("store_receiver", ast.Name(id=name, ctx=ast.Load()),
                                           ast.Name(id=si, ctx=ast.Load()), ast.Name(id=sv, ctx=ast.Load()),
                                           ast.Constant(value=name)))
        target.slice = ast.Name(id=si, ctx=ast.Load())
        node.value = ast.Name(id=sv, ctx=ast.Load())
        first = [assign_value, assign_index] if value_first else [assign_index, assign_value]
        self.rewritten += 1
        return [ast.copy_location(s, node) for s in first + [prepare]] + [node]


def route_subscripts(fn: ast.FunctionDef, ids: "itertools.count[int] | None" = None) -> int:
    """Rewrite `fn` (and the functions nested in it) in place; the number of subscripts routed."""
    routes = _Routes(ids if ids is not None else itertools.count(1))
    routes.visit(fn)
    return routes.rewritten
