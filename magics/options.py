"""`%%jit` options: parsed into a `CellOptions`, validated, and turned into `jk.jit` keywords."""
from __future__ import annotations

import inspect
from dataclasses import dataclass

from IPython.core.error import UsageError

import jitkernel as jk
from jitkernel.backends import backend_names

# The engine's backends (jitkernel/backends/__init__.py registers them) and `auto`.
BACKENDS = (*backend_names(), "auto")
STAGES = ("ir", "optimized", "kernels", "llvm", "asm", "cuda")


@dataclass(frozen=True)
class CellOptions:
    """The parsed options of one `%%jit` cell."""

    backend: str | None = None  # None: jk.config.default_backend at compile time
    static: tuple[str, ...] = ()
    profile: bool = False
    show: str | None = None
    no_cache: bool = False
    quiet: bool = False

    def jit_kwargs(self, params: set[str] | None = None) -> dict:
        """Keywords for `jk.jit`: backend, static_argnames (those in `params` when given) and
        disk_cache=False for --no-cache (when the engine has a disk cache)."""
        kw: dict = {}
        if self.backend is not None:
            kw["backend"] = self.backend
        static = self.static if params is None else tuple(n for n in self.static if n in params)
        if static:
            kw["static_argnames"] = static
        if self.no_cache and _jit_accepts("disk_cache"):
            kw["disk_cache"] = False
        return kw


def _jit_accepts(keyword: str) -> bool:
    return keyword in inspect.signature(jk.jit).parameters


def resolve_backend(name: str, what: str = "%%jit") -> str:
    """`auto` -> `cpu`; `cuda` only when the engine has a CUDA backend, else a one-line
    UsageError; anything else must be a known backend."""
    if name not in BACKENDS:
        raise UsageError(f"{what}: unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if name == "auto":
        return "cpu"
    if name == "cuda":
        from jitkernel.backends import get_backend
        try:
            get_backend("cuda")
        except Exception as e:  # ValueError today; ImportError once a CUDA backend lacks its driver
            first = str(e).splitlines()[0] if str(e) else "the cuda backend is not available"
            raise UsageError(f"{what}: cuda: {first}") from None
    return name


def parse_static(text: str | None) -> tuple[str, ...]:
    """`"n, m"` -> `("n", "m")`; each must be a Python identifier."""
    if not text:
        return ()
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if not n.isidentifier()]
    if bad:
        raise UsageError(f"%%jit: --static expects comma-separated argument names, got {', '.join(map(repr, bad))}")
    return names


def cell_options(args) -> CellOptions:
    """A `CellOptions` from `magic_arguments.parse_argstring`'s namespace."""
    return CellOptions(backend=None if args.backend is None else resolve_backend(args.backend),
                       static=parse_static(args.static), profile=args.profile, show=args.show,
                       no_cache=args.no_cache, quiet=args.quiet)
