"""The extension's event subscriber: the one-line recompilation diagnostic and `--show`.

Only functions created by `%%jit` cells are reported (functions jitted with `jk.jit` in
ordinary cells stay silent; `%jit_explain` or `jk.config.explain_recompiles` cover them).
For a warm call the subscriber costs one type check.
"""
from __future__ import annotations

import sys

from jitkernel import events

from .registry import Registry, compiled_entries

_RUN = events.RunEvent
_RECOMPILE = events.RecompileEvent


class Diagnostics:
    """Called with every engine event while the extension is loaded."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def __call__(self, event: events.Event) -> None:
        cls = event.__class__
        if cls is _RUN:
            if event.first:
                self._first_run(event)
        elif cls is _RECOMPILE:
            self._recompiled(event)

    def _recompiled(self, event: events.RecompileEvent) -> None:
        for f, tracked in self.registry.tracked(event.function):
            recs = f.recompilations()
            if len(recs) <= tracked.reported:
                continue  # a namesake that did not recompile
            tracked.reported = len(recs)
            if not tracked.options.quiet:
                print(str(recs[-1]), file=sys.stdout, flush=True)

    def _first_run(self, event: events.RunEvent) -> None:
        for f, tracked in self.registry.tracked(event.function):
            stage = tracked.options.show
            if stage is None:
                continue
            for signature, compiled in compiled_entries(f):
                if compiled.calls == 0 and compiled not in tracked.shown:
                    tracked.shown.add(compiled)
                    print(stage_text(f.__name__, signature, stage, compiled), flush=True)


def stage_text(name: str, signature: str, stage: str, compiled) -> str:
    """A header line and the text of `stage` for one compiled entry."""
    try:
        body = compiled.text(stage)
    except ValueError as e:  # e.g. `llvm` for the interpret backend
        body = f"({e})"
    where = f" ({signature})" if signature else ""
    return f"--- {name}{where}: {stage} ---\n{body.rstrip()}"
