"""Matrix products write into buffers reused across calls (backends/cpu/runtime.py
`reusable_product`): a training step does not page-fault fresh products every call. Reuse
must never alias a result the caller holds, nor one another thread's call is using, and the
product must be NumPy's bit for bit."""
from __future__ import annotations

import threading

import numpy as np

import jitkernel as jk
from helpers import assert_clean_exit, run_script

RNG = np.random.default_rng(3)
A = RNG.standard_normal((64, 96)).astype(np.float32)
B = RNG.standard_normal((96, 80)).astype(np.float32)


def test_products_are_numpys_bit_for_bit_and_held_results_are_never_overwritten():
    f = jk.jit(lambda a, b: np.tanh(a @ b) @ b.T)
    expected = [np.tanh(A @ (B * k)) @ (B * k).T for k in (1, 2, 3)]
    held = [f(A, B * k) for k in (1, 2, 3)]
    for r, e in zip(held, expected):
        np.testing.assert_array_equal(r, e)
    assert len({id(r) for r in held}) == 3 and not np.shares_memory(held[0], held[1])
    g = jk.jit(lambda a, b: a @ b)
    first = g(A, B)
    copy = first.copy()
    g(A, B * 5)  # the caller still holds `first`: it must not be the next call's buffer
    np.testing.assert_array_equal(first, copy)


def test_integer_and_batched_products():
    i = np.arange(24).reshape(2, 3, 4)
    j = np.arange(40).reshape(2, 4, 5)
    f = jk.jit(lambda i, j: (i @ j) + 1)
    for _ in range(2):
        np.testing.assert_array_equal(f(i, j), (i @ j) + 1)


def test_concurrent_calls_get_their_own_buffers():
    f = jk.jit(lambda a, b: np.sum(np.tanh(a @ b), axis=1))
    inputs = [B * (k + 1) for k in range(6)]
    expected = [np.sum(np.tanh(A @ b), axis=1) for b in inputs]
    f(A, B)  # compiled before the threads start
    errors: list = []

    def work(k: int) -> None:
        for _ in range(30):
            r = f(A, inputs[k])
            if not np.allclose(r, expected[k], rtol=1e-5, atol=1e-4):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_product_of_a_temporary_is_the_same_buffer_at_every_call():
    f = jk.jit(lambda a, b: np.tanh(a @ b).sum(axis=0))
    f(A, B)
    executable = f.last_compiled().executable
    import re
    (product,) = {int(b) for b in re.findall(r"dot_general\(.*out=b(\d+)", executable.source)}
    import weakref
    before = weakref.ref(executable._last[product])  # a strong reference would itself block the reuse
    f(A, B)
    assert before() is not None and executable._last[product] is before()  # the kept buffer, not a new one


def test_a_training_loop_alternates_between_two_output_arrays():
    # `out = f(x)` in a loop holds the previous result while calling again: the call two steps
    # back has been dropped by then, so its array is taken again instead of fresh pages
    import weakref
    f = jk.jit(lambda a, b: a @ b)
    f(A, B)  # the first call (tracing, compiling) is not part of the loop
    refs = []
    out = None
    for k in range(6):
        previous = out
        out = f(A, B * (k + 1))
        assert out is not previous  # the result the caller still holds is never the new one
        np.testing.assert_array_equal(out, A @ (B * (k + 1)))
        if previous is not None:
            np.testing.assert_array_equal(previous, A @ (B * k))
        refs.append(weakref.ref(out))
        del previous
    # steady state: each call's array is the one of two calls before
    assert refs[5]() is refs[3]() is not None and refs[4]() is not refs[5]()


def test_a_call_on_the_checked_path_leaves_no_cycle_and_its_dropped_result_is_reused():
    # NumPy scalar arguments take the checked path on every call; a reference cycle left by it
    # (a nested function calling itself holds the leaves) kept each result alive until the
    # garbage collector ran, so every call allocated and page-faulted a fresh output. In a fresh
    # interpreter: in this one, other tests' threads (Dask workers, kernels) make cyclic garbage
    # of their own while the collector is off.
    proc = run_script("""
        import gc, sys
        import numpy as np
        import jitkernel as jk
        A = np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32)
        f = jk.jit(lambda a, b, k: {"r": (np.clip(a, 0, 1) * k + b,)})
        args = (A, A * 2, np.float32(3))
        f(*args)
        gc.collect()
        gc.disable()
        pointers = set()
        for _ in range(6):
            pointers.add(f(*args)["r"][0].ctypes.data)
        garbage = gc.collect()
        gc.enable()
        print(garbage, len(pointers))
    """, 300)
    assert_clean_exit(proc)
    garbage, arrays = proc.stdout.split()
    assert garbage == "0", proc.stdout  # no cycle left by the calls
    assert arrays == "1", proc.stdout  # every call wrote the same (reused) output
