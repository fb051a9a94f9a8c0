"""Shared fixtures: every numeric test runs once per backend (the NumPy reference interpreter and
the LLVM CPU backend; both must always be importable, so neither is ever skipped)."""
from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

# Hypothesis draws the same examples on every run (`derandomize`): CI's verdict is the change's,
# never a new random draw that finds an edge case unrelated to it. A search for new cases runs
# with JITKERNEL_HYPOTHESIS=search (random seeds; the failures it finds become `@example`s).
# Loaded before any test module or helper builds its settings, which inherit the profile.
settings.register_profile("fixed", derandomize=True)
settings.register_profile("search", derandomize=False)
settings.load_profile("search" if os.environ.get("JITKERNEL_HYPOTHESIS") == "search" else "fixed")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # so tests can `import helpers`

import emulator_suite  # noqa: E402  (the equivalence suite on cuda-emulator: emulator_suite.py)
import tpu_suite  # noqa: E402  (the equivalence suite on tpu-interpret: tpu_suite.py)
from helpers import HOST_BACKENDS, compile_events, local_cluster as _local_cluster  # noqa: E402

# The NumPy reference interpreter first, then the engine's other host backends.
BACKENDS = ["interpret", *(b for b in HOST_BACKENDS if b != "interpret")]


def backend_params() -> list:
    return [pytest.param(b, id=b) for b in BACKENDS]


def pytest_generate_tests(metafunc) -> None:
    """`backend` takes every name of BACKENDS, plus "cuda-emulator" in modules that set
    CUDA_EMULATOR_SUITE = True (unless the test parametrizes `backend` itself)."""
    if "backend" not in metafunc.fixturenames or any(
            "backend" in _argnames(m.args[0]) for m in metafunc.definition.iter_markers("parametrize")):
        return
    names = BACKENDS + ([emulator_suite.EMULATOR] if emulator_suite.module_opted_in(metafunc.module) else []) \
        + ([tpu_suite.suite_backend()] if tpu_suite.module_opted_in(metafunc.module) else [])
    metafunc.parametrize("backend", names, ids=names, indirect=True)


@pytest.fixture(autouse=True, scope="session")
def _started_before_any_test():
    """The process's one-time start-up of tracing (jitkernel/startup.py), done before the first
    test: a profile never depends on which test happened to trace first (the start-up's own
    test in test_profiler.py undoes it)."""
    from jitkernel import startup
    startup.ensure_started()


def _argnames(spec) -> list[str]:
    return [n.strip() for n in spec.split(",")] if isinstance(spec, str) else list(spec)


def pytest_collection_modifyitems(session, config, items) -> None:
    emulator_suite.emulator_items_last(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem) -> None:
    if emulator_suite.is_emulator_item(item):
        emulator_suite.prebuild_module(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with emulator_suite.same_examples(item):  # the examples its dry run drew (prebuilt programs)
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    emulator_suite.refusal_as_skip(item, call, outcome.get_result())


@pytest.fixture(autouse=True)
def _suite_results_on_the_host(request, monkeypatch):
    """On the chip (JITKERNEL_TPU_SUITE_BACKEND=tpu, scripts/tpu_check.py --suites) an
    equivalence-suite test compares NumPy results, so the tpu backend returns them on the host,
    as tpu-interpret does; the programs still compile for and run on the chip (tests/tpu tests
    the device arrays themselves)."""
    callspec = getattr(request.node, "callspec", None)
    if (callspec is not None and callspec.params.get("backend") == "tpu" and tpu_suite.suite_backend() == "tpu"
            and "/tests/tpu/" not in str(request.node.fspath)):
        from jitkernel.backends.tpu.backend import TpuBackend
        monkeypatch.setattr(TpuBackend, "device_arrays", False)
    yield


@pytest.fixture
def backend(request) -> str:
    """The backend name ("interpret", "cpu", or "cuda-emulator" in opted-in modules) to pass as
    jk.jit(..., backend=backend)."""
    return request.param


@pytest.fixture
def no_static_int_fallback():
    """Integer arguments stay run-time values even where the trace needs them (the errors that
    jk.config "static_int_fallback" otherwise avoids by tracing again with them static)."""
    import jitkernel as jk
    jk.config.update("static_int_fallback", False)
    yield
    jk.config.update("static_int_fallback", True)


@pytest.fixture(scope="module", autouse=True)
def _no_subscriber_outlives_its_module(request):
    """Event subscribers a test module leaves behind (a loaded IPython extension, a started
    profiler) are removed when the module ends, with a warning naming it: a leftover profiler
    makes every later jitted call in the suite record and compact events (one did, and the
    suite ran several times slower after it)."""
    import warnings
    from jitkernel import events
    before = list(events.SUBSCRIBERS)
    yield
    if events.SUBSCRIBERS != before:
        left = [s for s in events.SUBSCRIBERS if s not in before]
        events.SUBSCRIBERS[:] = before
        warnings.warn(f"{request.module.__name__} left {len(left)} event subscriber(s) behind: {left}")


@pytest.fixture
def temp_cache_dir(tmp_path, monkeypatch):
    """A compile cache of the test's own (JITKERNEL_CACHE_DIR under tmp_path), for tests that
    look into the cache or must not find the suite's entries."""
    path = tmp_path / "cache"
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(path))
    return path


@pytest.fixture
def compiles():
    """The CompileEvents published while the test runs (subscribed for the test only)."""
    with compile_events() as seen:
        yield seen


@pytest.fixture
def jit_shell():
    """An IPython shell with the jitkernel extension loaded, on the suite's own compile cache
    (tests/ipython_shell.py's extension_shell gives each test a cache of its own instead); the
    default backend and the event subscribers are restored afterwards."""
    from ipython_shell import loaded_shell  # here: pytester runs copy this conftest without it
    with loaded_shell() as shell:
        yield shell


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory):
    """A real two-process Dask LocalCluster for the module's tests (helpers.local_cluster)."""
    with _local_cluster(str(tmp_path_factory.mktemp("worker-cache"))) as running:
        yield running


@pytest.fixture
def gpu():
    """An emulated GPU device (jitkernel.device_array.emulate_gpu) for the test."""
    from jitkernel.device_array import emulate_gpu
    with emulate_gpu() as device:
        yield device


@pytest.fixture
def threaded_scheduler():
    """Dask's threaded scheduler while the test runs (modules opt in with usefixtures)."""
    import dask
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def interpret():
    """The interpret backend as the default backend while the test runs."""
    import jitkernel as jk
    saved = jk.config.default_backend
    jk.config.update("default_backend", "interpret")
    yield
    jk.config.update("default_backend", saved)
