"""Line magics: `%jit_profile`, `%jit_explain`, `%jit_ir`, `%jit_cache`, `%jit_backend`, `%jit_debug`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.display import display

import jitkernel as jk
from jitkernel import profiler
from jitkernel.api import Jitted

from .diagnostics import stage_text
from .options import BACKENDS, STAGES, resolve_backend
from .registry import compiled_entries, is_transformed, jitted_in, jitted_of, last_compiled

if TYPE_CHECKING:
    from .extension import Extension

PLOT_CHOICES = (*profiler.PLOT_KINDS, "all")


def _format_bytes(n: int) -> str:
    from jitkernel.profiler.report import format_bytes
    return format_bytes(n)


@magics_class
class JitLineMagics(Magics):
    """Inspect, profile and configure jitted functions."""

    def __init__(self, shell: Any, extension: "Extension") -> None:
        super().__init__(shell=shell)
        self.extension = extension

    # -- helpers -------------------------------------------------------------------------
    def _resolve(self, name: str, magic: str) -> Jitted:
        """The jitted function called `name`: a namespace binding, else a %%jit function of
        that name (no-def cells are named `cell_<outputs>`)."""
        value = self.shell.user_ns.get(name)
        if isinstance(value, Jitted):
            return value
        if is_transformed(value):
            f = jitted_of(value)
            if f is None:
                raise UsageError(f"%{magic}: {name} ({value.__name__}) has not been called yet; call it first")
            return f
        found = self.extension.registry.by_name(name)
        if found is not None:
            return found
        if name in self.shell.user_ns:
            raise UsageError(f"%{magic}: {name} is a {type(value).__name__}, not a jitted function")
        raise UsageError(f"%{magic}: no jitted function named {name!r}")

    def _known(self) -> dict[int, Jitted]:
        """Every jitted function in the namespace or created by %%jit, by identity."""
        out = {id(f): f for f in jitted_in(self.shell.user_ns).values()}
        for f, _ in self.extension.registry.tracked():
            out.setdefault(id(f), f)
        return out

    # -- %jit_profile ----------------------------------------------------------------------
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("names", nargs="*", metavar="NAMES", help="jitted functions to show (default: all)")
    @magic_arguments.argument("--plot", choices=PLOT_CHOICES, default=None, help="also draw these plots")
    @magic_arguments.argument("--reset", action="store_true", help="forget the profile (after showing/exporting)")
    @magic_arguments.argument("--export", metavar="FILE.json", default=None,
                              help="write a Chrome trace (Perfetto, chrome://tracing)")
    @no_var_expand
    @line_magic
    def jit_profile(self, line: str) -> None:
        """Show the profile of jitted functions: calls, cache hits, compiles, recompiles and
        times per phase, as a table; `--plot` draws it; `--export` writes a Chrome trace."""
        args = magic_arguments.parse_argstring(self.jit_profile, line)
        only_reset = args.reset and not args.names and args.plot is None and args.export is None
        if not only_reset:
            names = []
            for n in args.names:
                value = self.shell.user_ns.get(n)
                # a transformed function's events carry its name: grad(loss), vmap(step)
                names.append(value.__name__ if isinstance(value, Jitted) or is_transformed(value) else n)
            report = profiler.report(names or None)
            if args.names and not report.functions:
                raise UsageError(f"%jit_profile: nothing recorded for {', '.join(args.names)}")
            display(report)
            if args.plot is not None:
                kinds = profiler.PLOT_KINDS if args.plot == "all" else (args.plot,)
                for kind in kinds:
                    display(report.plot(kind))
            if args.export is not None:
                path = report.to_chrome_trace(args.export)
                print(f"wrote {len(report.records())} phases to {path} (open in https://ui.perfetto.dev)")
        if args.reset:
            profiler.reset()
            print("jit profile reset")

    # -- %jit_explain ----------------------------------------------------------------------
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("name", nargs="?", default=None, metavar="NAME",
                              help="a jitted function (default: all known)")
    @no_var_expand
    @line_magic
    def jit_explain(self, line: str) -> None:
        """Recompilation history of a jitted function (or of all): every recompile with its
        reasons, the new and the closest earlier signature, and its trace/compile time."""
        args = magic_arguments.parse_argstring(self.jit_explain, line)
        functions = [self._resolve(args.name, "jit_explain")] if args.name else list(self._known().values())
        if not functions:
            print("no jitted functions in this session")
            return
        print("\n".join(explain(f) for f in functions))

    # -- %jit_ir ---------------------------------------------------------------------------
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("name", metavar="NAME", help="a jitted function")
    @magic_arguments.argument("--stage", choices=STAGES, default="optimized", help="which text (default: optimized)")
    @no_var_expand
    @line_magic
    def jit_ir(self, line: str) -> None:
        """Print a stage (`ir`, `optimized`, `kernels`, `llvm`, `asm`) of the most recently
        compiled signature of a jitted function."""
        args = magic_arguments.parse_argstring(self.jit_ir, line)
        f = self._resolve(args.name, "jit_ir")
        entry = last_compiled(f)
        if entry is None:
            raise UsageError(f"%jit_ir: {args.name} has not been compiled yet; call it first")
        signature, compiled = entry
        print(stage_text(f.__name__, signature, args.stage, compiled))

    # -- %jit_cache ------------------------------------------------------------------------
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("--info", action="store_true", help="show the caches (default)")
    @magic_arguments.argument("--clear", action="store_true",
                              help="empty the caches of this process's jitted functions (in memory and their "
                                   "disk entries)")
    @magic_arguments.argument("--all", action="store_true",
                              help="with --clear: also every other entry of the shared disk cache (other "
                                   "processes' and earlier sessions' functions)")
    @no_var_expand
    @line_magic
    def jit_cache(self, line: str) -> None:
        """Show (`--info`, the default) or empty (`--clear`) the caches of the jitted functions
        in the namespace and from %%jit cells: their in-memory compiled entries and the disk
        entries they stored or loaded. The disk cache is shared by every process: `--clear
        --all` empties it whole."""
        args = magic_arguments.parse_argstring(self.jit_cache, line)
        if args.info and args.clear:
            raise UsageError("%jit_cache: use either --info or --clear")
        if args.all and not args.clear:
            raise UsageError("%jit_cache: --all goes with --clear (%jit_cache --clear --all)")
        disk = _disk_cache()
        known = self._known()
        if args.clear:
            print(_clear(known, disk, everything=args.all))
            return
        if disk is None:
            print("disk cache: not available in this jitkernel version")
        else:
            info = disk.disk_cache_info()
            state = "" if getattr(jk.config, "disk_cache", True) else " (disabled: jk.config.disk_cache is False)"
            print(f"disk cache: {info['path']}: {info['entries']} entries, {_format_bytes(info['bytes'])}{state}")
        sizes = ", ".join(f"{f.__name__}: {f.cache_size()}" for f in known.values())
        total = sum(f.cache_size() for f in known.values())
        print(f"memory: {total} compiled entries in {len(known)} functions" + (f" ({sizes})" if sizes else ""))

    # -- %jit_backend ----------------------------------------------------------------------
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("name", nargs="?", default=None, choices=BACKENDS, metavar="NAME",
                              help=f"new default backend: {', '.join(BACKENDS)}")
    @no_var_expand
    @line_magic
    def jit_backend(self, line: str) -> None:
        """Show or set the default backend (`jk.config.default_backend`) of functions that do
        not choose one."""
        args = magic_arguments.parse_argstring(self.jit_backend, line)
        current = jk.config.default_backend
        if args.name is None:
            print(f"jit backend: {current}")
            return
        backend = resolve_backend(args.name, "%jit_backend")
        jk.config.update("default_backend", backend)
        print(f"jit backend: {backend} (was {current}); applies to compiles from now on")

    # -- %jit_debug ------------------------------------------------------------------------
    @magic_arguments.magic_arguments()
    @magic_arguments.argument("check", choices=("nans",), help="what to check: nans (NaN and infinity)")
    @magic_arguments.argument("state", nargs="?", default=None, choices=("on", "off"), metavar="on|off",
                              help="switch it on or off (default: show it)")
    @no_var_expand
    @line_magic
    def jit_debug(self, line: str) -> None:
        """Show or switch run-time checks: `%jit_debug nans on` raises FloatingPointError naming
        the user's line that made a NaN or an infinity (`jk.config.debug_nans`, docs/debugging.md)."""
        args = magic_arguments.parse_argstring(self.jit_debug, line)
        if args.state is not None:
            jk.config.update("debug_nans", args.state == "on")
        print(f"jit debug nans: {'on' if jk.config.debug_nans else 'off'}")


def _clear(known: dict[int, Jitted], disk: Any, everything: bool) -> str:
    """Empty the caches of the `known` functions (and with `everything` the whole disk cache);
    returns what was removed, as one line."""
    entries = sum(f.cache_size() for f in known.values())
    for f in known.values():
        f.clear_cache()
    mine = disk.clear_disk_cache(disk.keys_of(f.__name__ for f in known.values())) if disk is not None else 0
    line = (f"jit cache cleared: {entries} in-memory entries of {len(known)} functions, "
            f"{mine} disk entries of theirs")
    if not everything:
        return line + " (other disk entries kept: the disk cache is shared; --clear --all empties it)"
    others = disk.clear_disk_cache() if disk is not None else 0
    return line + f"; --all: {others} disk entries of other functions removed (the whole shared disk cache)"


def _disk_cache() -> Any:
    try:
        from jitkernel import cache
    except ImportError:
        return None
    return cache if hasattr(cache, "disk_cache_info") and hasattr(cache, "keys_of") else None


def explain(f: Jitted) -> str:
    """The recompilation history of `f` as text."""
    recs = f.recompilations()
    cached = len(compiled_entries(f))
    head = f"{f.__name__}: {len(recs)} recompilation{'s' if len(recs) != 1 else ''}, {cached} signature(s) cached"
    lines = [head]
    for i, r in enumerate(recs, 1):
        lines.append(f"  {i}. {'; '.join(r.reasons)}  (trace {r.trace_seconds * 1e3:.1f} ms, "
                     f"compile {r.compile_seconds * 1e3:.1f} ms)")
        lines.append(f"     now:    {r.signature}")
        lines.append(f"     before: {r.previous_signature}")
    if not recs:
        entries = compiled_entries(f)
        if entries:
            lines.append(f"  compiled for: {entries[-1][0]}")
    entries = compiled_entries(f)
    if entries:
        from jitkernel.ir.datadep_prims import split_points
        for text in split_points(entries[-1][1].optimized):
            lines.append(f"  data-dependent split: {text}")
    import sys
    if "jitkernel.distributed" in sys.modules:  # called with Dask arrays: how it was partitioned
        lines += ["  " + line for text in sys.modules["jitkernel.distributed"].partitions(f)[-1:]
                  for line in text.splitlines()]
    return "\n".join(lines)
