"""The persistent compile cache: machine code that survives a restart.

Entries live under `JITKERNEL_CACHE_DIR` (default `$XDG_CACHE_HOME/jitkernel` or
`~/.cache/jitkernel`; a relative XDG_CACHE_HOME is ignored, as the XDG rule says), one file per
key. The key hashes the unoptimised LLVM IR text (which encodes the whole fused program, shapes
and dtypes), the host CPU name and features, the LLVM and jitkernel versions and the
optimisation level, never a file name (ipykernel randomises cell file names).

Entries are machine code that jitkernel runs, so whoever can write the directory can run code
in every process that uses it (docs/recompilation.md, "Cache security"). A directory that is
not owned by this user or that group or others can write is refused: one `DiskCacheWarning`,
and it is neither read nor written for the rest of the process. Directories are created 0700
and files 0600. Files are written to a fresh temporary name (mkstemp: O_EXCL, never a planted
symlink) in the same directory and renamed into place, so concurrent writers never expose a
partial file; they are opened with O_NOFOLLOW|O_NONBLOCK and read only when fstat says they
are regular files (a FIFO at an entry's name is not waited on). Each entry carries a SHA-256 of
its payload and the key it was stored under; files loaded by path (the emulator's shared
libraries and headers) have their size and SHA-256 recorded beside them (`store_file`,
`load_file`). A file that fails a check is deleted and recompiled, never loaded. A directory
that cannot be written (a file, read-only, a full disk) turns the cache off for the process with
one `DiskCacheWarning`; compilation goes on without it. The cache holds at most
`jk.config.disk_cache_max_bytes` (JITKERNEL_CACHE_MAX_BYTES, default 1 GiB): a store past it
removes the least recently used entries.

>>> import jitkernel.cache as c
>>> sorted(c.disk_cache_info())
['bytes', 'entries', 'path']
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
import struct
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from .config import config
from .tracebacks import user_stacklevel

MAGIC = b"JITKERNEL-OBJ-3\n"  # -3: the entry records its backend (-2: its own key)
SUFFIX = ".jko"
KEY_BYTES = 64  # a hex SHA-256
BACKEND_BYTES = 16  # the backend's name, padded
SUM_SUFFIX = ".sha256"  # beside a file loaded by path: "<size> <sha256 hex>"
DEFAULT_MAX_BYTES = 1 << 30

# Errors that make the whole directory unusable (as opposed to one entry): caching is turned off
# for it, with one warning. ENOSPC/EDQUOT/EFBIG: full disk, quota, file size limit.
_DIRECTORY_ERRORS = {errno.ENOTDIR, errno.EEXIST, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC,
                     errno.EDQUOT, errno.EFBIG, errno.ENAMETOOLONG, errno.ELOOP}
_disabled: dict[str, str] = {}  # cache directory -> why it is off in this process
_refused: set[str] = set()  # those of them refused by usable_dir: not even read
# key -> names of this process's functions that stored or loaded it (what `%jit_cache --clear`
# removes without touching other processes' entries: keys_of)
_owners: dict[str, set[str]] = {}
_lock = threading.Lock()
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _check_max_bytes(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"jitkernel option 'disk_cache_max_bytes' must be a number of bytes >= 0, got {value!r}")


def _max_bytes_from_environment() -> int:
    text = os.environ.get("JITKERNEL_CACHE_MAX_BYTES", "").strip()
    try:
        return int(text) if text else DEFAULT_MAX_BYTES
    except ValueError:
        warnings.warn(f"jitkernel: JITKERNEL_CACHE_MAX_BYTES={text!r} is not a number of bytes; "
                      f"the cache holds at most {DEFAULT_MAX_BYTES} bytes", DiskCacheWarning, stacklevel=2)
        return DEFAULT_MAX_BYTES


def _new_lock_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


class DiskCacheWarning(UserWarning):
    """The persistent compile cache cannot be used; compilation continues without it."""


# The cache's size cap; a store past it removes the least recently used entries (evict).
config.register_option("disk_cache_max_bytes", _max_bytes_from_environment(), _check_max_bytes)


def disk_cache_dir() -> Path:
    """Where entries are stored (created on first write). A relative XDG_CACHE_HOME is ignored
    (the XDG base directory rule): it would put the cache under whatever the current directory
    is, a shared folder maybe."""
    env = os.environ.get("JITKERNEL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
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
    """Why the cache directory is off in this process (refused, or after a failed write), or None."""
    return _disabled.get(str(directory or disk_cache_dir()))


def _warn_off(directory: Path, reason: str, message: str) -> None:
    """Record that `directory` is off in this process, and say so once."""
    with _lock:
        if str(directory) in _disabled:
            return
        _disabled[str(directory)] = reason
    warnings.warn(message, DiskCacheWarning, stacklevel=user_stacklevel())


def _disable(directory: Path, error: OSError) -> None:
    """Turn caching off for `directory` in this process and say so, once."""
    reason = f"{error.strerror or error} ({errno.errorcode.get(error.errno, error.errno)})"
    _warn_off(directory, reason,
              f"jitkernel: the persistent compile cache is off for this process (no new entries; "
              f"entries already there are still read): cannot write to {directory}: {reason}; "
              f"compilation continues without it. Set JITKERNEL_CACHE_DIR to a writable directory, or "
              f"jk.config.update('disk_cache', False) to silence this.")


def _unsafe(info: os.stat_result) -> str | None:
    """Why a directory with this stat cannot hold machine code this process runs, or None:
    anyone else who can write it can plant an entry (the SHA-256 in it is a checksum, not a
    signature)."""
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid is not None and info.st_uid != euid:
        return f"owned by uid {info.st_uid}, not by this user (uid {euid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def _unsafe_folder_above(directory: Path) -> str | None:
    """Why a folder above `directory` would let someone else swap the cache directory for one of
    their own (rename it away, put theirs there), or None: each must be owned by this user or
    root, and not writable by group or others unless sticky (as /tmp is: there only a file's owner
    may rename it)."""
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid is None:
        return None
    for folder in Path(os.path.abspath(directory)).parents:
        try:
            info = os.stat(folder)
        except OSError:
            continue
        if info.st_uid not in (euid, 0):
            return f"inside {folder}, which uid {info.st_uid} owns"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return f"inside {folder}, which group or others can write (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def usable_dir(create: bool = False) -> Path | None:
    """The cache directory when entries may be read from it (and, with `create`, written to it:
    it is then created 0700 if missing), else None. A directory another user owns or others can
    write, or that lies in a folder someone else could swap it in, is refused for the rest of
    the process, with one warning, before anything in it is read. A directory that cannot be
    created turns writing off (`_disable`)."""
    directory = disk_cache_dir()
    if disabled_reason(directory) is not None and (create or str(directory) in _refused):
        return None
    if create:
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as e:
            if e.errno in _DIRECTORY_ERRORS:
                _disable(directory, e)
            return None
    try:
        info = os.stat(directory)  # the directory the entries are in, through a symlink to it
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    why = _unsafe(info) or _unsafe_folder_above(directory)
    if why is not None:
        _refused.add(str(directory))
        _warn_off(directory, why,
                  f"jitkernel: the persistent compile cache is off for this process: {directory} is {why}, "
                  f"so another user could plant machine code there that jitkernel would run; nothing in it "
                  f"is read or written. Set JITKERNEL_CACHE_DIR to a new directory that only you can write "
                  f"(entries already in this one may have been planted), or "
                  f"jk.config.update('disk_cache', False) to silence this.")
        return None
    return directory



def encode(key: str, objects: bytes, text: str, backend: str = "cpu") -> bytes:
    """The file contents of an entry: magic, SHA-256 of the payload, payload = key, backend,
    object code length, object code, optimised IR text."""
    payload = (key.encode().ljust(KEY_BYTES)[:KEY_BYTES] + backend.encode().ljust(BACKEND_BYTES)[:BACKEND_BYTES]
               + struct.pack("<Q", len(objects)) + objects + text.encode())
    return MAGIC + hashlib.sha256(payload).digest() + payload


_HEAD = len(MAGIC) + 32  # magic and digest: the payload starts here


def decode(key: str, blob: bytes) -> tuple[bytes, str] | None:
    """(object code, IR text) when `blob` is an intact entry recorded under `key`, else None.
    The key check rejects a valid entry under another entry's name (a copied or renamed file):
    loading its object code for this program would run the wrong machine code."""
    fixed = KEY_BYTES + BACKEND_BYTES
    if not blob.startswith(MAGIC) or len(blob) < _HEAD + fixed + 8:
        return None
    digest, payload = blob[len(MAGIC):_HEAD], blob[_HEAD:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    if payload[:KEY_BYTES] != key.encode().ljust(KEY_BYTES)[:KEY_BYTES]:
        return None
    body = payload[fixed:]
    (n,) = struct.unpack("<Q", body[:8])
    if 8 + n > len(body):
        return None
    try:
        return body[8:8 + n], body[8 + n:].decode()
    except UnicodeDecodeError:
        return None


def entry_backend(head: bytes) -> str:
    """The backend an entry's first bytes name ('?' for a file of another format)."""
    if not head.startswith(MAGIC) or len(head) < _HEAD + KEY_BYTES + BACKEND_BYTES:
        return "?"
    return head[_HEAD + KEY_BYTES:_HEAD + KEY_BYTES + BACKEND_BYTES].decode(errors="replace").strip() or "?"


def _open_regular(path: Path) -> int | None:
    """A read descriptor of `path` when it is a regular file, else None: never through a
    symlink (O_NOFOLLOW), and a FIFO or device there is not waited on (O_NONBLOCK, then fstat)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _read_regular(path: Path, limit: int | None = None) -> bytes | None:
    """The bytes of `path` (its first `limit`), or None unless it is a regular file (`_open_regular`)."""
    fd = _open_regular(path)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read() if limit is None else f.read(limit)
    except OSError:
        return None


def _digest_regular(path: Path) -> tuple[int, str] | None:
    """(size, SHA-256 hex) of `path` read in chunks (a precompiled head is 61 MB), or None
    unless it is a regular file (`_open_regular`)."""
    fd = _open_regular(path)
    if fd is None:
        return None
    digest, size = hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
    except OSError:
        return None
    return size, digest.hexdigest()


def _write_atomic(path: Path, chunks: Iterable[bytes]) -> int:
    """Write `chunks` to `path` through a fresh temporary name in the same directory (mkstemp:
    O_CREAT|O_EXCL, mode 0600, so a symlink or FIFO planted at a guessable name is never
    followed or opened), renamed into place. Returns the size; raises OSError."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        size = 0
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
                size += len(chunk)
        os.replace(tmp, path)
        tmp = None
        return size
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


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


def store(key: str, objects: bytes, text: str, owner: str | None = None, backend: str = "cpu") -> None:
    """Save object code and its optimised IR text under `key` (atomically), for the function
    `owner` (recorded for `keys_of`). A directory that cannot be written (a file, read-only,
    full) turns the cache off with one warning; other failures only cost a recompile next time."""
    _own(key, owner)
    directory = usable_dir(create=True)
    if directory is None:
        return
    try:
        size = _write_atomic(directory / f"{key}{SUFFIX}", [encode(key, objects, text, backend)])
    except OSError as e:
        if e.errno in _DIRECTORY_ERRORS:
            _disable(directory, e)
        return
    _stored(directory, size, directory / f"{key}{SUFFIX}")


def _touch(path: Path) -> None:
    """Mark `path` used now (eviction removes the least recently used entries first)."""
    try:
        os.utime(path, follow_symlinks=False)
    except OSError:
        pass


def load(key: str, owner: str | None = None) -> tuple[bytes, str] | None:
    """(object code, optimised IR text) for `key`, or None when absent, corrupt or recorded
    under another key (such a file is deleted). A hit is recorded as the function `owner`'s."""
    directory = usable_dir()
    if directory is None:
        return None
    path = directory / f"{key}{SUFFIX}"
    blob = _read_regular(path)
    if blob is None:
        return None
    hit = decode(key, blob)
    if hit is None:
        _unlink(path)
    else:
        _own(key, owner)
        _touch(path)
    return hit


def discard(key: str) -> None:
    """Delete the entry of `key` (one that passed its checks but could not be used)."""
    directory = usable_dir()
    if directory is not None:
        _unlink(directory / f"{key}{SUFFIX}")


def _sum_line(size: int, digest: str) -> bytes:
    return f"{size} {digest}\n".encode()


def _make_private_dirs(directory: Path, folder: Path) -> None:
    """Create `folder` and the folders between it and `directory`, each 0700 (os.makedirs
    gives its mode to the last one only)."""
    path = directory
    for part in folder.relative_to(directory).parts:
        path = path / part
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass


def store_file(relative: str, source: Path | bytes) -> Path | None:
    """Store the file `source` (or these bytes) in the cache as `relative` (a file loaded by
    path: a shared library, a header), with its size and SHA-256 recorded beside it for
    `load_file`. Returns the stored path, or None when the cache cannot take it (use `source`
    then)."""
    directory = usable_dir(create=True)
    if directory is None:
        return None
    target = directory / relative
    digest = hashlib.sha256()

    def chunks() -> Iterator[bytes]:
        if isinstance(source, bytes):
            digest.update(source)
            yield source
            return
        with open(source, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                yield chunk
    try:
        _make_private_dirs(directory, target.parent)
        size = _write_atomic(target, chunks())
        # the record last: a file without one (a crash between the two) is only a miss
        _write_atomic(target.with_name(target.name + SUM_SUFFIX), [_sum_line(size, digest.hexdigest())])
    except OSError as e:
        if e.errno in _DIRECTORY_ERRORS:
            _disable(directory, e)
        return None
    _stored(directory, size, target)
    return target


def load_file(relative: str) -> Path | None:
    """The path of the cached file `relative` when it is a regular file whose size and SHA-256
    match the record beside it, else None (a mismatching file and its record are deleted: a
    truncated shared library would crash the process that maps it, SIGBUS)."""
    directory = usable_dir()
    if directory is None:
        return None
    path = directory / relative
    record = path.with_name(path.name + SUM_SUFFIX)
    expected = _read_regular(record, 200)
    if expected is None:
        return None
    found = _digest_regular(path)
    if found is None or _sum_line(*found) != expected:
        _unlink(path)
        _unlink(record)
        return None
    _touch(path)
    return path


@dataclass(frozen=True)
class Entry:
    """One unit of the cache that is stored, used and evicted whole."""

    name: str  # relative to the cache directory
    backend: str
    paths: tuple[Path, ...]
    bytes: int
    last_used: float  # the newest modification time: stores and hits set it


EMULATOR_FOLDER = "cuda-emulator"


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _files(folder: Path) -> dict[str, os.stat_result]:
    """name -> lstat of the regular files of `folder`, temporary files left out (one scandir:
    eviction runs this at every store)."""
    found = {}
    try:
        with os.scandir(folder) as it:
            for item in it:
                if not item.name.startswith(".tmp-") and item.is_file(follow_symlinks=False):
                    try:
                        found[item.name] = item.stat(follow_symlinks=False)
                    except OSError:
                        pass
    except OSError:
        pass
    return found


def _entry(name: str, backend: str, files: list[tuple[Path, os.stat_result]]) -> Entry:
    return Entry(name, backend, tuple(p for p, _ in files), sum(s.st_size for _, s in files),
                 max(s.st_mtime for _, s in files))


def entries(directory: Path | None = None, backends: bool = True) -> list[Entry]:
    """Every entry of the cache directory: the `.jko` entries (their backend read from their
    header unless not `backends`: eviction needs none), and the emulator's shared libraries
    (with their records) and precompiled heads (a folder each). Temporary files are left out."""
    directory = directory or usable_dir()
    if directory is None:
        return []
    found = []
    for name, info in sorted(_files(directory).items()):
        if name.endswith(SUFFIX):
            head = _read_regular(directory / name, _HEAD + KEY_BYTES + BACKEND_BYTES) if backends else None
            found.append(_entry(name, entry_backend(head or b""), [(directory / name, info)]))
    emulator = directory / EMULATOR_FOLDER
    libraries = _files(emulator)
    for name, info in sorted(libraries.items()):
        if name.endswith(".so"):
            record = libraries.get(name + SUM_SUFFIX)
            found.append(_entry(f"{EMULATOR_FOLDER}/{name}", "cuda-emulator",
                                [(emulator / name, info)] + ([(emulator / (name + SUM_SUFFIX), record)] if record else [])))
    for folder in sorted(emulator.glob("pch-*")):
        heads = _files(folder) if folder.is_dir() and not folder.is_symlink() else {}
        if heads:
            found.append(_entry(f"{EMULATOR_FOLDER}/{folder.name}", "cuda-emulator",
                                [(folder / name, info) for name, info in sorted(heads.items())]))
    return found


def _remove(entry: Entry) -> None:
    for p in entry.paths:
        _unlink(p)
    if entry.paths[0].parent.name.startswith("pch-"):  # a precompiled head: its folder too
        try:
            os.rmdir(entry.paths[0].parent)
        except OSError:
            pass


# Eviction scans the directory (6 ms for 1000 entries on a loaded 2-core machine, against 0.2 ms
# for the store itself), so a store scans only when this process's estimate of the total (the
# last scan plus its own stores since) passes the cap, or after RESCAN_EVERY stores: other
# processes' stores are seen then.
RESCAN_EVERY = 32
_estimates: dict[str, tuple[int, int]] = {}  # cache directory -> (estimated bytes, stores since the scan)


def _stored(directory: Path, size: int, keep: Path) -> None:
    """Account for a store of `size` bytes at `keep`; evict when the cap may be passed."""
    estimate, stores = _estimates.get(str(directory), (None, 0))
    if estimate is not None and estimate + size <= config.disk_cache_max_bytes and stores + 1 < RESCAN_EVERY:
        _estimates[str(directory)] = (estimate + size, stores + 1)
        return
    evict(keep=keep)


def evict(keep: Path | None = None, max_bytes: int | None = None) -> int:
    """Remove the least recently used entries until the cache holds at most `max_bytes`
    (default `jk.config.disk_cache_max_bytes`), never the one holding `keep` (just stored, about
    to be loaded). Returns how many were removed."""
    limit = config.disk_cache_max_bytes if max_bytes is None else max_bytes
    directory = usable_dir()
    if directory is None:
        return 0
    found = entries(directory, backends=False)
    total = sum(e.bytes for e in found)
    removed = 0
    for entry in sorted(found, key=lambda e: e.last_used):
        if total <= limit:
            break
        if keep is not None and keep in entry.paths:
            continue
        _remove(entry)
        total -= entry.bytes
        removed += 1
    _estimates[str(directory)] = (total, 0)
    return removed


def clear_all() -> tuple[int, int]:
    """Delete every entry of every backend (the `jitkernel cache clear` command); returns
    (entries, bytes) removed."""
    found = entries()
    for entry in found:
        _remove(entry)
    return len(found), sum(e.bytes for e in found)


def disk_cache_info() -> dict:
    """{'path': str, 'entries': int, 'bytes': int} of the persistent cache's `.jko` entries."""
    directory = usable_dir()
    found = [e for e in entries(directory) if e.name.endswith(SUFFIX)] if directory is not None else []
    return {"path": str(disk_cache_dir()), "entries": len(found), "bytes": sum(e.bytes for e in found)}


def clear_disk_cache(keys: Iterable[str] | None = None) -> int:
    """Delete every `.jko` entry, or only those of `keys` (`keys_of(...)`: one process's
    functions; the directory is shared by every process); returns how many were removed."""
    directory = usable_dir()
    if directory is None:
        return 0
    removed = 0
    files = directory.glob(f"*{SUFFIX}") if keys is None else (directory / f"{k}{SUFFIX}" for k in keys)
    for f in files:
        try:
            f.unlink()
            removed += not f.name.startswith(".tmp-")
        except OSError:
            pass
    return removed
