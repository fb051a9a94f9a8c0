"""The compile cache: one entry per signature, recompilation reasons, automatic dynamic shapes,
the entry limit, and the persistent disk cache (fresh processes, corrupt and concurrent files)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import cache, events


@pytest.fixture
def recorded():
    seen: list = []
    unsubscribe = events.subscribe(seen.append)
    yield seen
    unsubscribe()


def kinds(seen, cls):
    return [e for e in seen if isinstance(e, cls)]


def test_same_signature_does_not_retrace():
    calls = []

    @jk.jit
    def f(x):
        calls.append(1)
        return x * 2
    x = np.ones(4, np.float32)
    f(x), f(x), f(x + 1)
    assert len(calls) == 1 and f.cache_size() == 1 and f.recompilations() == []


def test_reasons_name_argument_and_both_values(recorded):
    @jk.jit(static_argnames="n")
    def f(x, y, n=2):
        return x ** n + y
    f(np.ones(3, np.float32), 1.0)
    f(np.ones(5, np.float32), 1.0)  # shape
    f(np.ones(5, np.float64), 1.0)  # dtype
    f(np.ones(5, np.float64), 1.0, n=3)  # static
    f(np.ones(5, np.float64), 1)  # python scalar type
    reasons = [r.reasons for r in f.recompilations()]
    assert reasons[0][0] == "x: shape (3,) -> (5,)"
    assert reasons[1] == ["x: dtype float32 -> float64"]
    assert reasons[2] == ["n: static value 2 -> 3"]
    assert reasons[3] == ["y: Python scalar type float -> int"]
    events_ = kinds(recorded, events.RecompileEvent)
    assert [e.reasons for e in events_] == reasons
    assert all(e.function == "f" and e.duration > 0 for e in events_)
    text = str(f.recompilations()[1])
    assert text.startswith("jit: f recompiled (x: dtype float32 -> float64); trace ") and "compile" in text


def test_diff_is_against_the_closest_entry():
    f = jk.jit(lambda x, y: x + y)
    a32, a64 = np.ones((2, 3), np.float32), np.ones((2, 3))
    f(a32, a32)
    f(a64, a64)
    f(np.ones((4, 3)), np.ones((4, 3)))  # closest entry: the float64 one (no dtype reasons)
    assert f.recompilations()[-1].reasons[:2] == ["x: shape (2, 3) -> (4, 3)", "y: shape (2, 3) -> (4, 3)"]


def test_tree_structure_change_is_a_reason():
    f = jk.jit(lambda t: t[0])
    f((np.ones(2),))
    f([np.ones(2)])
    assert "tree structure changed" in f.recompilations()[0].reasons[0]


def test_explain_recompiles_logs(caplog):
    f = jk.jit(lambda x: x - 1)
    jk.config.update("explain_recompiles", True)
    try:
        with caplog.at_level(logging.WARNING, logger="jitkernel"):
            f(np.ones(2, np.int32))
            f(np.ones(2, np.int64))
    finally:
        jk.config.update("explain_recompiles", False)
    assert any("x: dtype int32 -> int64" in r.message for r in caplog.records)


def test_dynamic_dimension_after_one_change(recorded):
    @jk.jit
    def step(x, w):
        return np.tanh(x @ w).sum(axis=1)
    w = np.random.default_rng(0).random((8, 4)).astype(np.float32)
    xs = [np.random.default_rng(n).random((n, 8)).astype(np.float32) for n in (100, 200, 300, 50)]
    results = [step(x, w) for x in xs]
    for x, r in zip(xs, results):
        np.testing.assert_allclose(r, np.tanh(x @ w).sum(axis=1), rtol=1e-5)
    recs = step.recompilations()
    assert len(recs) == 1  # the third and fourth sizes did not recompile
    assert "x: shape (100, 8) -> (200, 8)" in recs[0].reasons
    assert any("dimension 0 is now dynamic" in r for r in recs[0].reasons)
    dynamic_hits = [e for e in kinds(recorded, events.CacheEvent) if e.level == "dynamic" and e.hit]
    assert len(dynamic_hits) == 2
    assert len(kinds(recorded, events.CompileEvent)) == 2


def test_dynamic_row_kernels_stay_correct():
    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    f = jk.jit(softmax)
    rng = np.random.default_rng(2)
    for shape in [(10, 20), (20, 30), (33, 7), (5, 200), (64, 64)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(f(x), softmax(x), rtol=1e-5, atol=1e-7)
    assert len(f.recompilations()) == 1


def test_size_one_is_never_dynamic():
    f = jk.jit(lambda x, y: x + y)
    f(np.ones((3, 4)), np.ones((3, 4)))
    f(np.ones((5, 4)), np.ones((5, 4)))
    r = f(np.ones((1, 4)), np.ones((7, 4)))  # broadcasting: a new specialisation
    assert r.shape == (7, 4) and len(f.recompilations()) == 2


def test_entry_limit_warns_once_and_evicts():
    f = jk.jit(lambda x: x + 1)
    old = jk.config.max_cache_entries
    jk.config.update("max_cache_entries", 2)
    try:
        with pytest.warns(jk.CacheLimitWarning, match="reached 2 cached signatures"):
            for dt in (np.int8, np.int16, np.int32):
                f(np.ones(3, dt))
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            f(np.ones(3, np.int64))  # no second warning
        assert f.cache_size() == 2
    finally:
        jk.config.update("max_cache_entries", old)


def test_output_reuse_never_aliases_a_live_result():
    f = jk.jit(lambda x: x * 2)
    x = np.arange(5.0)
    a = f(x)
    b = f(x + 1)
    assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, x * 2)
    view = b[1:]
    del b
    c = f(x + 2)
    np.testing.assert_array_equal(view, (x + 1)[1:] * 2)
    assert not np.shares_memory(view, c)


def test_numpy_scalar_arguments_take_the_warm_path_keyed_by_their_type():
    # NPBench passes np.float64 / np.int64 scalars (alpha, beta, sizes): each warm call took the
    # checked path (about 80 us a call against 6 us) before NumPy scalars were keyed by type.
    f = jk.jit(lambda x, s: x * s + s)
    x = np.arange(4, dtype=np.float32)
    scalars = [np.float32(2), np.float64(2.5), np.int8(3), 1.5, np.float32(4), np.float64(-1), np.int8(-2),
               np.bool_(True), np.complex64(1j)]
    for s in scalars + scalars:
        got, want = f(x, s), x * s + s
        assert got.dtype == want.dtype, (type(s), got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert len(f._fast) == len({type(s) for s in scalars})  # one warm entry per scalar type


SCRIPT = textwrap.dedent("""
    import json, sys, numpy as np, jitkernel as jk
    from jitkernel import events
    seen = []
    events.subscribe(lambda e: seen.append({"type": type(e).__name__, "level": getattr(e, "level", None),
                                             "hit": getattr(e, "hit", None)}))
    def f(x):
        return np.sin(x) * 2 + x.sum()
    r = jk.jit(f)(np.arange(6, dtype=np.float32))
    ok = bool(np.allclose(r, f(np.arange(6, dtype=np.float32)), rtol=1e-5))
    print(json.dumps({"ok": ok, "events": seen}))
""")


def _fresh_process(cache_dir):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _disk(result):
    return [(e["hit"]) for e in result["events"] if e["type"] == "CacheEvent" and e["level"] == "disk"]


def test_fresh_process_hits_the_disk_cache(tmp_path, monkeypatch):
    first = _fresh_process(tmp_path)
    second = _fresh_process(tmp_path)
    assert first["ok"] and second["ok"]
    assert _disk(first) == [False] and _disk(second) == [True]
    # the hit skipped optimisation and codegen but still traced
    assert any(e["type"] == "TraceEvent" for e in second["events"])
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path))
    info = cache.disk_cache_info()
    assert info["entries"] == 1 and info["bytes"] > 0 and info["path"] == str(tmp_path)
    assert cache.clear_disk_cache() == 1 and cache.disk_cache_info()["entries"] == 0


def test_corrupt_entry_is_recompiled_not_loaded(tmp_path):
    _fresh_process(tmp_path)
    (entry,) = list(tmp_path.glob("*.jko"))
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    again = _fresh_process(tmp_path)
    assert again["ok"] and _disk(again) == [False]
    truncated = entry.read_bytes()[:20]
    entry.write_bytes(truncated)
    assert _fresh_process(tmp_path)["ok"]


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    assert all(o["ok"] for o in outs)
    assert not list(tmp_path.glob(".tmp-*"))
    assert _disk(_fresh_process(tmp_path)) == [True]


def test_disk_cache_can_be_turned_off(tmp_path, monkeypatch, recorded):
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path))
    jk.jit(lambda x: x * 3, disk_cache=False)(np.ones(3))
    assert not list(tmp_path.glob("*.jko"))
    assert not [e for e in kinds(recorded, events.CacheEvent) if e.level == "disk"]


def test_recompilation_records_are_bounded(monkeypatch):
    # A function recompiled in a loop keeps only the latest records (memory stays flat).
    import collections
    import jitkernel.api as api
    f = jk.jit(lambda x, n: x + n, static_argnums=1, backend="interpret")
    f._recompilations = collections.deque(maxlen=3)
    for n in range(6):
        f(np.zeros(2), n)
    recs = f.recompilations()
    assert len(recs) == 3 and recs[-1].reasons == ["n: static value 4 -> 5"]
    assert api.MAX_RECOMPILATION_RECORDS >= 100
    assert jk.jit(lambda x: x)._recompilations.maxlen == api.MAX_RECOMPILATION_RECORDS
