"""The AST rewrite: Python control flow -> calls of the runtime helpers (`ag__.for_range`,
`ag__.while_stmt`, `ag__.if_stmt`, ...), which run plain Python on concrete values and
`jk.lax` on traced ones.

Per function, in this order (each pass sees the result of the one before):

0. named expressions (walrus.py): a `while` whose test holds `:=` tests inside its body, and a
   conditional expression / `and` / `or` / comparison chain with `:=` in an operand evaluated
   only sometimes becomes `if` statements before its statement, so the name is the function's;
1. expressions: `x if c else y`, `and`, `or`, `not`, `max(...)`, `min(...)` become helper calls
   whose operands are lambdas (so they stay lazy, as in Python);
2. loops (inner first): in a `for i in range(...)` or `while` loop, `return e` becomes
   `rv = e; ret = True; brk = True`, `break` becomes `brk = True`, `continue` becomes
   `cont = True`, and the statements after one of those run under `if ag__.guard(brk, cont):`
   (flags, as AutoGraph does); after the loop `if ret: return rv`;
3. returns in `if`s: when one branch always returns, the statements after the `if` move into
   the other branch, so every remaining `return` is the last statement of a branch (tail);
4. statements (inner first): every converted loop and `if` becomes local functions over the
   *state* (the names the statement rebinds and the arrays it writes in place, passed in and
   returned as a tuple) and one helper call that rebinds the state. A tail `if` returns the
   helper's result instead.

Nodes keep the user's line and column numbers: the converted code is compiled with the user's
file name, so tracebacks and `Tracer._where()` show the user's lines.
"""
from __future__ import annotations

import ast
import builtins
import itertools
from typing import Callable, Iterable

from .analysis import (always_returns, bound_names, contains, declared_outside, function_locals, is_generator,
                       iteration_locals, rewrite_blocks, walk_scope, written_bases)
from .iteration import desugar as desugar_tuple_targets
from .walrus import NamedExpressions

AG = "ag__"
_BUILTIN_CALLS = ("max", "min", "len", "int", "float")


def _load(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _store(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Store())


def _helper(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Attribute(value=_load(AG), attr=name, ctx=ast.Load()), args=list(args), keywords=[])


def _const(value: object) -> ast.Constant:
    return ast.Constant(value=value)


def _names_tuple(names: Iterable[str]) -> ast.Tuple:
    return ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())


def _lambda(body: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=_no_args(), body=body)


def _no_args(*names: str) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_store(name)], value=value)


def _header(node: ast.AST) -> ast.AST:
    """A position covering the header of a compound statement (`for i in range(n):`, `if c:`),
    or the whole of a simple one: where tracebacks of generated code point."""
    end = {ast.For: "iter", ast.While: "test", ast.If: "test", ast.With: None}.get(type(node))
    last = getattr(node, end, None) if end else None
    if last is None:
        return node if not hasattr(node, "body") else _span(node, node.lineno, node.col_offset)
    return _span(node, last.end_lineno, last.end_col_offset)


def _span(node: ast.AST, end_lineno: int, end_col: int) -> ast.AST:
    where = ast.Pass()
    where.lineno, where.col_offset = node.lineno, node.col_offset
    where.end_lineno, where.end_col_offset = end_lineno, end_col
    return where


def _located(node: ast.AST, like: ast.AST) -> ast.AST:
    """`node` with the position of `like`'s header on every sub-node that has none (the user's
    line)."""
    like = _header(like)
    for n in ast.walk(node):
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            ast.copy_location(n, like)
    return node


def _state_load(names: list[str]) -> ast.Tuple:
    """(ag__.ld(lambda: a), ...): the current values, or ag__.UNDEFINED for unbound names."""
    return ast.Tuple(elts=[_helper("ld", _lambda(_load(n))) for n in names], ctx=ast.Load())


def _unpack(names: list[str], source: str = "ag__state") -> list[ast.stmt]:
    if not names:
        return []
    return [ast.Assign(targets=[ast.Tuple(elts=[_store(n) for n in names], ctx=ast.Store())], value=_load(source))]


def _pack(names: list[str]) -> ast.Return:
    return ast.Return(value=ast.Tuple(elts=[_load(n) for n in names], ctx=ast.Load()))


def _def(name: str, params: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    return ast.FunctionDef(name=name, args=_no_args(*params), body=body or [ast.Pass()], decorator_list=[],
                           returns=None, type_comment=None, type_params=[])


def _is_range_loop(node: ast.AST) -> bool:
    return (isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range" and not node.iter.keywords
            and 1 <= len(node.iter.args) <= 3 and not any(isinstance(a, ast.Starred) for a in node.iter.args))


def _is_iter_loop(node: ast.AST) -> bool:
    """`for x in <expression>` (not a range): converted to `for_iter`, which loops over a traced
    array's first axis with a traced index and runs any other iterable as Python."""
    return isinstance(node, ast.For) and isinstance(node.target, ast.Name) and not _is_range_loop(node)


_UNSUPPORTED_IN_CONVERTED = (ast.Global, ast.Nonlocal, ast.Delete, ast.Yield, ast.YieldFrom, ast.Await)


def _unsupported_when_traced(stmts: list[ast.stmt]) -> ast.expr:
    """A description of the first statement that cannot be compiled into a loop body or a branch
    (`try`, `raise`: they act on trace-time events, not run-time ones), or None; the helper
    raises it, naming the line, only when the statement is really traced."""
    node = contains(stmts, (ast.Try, ast.Raise) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
    if node is None:
        return _const(None)
    what = "a `raise` statement" if isinstance(node, ast.Raise) else "a `try` statement"
    return _const(f"{what} (line {node.lineno})")


class _Expressions(ast.NodeTransformer):
    """Pass 1: lazy helper calls for conditional expressions, boolean operators and builtins;
    a check before every write into an array that is not a local of the function."""

    def __init__(self, local_names: set[str], maybe_unbound: set[str] = frozenset()) -> None:
        self.locals = local_names
        # names a converted loop or `if` may leave unbound on some run-time paths: read through
        # ag__.read (runtime.MaybeBound); a wrapped read alone does not make a function converted
        self.maybe_unbound = maybe_unbound
        self.converted = 0

    def visit(self, node: ast.AST) -> ast.AST:
        result = super().visit(node)
        if result is not node:
            self.converted += 1
        return result

    # nested scopes are converted on their own (functions) or left alone (classes)
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.maybe_unbound:
            self.converted -= 1  # (visit counts the replaced node)
            return _located(_helper("read", node, _const(node.id)), node)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        if contains([node.body, node.orelse], (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return node
        return _located(_helper("if_exp", node.test, _lambda(node.body), _lambda(node.orelse)), node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        if contains(node.values[1:], (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return node
        name = "and_" if isinstance(node.op, ast.And) else "or_"
        return _located(_helper(name, node.values[0], *[_lambda(v) for v in node.values[1:]]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _located(_helper("not_", node.operand), node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        """`a < b < c` is `a < b and b < c` with `b` evaluated once (Python's chain)."""
        self.generic_visit(node)
        if len(node.ops) < 2 or contains(node.comparators, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return node
        pairs = [ast.Tuple(elts=[_const(type(op).__name__), _lambda(right)], ctx=ast.Load())
                 for op, right in zip(node.ops, node.comparators)]
        return _located(_helper("compare_chain", node.left, *pairs), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if (isinstance(f, ast.Name) and f.id in _BUILTIN_CALLS and node.args and not node.keywords
                and not any(isinstance(a, ast.Starred) for a in node.args)):
            return _located(_helper("builtin_call", f, *node.args), node)
        if _routed_call(f, self.locals):
            # (callees.py: the user's helper functions are converted too; NumPy's creation
            # functions under other names make traced arrays)
            return _located(ast.Call(func=ast.Attribute(value=_load(AG), attr="call", ctx=ast.Load()),
                                     args=[f, *node.args], keywords=node.keywords), node)
        return node

    # -- writes into arrays captured from outside (globals, closures, attributes) ----------
    def _captured_roots(self, targets: list[ast.AST]) -> list[ast.expr]:
        roots = []
        for t in targets:
            for leaf in ast.walk(t) if isinstance(t, (ast.Tuple, ast.List)) else [t]:
                if not isinstance(leaf, ast.Subscript):
                    continue
                base = leaf
                while isinstance(base, ast.Subscript):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in self.locals:
                    continue
                if isinstance(base, (ast.Name, ast.Attribute)):
                    roots.append(base)
        return roots

    def _with_checks(self, node: ast.stmt, roots: list[ast.expr]) -> ast.AST:
        if not roots:
            return node
        checks = [_located(ast.Expr(value=_helper("check_captured_write", _copy_load(r), _const(ast.unparse(r)))), node)
                  for r in roots]
        return checks + [node]

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        return self._with_checks(node, self._captured_roots(node.targets))

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        result = self._with_checks(node, self._captured_roots([node.target]))
        target = node.target
        if isinstance(target, ast.Name) and target.id in self.maybe_unbound:
            # `v += e` reads v first: the same check as a read (the same object when bound, so an
            # array updated in place stays the caller's)
            check = _located(_assign(target.id, _helper("read", _load(target.id), _const(target.id))), node)
            result = [check] + (result if isinstance(result, list) else [result])
        return result


# Builtins that read their caller's frame (or that later passes recognise by name) are never
# routed through ag__.call; other builtins are called as they are by it anyway.
_FRAME_BUILTINS = frozenset(dir(builtins))


def _routed_call(f: ast.expr, local_names: set[str]) -> bool:
    """Whether a call of `f` goes through ag__.call: a bare name that is not a builtin (a helper
    function, `zeros` imported from NumPy) and `np.ndarray(...)`."""
    if isinstance(f, ast.Name):
        return not f.id.startswith(AG) and (f.id not in _FRAME_BUILTINS or f.id in local_names)
    return (isinstance(f, ast.Attribute) and f.attr == "ndarray" and isinstance(f.value, ast.Name)
            and f.value.id in ("np", "numpy"))


def _copy_load(node: ast.expr) -> ast.expr:
    """A Load-context copy of a Name/Attribute expression."""
    text = ast.unparse(node)
    expr = ast.parse(text, mode="eval").body
    return ast.copy_location(expr, node) if hasattr(node, "lineno") else expr


class FunctionConverter:
    """Converts one function definition (and the functions nested in it) in place."""

    def __init__(self, callee_writes: Callable[[str], frozenset] | None = None) -> None:
        self._ids = itertools.count(1)
        self.converted = 0  # control-flow statements and expressions rewritten (0: nothing to do)
        # name -> the parameters (positions, names) the function it names writes (callees.py)
        self.callee_writes = callee_writes

    # -- entry ----------------------------------------------------------------------------
    def function(self, fn: ast.FunctionDef) -> None:
        if is_generator(fn) or declared_outside(fn.body):
            return  # generators and global/nonlocal writers keep Python's behaviour
        for nested in [n for n in walk_scope(fn.body) if isinstance(n, ast.FunctionDef)]:
            FunctionConverter.function(self, nested)
        saved = getattr(self, "locals", None)
        walrus = NamedExpressions(_located)
        fn.body = walrus.block(fn.body)
        self.converted += walrus.converted
        # pass 0: `for i, x in enumerate(a)` / `for x, y in zip(a, b)` get a plain target
        self.converted += desugar_tuple_targets(fn.body, function_locals(fn), self._ids, AG)
        self.locals = function_locals(fn)
        expressions = _Expressions(self.locals, _bound_in_control_flow(fn.body) & self.locals)
        fn.body = _flatten([expressions.visit(s) for s in fn.body])
        self.converted += expressions.converted
        fn.body = self._lower_block(fn.body)
        fn.body = _normalize_returns(fn.body)
        saved_iteration_locals = getattr(self, "iteration_locals", None)
        # (read from the function as it stands before pass 4 hides loop bodies in functions)
        self.iteration_locals = {id(n): iteration_locals(fn.body, n) for n in walk_scope(fn.body)
                                 if hasattr(n, "_ag_break")}
        fn.body = self._convert_block(fn.body, tail=True)
        self.locals, self.iteration_locals = saved, saved_iteration_locals

    # -- pass 2: break / continue / return inside loops become flags ------------------------
    def _lower_block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out.extend(self._lower_stmt(s))
        return out

    def _lower_stmt(self, s: ast.stmt) -> list[ast.stmt]:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [s]
        rewrite_blocks(s, self._lower_block)
        if (_is_range_loop(s) or _is_iter_loop(s) or isinstance(s, ast.While)) and self._loop_convertible(s):
            return self._lower_loop(s)
        return [s]

    def _loop_convertible(self, loop: ast.For | ast.While) -> bool:
        if contains(loop.body, _UNSUPPORTED_IN_CONVERTED):
            return False
        # a `return` inside a Python loop nested in this one cannot be lowered to flags
        returns_here = [n for n in walk_scope(loop.body, into_loops=False) if isinstance(n, ast.Return)]
        returns_all = [n for n in walk_scope(loop.body) if isinstance(n, ast.Return)]
        return len(returns_here) == len(returns_all)

    def _lower_loop(self, loop: ast.For | ast.While) -> list[ast.stmt]:
        n = next(self._ids)
        brk, cont, ret, rv = f"ag__brk{n}", f"ag__cont{n}", f"ag__ret{n}", f"ag__rv{n}"
        has_break = contains(loop.body, (ast.Break,), into_loops=False) is not None
        has_cont = contains(loop.body, (ast.Continue,), into_loops=False) is not None
        has_ret = contains(loop.body, (ast.Return,), into_loops=False) is not None
        pre: list[ast.stmt] = []
        if has_break or has_ret:
            pre.append(_assign(brk, _const(False)))
        if has_ret:
            pre += [_assign(ret, _const(False)), _assign(rv, _helper("undefined", _const("the return value")))]
        body = _replace_jumps(loop.body, brk, cont, ret, rv)
        flags = ([brk] if has_break or has_ret else []) + ([cont] if has_cont else [])
        body = _guard(body, flags)
        if has_cont:
            body = [_assign(cont, _const(False))] + body
        loop.body = body
        loop._ag_break = brk if (has_break or has_ret) else None
        post: list[ast.stmt] = []
        if has_ret:
            post.append(ast.If(test=_load(ret), body=[ast.Return(value=_load(rv))], orelse=[]))
        if loop.orelse:
            orelse, loop.orelse = loop.orelse, []
            post += [ast.If(test=_helper("not_", _load(brk)), body=orelse, orelse=[])] if loop._ag_break else orelse
        return [_located(s, loop) for s in pre + [loop] + post]

    # -- pass 4: statements become helper calls ----------------------------------------------
    def _convert_block(self, stmts: list[ast.stmt], tail: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for k, s in enumerate(stmts):
            at_tail = tail and k == len(stmts) - 1
            # The state is read from the statement as the user wrote it (after the flag passes):
            # a write inside a nested statement is hidden in a generated function once converted.
            if isinstance(s, ast.If):
                state = self._state(s.body + s.orelse)
                s.body = self._convert_block(s.body, at_tail)
                s.orelse = self._convert_block(s.orelse, at_tail)
                mode = self._if_mode(s, at_tail)
                out.extend(self._convert_if(s, mode, state) if mode else [s])
            elif hasattr(s, "_ag_break"):
                state = self._loop_state(s)
                s.body = self._convert_block(s.body, False)
                out.extend(self._convert_loop(s, state))
            elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append(s)
            else:
                rewrite_blocks(s, lambda block: self._convert_block(block, False))
                out.append(s)
        return out

    def _if_mode(self, s: ast.If, at_tail: bool) -> str | None:
        """"stmt" (the if rebinds its state), "return" (a tail if whose branches return), or
        None (left as Python: it holds a jump or statement the functional form cannot)."""
        branches = s.body + s.orelse
        if contains(branches, (ast.Break, ast.Continue), into_loops=False) or contains(branches, _UNSUPPORTED_IN_CONVERTED):
            return None
        if contains(branches, (ast.Return,)) is None:
            return "stmt"
        return "return" if at_tail and _tail_only(s.body) and _tail_only(s.orelse) else None

    def _state(self, stmts: list[ast.stmt], exclude: Iterable[str] = (), loop: bool = False) -> tuple[list[str], list[str]]:
        """(state names, the arrays among them written in place) of a block: every local name it
        rebinds and every local array base it writes (`A[i] = v`, `A += v`, `out=A`, ...). A
        loop's continue flag is reset by each iteration, so it is no loop state."""
        skip = set(exclude)
        internal = ("ag__result", "ag__cont") if loop else ("ag__result",)
        written = [n for n in written_bases(stmts, callee_writes=self.callee_writes)
                   if n in self.locals and n not in skip]
        names = [n for n in bound_names(stmts)
                 if (n in self.locals or n.startswith("ag__")) and n not in skip and not n.startswith(internal)]
        names += [n for n in written if n not in names]
        return names, written

    def _convert_if(self, s: ast.If, mode: str, state: tuple[list[str], list[str]]) -> list[ast.stmt]:
        n = next(self._ids)
        names, written = state
        fns = []
        for label, block in (("true", s.body), ("false", s.orelse)):
            body = _unpack(names) + block
            if mode == "stmt":
                body.append(_pack(names))
            elif not always_returns(block):
                body.append(ast.Return(value=_const(None)))  # falls off the function's end
            fns.append(_def(f"ag__if_{label}{n}", ["ag__state"], body))
        call = _helper("if_stmt", s.test, _load(fns[0].name), _load(fns[1].name), _state_load(names),
                       _names_tuple(names), _names_tuple(written), _const(mode),
                       _unsupported_when_traced(s.body + s.orelse))
        if mode == "return":
            tail: ast.stmt = ast.Return(value=call)
        elif names:
            tail = ast.Assign(targets=[ast.Tuple(elts=[_store(x) for x in names], ctx=ast.Store())], value=call)
        else:
            tail = ast.Expr(value=call)
        self.converted += 1
        return [_located(x, s) for x in fns + [tail]]

    def _loop_state(self, loop: ast.For | ast.While) -> tuple[list[str], list[str]]:
        """A loop's state. A body that rebinds the loop variable (an inner loop over the same
        name) carries it: after the loop it holds what the last iteration left, as in Python."""
        target = loop.target.id if isinstance(loop, ast.For) else None
        rebinds_target = target is not None and target in bound_names(loop.body)
        exclude = {target} if target and not rebinds_target else set()
        # A name each iteration binds before reading it, read nowhere else, is the iteration's
        # own (analysis.iteration_locals): not carried, so its type and shape may differ from one
        # iteration to the next. Arrays written in place stay state (a view's base is carried).
        written = set(written_bases(loop.body, callee_writes=self.callee_writes))
        local = {n for n in self.iteration_locals.get(id(loop), ()) if not n.startswith(AG) and n not in written}
        return self._state(loop.body, exclude=exclude | local, loop=True)

    def _convert_loop(self, loop: ast.For | ast.While, state: tuple[list[str], list[str]]) -> list[ast.stmt]:
        n = next(self._ids)
        target = loop.target.id if isinstance(loop, ast.For) else None
        names, written = state
        rebinds_target = target is not None and target in names
        index = f"ag__index{n}" if rebinds_target else target
        body = _unpack(names) + ([_assign(target, _load(index))] if rebinds_target else []) + loop.body + [_pack(names)]
        brk = _const(loop._ag_break)
        if isinstance(loop, ast.For):
            body_fn = _def(f"ag__for_body{n}", [index, "ag__state"], body)
            rest = (_load(body_fn.name), _helper("ld", _lambda(_load(target))), _state_load(names),
                    _names_tuple(names), _names_tuple(written), brk, _unsupported_when_traced(loop.body))
            if _is_range_loop(loop):
                call = _helper("for_range", _load("range"), ast.Tuple(elts=list(loop.iter.args), ctx=ast.Load()), *rest)
            else:
                call = _helper("for_iter", loop.iter, *rest)
            result = f"ag__result{n}"
            stmts: list[ast.stmt] = [body_fn, ast.Assign(targets=[ast.Tuple(elts=[_store(target), _store(result)],
                                                                            ctx=ast.Store())], value=call)]
            stmts += _unpack(names, result)
        else:
            cond_fn = _def(f"ag__while_cond{n}", ["ag__state"], _unpack(names) + [ast.Return(value=loop.test)])
            body_fn = _def(f"ag__while_body{n}", ["ag__state"], body)
            call = _helper("while_stmt", _load(cond_fn.name), _load(body_fn.name), _state_load(names),
                           _names_tuple(names), _names_tuple(written), brk, _unsupported_when_traced(loop.body))
            stmts = [cond_fn, body_fn]
            if names:
                stmts.append(ast.Assign(targets=[ast.Tuple(elts=[_store(x) for x in names], ctx=ast.Store())],
                                        value=call))
            else:
                stmts.append(ast.Expr(value=call))
        self.converted += 1
        return [_located(x, loop) for x in stmts]


def _bound_in_control_flow(stmts: list[ast.stmt]) -> set[str]:
    """The names bound inside a loop or `if` (loop targets included): the ones a converted
    statement may leave bound on some run-time paths only."""
    found: set[str] = set()
    for node in walk_scope(stmts):
        if isinstance(node, (ast.For, ast.While, ast.If)):
            found.update(bound_names([node]))
    return {n for n in found if not n.startswith(AG)}


def _flatten(items: list) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    return out


def _replace_jumps(stmts: list[ast.stmt], brk: str, cont: str, ret: str, rv: str) -> list[ast.stmt]:
    """The loop body with its own `break`, `continue` and `return` replaced by flag assignments;
    statements after a jump in the same block are unreachable and dropped."""
    out: list[ast.stmt] = []
    for s in stmts:
        if isinstance(s, ast.Break):
            out.append(_located(_assign(brk, _const(True)), s))
            return out
        if isinstance(s, ast.Continue):
            out.append(_located(_assign(cont, _const(True)), s))
            return out
        if isinstance(s, ast.Return):
            value = s.value if s.value is not None else _const(None)
            out += [_located(_assign(rv, value), s), _located(_assign(ret, _const(True)), s),
                    _located(_assign(brk, _const(True)), s)]
            return out
        if not isinstance(s, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            rewrite_blocks(s, lambda block: _replace_jumps(block, brk, cont, ret, rv))
        elif isinstance(s, (ast.For, ast.While)) and s.orelse:
            s.orelse = _replace_jumps(s.orelse, brk, cont, ret, rv)  # a loop's else belongs to us
        out.append(s)
    return out


def _sets_flag(s: ast.stmt, flags: list[str]) -> bool:
    return any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in flags
               for n in walk_scope([s], into_loops=False))


def _guard(stmts: list[ast.stmt], flags: list[str]) -> list[ast.stmt]:
    """Statements after one that may set a flag run only while no flag is set."""
    if not flags:
        return stmts
    out: list[ast.stmt] = []
    for k, s in enumerate(stmts):
        if not isinstance(s, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    setattr(s, field, _guard(block, flags))
        out.append(s)
        rest = stmts[k + 1:]
        if rest and _sets_flag(s, flags):
            test = _helper("guard", *[_load(f) for f in flags])
            out.append(_located(ast.If(test=test, body=_guard(rest, flags), orelse=[]), rest[0]))
            break
    return out


def _normalize_returns(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Pass 3: when a branch of an `if` always returns, the statements after the `if` move into
    its other branch (what runs is unchanged); statements after a `return` are dropped."""
    out: list[ast.stmt] = []
    for k, s in enumerate(stmts):
        if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            rewrite_blocks(s, _normalize_returns)
        out.append(s)
        rest = stmts[k + 1:]
        if isinstance(s, ast.Return):
            break
        if isinstance(s, ast.If):
            body_returns, else_returns = always_returns(s.body), always_returns(s.orelse)
            if body_returns and else_returns:
                break
            if rest and body_returns:
                s.orelse = _normalize_returns(s.orelse + rest)
                break
            if rest and else_returns:
                s.body = _normalize_returns(s.body + rest)
                break
    return out


def _tail_only(block: list[ast.stmt]) -> bool:
    """Whether every `return` in the block is in tail position (the last statement, or inside a
    last `if` whose branches are tail-only)."""
    if not block:
        return True
    if any(contains([s], (ast.Return,)) for s in block[:-1]):
        return False
    last = block[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _tail_only(last.body) and _tail_only(last.orelse)
    return contains([last], (ast.Return,)) is None
