"""The NumPy-equivalence suite on backend="cuda-emulator", one host-compiler run per module.

A test module opts in with `CUDA_EMULATOR_SUITE = True`; its tests that take the `backend`
fixture then also run with backend="cuda-emulator" (tests/conftest.py). Those items are moved
to the end of their module. Before the first of them runs, each of them runs once, unlogged,
inside one `emulator.batch_build()` (the emulator's batch build, docs/gpu.md): every emulator
compile of a program not built yet records its CudaModule and returns a stand-in whose results
are the NumPy reference interpreter's, so the test runs on through all of its programs (a test
with 80 jit calls records 80 programs in one pass). Leaving the block compiles every recorded
program in parallel chunks of one g++ run each, and the tests run for real and find their
kernels built (a stand-in never answers outside the dry run: a jitted
function kept past it builds the real program when called). Hypothesis tests on the emulator
draw the same examples in both runs (`same_examples`). Programs the dry run cannot reach (a
test that fails or stops early there) compile one by one in the real run, as before.

An emulator item that fails with an UnsupportedOperationError tagged `renderer_refusal` (the
CUDA scheduler or renderer does not cover a step: linalg, sort, fft, ...) is reported as a skip
naming the refusal; every other difference from NumPy stays a failure.
"""
from __future__ import annotations

import contextlib
import shutil
import zlib
from typing import Iterator

# pytest's own runner for the unlogged dry run: no public API runs an item without reporting it
# (the public pytest_runtest_protocol hook always logs), and running the phases by hand would
# have to reset the item's private fixture request as runtestprotocol does.
from _pytest.runner import runtestprotocol

EMULATOR = "cuda-emulator"
SWITCH = "CUDA_EMULATOR_SUITE"

_prepared: set = set()  # paths of modules whose emulator items are prebuilt


def have_host_compiler() -> bool:
    return shutil.which("g++") is not None or shutil.which("c++") is not None


# The backends a hypothesis test draws from in a module that runs on the emulator: a refusal
# there fails the whole hypothesis test (a skip cannot apply to one example), so random programs
# run on the emulator only in modules built for it (test_cuda_index_forms.py,
# test_emulator_dynamic_and_dot.py).
DRAWN_BACKENDS = ["cpu", "interpret"]


def emulator_backends() -> list[str]:
    """["cuda-emulator"] where a host compiler exists, else []: for a module that lists its own
    backends (its emulator items are prebuilt like an opted-in module's)."""
    return [EMULATOR] if have_host_compiler() else []


def module_opted_in(module) -> bool:
    return bool(getattr(module, SWITCH, False)) and have_host_compiler()


def is_emulator_item(item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("backend") == EMULATOR


def emulator_items_last(items: list) -> None:
    """In each opted-in module, the cuda-emulator items after all others (order kept otherwise:
    items are grouped by file at the file's first position)."""
    first: dict = {}
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
    ordered = sorted(range(len(items)), key=lambda i: (first[items[i].path], is_emulator_item(items[i]), i))
    items[:] = [items[i] for i in ordered]


def prebuild_module(item) -> None:
    """Before `item`, the first cuda-emulator item of its module: run every emulator item of
    the module once inside one `emulator.batch_build()` (each program is rendered and recorded,
    and answered by the NumPy reference interpreter, so a test runs on to all of its programs),
    which then builds all recorded programs at once (parallel chunks)."""
    if item.path in _prepared:
        return
    _prepared.add(item.path)
    from jitkernel.backends.cuda import emulator
    same_file = [it for it in item.session.items if it.path == item.path]
    try:
        with emulator.batch_build():
            for peer in (it for it in same_file if is_emulator_item(it)):
                # teardown keeps what the next item shares (session, module) and ends the peer's
                # own function-scope fixtures: the next item named must be another of the module
                after = item if peer is not item else next(it for it in same_file if it is not peer)
                with same_examples(peer):
                    runtestprotocol(peer, log=False, nextitem=after)  # reports are dropped: a dry run
    except Exception:  # noqa: BLE001 - e.g. g++ rejects one program: each test then builds
        return         # its own programs and the faulty one fails with the compiler's message


@contextlib.contextmanager
def same_examples(item) -> Iterator[None]:
    """A hypothesis test on the emulator draws the same examples in the dry run and in the real
    run (a seed from its node id), so the shapes it draws are the programs prebuilt; its other
    backends keep drawing new examples each run."""
    test = getattr(item, "obj", None)
    if not is_emulator_item(item) or not hasattr(test, "hypothesis"):
        yield
        return
    saved = getattr(test, "_hypothesis_internal_use_seed", None)
    test._hypothesis_internal_use_seed = zlib.crc32(item.nodeid.encode())
    try:
        yield
    finally:
        test._hypothesis_internal_use_seed = saved


def refusal_as_skip(item, call, report) -> None:
    """An emulator item stopped by the CUDA renderer's refusal becomes a skip naming it."""
    if call.excinfo is None or not is_emulator_item(item) or report.when != "call":
        return
    err = call.excinfo.value
    from jitkernel.errors import UnsupportedOperationError

    def refusal(e: BaseException) -> bool:
        return isinstance(e, UnsupportedOperationError) and getattr(e, "renderer_refusal", False)
    # hypothesis reports several distinct failing examples as one group: a skip when every one
    # of them is a refusal
    if isinstance(err, BaseExceptionGroup) and err.exceptions and all(refusal(e) for e in err.exceptions):
        err = err.exceptions[0]
    if refusal(err):
        first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           f"Skipped: the CUDA renderer refuses this program: {first_line}")
