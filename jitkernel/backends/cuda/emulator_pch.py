"""A g++ precompiled header of the emulator's fixed head (shim + prelude), so that a host build
parses only the kernels (docs/gpu.md, "The emulator").

Every emulated translation unit starts with the same text, `SHIM + PRELUDE` (emulator.py
`_host_source`); parsing it (the C++ standard headers of the shim above all) was 0.9 s of a
~1 s build. The head is written once per (compiler, flags, head text, jitkernel version) as
`JITKERNEL_CACHE_DIR/cuda-emulator/pch-<key>/jk_emu_head.h` and compiled to the `.gch` beside
it; builds then pass `-include .../jk_emu_head.h` and the rest of the source. g++ takes the
`.gch` when it is valid for the build's flags and otherwise reads the header text itself, so a
missing, stale or foreign `.gch` costs time, never a wrong build. Both files are stored through
`cache.store_file` (a fresh temporary name renamed into place, so parallel processes such as
pytest-xdist or dask workers never read half a file; size and SHA-256 recorded beside each) and
used only when `cache.load_file` finds them intact (a truncated `.gch` is rebuilt); two
processes that race both build it and the last rename wins (same bytes).

Set `JITKERNEL_EMULATOR_PCH=0` to build without it (the measurement's "before").
"""
from __future__ import annotations

import os
import subprocess
import tempfile
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
    folder = f"{cache.EMULATOR_FOLDER}/pch-{key}"
    with _lock:
        # per cache folder, and checked to exist: the cache may be cleared (`%jit_cache --clear`),
        # evicted, or JITKERNEL_CACHE_DIR changed, and a build must never -include a file that is gone
        where = cache.disk_cache_dir() / folder
        if where in _ready and (_ready[where] is None or _ready[where].exists()):
            return _ready[where]
        _ready[where] = path = _build(cxx, flags, head, folder)
        return path


def _build(cxx: str, flags: list[str], head: str, folder: str) -> Path | None:
    """Both files through the cache's checked store (cache.store_file: 0600, a fresh temporary
    name, size and SHA-256 recorded) and loaded only when they match their records (a truncated
    `.gch` is rebuilt, not handed to g++)."""
    header_name, gch_name = f"{folder}/{HEADER_NAME}", f"{folder}/{HEADER_NAME}.gch"
    header = cache.load_file(header_name) or cache.store_file(header_name, head.encode())
    if header is None:
        return None  # an unwritable or refused cache: builds compile the whole source as before
    if cache.load_file(gch_name) is not None:
        return header
    with tempfile.TemporaryDirectory(prefix="jk-emu-pch-") as work:
        # g++ writes into this process's own scratch folder, never at a name in the cache
        out = Path(work) / (HEADER_NAME + ".gch")
        pch_flags = [f for f in flags if f != "-shared"]  # the flags that must match the builds'
        proc = subprocess.run([cxx, *pch_flags, "-x", "c++-header", str(header), "-o", str(out)],
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            cache.store_file(gch_name, out)
    return header  # without a .gch g++ reads the header text: the build reports any real error
