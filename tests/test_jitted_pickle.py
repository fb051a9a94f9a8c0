"""Jitted functions pickle (jitkernel/pickling.py, docs/distributed.md).

By reference where the function has a module-level name (tests/jitted_pickle_helpers.py), else
by value (its function, through cloudpickle, plus its jit options), else a JittedPicklingError.
Round trips in this process, in a spawned multiprocessing pool, and on Dask's processes scheduler.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import threading

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.pickling import JittedPicklingError

import jitted_pickle_helpers as helpers

X = np.linspace(0.0, 1.0, 5)


@pytest.mark.parametrize("f", [helpers.sin_plus_one, helpers.power_sum, helpers.Kernels.doubled],
                         ids=["module level", "with options", "class body"])
def test_module_level_jitted_functions_pickle_by_reference(f):
    data = pickle.dumps(f)
    assert b"jitted_pickle_helpers" in data and len(data) < 200  # a name, not the function's code
    assert pickle.loads(data) is f


def test_reference_keeps_the_compiled_cache():
    helpers.sin_plus_one(X)
    assert pickle.loads(pickle.dumps(helpers.sin_plus_one)).cache_size() >= 1


@pytest.mark.parametrize("make", [lambda: helpers.closure(3.0),
                                  lambda: jk.jit(lambda x: x * 3.0 - 1, backend="interpret"),
                                  lambda: jk.jit(np.sin)], ids=["closure", "lambda", "ufunc"])
def test_functions_without_a_module_level_name_pickle_by_value(make):
    pytest.importorskip("cloudpickle")
    f = make()
    g = pickle.loads(pickle.dumps(f))
    assert g is not f and g.backend == f.backend and g.__name__ == f.__name__
    np.testing.assert_array_equal(g(X), f(X))


def test_by_value_keeps_static_arguments_and_options():
    pytest.importorskip("cloudpickle")
    f = jk.jit(lambda x, n: (x ** n).sum(), static_argnums=1, backend="interpret", fastmath=True, autograph=False)
    g = pickle.loads(pickle.dumps(f))
    assert (g.static_argnums, g.backend, g.fastmath, g.autograph) == (frozenset({1}), "interpret", True, False)
    assert g(X, 3) == f(X, 3)


def test_unpicklable_function_raises_a_clear_pickling_error():
    lock = threading.Lock()
    f = jk.jit(lambda x: x if lock else x)  # closes over a lock: no pickler takes it
    with pytest.raises(JittedPicklingError, match="cannot be pickled.*not reachable by name.*lock") as info:
        pickle.dumps(f)
    assert isinstance(info.value, pickle.PicklingError) and isinstance(info.value, jk.JitError)


def test_spawned_multiprocessing_pool_runs_jitted_functions():
    """A pool of fresh interpreters (spawn): the module-level function arrives by name and is
    compiled there; the closure arrives by value."""
    pytest.importorskip("cloudpickle")
    tasks = [(helpers.sin_plus_one, X), (helpers.Kernels.doubled, X), (helpers.closure(2.0), X)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(helpers.call_in_worker, tasks)
    assert all(pid != os.getpid() for pid, _ in results)
    for (f, x), (_, got) in zip(tasks, results):
        np.testing.assert_array_equal(got, f(x))


def test_dask_processes_scheduler_runs_jitted_functions():
    """Dask's processes scheduler pickles tasks with cloudpickle: a jitted function in
    map_blocks, and a jitted function called on Dask arrays (its block programs are shipped)."""
    pytest.importorskip("cloudpickle")
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    x = da.from_array(np.arange(12.0), chunks=4)
    mapped = da.map_blocks(helpers.sin_plus_one, x, dtype=np.float64)
    called = helpers.sin_plus_one(x)
    shifted = da.map_blocks(helpers.closure(1.5), x, dtype=np.float64)
    got = dask.compute(mapped, called, shifted, scheduler="processes", num_workers=2)
    ref = np.sin(np.arange(12.0)) + 1
    np.testing.assert_allclose(got[0], ref)
    np.testing.assert_allclose(got[1], ref)
    np.testing.assert_array_equal(got[2], np.arange(12.0) + 1.5)


MAIN_SCRIPT = '''
import multiprocessing, numpy as np, jitkernel as jk

@jk.jit
def triple(x):
    return x * 3

if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.map(triple, [np.arange(3.0)])[0]
    assert np.array_equal(got, np.arange(3.0) * 3), got
    print("ok")
'''


def test_a_main_script_jitted_function_reaches_a_spawned_pool(tmp_path):
    """A function of `__main__` (a script; a notebook alike) pickles by value (cloudpickle), so the
    worker needs no importable name for it."""
    import subprocess
    import sys
    pytest.importorskip("cloudpickle")
    script = tmp_path / "main_script.py"
    script.write_text(MAIN_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root, JITKERNEL_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
