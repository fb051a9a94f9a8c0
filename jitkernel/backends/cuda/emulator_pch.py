"""A g++ precompiled header of the emulator's fixed head (shim + prelude), so that a host build
parses only the kernels (docs/gpu.md, "The emulator").

Every emulated translation unit starts with the same text, `SHIM + PRELUDE` (emulator.py
`_host_source`); parsing it (the C++ standard headers of the shim above all) was 0.9 s of a
~1 s build. The head is written once per (compiler, flags, head text, jitkernel version) as
`JITKERNEL_CACHE_DIR/cuda-emulator/pch-<key>/jk_emu_head.h` and compiled to the `.gch` beside
it; builds then pass `-include .../jk_emu_head.h` and the rest of the source. g++ takes the
`.gch` when it is valid for the build's flags and otherwise reads the header text itself, so a
missing, stale or foreign `.gch` costs time, never a wrong build. Both files are written to a
temporary name and renamed into place, so parallel processes (pytest-xdist, dask workers) never
read half a file; two processes that race both build it and the last rename wins (same bytes).

Set `JITKERNEL_EMULATOR_PCH=0` to build without it (the measurement's "before").
"""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from ... import cache
from ..._version import __version__

HEADER_NAME = "jk_emu_head.h"

_lock = threading.Lock()
_ready: dict[Path, Path | None] = {}  # pch folder -> header path to -include (None: build without)


def enabled(version: str) -> bool:
    """Whether builds use the precompiled head: g++ only (clang's `.pch` files take another
    flag), and not when JITKERNEL_EMULATOR_PCH=0."""
    if os.environ.get("JITKERNEL_EMULATOR_PCH", "1").strip() in ("0", "false", "no", "off"):
        return False
    low = version.lower()
    return ("g++" in low or "gcc" in low) and "clang" not in low


def header_for(cxx: str, version: str, flags: list[str], head: str) -> Path | None:
    """The header to `-include` (its `.gch` built beside it if it was not there), or None when
    precompiled heads are off or the cache directory cannot take them (the build then compiles
    the head as text, as before)."""
    if not enabled(version):
        return None
    key = cache.cache_key(head, version, " ".join(flags), __version__, "cuda-emulator-pch")
    folder = cache.disk_cache_dir() / "cuda-emulator" / f"pch-{key}"
    with _lock:
        # per cache folder, and checked to exist: the cache may be cleared (`%jit_cache --clear`)
        # or JITKERNEL_CACHE_DIR changed, and a build must never -include a file that is gone
        if folder in _ready and (_ready[folder] is None or _ready[folder].exists()):
            return _ready[folder]
        _ready[folder] = path = _build(cxx, flags, head, folder)
        return path


def _build(cxx: str, flags: list[str], head: str, folder: Path) -> Path | None:
    header, gch = folder / HEADER_NAME, folder / (HEADER_NAME + ".gch")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not header.exists():
            _atomic_write(header, head.encode())
        if gch.exists():
            return header
        tmp = gch.with_name(f"{gch.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        pch_flags = [f for f in flags if f != "-shared"]  # the flags that must match the builds'
        proc = subprocess.run([cxx, *pch_flags, "-x", "c++-header", str(header), "-o", str(tmp)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            return header  # g++ then reads the header text: the build reports any real error
        os.replace(tmp, gch)
        return header
    except OSError:
        return None  # an unwritable cache: builds compile the whole source as before


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
