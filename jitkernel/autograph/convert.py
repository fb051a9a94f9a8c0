"""Source -> converted function: read the function's source (files, IPython cells: linecache),
rewrite its AST (transform.py) and compile it with the user's file name and line numbers, with
the original globals, defaults and closure cells, so globals and closures stay live."""
from __future__ import annotations

import __future__
import ast
import inspect
import logging
import types
import weakref
from typing import Any, Callable

from . import runtime
from .callees import callee_writes_of
from .subscripts import route_subscripts
from .transform import AG, FunctionConverter

_log = logging.getLogger("jitkernel")
_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

# function -> converted function (or None when it is left as it is)
_converted: "weakref.WeakKeyDictionary[Callable, Callable | None]" = weakref.WeakKeyDictionary()


def convert(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """The function with its Python control flow converted (see jitkernel.autograph), or None
    when there is nothing to convert or its source is not available (lambdas, C functions,
    functions built by exec without a linecache entry, decorated wrappers, stale sources)."""
    try:
        return _converted[fn]
    except (KeyError, TypeError):
        pass
    result = _convert(fn)
    try:
        _converted[fn] = result
    except TypeError:
        pass
    return result


def _convert(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    if isinstance(fn, types.MethodType):  # jk.jit(obj.method): convert the function, bind it again
        inner = convert(fn.__func__)
        return None if inner is None else types.MethodType(inner, fn.__self__)
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>" or hasattr(fn, "__wrapped__"):
        return None
    code = fn.__code__
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    fndef = _parse_function(lines, first, code)
    if fndef is None:
        return None
    converter = FunctionConverter(callee_writes_of(fn))
    try:
        converter.function(fndef)
        if not converter.converted:
            # No control flow to convert: only the subscripts are routed (a NumPy array made
            # inside the function indexed by a traced value), on the function as written.
            fndef = _parse_function(lines, first, code)
            return _build(fn, fndef) if route_subscripts(fndef) else None
        route_subscripts(fndef)
        return _build(fn, fndef)
    except Exception:  # pragma: no cover - a construct the rewrite does not know: trace as written
        _log.debug("jitkernel.autograph: %s is traced as written (conversion failed)", fn.__qualname__,
                   exc_info=True)
        return None


def _parse_function(lines: list[str], first: int, code: types.CodeType) -> ast.FunctionDef | None:
    """The FunctionDef of the source lines, with the file's line and column numbers; None when
    the source does not match the code object (edited since it was defined)."""
    text = "".join(lines)
    indented = text[:1].isspace()
    try:
        # An indented def (a method, a nested function) is parsed inside `if 1:` so that its
        # columns stay the file's columns.
        tree = ast.parse("if 1:\n" + text if indented else text)
    except SyntaxError:
        return None
    body = tree.body[0].body if indented else tree.body
    if not body or not isinstance(body[0], ast.FunctionDef) or body[0].name != code.co_name:
        return None
    fndef = body[0]
    ast.increment_lineno(fndef, first - (2 if indented else 1))
    a = fndef.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    params += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    nparams = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    if tuple(params) != code.co_varnames[:nparams]:
        return None
    fndef.decorator_list = []  # the function object is rebuilt here, never re-decorated
    fndef.returns = None
    for arg in a.posonlyargs + a.args + a.kwonlyargs:
        arg.annotation = None
    a.defaults = [ast.Constant(None) for _ in a.defaults]  # defaults come from the original
    a.kw_defaults = [None if d is None else ast.Constant(None) for d in a.kw_defaults]
    return fndef


def _build(fn: types.FunctionType, fndef: ast.FunctionDef) -> types.FunctionType | None:
    """Compile the converted definition inside a factory whose parameters are the original's
    free variables (plus `ag__`), then make the function from the inner code object with the
    original closure cells."""
    code = fn.__code__
    freevars = list(code.co_freevars)
    factory = ast.FunctionDef(
        name="ag__factory", args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in freevars + [AG]],
                                              vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[fndef, ast.Return(value=ast.Name(id=fndef.name, ctx=ast.Load()))], decorator_list=[], returns=None,
        type_comment=None, type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.copy_location(factory, fndef)
    ast.fix_missing_locations(module)
    try:
        compiled = compile(module, code.co_filename, "exec", flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return None
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    inner = next((c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fndef.name), None)
    if inner is None:
        return None
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    cells[AG] = types.CellType(runtime)
    try:
        closure = tuple(cells[name] for name in inner.co_freevars)
    except KeyError:
        return None
    inner = _renamed(inner, code.co_name, code.co_qualname)
    new = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    new.__annotations__ = getattr(fn, "__annotations__", {})
    new.__ag_original__ = fn
    return new


def _renamed(code: types.CodeType, name: str, qualname: str) -> types.CodeType:
    """`code` named as the user's function, and so are the loop bodies and branches generated
    inside it (tracebacks then read `in f` at the user's lines, not `in ag__for_body3`)."""
    consts = tuple(_renamed(c, name, qualname) if isinstance(c, types.CodeType) and c.co_name.startswith(AG)
                   else c for c in code.co_consts)
    return code.replace(co_name=name, co_qualname=qualname, co_consts=consts)


def converted_source(fn: Callable[..., Any]) -> str | None:
    """The converted code of `fn` as Python source (for debugging), or None."""
    if not isinstance(fn, types.FunctionType):
        return None
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    fndef = _parse_function(lines, first, fn.__code__)
    if fndef is None:
        return None
    FunctionConverter(callee_writes_of(fn)).function(fndef)
    return ast.unparse(ast.fix_missing_locations(fndef))
