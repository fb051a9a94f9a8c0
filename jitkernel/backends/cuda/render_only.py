"""The earlier names of the emulator's module recording (recording.py), for callers not moved
yet: `recording` is `record_modules` and `Rendered` is `RenderedOnly`. New code uses
`emulator.batch_build` or `emulator.record_modules` (docs/gpu.md, "Batch builds")."""
from __future__ import annotations

from .recording import RenderedOnly as Rendered, intercept, is_recording, record_modules as recording

__all__ = ["Rendered", "intercept", "is_recording", "recording"]
