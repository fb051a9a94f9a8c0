"""The persistent compile cache: machine code that survives a restart.

Entries live under `JITKERNEL_CACHE_DIR` (default `$XDG_CACHE_HOME/jitkernel` or
`~/.cache/jitkernel`), one file per key. The key hashes the unoptimised LLVM IR text (which
encodes the whole fused program, shapes and dtypes), the host CPU name and features, the LLVM
and jitkernel versions and the optimisation level, never a file name (ipykernel randomises cell
file names). Files are written to a temporary name and renamed into place, so concurrent
writers never expose a partial file; each file carries a SHA-256 of its payload, and a file that
fails the check is deleted and recompiled, never loaded.

>>> import jitkernel.cache as c
>>> sorted(c.disk_cache_info())
['bytes', 'entries', 'path']
"""
from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from pathlib import Path

MAGIC = b"JITKERNEL-OBJ-1\n"
SUFFIX = ".jko"


def disk_cache_dir() -> Path:
    """Where entries are stored (created on first write)."""
    env = os.environ.get("JITKERNEL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitkernel"


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p.encode()
        h.update(struct.pack("<Q", len(data)))
        h.update(data)
    return h.hexdigest()


def _path(key: str) -> Path:
    return disk_cache_dir() / f"{key}{SUFFIX}"


def store(key: str, objects: bytes, text: str) -> None:
    """Save object code and its optimised IR text under `key` (atomically; errors ignored:
    a cache that cannot be written only costs a recompile next time)."""
    payload = struct.pack("<Q", len(objects)) + objects + text.encode()
    blob = MAGIC + hashlib.sha256(payload).digest() + payload
    directory = disk_cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=SUFFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, _path(key))
    except OSError:
        try:
            os.unlink(tmp)  # type: ignore[possibly-undefined]
        except (OSError, NameError):
            pass


def load(key: str) -> tuple[bytes, str] | None:
    """(object code, optimised IR text) for `key`, or None when absent or corrupt (a corrupt
    entry is deleted)."""
    path = _path(key)
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 32
    ok = blob.startswith(MAGIC) and len(blob) >= head + 8
    if ok:
        digest, payload = blob[len(MAGIC):head], blob[head:]
        ok = hashlib.sha256(payload).digest() == digest
    if ok:
        (n,) = struct.unpack("<Q", payload[:8])
        ok = 8 + n <= len(payload)
    if not ok:
        try:
            path.unlink()
        except OSError:
            pass
        return None
    return payload[8:8 + n], payload[8 + n:].decode()


def disk_cache_info() -> dict:
    """{'path': str, 'entries': int, 'bytes': int} of the persistent cache."""
    directory = disk_cache_dir()
    files = list(directory.glob(f"*{SUFFIX}")) if directory.is_dir() else []
    files = [f for f in files if not f.name.startswith(".tmp-")]
    return {"path": str(directory), "entries": len(files), "bytes": sum(f.stat().st_size for f in files)}


def clear_disk_cache() -> int:
    """Delete every entry; returns how many were removed."""
    directory = disk_cache_dir()
    removed = 0
    if directory.is_dir():
        for f in directory.glob(f"*{SUFFIX}"):
            try:
                f.unlink()
                removed += not f.name.startswith(".tmp-")
            except OSError:
                pass
    return removed
