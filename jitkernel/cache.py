"""The persistent compile cache: machine code that survives a restart.

Entries live under `JITKERNEL_CACHE_DIR` (default `$XDG_CACHE_HOME/jitkernel` or
`~/.cache/jitkernel`), one file per key. The key hashes the unoptimised LLVM IR text (which
encodes the whole fused program, shapes and dtypes), the host CPU name and features, the LLVM
and jitkernel versions and the optimisation level, never a file name (ipykernel randomises cell
file names). Files are written to a temporary name and renamed into place, so concurrent
writers never expose a partial file; each file carries a SHA-256 of its payload and the key it was
stored under, and a file that fails either check is deleted and recompiled, never loaded. A
directory that cannot be written (a file, read-only, a full disk) turns the cache off for the
process with one `DiskCacheWarning`; compilation goes on without it.

>>> import jitkernel.cache as c
>>> sorted(c.disk_cache_info())
['bytes', 'entries', 'path']
"""
from __future__ import annotations

import errno
import hashlib
import os
import struct
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Iterable

from .tracebacks import user_stacklevel

MAGIC = b"JITKERNEL-OBJ-2\n"  # -2: the entry records its own key
SUFFIX = ".jko"
KEY_BYTES = 64  # a hex SHA-256

# Errors that make the whole directory unusable (as opposed to one entry): caching is turned off
# for it, with one warning. ENOSPC/EDQUOT/EFBIG: full disk, quota, file size limit.
_DIRECTORY_ERRORS = {errno.ENOTDIR, errno.EEXIST, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC,
                     errno.EDQUOT, errno.EFBIG, errno.ENAMETOOLONG, errno.ELOOP}
_disabled: dict[str, str] = {}  # cache directory -> why it is off in this process
# key -> names of this process's functions that stored or loaded it (what `%jit_cache --clear`
# removes without touching other processes' entries: keys_of)
_owners: dict[str, set[str]] = {}
_lock = threading.Lock()


def _new_lock_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


class DiskCacheWarning(UserWarning):
    """The persistent compile cache cannot be used; compilation continues without it."""


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


def disabled_reason(directory: Path | None = None) -> str | None:
    """Why the cache directory is off in this process (after a failed write), or None."""
    return _disabled.get(str(directory or disk_cache_dir()))


def _disable(directory: Path, error: OSError) -> None:
    """Turn caching off for `directory` in this process and say so, once."""
    reason = f"{error.strerror or error} ({errno.errorcode.get(error.errno, error.errno)})"
    with _lock:
        if str(directory) in _disabled:
            return
        _disabled[str(directory)] = reason
    warnings.warn(f"jitkernel: the persistent compile cache is off for this process (no new entries; "
                  f"entries already there are still read): cannot write to {directory}: {reason}; "
                  f"compilation continues without it. Set JITKERNEL_CACHE_DIR to a writable directory, or "
                  f"jk.config.update('disk_cache', False) to silence this.",
                  DiskCacheWarning, stacklevel=user_stacklevel())


def encode(key: str, objects: bytes, text: str) -> bytes:
    """The file contents of an entry: magic, SHA-256 of the payload, payload = key, object code
    length, object code, optimised IR text."""
    payload = key.encode().ljust(KEY_BYTES)[:KEY_BYTES] + struct.pack("<Q", len(objects)) + objects + text.encode()
    return MAGIC + hashlib.sha256(payload).digest() + payload


def decode(key: str, blob: bytes) -> tuple[bytes, str] | None:
    """(object code, IR text) when `blob` is an intact entry recorded under `key`, else None.
    The key check rejects a valid entry under another entry's name (a copied or renamed file):
    loading its object code for this program would run the wrong machine code."""
    head = len(MAGIC) + 32
    if not blob.startswith(MAGIC) or len(blob) < head + KEY_BYTES + 8:
        return None
    digest, payload = blob[len(MAGIC):head], blob[head:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    if payload[:KEY_BYTES] != key.encode().ljust(KEY_BYTES)[:KEY_BYTES]:
        return None
    body = payload[KEY_BYTES:]
    (n,) = struct.unpack("<Q", body[:8])
    if 8 + n > len(body):
        return None
    try:
        return body[8:8 + n], body[8 + n:].decode()
    except UnicodeDecodeError:
        return None


def _own(key: str, owner: str | None) -> None:
    if owner is not None:
        _owners.setdefault(key, set()).add(owner)


def keys_of(names: Iterable[str]) -> set[str]:
    """The keys this process's functions called `names` stored or loaded (`store`/`load` with
    `owner=`): the disk entries that are theirs.

    >>> keys_of(["no function of this name"])
    set()
    """
    wanted = set(names)
    return {key for key, owners in _owners.items() if owners & wanted}


def store(key: str, objects: bytes, text: str, owner: str | None = None) -> None:
    """Save object code and its optimised IR text under `key` (atomically), for the function
    `owner` (recorded for `keys_of`). A directory that cannot be written (a file, read-only,
    full) turns the cache off with one warning; other failures only cost a recompile next time."""
    _own(key, owner)
    directory = disk_cache_dir()
    if str(directory) in _disabled:
        return
    tmp = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=SUFFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(encode(key, objects, text))
        os.replace(tmp, _path(key))
        tmp = None
    except OSError as e:
        if e.errno in _DIRECTORY_ERRORS:
            _disable(directory, e)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def load(key: str, owner: str | None = None) -> tuple[bytes, str] | None:
    """(object code, optimised IR text) for `key`, or None when absent, corrupt or recorded
    under another key (such a file is deleted). A hit is recorded as the function `owner`'s."""
    path = _path(key)
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    hit = decode(key, blob)
    if hit is None:
        try:
            path.unlink()
        except OSError:
            pass
    else:
        _own(key, owner)
    return hit


def disk_cache_info() -> dict:
    """{'path': str, 'entries': int, 'bytes': int} of the persistent cache."""
    directory = disk_cache_dir()
    files = list(directory.glob(f"*{SUFFIX}")) if directory.is_dir() else []
    files = [f for f in files if not f.name.startswith(".tmp-")]
    return {"path": str(directory), "entries": len(files), "bytes": sum(f.stat().st_size for f in files)}


def clear_disk_cache(keys: Iterable[str] | None = None) -> int:
    """Delete every entry, or only those of `keys` (`keys_of(...)`: one process's functions;
    the directory is shared by every process); returns how many were removed."""
    directory = disk_cache_dir()
    removed = 0
    if not directory.is_dir():
        return 0
    files = directory.glob(f"*{SUFFIX}") if keys is None else (_path(k) for k in keys)
    for f in files:
        try:
            f.unlink()
            removed += not f.name.startswith(".tmp-")
        except OSError:
            pass
    return removed
