"""Plain helpers shared by the test modules (fixtures are in conftest.py).

Comparison: a jitted result must equal NumPy's in result kind (0-d NumPy scalar vs ndarray),
dtype, shape and value (exact for bool/int, dtype-aware tolerance for floats, NaN in the same
places, infinities equal). Also: the host backends from the engine's list, scripts run in a
fresh interpreter, IPython cells, a Dask LocalCluster and compile-event recording."""
from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import re
import subprocess
import sys
import textwrap
import warnings
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

import jitkernel as jk
from jitkernel.backends import backend_class, backend_names
from tpu_suite import TPU_BACKENDS

# (rtol, atol) per float dtype, for results computed elementwise or over few elements.
FLOAT_TOL = {
    np.dtype(np.float16): (1e-2, 1e-2),
    np.dtype(np.float32): (2e-5, 1e-5),
    np.dtype(np.float64): (1e-12, 1e-12),
}

ALL_DTYPES = [np.dtype(n) for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                     "uint32", "uint64", "float16", "float32", "float64")]
INT_DTYPES = [d for d in ALL_DTYPES if d.kind in "iu"]
FLOAT_DTYPES = [d for d in ALL_DTYPES if d.kind == "f"]


def _fail(path: str, msg: str) -> None:
    raise AssertionError(f"{path}: {msg}")


def _check_leaf(got: Any, expected: Any, rtol: float | None, atol: float | None, path: str) -> None:
    if isinstance(expected, (bool, int, float)) and not isinstance(expected, np.generic):
        # A Python scalar out of plain Python code: jitkernel returns it as a 0-d NumPy scalar.
        expected = np.asarray(expected)[()]
    if isinstance(expected, np.ndarray) and expected.ndim == 0:
        # NumPy returns 0-d arrays from a few calls (astype, reshape, x[...]); jitkernel returns
        # every 0-d result as a NumPy scalar, as NumPy's ufuncs and reductions do.
        if not isinstance(got, np.generic):
            _fail(path, f"expected a NumPy scalar for a 0-d result, got {type(got).__name__}: {got!r}")
    elif isinstance(expected, np.ndarray):
        if type(got) is not np.ndarray:
            _fail(path, f"expected an ndarray (like NumPy), got {type(got).__name__}: {got!r}")
    elif isinstance(expected, np.generic):
        if not isinstance(got, np.generic):
            _fail(path, f"expected a NumPy scalar {type(expected).__name__} (like NumPy), got "
                        f"{type(got).__name__}: {got!r}")
    else:
        raise TypeError(f"{path}: cannot compare expected leaf of type {type(expected).__name__}")
    if got.dtype != expected.dtype:
        _fail(path, f"dtype {got.dtype} != NumPy's {expected.dtype}")
    if got.shape != expected.shape:
        _fail(path, f"shape {got.shape} != NumPy's {expected.shape}")
    g, e = np.asarray(got), np.asarray(expected)
    if e.dtype.kind in "biu":
        if not np.array_equal(g, e):
            bad = np.argwhere(g != e)
            first = tuple(int(i) for i in bad[0]) if bad.size else ()
            _fail(path, f"{len(bad)} of {e.size} elements differ (exact {e.dtype} comparison); first at "
                        f"{first}: got {g[first]!r}, NumPy {e[first]!r}\ngot:\n{g}\nNumPy:\n{e}")
        return
    if e.dtype.kind == "c":  # each part as its float dtype (a 0-d result's as NumPy scalars)
        for part in ("real", "imag"):
            gp, ep = getattr(g, part).copy(), getattr(e, part).copy()
            _check_leaf(gp[()] if gp.ndim == 0 else gp, ep[()] if ep.ndim == 0 else ep, rtol, atol, f"{path}.{part}")
        return
    dr, da = FLOAT_TOL[e.dtype.newbyteorder("=")]  # a byte-swapped result has the same tolerance
    rtol = dr if rtol is None else rtol
    atol = da if atol is None else atol
    g64, e64 = g.astype(np.float64), e.astype(np.float64)
    gnan, enan = np.isnan(g64), np.isnan(e64)
    if not np.array_equal(gnan, enan):
        first = tuple(int(i) for i in np.argwhere(gnan != enan)[0])
        _fail(path, f"NaN positions differ; first at {first}: got {g64[first]!r}, NumPy {e64[first]!r}"
                    f"\ngot:\n{g}\nNumPy:\n{e}")
    ginf, einf = np.isinf(g64), np.isinf(e64)
    if not np.array_equal(ginf, einf) or not np.array_equal(g64[einf], e64[einf]):
        first = tuple(int(i) for i in np.argwhere((ginf != einf) | (einf & (g64 != e64)))[0])
        _fail(path, f"infinities differ; first at {first}: got {g64[first]!r}, NumPy {e64[first]!r}"
                    f"\ngot:\n{g}\nNumPy:\n{e}")
    fin = ~(enan | einf)
    with np.errstate(all="ignore"):
        err = np.abs(g64 - e64)
        bad = fin & ~(err <= atol + rtol * np.abs(e64))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        _fail(path, f"{int(bad.sum())} of {e.size} {e.dtype} elements outside rtol={rtol:g} atol={atol:g}; "
                    f"max abs error {err[fin].max():g}; first at {first}: got {g64[first]!r}, NumPy "
                    f"{e64[first]!r}\ngot:\n{g}\nNumPy:\n{e}")


def assert_matches_numpy(got: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                         _path: str = "result") -> None:
    """Assert `got` (a jitted function's result) matches `expected` (NumPy's) leaf by leaf through
    tuples, lists and dicts: same pytree structure, same scalar-vs-array kind, dtype, shape, and
    values (ints/bools exact; floats within the dtype's tolerance unless rtol/atol are given)."""
    if isinstance(expected, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(expected):
            _fail(_path, f"expected a dict with keys {sorted(expected)}, got {got!r}")
        for k in expected:
            assert_matches_numpy(got[k], expected[k], rtol, atol, f"{_path}[{k!r}]")
        return
    if isinstance(expected, (tuple, list)):
        if type(got) is not type(expected) or len(got) != len(expected):
            _fail(_path, f"expected a {type(expected).__name__} of {len(expected)}, got {got!r}")
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_matches_numpy(g, e, rtol, atol, f"{_path}[{i}]")
        return
    if expected is None:
        if got is not None:
            _fail(_path, f"expected None, got {got!r}")
        return
    _check_leaf(got, expected, rtol, atol, _path)


def numpy_result(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args)` run by NumPy itself with floating-point warnings silenced."""
    import warnings
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice", "Degrees of freedom <= 0"
        return fn(*args, **kwargs)


def outcome(fn: Callable[..., Any], *args: Any) -> tuple:
    """('ok', result) or ('raise', exception type) of `fn(*args)`, floating-point warnings
    silenced: the form the NumPy-equivalence tests compare."""
    import warnings
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", on_host(fn(*args))
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return "raise", type(e)


def builtin_type(e: BaseException) -> type:
    """The public builtin base of an exception's type: NumPy raises private subclasses
    (numpy._core._exceptions._UFuncNoLoopError, ...) where jitkernel raises their base."""
    return next(t for t in type(e).__mro__ if t.__module__ == "builtins")


def run_on_copies(fn: Callable[..., Any], *args: Any) -> tuple:
    """('ok', result, arguments after the call) or ('raise', builtin exception type, arguments),
    `fn` called on copies of the array arguments with floating-point warnings silenced: two
    such outcomes are equal when the calls agree in result and in what they left in their
    arguments."""
    result = call_on_copies(fn, *args)
    return result if result[0] == "ok" else ("raise", builtin_type(result[1]), result[2])


def check(fn: Callable[..., Any], *args: Any, backend: str, rtol: float | None = None,
          atol: float | None = None, jit_kwargs: dict | None = None, **kwargs: Any) -> Any:
    """Run `fn` with NumPy and jitted on `backend`, and assert they match. If NumPy raises,
    the jitted call must raise the same exception type. Returns the jitted result."""
    try:
        expected = numpy_result(fn, *args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the jitted call must raise the same type
        import pytest
        expected_type = builtin_type(e)
        with pytest.raises(expected_type):
            jk.jit(fn, backend=backend, **(jit_kwargs or {}))(*args, **kwargs)
        return None
    got = jk.jit(fn, backend=backend, **(jit_kwargs or {}))(*args, **kwargs)
    assert_matches_numpy(on_host(got) if backend == "tpu" else got, expected, rtol=rtol, atol=atol)
    return got


def on_host(tree: Any) -> Any:
    """Backend "tpu" keeps results on the chip as device arrays (docs/tpu.md): NumPy's arrays (and
    scalars for 0-d) here, through tuples and lists."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(on_host(t) for t in tree)
    if isinstance(tree, jk.DeviceArray):
        host = np.asarray(tree)
        return host[()] if host.ndim == 0 else host
    return tree


def raises_like_numpy(fn: Callable[..., Any], *args: Any, same_message: bool = False) -> None:
    """NumPy raises on `fn(*args)`; `jk.jit(fn)(*args)` must raise the same built-in exception
    type (`builtin_type`), and with `same_message` the same text."""
    import pytest
    with pytest.raises(Exception) as numpy_error:
        fn(*args)
    with pytest.raises(builtin_type(numpy_error.value)) as ours:
        jk.jit(fn)(*args)
    if same_message:
        assert str(ours.value) == str(numpy_error.value)


def sample(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...], lo: float = -10.0,
           hi: float = 10.0) -> np.ndarray:
    """Random array of `dtype`: bools uniform; ints uniform over [lo, hi] clipped to the dtype's
    range; floats uniform over [lo, hi]."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo_i, hi_i = max(int(np.ceil(lo)), info.min), min(int(np.floor(hi)), info.max)
        return rng.integers(lo_i, hi_i, size=shape, endpoint=True, dtype=dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def full_range(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Random integers over the dtype's whole range (bools for bool)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def rng_for(*key: object) -> np.random.Generator:
    """A Generator seeded deterministically from `key` (stable across runs and processes)."""
    import zlib
    return np.random.default_rng(zlib.crc32(repr(tuple(str(k) for k in key)).encode()))


_module_counter = itertools.count()

# The backends every machine runs: the engine's registry less those that need a device (cuda)
# and the emulator, which needs g++ (tests add it with emulator_suite.emulator_backends()).
# The TPU backends need JAX; modules add "tpu-interpret" by opting in (tests/tpu_suite.py).
HOST_BACKENDS = [b for b in backend_names() if not backend_class(b).device_arrays and b != "cuda-emulator"
                 and b not in TPU_BACKENDS]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def load(tmp_path: Any, source: str, name: str = "f") -> Callable:
    """A function defined in a real file under `tmp_path` (its source is there: tracebacks and
    messages quote its lines, and autograph can convert it)."""
    path = tmp_path / f"jk_test_mod_{next(_module_counter)}.py"
    path.write_text("import numpy as np\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def numpy_or_error(f: Callable[..., Any], *args: Any) -> Any:
    """NumPy's result, or the type of the exception it raises."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(*args)
    except Exception as e:  # noqa: BLE001 - the type is the expectation
        return type(e)


def jit_or_error(f: Callable[..., Any], *args: Any, backend: str = "cpu") -> Any:
    """The jitted result, or the type of the exception the call raises."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return jk.jit(f, backend=backend)(*args)
    except Exception as e:  # noqa: BLE001
        return type(e)


def value_kind(a: Any) -> np.ndarray:
    """0 finite, 1 nan, 2 +inf, 3 -inf: the kind of each value."""
    a = np.asarray(a, dtype=np.float64)
    return np.select([np.isnan(a), np.isposinf(a), np.isneginf(a)], [1, 2, 3], 0)


def same_bits(got: Any, expected: Any) -> bool:
    """Same dtype, shape and bytes."""
    got, expected = np.asarray(got), np.asarray(expected)
    return got.dtype == expected.dtype and got.shape == expected.shape and got.tobytes() == expected.tobytes()


def run_script(source: str, timeout: float, *args: str) -> subprocess.CompletedProcess:
    """Run `source` in a fresh interpreter with this checkout first on the path; a hang past
    `timeout` seconds fails the test (the child is killed)."""
    import pytest
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(source), *args], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the script hung (killed after {timeout} s); output so far:\n{e.stdout}\n{e.stderr}")


def assert_clean_exit(proc: subprocess.CompletedProcess) -> None:
    """The script exited with status 0 (else its output is the failure message)."""
    assert proc.returncode == 0, (f"exit status {proc.returncode} (negative: killed by signal "
                                  f"{-proc.returncode})\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-3000:]}")


def run_cell(shell: Any, cell: str) -> tuple:
    """Run an IPython cell; returns (ExecutionResult, its captured output without ANSI colours)."""
    from IPython.utils.capture import capture_output
    with capture_output() as cap:
        result = shell.run_cell(cell)
    return result, _ANSI.sub("", cap.stdout + cap.stderr)


def assert_identical(got: Any, want: Any) -> None:
    """Same dtype and shape, values bit for bit (NaN equals NaN) and the same sign bits (of zeros
    and NaNs too)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # NaN equals NaN; values bit for bit otherwise
    assert np.signbit(got).tolist() == np.signbit(want).tolist()


class Cluster(NamedTuple):
    """A running Dask LocalCluster, its client and the compile cache its workers share."""
    client: Any
    cluster: Any
    cache: str


@contextlib.contextmanager
def local_cluster(cache: str, n_workers: int = 2) -> Iterator[Cluster]:
    """A real LocalCluster of `n_workers` one-thread processes on the loopback, its workers
    compiling into `cache`. distributed sets OMP_NUM_THREADS, MALLOC_TRIM_THRESHOLD_,
    PYTHONHASHSEED, ... in this process's environment for its workers; later tests'
    subprocesses must not inherit them, so the whole environment is restored afterwards."""
    import pytest
    distributed = pytest.importorskip("distributed")
    saved = dict(os.environ)
    os.environ["JITKERNEL_CACHE_DIR"] = cache  # the worker processes inherit it
    try:
        with distributed.LocalCluster(n_workers=n_workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                                      dashboard_address=None, protocol="tcp") as cluster, \
                distributed.Client(cluster) as client:
            yield Cluster(client, cluster, cache)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def primitive_names(program: Any) -> list[str]:
    """The primitive of each equation of a traced program, in order."""
    return [e.prim for e in program.eqns]


def call_on_copies(fn: Callable[..., Any], *args: Any) -> tuple:
    """('ok', result, arguments after the call) or ('raise', the exception itself, arguments):
    run_on_copies, keeping the exception (its message and exact class are compared)."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", on_host(fn(*args)), args  # (results the chip keeps, as NumPy's)
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return "raise", e, args


@contextlib.contextmanager
def compile_events() -> Iterator[list]:
    """The CompileEvents published inside the block (the subscription ends with it)."""
    from jitkernel import events
    seen: list = []
    unsubscribe = events.subscribe(lambda e: seen.append(e) if isinstance(e, events.CompileEvent) else None)
    try:
        yield seen
    finally:
        unsubscribe()


def central_differences(f: Callable[[np.ndarray], Any], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """The Jacobian of `f` (NumPy, float64) at the 1-d point `x` by central differences: one
    column per input element, the reference forward- and reverse-mode results are checked against."""
    return np.stack([(np.asarray(f(x + h * e)) - np.asarray(f(x - h * e))) / (2 * h) for e in np.eye(x.size)],
                    axis=-1)


def assert_jacobians_match(f: Callable[[np.ndarray], Any], x: np.ndarray, atol: float = 1e-6) -> None:
    """jk.jacfwd and jk.jacrev of `f` at `x` agree exactly, and with central differences within `atol`."""
    import jitkernel as jk
    fwd, rev = jk.jacfwd(f)(x), jk.jacrev(f)(x)
    np.testing.assert_array_equal(fwd, rev)
    np.testing.assert_allclose(fwd, central_differences(f, x), atol=atol)
