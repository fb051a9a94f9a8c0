"""`%jit_bench f(x, y)`: `jk.benchmark` of one call, shown as a table and a plot inline."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.display import display

import jitkernel as jk
from jitkernel import profiler

if TYPE_CHECKING:
    from .extension import Extension


def split_call(text: str) -> tuple[str, str]:
    """`"f(x, n=3)"` -> `("f", "x, n=3")`: the callee's expression and the argument text."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise UsageError(f"%jit_bench: {text.strip()!r} is not a Python call: {e.msg}") from None
    if not isinstance(node, ast.Call):
        raise UsageError(f"%jit_bench: expected a call like f(x, y), got {text.strip()!r}")
    source = text.strip()
    callee = ast.get_source_segment(source, node.func)
    start = len(callee)
    return callee, source[start:].strip()[1:-1]


@magics_class
class JitBenchMagics(Magics):
    def __init__(self, shell: Any, extension: "Extension") -> None:
        super().__init__(shell)
        self.extension = extension

    @magic_arguments.magic_arguments()
    @magic_arguments.argument("--repeat", "-r", type=int, default=7, help="repetitions (default 7)")
    @magic_arguments.argument("--number", "-n", type=int, default=None, help="calls per repetition (default: calibrated)")
    @magic_arguments.argument("--no-baseline", action="store_true", help="do not run the eager NumPy baseline")
    @magic_arguments.argument("--no-plot", action="store_true", help="show the table only")
    @magic_arguments.argument("--save", metavar="FILE.json", default=None, help="write the record as JSON")
    @magic_arguments.argument("call", nargs="+", help="the call to time, e.g. f(x, y)")
    @no_var_expand
    @line_magic
    def jit_bench(self, line: str) -> Any:
        """Time a call of a jitted (or transformed, or plain) function: warm-up, medians over
        repetitions, the eager NumPy baseline with the speedup and the largest numerical
        difference, and the versions that reproduce it (`jk.benchmark`)."""
        args = magic_arguments.parse_argstring(self.jit_bench, line)
        callee, arg_text = split_call(" ".join(args.call))
        ns = self.shell.user_ns
        try:
            fun = eval(callee, ns)
            call_args, call_kwargs = eval(f"(lambda *a, **k: (a, k))({arg_text})", ns)
        except Exception as e:
            raise UsageError(f"%jit_bench: could not evaluate {callee}({arg_text}): {type(e).__name__}: {e}") from None
        record = jk.benchmark(fun, *call_args, repeat=args.repeat, number=args.number,
                              baseline=None if args.no_baseline else "numpy", **call_kwargs)
        display(record)
        if not args.no_plot:
            display(profiler.bench_plot(record))
        if args.save:
            print(f"wrote {record.save(args.save)}")
        return None
