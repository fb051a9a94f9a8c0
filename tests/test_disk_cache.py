"""The disk cache: an entry records its own key, unusable cache directories (under a file, a full
disk, blocked entries, no write permission) cost a warning and a recompile only, and the test
suite caches in a temporary directory of its own."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np

import jitkernel as jk
from helpers import run_cell
from jitkernel import cache


_DISK_SCRIPT = textwrap.dedent("""
    import json, sys, warnings, numpy as np, jitkernel as jk
    from jitkernel import events
    warnings.simplefilter("always")
    seen = []
    events.subscribe(lambda e: seen.append(bool(e.hit))
                     if type(e).__name__ == "CacheEvent" and e.level == "disk" else None)
    which = sys.argv[1]
    fns = {"a": lambda x: np.sin(x) * 2, "b": lambda x: np.cos(x) + x.sum(), "c": lambda x: x * 3 - 1}
    x = np.arange(6, dtype=np.float32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        oks = []
        for name in which:
            fn = fns[name]
            oks.append(bool(np.allclose(jk.jit(fn)(x), fn(x), rtol=1e-5)))
    print(json.dumps({"ok": all(oks), "disk_hits": seen,
                      "warnings": [f"{type(m.message).__name__}: {m.message}" for m in w]}))
""")


def _run(cache_dir, which: str, preexec=None):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", _DISK_SCRIPT, which], env=env, capture_output=True, text=True,
                         timeout=120, preexec_fn=preexec)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_valid_entry_under_another_entrys_name_is_rejected(tmp_path):
    assert _run(tmp_path, "a")["disk_hits"] == [False]
    (entry_a,) = tmp_path.glob("*.jko")
    assert _run(tmp_path, "b")["disk_hits"] == [False]
    (entry_b,) = [p for p in tmp_path.glob("*.jko") if p != entry_a]
    shutil.copyfile(entry_a, entry_b)  # a's machine code under b's name
    again = _run(tmp_path, "b")
    assert again["ok"] and again["disk_hits"] == [False] and again["warnings"] == []
    assert entry_b.read_bytes() != entry_a.read_bytes()  # recompiled and stored correctly
    assert _run(tmp_path, "ab")["disk_hits"] == [True, True]


def test_entry_format_records_its_key():
    key = "ab" * 32
    blob = cache.encode(key, b"\x7fELF", "text")
    assert cache.decode(key, blob) == (b"\x7fELF", "text")
    assert cache.decode("cd" * 32, blob) is None
    damaged = bytearray(blob)
    damaged[-1] ^= 1
    assert cache.decode(key, bytes(damaged)) is None


def _one_cache_off_warning(result, path_part: str) -> str:
    assert result["ok"], result
    (w,) = result["warnings"]
    assert w.startswith("DiskCacheWarning: jitkernel: the persistent compile cache is off") and path_part in w, w
    return w


def test_cache_dir_under_a_regular_file_warns_once_and_compiles(tmp_path):
    blocker = tmp_path / "somefile"
    blocker.write_text("not a directory")
    result = _run(blocker / "sub", "abc")
    w = _one_cache_off_warning(result, str(blocker / "sub"))
    assert "ENOTDIR" in w or "EEXIST" in w
    result = _run(blocker, "ab")  # the cache directory itself is a file
    _one_cache_off_warning(result, str(blocker))
    assert blocker.read_text() == "not a directory"


def _limit_file_size():
    import resource
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))


def test_full_disk_warns_once_and_compiles(tmp_path):
    """A write that fails for lack of space (here: a file size limit, EFBIG; ENOSPC and EDQUOT
    take the same path) turns the cache off once, leaves no temporary file, and compiles on."""
    result = _run(tmp_path, "abc", preexec=_limit_file_size)
    w = _one_cache_off_warning(result, str(tmp_path))
    assert "EFBIG" in w
    assert list(tmp_path.iterdir()) == []


def test_an_entry_blocked_by_a_directory_costs_a_recompile_only(tmp_path):
    _run(tmp_path, "a")
    (entry,) = tmp_path.glob("*.jko")
    entry.unlink()
    entry.mkdir()  # the entry's own name is taken: that entry is not stored, the cache stays on
    result = _run(tmp_path, "ab")
    assert result["ok"] and result["warnings"] == [] and result["disk_hits"] == [False, False]
    assert entry.is_dir() and not list(tmp_path.glob(".tmp-*"))
    assert _run(tmp_path, "b")["disk_hits"] == [True]


def test_unwritable_directory_warning_in_process(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_disabled", {})
    (tmp_path / "f").write_text("")
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "f" / "sub"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for k in (2, 3):
            r = jk.jit(lambda x: x * k)(np.ones(3))
            np.testing.assert_array_equal(r, np.full(3, float(k)))
    assert [type(m.message) for m in w] == [cache.DiskCacheWarning]
    assert w[0].filename == __file__  # points at the user's call
    assert cache.disabled_reason() is not None


def _under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([path, root]) == root


def test_the_suite_caches_in_a_temporary_directory():
    d = os.environ["JITKERNEL_CACHE_DIR"]
    assert str(cache.disk_cache_dir()) == d
    assert _under(d, tempfile.gettempdir()) and "jitkernel-test-cache-" in d
    assert not _under(d, os.path.expanduser("~"))
    xdg = os.environ.get("XDG_CACHE_HOME")
    assert not (xdg and _under(d, xdg))


def test_jit_cache_clear_touches_only_the_suite_cache(jit_shell, tmp_path, monkeypatch):
    """Entries in the places a user's cache lives survive `%jit_cache --clear --all` run by a test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    decoys = [tmp_path / "xdg" / "jitkernel" / "user.jko", tmp_path / "home" / ".cache" / "jitkernel" / "user.jko"]
    for p in decoys:
        p.parent.mkdir(parents=True)
        p.write_bytes(b"user entry")
    suite = Path(os.environ["JITKERNEL_CACHE_DIR"])
    jit_shell.run_cell("import jitkernel as jk\nr = jk.jit(lambda v: v * 5 - 2)(np.ones(4))")
    assert list(suite.glob("*.jko"))
    _, out = run_cell(jit_shell, "%jit_cache --clear --all")
    assert not list(suite.glob("*.jko")) and "jit cache cleared" in out, out
    assert all(p.read_bytes() == b"user entry" for p in decoys)
