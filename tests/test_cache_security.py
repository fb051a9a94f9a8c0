"""The persistent cache against whoever else can write its directory, and against bad entries
(docs/recompilation.md, "Cache security"): a directory another user owns or others can write is
refused before anything in it is read; directories are 0700 and files 0600; temporary names and
entry names are never followed as symlinks nor waited on as FIFOs; TPU executables (a pickle in
JAX) are not stored; the emulator's libraries and headers are checked against their records; an
entry that does not link is replaced; the cache is capped with least-recently-used eviction; and
`jitkernel cache` lists and clears it."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel import cache
from jitkernel.config import config

needs_gxx = pytest.mark.skipif(not any(os.access(os.path.join(d, "g++"), os.X_OK)
                                       for d in os.environ.get("PATH", "").split(os.pathsep)),
                               reason="the emulator needs g++")


@pytest.fixture
def fresh_cache_state(monkeypatch):
    """This process's memory of refused and disabled directories, emptied for the test."""
    monkeypatch.setattr(cache, "_disabled", {})
    monkeypatch.setattr(cache, "_refused", set())


def _jit_in(directory: Path, monkeypatch, fn, x):
    """`jk.jit(fn)(x)` with `directory` as the cache, and the DiskCacheWarnings it gave."""
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(directory))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = jk.jit(fn)(x)
    return result, [str(w.message) for w in seen if issubclass(w.category, cache.DiskCacheWarning)]


def _entry_of(directory: Path, monkeypatch, fn) -> Path:
    """Compile `fn` with `directory` as the cache; its one entry."""
    _jit_in(directory, monkeypatch, fn, np.ones(3))
    (entry,) = directory.glob("*.jko")
    return entry


def _plant(attacker: Path, victim: Path) -> None:
    """Put `attacker`'s machine code in `victim`'s entry, recorded under `victim`'s key (an
    intact entry as far as its checksum and key can tell)."""
    objects, text = cache.decode(attacker.stem, attacker.read_bytes())
    victim.write_bytes(cache.encode(victim.stem, objects, text))


def test_a_planted_entry_in_a_foreign_owned_directory_is_never_run(tmp_path, monkeypatch, fresh_cache_state):
    """The kernels of `x * 2` planted as `x + 5`'s entry ran (`[2, 2, 2]`, a silent wrong answer):
    the name is the key and the SHA-256 is no signature. In a directory another user owns,
    nothing is read."""
    attacker = _entry_of(tmp_path / "attacker", monkeypatch, lambda x: x * 2)
    shared = tmp_path / "shared"
    victim = _entry_of(shared, monkeypatch, lambda x: x + 5)
    _plant(attacker, victim)
    os.chown(shared, 12345, 12345)
    result, warned = _jit_in(shared, monkeypatch, lambda x: x + 5, np.ones(3))
    np.testing.assert_array_equal(result, np.full(3, 6.0))
    assert len(warned) == 1 and "owned by uid 12345" in warned[0], warned


_UNSAFE = {"group-writable": "writable by group or others", "world-writable": "writable by group or others",
           "foreign-owned": "owned by uid 12345", "in a world-writable folder": "which group or others can write",
           "in a foreign-owned folder": "which uid 12345 owns"}


@pytest.mark.parametrize("unsafe", list(_UNSAFE))
def test_an_unsafe_directory_is_refused_with_one_warning(tmp_path, monkeypatch, fresh_cache_state, unsafe):
    """Neither read nor written, one warning for the process, compilation goes on. A folder
    above it that someone else owns or can write (not sticky) lets them swap the directory."""
    shared = tmp_path / "shared" / "cache" if unsafe.startswith("in a") else tmp_path / "shared"
    shared.mkdir(parents=True, mode=0o700)
    {"group-writable": lambda: os.chmod(shared, 0o770), "world-writable": lambda: os.chmod(shared, 0o1777),
     "foreign-owned": lambda: os.chown(shared, 12345, 12345),
     "in a world-writable folder": lambda: os.chmod(shared.parent, 0o777),
     "in a foreign-owned folder": lambda: os.chown(shared.parent, 12345, 12345)}[unsafe]()
    warned = []
    for k in (2.0, 3.0):
        result, w = _jit_in(shared, monkeypatch, lambda x: x * k + 1, np.ones(3))
        np.testing.assert_array_equal(result, np.full(3, k + 1))
        warned += w
    assert len(warned) == 1 and "is off for this process" in warned[0] and str(shared) in warned[0], warned
    assert _UNSAFE[unsafe] in warned[0], warned
    assert list(shared.iterdir()) == [] and cache.disabled_reason(shared) is not None


def _modes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): oct(stat.S_IMODE(p.lstat().st_mode)) for p in [root, *root.rglob("*")]}


@needs_gxx
def test_directories_are_0700_and_files_0600(tmp_path, monkeypatch, fresh_cache_state):
    """A CPU entry and an emulator library (the emulator's .so was 0644 in a 0755 folder)."""
    monkeypatch.setenv("JITKERNEL_EMULATOR_PCH", "0")  # (the precompiled head: test_emulator_suite.py)
    root = tmp_path / "cache"
    _jit_in(root, monkeypatch, lambda x: x * 7 - 1, np.ones(3))
    got = jk.jit(lambda x: x * 7 - 2, backend="cuda-emulator")(np.ones(3))
    np.testing.assert_array_equal(got, np.full(3, 5.0))
    modes = _modes(root)
    assert any(name.endswith(".so") for name in modes) and any(name.endswith(".jko") for name in modes), modes
    assert {name: mode for name, mode in modes.items()
            if mode != (oct(0o700) if (root / name).is_dir() else oct(0o600))} == {}


def test_a_relative_xdg_cache_home_is_ignored(tmp_path, monkeypatch):
    """The XDG rule: a relative XDG_CACHE_HOME is invalid; the default is ~/.cache."""
    monkeypatch.delenv("JITKERNEL_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert cache.disk_cache_dir() == tmp_path / "home" / ".cache" / "jitkernel"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.disk_cache_dir() == tmp_path / "xdg" / "jitkernel"


def test_no_tpu_entry_is_stored(tmp_path, monkeypatch, fresh_cache_state):
    """JAX restores a saved executable only from a pickle (serialize_executable), and loading a
    pickle runs what its writer chose: the TPU backends store nothing on disk."""
    pytest.importorskip("jax")
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    got = jk.jit(lambda x: np.sin(x) * 3, backend="tpu-interpret")(np.ones(3, np.float32))
    np.testing.assert_allclose(got, np.sin(np.ones(3, np.float32)) * 3, rtol=1e-6)
    stored = list((tmp_path / "cache").rglob("*")) if (tmp_path / "cache").exists() else []
    assert stored == []


_EMULATOR_SCRIPT = textwrap.dedent("""
    import numpy as np, jitkernel as jk
    print(float(jk.jit(lambda x: x * 4 + 1, backend="cuda-emulator")(np.ones(3)).sum()))
""")


def _emulator_process(directory: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(directory), JITKERNEL_EMULATOR_PCH="0")
    return subprocess.run([sys.executable, "-c", _EMULATOR_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)


@needs_gxx
def test_a_truncated_emulator_library_is_rebuilt_not_loaded(tmp_path):
    """A truncated .so (a crash or full disk mid-copy, or a planted file) killed every process
    that mapped it (SIGBUS) until the cache was cleared; it now fails its recorded SHA-256."""
    first = _emulator_process(tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    (library,) = (tmp_path / "cuda-emulator").glob("*.so")
    whole = library.read_bytes()
    library.write_bytes(whole[: len(whole) // 3])
    again = _emulator_process(tmp_path)
    assert again.returncode == 0 and again.stdout == first.stdout, again.stderr[-2000:]
    assert library.stat().st_size == len(whole)


@needs_gxx
def test_symlinks_at_temporary_names_are_never_followed(tmp_path, monkeypatch, fresh_cache_state):
    """The emulator wrote its library and headers through guessable temporary names
    (`<key>.<pid>.tmp`, `jk_emu_head.h.<pid>.<thread>.tmp`) and followed a symlink planted there:
    a file anywhere the user can write was overwritten. Temporary names are now mkstemp's."""
    from jitkernel._version import __version__
    from jitkernel.backends.cuda import emulator, emulator_pch
    monkeypatch.setattr(emulator_pch, "_ready", {})
    root = tmp_path / "cache"
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(root))
    cxx = emulator.compiler()
    version = emulator._compiler_version(cxx)
    source = emulator.HEAD + f'extern "C" int jk_probe() {{ return 7; }} /* {tmp_path} */\n'
    key = cache.cache_key(source, version, " ".join(emulator.CXX_FLAGS), __version__, "cuda-emulator")
    head_key = cache.cache_key(emulator.HEAD, version, " ".join(emulator.CXX_FLAGS), __version__,
                               "cuda-emulator-pch")
    pid, thread = os.getpid(), threading.get_ident()
    guessable = [root / "cuda-emulator" / f"{key}.{pid}.tmp",
                 root / "cuda-emulator" / f"pch-{head_key}" / f"{emulator_pch.HEADER_NAME}.{pid}.{thread}.tmp",
                 root / "cuda-emulator" / f"pch-{head_key}" / f"{emulator_pch.HEADER_NAME}.gch.{pid}.{thread}.tmp"]
    victims = []
    for i, name in enumerate(guessable):
        name.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        victims.append(tmp_path / f"victim{i}")
        victims[-1].write_text("the user's file")
        name.symlink_to(victims[-1])
    lib = emulator._build(source, "probe")
    assert lib.jk_probe() == 7
    assert [v.read_bytes() for v in victims] == [b"the user's file"] * len(victims)


def test_a_fifo_at_an_entry_name_is_not_waited_on(tmp_path, monkeypatch, fresh_cache_state):
    """Opening a FIFO for reading waits for a writer: the load hung forever. Entries are opened
    O_NONBLOCK and read only when fstat says they are regular files."""
    entry = _entry_of(tmp_path / "cache", monkeypatch, lambda x: x * 9)
    entry.unlink()
    os.mkfifo(entry)
    script = ("import numpy as np, jitkernel as jk; "
              "print(float(jk.jit(lambda x: x * 9)(np.ones(3)).sum()))")
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "cache"))
    try:
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the load waited on the FIFO at the entry's name")
    assert out.returncode == 0 and out.stdout.strip() == "27.0", out.stderr[-2000:]


def test_an_entry_that_does_not_link_is_replaced_with_one_warning(tmp_path, monkeypatch, fresh_cache_state):
    """An intact entry whose object code does not link raised CompileError on every run and was
    never replaced; it is now deleted and recompiled, with one warning."""
    root = tmp_path / "cache"
    entry = _entry_of(root, monkeypatch, lambda x: x * 11)
    _, text = cache.decode(entry.stem, entry.read_bytes())
    entry.write_bytes(cache.encode(entry.stem, b"\x7fELF not an object file", text))
    result, warned = _jit_in(root, monkeypatch, lambda x: x * 11, np.ones(3))
    np.testing.assert_array_equal(result, np.full(3, 11.0))
    assert len(warned) == 1 and "did not link" in warned[0], warned
    objects, _ = cache.decode(entry.stem, entry.read_bytes())
    assert objects != b"\x7fELF not an object file"  # recompiled and stored
    result, warned = _jit_in(root, monkeypatch, lambda x: x * 11, np.ones(3))
    assert warned == [] and result.sum() == 33.0


def test_least_recently_used_entries_are_evicted_past_the_cap(tmp_path, monkeypatch, fresh_cache_state):
    root = tmp_path / "cache"
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(root))
    fns = {"a": lambda x: x * 13, "b": lambda x: x * 14, "c": lambda x: x * 15}
    paths = {}
    for i, name in enumerate("ab"):
        before = set(root.glob("*.jko"))
        _jit_in(root, monkeypatch, fns[name], np.ones(3))
        (paths[name],) = set(root.glob("*.jko")) - before
        os.utime(paths[name], (1000 + i, 1000 + i))  # b used after a ...
    _jit_in(root, monkeypatch, fns["a"], np.ones(3))  # ... then a again: a disk hit
    sizes = sum(p.stat().st_size for p in paths.values())
    monkeypatch.setattr(config, "disk_cache_max_bytes", sizes + sizes // 4)  # room for two and a half
    before = set(root.glob("*.jko"))
    _jit_in(root, monkeypatch, fns["c"], np.ones(3))
    (paths["c"],) = set(root.glob("*.jko")) - before
    assert {name for name, p in paths.items() if p.exists()} == {"a", "c"}
    with pytest.raises(ValueError, match="disk_cache_max_bytes"):
        jk.config.update("disk_cache_max_bytes", -1)


def _unless_it_waits(load, path: Path):
    """`load()`, failing the test (instead of hanging it) when it waits on the FIFO at `path`."""
    results = []
    reader = threading.Thread(target=lambda: results.append(load()), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # a writer comes and goes: the reader sees EOF
        reader.join(10)
        pytest.fail(f"the load waited on the FIFO at {path}")
    return results[0]


@given(st.sampled_from(["truncated", "flipped", "appended", "fifo", "symlink", "directory", "other key",
                        "empty", "intact"]),
       st.integers(min_value=0, max_value=10**6), st.sampled_from(["entry", "library"]))
@settings(max_examples=60, deadline=None)
def test_whatever_sits_at_an_entry_name_is_loaded_only_when_intact(kind, where, what):
    """Every kind of file at an entry's (or a checked library's) name: `load`/`load_file`
    return what was stored when it is intact and a regular file, else None, at once (no hang,
    no exception), and never through a symlink."""
    import tempfile
    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        mp.setenv("JITKERNEL_CACHE_DIR", d)
        mp.setattr(cache, "_disabled", {})
        key, other = "ab" * 32, "cd" * 32
        payload = bytes(range(256)) * 3
        if what == "entry":
            cache.store(key, payload, "text")
            cache.store(other, payload[::-1], "other text")
            path, other_path = Path(d) / f"{key}.jko", Path(d) / f"{other}.jko"
        else:
            path = cache.store_file("cuda-emulator/lib.so", payload)
            other_path = cache.store_file("cuda-emulator/other.so", payload[::-1])
        data = path.read_bytes()
        at = where % len(data)
        if kind == "truncated":
            path.write_bytes(data[:at])
        elif kind == "flipped":
            path.write_bytes(data[:at] + bytes([data[at] ^ 1 << (where % 8)]) + data[at + 1:])
        elif kind == "appended":
            path.write_bytes(data + b"\0")
        elif kind in ("fifo", "symlink", "directory"):
            path.unlink()
            {"fifo": os.mkfifo, "directory": os.mkdir}.get(kind, lambda p: p.symlink_to(other_path))(path)
        elif kind == "other key":
            path.write_bytes(other_path.read_bytes())
        elif kind == "empty":
            path.write_bytes(b"")
        got = _unless_it_waits(lambda: cache.load(key) if what == "entry" else cache.load_file("cuda-emulator/lib.so"),
                               path)
        want = ((payload, "text") if what == "entry" else path) if kind == "intact" else None
        assert got == want, (kind, at)


def test_the_cache_command_lists_and_clears(tmp_path, monkeypatch, fresh_cache_state):
    root = tmp_path / "cache"
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(root))
    cache.store("ab" * 32, b"object code", "text")
    cache.store_file("cuda-emulator/lib.so", b"a shared library" * 100)
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(root), JITKERNEL_CACHE_MAX_BYTES=str(5 << 20))

    def command(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "jitkernel", "cache", *args], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout

    listed = command()
    lines = listed.splitlines()
    assert any(line.split()[0] == "cpu" and line.endswith("ab" * 32 + ".jko") for line in lines), listed
    assert any(line.split()[0] == "cuda-emulator" and "1.6 KiB" in line and line.endswith("lib.so")
               for line in lines), listed
    assert f"{root}: 2 entries" in lines[-1] and "at most 5.0 MiB" in lines[-1], listed
    assert command("list") == listed
    assert f"cleared {root}: 2 entries" in command("clear")
    assert f"{root}: 0 entries, 0 B" in command()
    assert [p for p in root.rglob("*") if p.is_file()] == []
