"""Static facts about Python statements that the conversion needs: which names a block binds,
which array bases it writes in place, and which statements it contains (`break`, `return`,
`yield`, `try`, ...). Every walk stops at nested scopes (functions, lambdas, classes,
comprehensions), whose names are their own."""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator

# ndarray methods that write into the array they are called on.
_WRITING_METHODS = frozenset({"fill", "sort", "put", "partition", "itemset", "resize", "setfield"})
# NumPy functions whose first argument is written in place.
_WRITING_FUNCTIONS = frozenset({"copyto", "put", "place", "putmask", "put_along_axis", "fill_diagonal"})

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def walk_scope(node: ast.AST | Iterable[ast.AST], into_loops: bool = True) -> Iterator[ast.AST]:
    """Every node under `node` (or a list of statements) that belongs to the same scope; with
    `into_loops=False` the bodies of nested loops are skipped too (their `break`s are theirs)."""
    todo = list(node) if isinstance(node, list) else [node]
    first = set() if isinstance(node, list) else {id(node)}  # a single node is walked into
    while todo:
        n = todo.pop()
        yield n
        if id(n) not in first and isinstance(n, _SCOPES):
            continue
        if id(n) not in first and not into_loops and isinstance(n, _LOOPS):
            todo.extend([n.target, n.iter] if isinstance(n, (ast.For, ast.AsyncFor)) else [n.test])
            continue
        todo.extend(ast.iter_child_nodes(n))


def _target_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def subscript_root(target: ast.AST) -> str | None:
    """`A` for the targets `A[i]`, `A[i][j]`, `A[i, :]`; None for attributes (`self.A[i]`)."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def bound_names(stmts: list[ast.stmt]) -> list[str]:
    """Names the statements (re)bind, in source order of first appearance: assignment targets,
    augmented assignments, `for` and `with` targets, `:=`, `except ... as`, imports; not names
    bound by `def`/`class` (those are functions, never loop state)."""
    first: dict[str, tuple[int, int]] = {}
    bound: set[str] = set()
    for n in walk_scope(stmts):
        if isinstance(n, ast.Name):
            pos = (getattr(n, "lineno", 1 << 30), getattr(n, "col_offset", 0))
            if pos < first.get(n.id, (1 << 30, 1 << 30)):
                first[n.id] = pos
            if isinstance(n.ctx, ast.Store):
                bound.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in n.names)
    return sorted(bound, key=lambda name: first.get(name, (1 << 30, 0)))


def _first_positions(stmts: list[ast.stmt]) -> dict[str, tuple[int, int]]:
    first: dict[str, tuple[int, int]] = {}
    for n in walk_scope(stmts):
        if isinstance(n, ast.Name) and hasattr(n, "lineno"):
            pos = (n.lineno, n.col_offset)
            if pos < first.get(n.id, (1 << 30, 1 << 30)):
                first[n.id] = pos
    return first


def _names_in(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            yield from _names_in(elt)


# Methods and NumPy functions that return a view of their first array (NumPy's basic views).
_VIEW_METHODS = frozenset({"reshape", "ravel", "transpose", "swapaxes", "squeeze", "view", "diagonal"})
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})


def view_root(expr: ast.AST) -> str | None:
    """`A` when `expr` may be a view of the array named A (`A`, `A[i]`, `A[:, i].T`,
    `A.reshape(n, m)`, `np.transpose(A)`); None otherwise. Over-approximates: a copy that looks
    like a view only makes A loop state, which costs a carry, never a wrong answer."""
    while True:
        if isinstance(expr, ast.Name):
            return expr.id
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Attribute) and expr.attr in _VIEW_ATTRIBUTES:
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _VIEW_METHODS:
            value = expr.func.value
            # np.reshape(A, ...) names the array first; A.reshape(...) is called on it
            expr = expr.args[0] if isinstance(value, ast.Name) and value.id in ("np", "numpy") and expr.args else value
        else:
            return None


def view_aliases(stmts: list[ast.stmt]) -> dict[str, set[str]]:
    """Name -> the array names it may be a view of, from every `v = <view of A>` in `stmts`.
    Only the block's own statements: a view made before a loop is itself loop state, written
    back through its base after the loop; one made inside the body is rebound from the base on
    every trip, so the base must be carried."""
    aliases: dict[str, set[str]] = {}
    for n in walk_scope(stmts):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            root = view_root(n.value)
            if root is not None and root != n.targets[0].id:
                aliases.setdefault(n.targets[0].id, set()).add(root)
    return aliases


def _with_view_bases(names: dict[str, None], aliases: dict[str, set[str]]) -> None:
    """Add to `names` every array that a written name may be a view of (transitively): a write
    through `row = A[i]` writes A."""
    todo = list(names)
    while todo:
        for base in aliases.get(todo.pop(), ()):
            if base not in names:
                names[base] = None
                todo.append(base)


def written_bases(stmts: list[ast.stmt], aliases: dict[str, set[str]] | None = None,
                  callee_writes: "Callable[[str], frozenset] | None" = None) -> list[str]:
    """Names of arrays the statements write in place: `A[i] = v`, `A[i] += v`, `A.fill(v)`,
    `np.copyto(A, v)`, `f(..., out=A)` (or `out=(A, B)`), `A += v`, and, through `aliases`
    (view_aliases), the arrays a written name is a view of (`row = A[i]; row *= 2` writes A)."""
    names: dict[str, None] = {}
    aliases = view_aliases(stmts) if aliases is None else aliases
    for n in walk_scope(stmts):
        targets: list[ast.AST] = []
        if isinstance(n, ast.Assign):
            targets = list(n.targets)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                # `x += 1` on an array is in place: when x is a view (`col = A[:, 1]` before the
                # loop), the loop's result must be written back into it, hence into A. (For a
                # number it rebinds; the runtime writes back only arrays updated in place.)
                names[n.target.id] = None
        for t in targets:
            for leaf in ([t] if not isinstance(t, (ast.Tuple, ast.List)) else list(_flat_targets(t))):
                root = subscript_root(leaf) if isinstance(leaf, ast.Subscript) else None
                if root:
                    names[root] = None
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and f.attr in _WRITING_METHODS and isinstance(f.value, ast.Name):
                names[f.value.id] = None
            if isinstance(f, ast.Attribute) and f.attr in _WRITING_FUNCTIONS and n.args:
                names.update(dict.fromkeys(_names_in(n.args[0])))
            if isinstance(f, ast.Attribute) and f.attr == "at" and n.args:  # np.add.at(A, idx, v)
                names.update(dict.fromkeys(_names_in(n.args[0])))
            for kw in n.keywords:
                if kw.arg == "out":
                    names.update(dict.fromkeys(_names_in(kw.value)))
            args = n.args
            if (isinstance(f, ast.Attribute) and f.attr == "call" and isinstance(f.value, ast.Name)
                    and f.value.id == "ag__" and args):
                f, args = args[0], args[1:]  # (pass 1 routed the call: ag__.call(f, *args))
            if callee_writes is not None and isinstance(f, ast.Name):
                # a helper of the user's that writes its parameters (`pressure_poisson(nit, p, ...)`
                # writes p): the arrays passed there are written (autograph/callees.py)
                written = callee_writes(f.id)
                for k, arg in enumerate(args):
                    if k in written and isinstance(arg, ast.Name):
                        names[arg.id] = None
                for kw in n.keywords:
                    if kw.arg in written and isinstance(kw.value, ast.Name):
                        names[kw.value.id] = None
    _with_view_bases(names, aliases)
    first = _first_positions(stmts)
    return sorted(names, key=lambda name: first.get(name, (1 << 30, 0)))


def _flat_targets(t: ast.AST) -> Iterator[ast.AST]:
    if isinstance(t, (ast.Tuple, ast.List)):
        for elt in t.elts:
            yield from _flat_targets(elt)
    elif isinstance(t, ast.Starred):
        yield from _flat_targets(t.value)
    else:
        yield t


def function_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The local names of a function: its parameters and every name it binds, less those it
    declares `global` or `nonlocal`."""
    a = fn.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    params += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    declared = declared_outside(fn.body)
    bound = set(bound_names(fn.body))
    for n in walk_scope(fn.body):  # def/class names are local too
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
    return (set(params) | bound) - declared


def declared_outside(stmts: list[ast.stmt]) -> set[str]:
    """Names declared `global` or `nonlocal` in these statements."""
    return {name for n in walk_scope(stmts) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}


def contains(stmts: list[ast.stmt], kinds: tuple, into_loops: bool = True) -> ast.AST | None:
    """The first node of one of `kinds` in the statements (same scope), or None."""
    found = [n for n in walk_scope(stmts, into_loops) if isinstance(n, kinds)]
    return min(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))) if found else None


def is_generator(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return contains(fn.body, (ast.Yield, ast.YieldFrom, ast.Await)) is not None


def always_returns(stmts: list[ast.stmt]) -> bool:
    """Whether every path through the statements ends in `return`."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return always_returns(last.body) and always_returns(last.orelse)
    return False


def _loads(node: ast.AST) -> set[str]:
    """Every name read anywhere under `node`, nested scopes included (a closure or a
    comprehension that reads a name counts as a read of it where it stands)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _stores(node: ast.AST) -> set[str]:
    """The names a simple statement binds (its targets, `:=` included), not inside nested scopes."""
    return {n.id for n in walk_scope(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def exposed_reads(stmts: list[ast.stmt], assigned: frozenset[str] = frozenset()) -> tuple[set[str], frozenset[str]]:
    """(the names some read in `stmts` may see from before them, the names every path through
    them binds), given the names already bound (`assigned`). A read is exposed unless every path
    from the start of the block to it binds the name first: `if` binds what both branches bind,
    a loop (which may run no iteration) what was bound before it; statements this does not model
    (`try`, `match`) count every read as exposed and bind nothing."""
    exposed: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.If):
            exposed |= _loads(s.test) - assigned
            body_reads, body_bound = exposed_reads(s.body, assigned)
            else_reads, else_bound = exposed_reads(s.orelse, assigned)
            exposed |= body_reads | else_reads
            assigned = body_bound & else_bound
        elif isinstance(s, (ast.For, ast.While)):
            head = _loads(s.iter) if isinstance(s, ast.For) else _loads(s.test)
            exposed |= head - assigned
            inner = assigned | (_stores(s.target) if isinstance(s, ast.For) else frozenset())
            exposed |= exposed_reads(s.body, frozenset(inner))[0]
            exposed |= exposed_reads(s.orelse, assigned)[0]
        elif isinstance(s, ast.With):
            for item in s.items:
                exposed |= _loads(item.context_expr) - assigned
                if item.optional_vars is not None:
                    assigned = assigned | _stores(item.optional_vars)
            reads, assigned = exposed_reads(s.body, assigned)
            exposed |= reads
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            exposed |= _loads(s) - assigned  # (its closure may read any name when called)
            assigned = assigned | {s.name}
        elif hasattr(s, "body") or isinstance(s, (ast.Delete, ast.Global, ast.Nonlocal)):
            exposed |= _loads(s)  # try, match, async forms: not modelled
        else:
            exposed |= _loads(s) - assigned  # (the value is read before the targets bind)
            if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
                exposed |= {s.target.id} - assigned
            assigned = assigned | _stores(s)
    return exposed, assigned


def iteration_locals(fn_body: list[ast.stmt], loop: ast.For | ast.While) -> set[str]:
    """The names `loop`'s body binds that are local to one iteration: every iteration binds the
    name before any read of it, and nothing outside the loop's body reads it (not after the loop,
    not in its test, not in a closure). Such a name is no loop state: Python would keep the last
    iteration's value, but nobody looks at it, so each iteration's value may have its own type
    and shape (`vals = data[mask]` inside `for i in range(n)`)."""
    reads_outside = set()
    todo: list[ast.AST] = list(fn_body)
    body_ids = {id(s) for s in loop.body}
    while todo:
        n = todo.pop()
        if id(n) in body_ids:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            reads_outside.add(n.id)
        todo.extend(ast.iter_child_nodes(n))
    bound = set(bound_names(loop.body))
    exposed, _ = exposed_reads(loop.body)
    return bound - exposed - reads_outside


def rewrite_blocks(node: ast.AST, rewrite: Callable[[list[ast.stmt]], list[ast.stmt]], cases: bool = False) -> None:
    """Replace each statement block directly inside `node` (its body, orelse and finalbody, its
    except handlers' bodies and, with `cases`, its match cases' bodies) by `rewrite(block)`."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            setattr(node, field, rewrite(block))
    for handler in getattr(node, "handlers", []):
        handler.body = rewrite(handler.body)
    for case in getattr(node, "cases", []) if cases else []:
        case.body = rewrite(case.body)
