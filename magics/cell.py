"""The `%%jit` cell magic."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from IPython.core import magic_arguments
from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand, output_can_be_silenced
from IPython.display import display

import jitkernel as jk
from jitkernel import profiler
from jitkernel.api import Jitted

from .cellexec import CellCode, parse_cell, show_cell_frames_only
from .defs import run_defs_cell, top_level_defs
from .diagnostics import stage_text
from .nodef import build_function, plan_cell
from .options import BACKENDS, STAGES, CellOptions, cell_options
from .registry import entry_for

if TYPE_CHECKING:
    from .extension import Extension


@magics_class
class JitCellMagics(Magics):
    """`%%jit`: compile the functions of a cell, or the cell itself, with jitkernel."""

    def __init__(self, shell: Any, extension: "Extension") -> None:
        super().__init__(shell=shell)
        self.extension = extension

    @magic_arguments.magic_arguments()
    @magic_arguments.argument("-b", "--backend", choices=BACKENDS, default=None,
                              help="backend for this cell's functions (auto = cpu; default: jk.config.default_backend)")
    @magic_arguments.argument("--static", metavar="NAMES", default=None,
                              help="comma-separated argument names whose values are compile-time constants")
    @magic_arguments.argument("--profile", action="store_true", help="show this cell's profile after it runs")
    @magic_arguments.argument("--show", choices=STAGES, default=None,
                              help="print this stage of each function after its first call")
    @magic_arguments.argument("--no-cache", action="store_true", dest="no_cache",
                              help="do not use the persistent disk cache for this cell's functions")
    @magic_arguments.argument("-q", "--quiet", action="store_true", help="no recompilation diagnostics")
    @no_var_expand
    @cell_magic
    @output_can_be_silenced
    def jit(self, line: str, cell: str) -> Any:
        """Compile with jitkernel.

        A cell with top-level `def`s: each top-level function is replaced by `jk.jit(fn, ...)`
        as it is defined; the rest of the cell runs normally.

        A cell without `def`s is traced as one function of the arrays and numbers it reads from
        the namespace; the names it assigns are written back and its last expression is the
        cell's value. Re-running it reuses the compiled code while shapes and dtypes stay the
        same; a change prints the reason (unless -q).
        """
        __tracebackhide__ = True
        try:
            args = magic_arguments.parse_argstring(self.jit, line)
            options = cell_options(args)
            code = parse_cell(self.shell, "jit", line, cell)
            since = profiler.clock()
            if top_level_defs(code.tree):
                value, functions = run_defs_cell(self.shell, code, options,
                                                 lambda f: self.extension.registry.track(f, options))
            else:
                value, function = self._run_traced_cell(code, line, options)
                functions = [function]
        except Exception as e:
            show_cell_frames_only(self.shell, e)  # not run_cell_magic's lines, not the engine's
            raise
        if options.profile:
            names = [f.__name__ for f in functions]
            display(profiler.report(names, since=since, title=f"%%jit profile: {', '.join(names) or 'no functions'}"))
        return value

    def _run_traced_cell(self, code: CellCode, line: str, options: CellOptions) -> tuple[Any, Jitted]:
        __tracebackhide__ = True
        ns = self.shell.user_ns
        plan = plan_cell(code.tree, ns, options.static)
        fn = build_function(code, plan, ns, compiler=self.shell.compile)
        registry = self.extension.registry
        key = (code.source, options, plan.inputs)
        jitted = registry.cell_function(key)
        if jitted is None:
            jitted = jk.jit(fn, **options.jit_kwargs())
            registry.add_cell_function(key, jitted)
            registry.track(jitted, dataclasses.replace(options, show=None))  # shown after the run instead
        else:  # same source: keep the compiled entries, point errors at this run's cell
            jitted.fun = jitted.__wrapped__ = fn
        call_args = [ns[n] for n in plan.inputs]
        try:
            outputs, last = jitted(*call_args)
        except Exception:
            if jitted.cache_size() == 0:  # never compiled: forget it (a fixed cell starts afresh)
                registry.forget(jitted, key)
            raise
        ns.update(outputs)
        if options.show:
            signature, compiled = entry_for(jitted, tuple(call_args))
            print(stage_text(jitted.__name__, signature, options.show, compiled))
        return last, jitted
