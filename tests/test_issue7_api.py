"""Issue 7, the call and cache layer: static values that compare equal but differ (1c), threads
(12), the disk cache's own key and unusable directories (15), dynamic shapes after sizes 0/1
(17), unavailable backends (19), tracebacks without engine frames (20), and the suite's own
compile cache (22)."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import traceback
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel import cache, events
from jitkernel.api import static_key
from jitkernel.tracebacks import is_engine_file

from helpers import assert_matches_numpy as assert_same

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _bits(v) -> bytes:
    return repr(static_key(v)).encode()


def _fingerprint(k) -> float:
    """A function of everything traced code can observe of a static value (type, bits)."""
    return float(zlib.crc32(repr((type(k).__name__, _bits(k))).encode()) % 997)


# -- 1c: static values that compare equal ---------------------------------------------------
def test_signed_zero_static_gets_its_own_entry():
    f = jk.jit(np.full_like, static_argnums=1)
    a, b = f(np.ones(2), 0.0), f(np.ones(2), -0.0)
    assert not np.signbit(a).any() and np.signbit(b).all()
    assert np.signbit(f(np.ones(2), -0.0)).all() and not np.signbit(f(np.ones(2), 0.0)).any()
    assert f.cache_size() == 2
    (rec,) = f.recompilations()
    assert rec.reasons == ["fill_value: static value 0.0 -> -0.0"]


def test_int_float_bool_statics_get_their_own_entries():
    g = jk.jit(lambda x, k: x + np.full((), k), static_argnames="k")
    x = np.ones(2, np.int8)
    for k in (1, 1.0, True, np.float32(1), np.int16(1), 1.0, 1):
        got, want = g(x, k=k), x + np.full((), k)
        assert got.dtype == want.dtype, k
        np.testing.assert_array_equal(got, want)
    assert g.cache_size() == 5
    reasons = [r for rec in g.recompilations() for r in rec.reasons]
    assert reasons[0] == "k: static value 1 -> 1.0" and len(reasons) == 4
    assert all(r.startswith("k: static value ") for r in reasons), reasons


def test_nan_static_matches_itself_bit_for_bit():
    f = jk.jit(lambda x, k: x * np.copysign(1.0, k), static_argnums=1)
    x = np.ones(3)
    np.testing.assert_array_equal(f(x, float("nan")), x)
    np.testing.assert_array_equal(f(x, float("nan")), x)  # another NaN object, same bits: a hit
    assert f.cache_size() == 1 and f.recompilations() == []
    np.testing.assert_array_equal(f(x, -float("nan")), -x)  # the sign of a NaN is observable
    (rec,) = f.recompilations()
    assert rec.reasons[0].startswith("k: static value nan -> nan (bits 0x7ff8")


_SCALAR_TWINS = st.one_of(
    st.sampled_from([(0.0, -0.0), (1, 1.0), (1, True), (0, False), (True, 1.0), (0.0, False),
                     (np.float32(0.0), np.float32(-0.0)), (np.float64(-0.0), 0.0),
                     (complex(0.0, 0.0), complex(-0.0, 0.0)), (complex(1.0, 0.0), complex(1.0, -0.0)),
                     (1.0, complex(1.0, 0.0))]),
    st.integers(-100, 100).map(lambda i: (i, float(i))),
    st.integers(-100, 100).map(lambda i: (np.int8(i), i)),
    st.integers(-100, 100).map(lambda i: (np.int8(i), np.int64(i))),
    st.floats(width=32, allow_nan=False).map(lambda v: (np.float32(v), np.float64(v))),
    st.floats(width=32, allow_nan=False).map(lambda v: (np.float32(v), float(v))),
    st.floats(width=16, allow_nan=False).map(lambda v: (np.float16(v), np.float32(v))),
)
_TWINS = st.one_of(
    _SCALAR_TWINS,
    st.lists(_SCALAR_TWINS, min_size=1, max_size=3).map(lambda ps: (tuple(a for a, _ in ps), tuple(b for _, b in ps))),
    _SCALAR_TWINS.map(lambda p: (frozenset([p[0]]), frozenset([p[1]]))),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TWINS)
def test_equal_static_values_that_differ_never_share_an_entry(pair):
    """Any pair `a == b` whose type or bits differ: the function sees each as itself."""
    a, b = pair
    assert a == b and static_key(a) != static_key(b)
    x = np.ones((), np.float32)  # broadcasts against tuples of any length

    def fp(x, k):
        return x + _fingerprint(k)
    f = jk.jit(fp, static_argnums=1, backend="interpret", disk_cache=False)
    for k in (a, b, a):
        assert_same(f(x, k), fp(x, k))
    assert f.cache_size() == 2
    if not any(isinstance(v, (complex, frozenset)) or (isinstance(v, tuple) and any(isinstance(e, complex) for e in v))
               for v in pair):
        def arr(x, k):  # dtype and sign bits of NumPy's own conversion of the value
            return np.asarray(k) * x
        g = jk.jit(arr, static_argnums=1, backend="interpret", disk_cache=False)
        for k in (b, a, b):
            got, want = g(x, k), arr(x, k)
            assert_same(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want))


def test_equal_statics_on_the_cpu_backend_in_a_tuple():
    f = jk.jit(lambda x, ks: x * np.asarray(ks), static_argnames="ks", disk_cache=False)
    x = np.ones(2, np.float32)
    for ks in ((1, 0.0), (1.0, -0.0), (True, 0.0)):
        got, want = f(x, ks=ks), x * np.asarray(ks)
        assert got.dtype == want.dtype and np.array_equal(np.signbit(got), np.signbit(want)), ks
    assert f.cache_size() == 3


# -- 12: threads ---------------------------------------------------------------------------
def test_concurrent_recompiles_from_eight_threads():
    """Eight threads, one function, many shapes (sizes 1 specialised, others dynamic), ranks and
    dtypes, with evictions: no exception, every result right. (Before the lock: 1-3 of 320 calls
    raised `dictionary keys changed during iteration` or KeyError.)"""
    def fn(x):
        return (x * 2 + 1).sum(axis=-1)
    f = jk.jit(fn, disk_cache=False)
    dtypes = [np.float32, np.float64, np.int32, np.int64, np.int16, np.uint8]
    errors: list = []
    start = threading.Barrier(8)

    def worker(seed):
        rng = np.random.default_rng(seed)
        start.wait()
        for _ in range(40):
            shape = tuple(int(s) for s in rng.integers(1, 30, size=rng.integers(1, 4)))
            x = (np.arange(math.prod(shape)) % 7).astype(dtypes[rng.integers(len(dtypes))]).reshape(shape)
            try:
                assert_same(f(x), fn(x))
            except BaseException as e:  # noqa: BLE001 - every failure is reported
                errors.append(f"{shape} {x.dtype}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, inside the cache's bookkeeping too
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", jk.CacheLimitWarning)
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


# -- 15: the disk cache --------------------------------------------------------------------
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


# -- 17: dynamic shapes after sizes 0 and 1 ---------------------------------------------------
@pytest.fixture
def compiles():
    seen: list = []

    def listener(e):
        if isinstance(e, events.CompileEvent):
            seen.append(e)
    events.subscribe(listener)
    yield seen
    events.SUBSCRIBERS.remove(listener)


def _elementwise_and_sum(x):
    return np.tanh(x) * 2 + x.sum()


def test_sizes_one_to_five_compile_twice(compiles):
    f = jk.jit(_elementwise_and_sum, disk_cache=False)
    for n in (1, 2, 3, 4, 5):
        x = np.linspace(0, 1, n)
        assert_same(f(x), _elementwise_and_sum(x))
    assert len(compiles) == 2
    assert "x: dimension 0 is now dynamic" in " ".join(f.recompilations()[0].reasons)


@pytest.mark.parametrize("shapes,most", [
    ([(0,), (2,), (3,), (7,)], 2),
    ([(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)], 2),
    ([(1, 5), (2, 5), (3, 5), (9, 5)], 2),
    ([(2, 3), (3, 2), (4, 5), (5, 4), (6, 7)], 3),  # 2*3 == 3*2: the element count stays fixed once
    ([(2, 3), (3, 3), (3, 4), (4, 5), (7, 9)], 3),  # axes that change one at a time end up dynamic together
    ([(1, 3), (1, 4), (2, 4), (5, 6), (1, 9)], 4),  # (1, k) and (m >= 2, k) are two classes
])
def test_dynamic_after_small_sizes_on_several_axes(compiles, shapes, most):
    def fn(x):
        return (np.sin(x) * 3).sum(axis=0) + x.sum()
    f = jk.jit(fn, disk_cache=False)
    for shape in shapes:
        x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape) / 7
        assert_same(f(x), fn(x))
    assert len(compiles) <= most, [str(r) for r in f.recompilations()]


def _pair(x, y):
    return x * y + y.max()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 9), min_size=1, max_size=7), st.booleans())
def test_compiles_per_size_sequence_are_bounded(compiles, sizes, two_args):
    """Sizes 0 and 1 are compiled for themselves; all sizes >= 2 share at most two compiles."""
    compiles.clear()
    if two_args:
        f, fn = jk.jit(_pair, disk_cache=False), _pair
        make = lambda n: (np.arange(n, dtype=np.float32), np.linspace(1, 2, n).astype(np.float32))  # noqa: E731
    else:
        f, fn = jk.jit(_elementwise_and_sum, disk_cache=False), _elementwise_and_sum
        make = lambda n: (np.arange(n, dtype=np.float64) / 3,)  # noqa: E731
    for n in sizes:
        args = make(n)
        if two_args and n == 0:
            continue  # max of an empty array raises, in NumPy as here
        assert_same(f(*args), fn(*args))
    used = {n for n in sizes if not (two_args and n == 0)}
    assert len(compiles) <= len(used & {0, 1}) + min(2, len(used - {0, 1})), sizes


# -- 19: backends that cannot run -----------------------------------------------------------
def test_explicit_unavailable_backend_fails_at_jit():
    with pytest.raises(jk.BackendUnavailableError, match="backend .cuda. is not available: it runs on an NVIDIA GPU through PyCUDA") as info:
        jk.jit(lambda x: x + 1, backend="cuda")
    assert isinstance(info.value, jk.JitError)
    assert "pycuda" in str(info.value) and "nvcc" in str(info.value) and "backend='cpu'" in str(info.value)
    assert not [f for f in traceback.extract_tb(info.value.__traceback__) if is_engine_file(f.filename)]
    with pytest.raises(jk.BackendUnavailableError):
        jk.jit(backend="gpu")  # the decorator form fails before it decorates
    with pytest.raises(jk.BackendUnavailableError):
        jk.Jitted(lambda x: x, backend="cuda")


def test_default_backend_that_cannot_run_fails_at_the_first_call():
    f = jk.jit(lambda x: x + 1)
    before = jk.config.default_backend
    jk.config.update("default_backend", "cuda")
    try:
        with pytest.raises(jk.BackendUnavailableError, match="backend .cuda. is not available: it runs on an NVIDIA GPU through PyCUDA") as info:
            f(np.ones(2))
        assert not [fr for fr in traceback.extract_tb(info.value.__traceback__) if is_engine_file(fr.filename)]
    finally:
        jk.config.update("default_backend", before)
    np.testing.assert_array_equal(f(np.ones(2)), np.full(2, 2.0))


def test_unknown_backend_is_a_value_error_listing_the_backends():
    for call in (lambda: jk.jit(lambda x: x, backend="tpu"), lambda: jk.config.update("default_backend", "tpu")):
        with pytest.raises(ValueError, match="unknown backend 'tpu'; backends are 'cpu', 'interpret'"):
            call()
    assert jk.config.default_backend == "cpu"


# -- 20: tracebacks ----------------------------------------------------------------------------
class MyError(Exception):
    pass


def _frames(exc):
    return [(f.name, f.line) for f in traceback.extract_tb(exc.__traceback__)]


def _no_engine(exc):
    files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    assert not [f for f in files if is_engine_file(f)], files


def user_branch(x):
    if x.sum() > 0:
        return x
    return -x


def user_reshape(x):
    return x.reshape(7) + 1


def user_raises(x):
    y = x + 1  # noqa: F841 (a line before the raise)
    raise MyError("my own message")


@pytest.mark.parametrize("fn,error,line", [
    (user_branch, jk.TracerBoolConversionError, "if x.sum() > 0:"),
    (user_reshape, ValueError, "return x.reshape(7) + 1"),
    (user_raises, MyError, 'raise MyError("my own message")'),
])
def test_errors_show_the_user_frames_only(fn, error, line):
    f = jk.jit(fn, autograph=False)  # as written: user_branch's `if` is converted (and compiles) by default
    for call in (lambda: f(np.ones(3)), lambda: f.lower(np.ones(3)), lambda: jk.make_ir(f)(np.ones(3))):
        with pytest.raises(error) as info:
            call()
        assert type(info.value) is error
        _no_engine(info.value)
        frames = _frames(info.value)
        assert frames[-1] == (fn.__name__, line), frames
        assert len(frames) == 3  # this test's call, the lambda, the traced function
    with pytest.raises(MyError, match="^my own message$"):
        jk.jit(user_raises)(np.ones(3))


def test_run_time_errors_on_the_fast_path_show_the_caller_only():
    f = jk.jit(lambda x, y: x ** y)
    f(np.arange(3), 2)
    for _ in range(2):  # the first failing call, then the registered fast path
        with pytest.raises(ValueError, match="negative") as info:
            f(np.arange(3), -1)
        _no_engine(info.value)
        assert len(_frames(info.value)) == 1


def test_full_tracebacks_on_request():
    f = jk.jit(user_reshape)
    jk.config.update("traceback", "full")
    try:
        with pytest.raises(ValueError) as info:
            f(np.ones(3))
    finally:
        jk.config.update("traceback", "user")
    files = [fr.filename for fr in traceback.extract_tb(info.value.__traceback__)]
    assert any(name.endswith(os.path.join("jitkernel", "jitted", "dispatch.py")) for name in files)
    with pytest.raises(ValueError, match="'user', 'full'"):
        jk.config.update("traceback", "short")


@pytest.fixture
def ip(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    backend, subscribers = jk.config.default_backend, list(events.SUBSCRIBERS)
    shell = InteractiveShell.instance()
    assert shell.extension_manager.load_extension("jitkernel") is None
    shell.run_cell("import numpy as np")
    yield shell
    shell.extension_manager.unload_extension("jitkernel")
    InteractiveShell.clear_instance()
    jk.config.update("default_backend", backend)
    events.SUBSCRIBERS[:] = subscribers


def _cell(ip, cell):
    from IPython.utils.capture import capture_output
    with capture_output() as cap:
        result = ip.run_cell(cell)
    return result, _ANSI.sub("", cap.stdout + cap.stderr)


@pytest.mark.parametrize("cell,error,line", [
    ("%%jit\ny = np.sin(x)\nz = y.reshape(7)\n", ValueError, "----> 3 z = y.reshape(7)"),
    # (an `if` on a traced value compiles since issue 8, jitkernel/autograph; a `raise` inside one cannot)
    ("%%jit\ndef g(v):\n    if v.sum() > 0:\n        raise ValueError('no')\n    return -v\ng(x)",
     jk.UnsupportedOperationError, "----> 3     if v.sum() > 0:"),
    ("%%jit\nclass E(Exception): pass\ndef h(v):\n    raise E('mine')\nh(x)", None, "----> 4     raise E('mine')"),
    ("%%jit -b cuda\ndef k(v):\n    return v\n", None, "UsageError: %%jit: cuda: backend 'cuda' is not available"),
])
def test_jit_cell_errors_show_the_cell_lines_only(ip, cell, error, line):
    ip.user_ns["x"] = np.ones(3)
    result, out = _cell(ip, cell)
    assert not result.success and line in out, out
    if error is not None:
        assert type(result.error_in_exec) is error
    for engine in ("run_cell_magic", "interactiveshell.py", "skipping hidden", os.sep + "jitkernel" + os.sep,
                   os.sep + "magics" + os.sep):
        assert engine not in out, out
    if "UsageError" not in line:
        assert re.search(r"^Cell In\[\d+\], line \d", out, re.M), out


def test_jit_cell_full_traceback_on_request(ip):
    ip.user_ns["x"] = np.ones(3)
    jk.config.update("traceback", "full")
    try:
        _, out = _cell(ip, "%%jit\ny = np.sin(x)\nz = y.reshape(7)\n")
    finally:
        jk.config.update("traceback", "user")
    assert "run_cell_magic" in out and os.path.join("jitkernel", "jitted", "dispatch.py") in out


def test_jit_backend_magic_reports_the_engine_message(ip):
    _, out = _cell(ip, "%jit_backend cuda")
    assert "UsageError: %jit_backend: cuda: backend 'cuda' is not available: it runs on an NVIDIA GPU through PyCUDA" in out


# -- 22: the suite's own compile cache ------------------------------------------------------------
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


def test_jit_cache_clear_touches_only_the_suite_cache(ip, tmp_path, monkeypatch):
    """Entries in the places a user's cache lives survive `%jit_cache --clear` run by a test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    decoys = [tmp_path / "xdg" / "jitkernel" / "user.jko", tmp_path / "home" / ".cache" / "jitkernel" / "user.jko"]
    for p in decoys:
        p.parent.mkdir(parents=True)
        p.write_bytes(b"user entry")
    suite = Path(os.environ["JITKERNEL_CACHE_DIR"])
    ip.run_cell("import jitkernel as jk\nr = jk.jit(lambda v: v * 5 - 2)(np.ones(4))")
    assert list(suite.glob("*.jko"))
    _, out = _cell(ip, "%jit_cache --clear")
    assert not list(suite.glob("*.jko")) and "jit cache cleared" in out, out
    assert all(p.read_bytes() == b"user entry" for p in decoys)


_FORK_SCRIPT = textwrap.dedent("""
    import os, sys, threading, time, numpy as np, jitkernel as jk
    started = threading.Event()

    def slow(x):
        if x.shape[0] == 5:  # trace time: this thread holds the function's lock meanwhile (the fork waits for this compile: jitkernel/forking.py)
            started.set()
            time.sleep(3)
        return x * 2
    f = jk.jit(slow)
    f(np.ones(3))
    t = threading.Thread(target=f, args=(np.ones(5),))
    t.start()
    started.wait()
    pid = os.fork()
    if pid == 0:  # the child: a new signature of the same function must compile, not wait forever
        import signal
        signal.alarm(240)  # a deadlocked child does not outlive the test
        ok = np.array_equal(f(np.ones(7)), np.full(7, 2.0))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    t.join()
    print("child", os.waitstatus_to_exitcode(status))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_while_another_thread_compiles_leaves_the_child_a_working_function():
    out = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert out.returncode == 0 and out.stdout.strip().endswith("child 0"), out.stdout + out.stderr[-2000:]
