"""Compile progress (docs/magics.md, "Compile progress"): the engine publishes a
CompileProgressEvent around each external compiler run (the emulator's g++, nvcc), and the
IPython extension shows an updating line in a notebook when one lasts longer than
`jk.config.compile_progress_after`, replaced by "compiled ... in X s"; nothing in a shell
without a rich display. Real compiles: g++ of the emulator, nvcc of a cubin, in a real
IPython InteractiveShell."""
from __future__ import annotations

import shutil
import uuid

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import events
from jitkernel.backends.cuda import emulator, nvcc

pytest.importorskip("IPython")
from ipython_shell import extension_shell, ok  # noqa: E402
from jitkernel.magics.extension import extension_for  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="the emulator's compile needs a host C++20 compiler (g++)")


def fresh_constant() -> float:
    """A constant no other program has: its source is new, so the compiler really runs."""
    return 1.0 + (uuid.uuid4().int % 10 ** 6) * 1e-9


@pytest.fixture
def threshold():
    saved = jk.config.compile_progress_after

    def set_to(seconds):
        jk.config.update("compile_progress_after", seconds)
    yield set_to
    jk.config.update("compile_progress_after", saved)


def texts(outputs) -> list[str]:
    return [str(o.data.get("text/plain", "")) for o in outputs]


def test_engine_publishes_start_and_end_around_the_host_compile() -> None:
    seen = []
    stop = events.subscribe(seen.append)
    try:
        c = fresh_constant()
        jk.jit(lambda x: x * c, backend="cuda-emulator")(np.ones(4))
    finally:
        stop()
    progress = [e for e in seen if isinstance(e, events.CompileProgressEvent)]
    assert [e.phase for e in progress] == ["start", "end"]
    start, end = progress
    assert start.backend == "cuda-emulator" and start.tool and end.ok and end.start == start.start
    compile_event = next(e for e in seen if isinstance(e, events.CompileEvent) and e.backend == "cuda-emulator")
    # the progress interval lies inside the compile's (same clock), whatever the machine's load
    # (a difference < 0.5 s was asked before: a descheduled thread could exceed it)
    assert end.duration > 0 and compile_event.start <= end.start
    assert end.start + end.duration <= compile_event.start + compile_event.duration


def test_a_failed_compile_ends_not_ok() -> None:
    seen = []
    stop = events.subscribe(seen.append)
    try:
        with pytest.raises(jk.CompileError):
            emulator._build("this is not C++ " + uuid.uuid4().hex, "broken", disk_cache=False)
    finally:
        stop()
    assert [(e.phase, e.ok) for e in seen if isinstance(e, events.CompileProgressEvent)] == \
        [("start", True), ("end", False)]


@pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not on PATH (set NVCC=/path/to/nvcc)")
def test_nvcc_cubin_compile_publishes_progress() -> None:
    from jitkernel.backends.cuda.pycuda_device import cubin_for
    source = f'extern "C" __global__ void k(float* x) {{ x[0] = {fresh_constant()!r}f; }}\n'
    seen = []
    stop = events.subscribe(seen.append)
    try:
        assert cubin_for(source, "sm_90", "tiny", disk_cache=False).startswith(b"\x7fELF")
    finally:
        stop()
    assert [(e.phase, e.tool, e.backend) for e in seen if isinstance(e, events.CompileProgressEvent)] == \
        [("start", "nvcc", "cuda"), ("end", "nvcc", "cuda")]


def test_a_notebook_shows_an_updating_line_then_compiled_in(tmp_path, monkeypatch, threshold) -> None:
    """A compile longer than the threshold: a display with the elapsed time, updated in place,
    ending as "compiled <program> with <tool> in X s"."""
    threshold(0.2)  # the emulator's g++ run takes well over 0.2 s
    with extension_shell(tmp_path, monkeypatch, "import numpy as np\nimport jitkernel as jk") as shell:
        extension_for(shell).progress.notebook = True  # an InteractiveShell has no rich display
        _, out, outputs = ok(shell, f"def scaled(x):\n    return x * {fresh_constant()!r}\n"
                                    "f = jk.jit(scaled, backend='cuda-emulator')\nf(np.ones(3))")
    lines = texts(outputs)
    assert any(t.startswith("compiling scaled with ") and t.endswith(" s") for t in lines), lines
    final = [t for t in lines if t.startswith("compiled scaled with ")]
    assert len(final) == 1 and final[0].endswith(" s") and " in " in final[0], lines
    assert lines.index(final[0]) == len([t for t in lines if "compil" in t]) - 1  # the last word
    ids = {o.transient.get("display_id") for o in outputs if "compil" in str(o.data.get("text/plain", ""))}
    assert len(ids) == 1 and None not in ids  # one display, updated in place
    assert [o.update for o in outputs if "compil" in str(o.data.get("text/plain", ""))][0] is False
    assert all(o.update for o in outputs if str(o.data.get("text/plain", "")).startswith("compiled"))


def test_short_compiles_and_plain_shells_show_nothing(tmp_path, monkeypatch, threshold) -> None:
    with extension_shell(tmp_path, monkeypatch, "import numpy as np\nimport jitkernel as jk") as shell:
        threshold(60.0)  # a notebook, but the compile is shorter than the threshold
        extension_for(shell).progress.notebook = True
        _, out, outputs = ok(shell, f"jk.jit(lambda x: x * {fresh_constant()!r}, backend='cuda-emulator')(np.ones(3))")
        assert not any("compil" in t for t in texts(outputs)) and "compil" not in out
        threshold(0.0)  # any compile is long enough, but a terminal shell has no rich display
        extension_for(shell).progress.notebook = None
        assert not extension_for(shell).progress.shows_progress()
        _, out, outputs = ok(shell, f"jk.jit(lambda x: x * {fresh_constant()!r}, backend='cuda-emulator')(np.ones(3))")
        assert not any("compil" in t for t in texts(outputs)) and "compil" not in out


def test_a_failed_compile_says_failed(tmp_path, monkeypatch, threshold) -> None:
    threshold(0.0)
    with extension_shell(tmp_path, monkeypatch, "import jitkernel as jk") as shell:
        extension_for(shell).progress.notebook = True
        cell = (f"from jitkernel.backends.cuda import emulator\ntry:\n    emulator._build('not C++ {uuid.uuid4().hex}', "
                "'broken', disk_cache=False)\nexcept jk.CompileError:\n    print('refused')")
        _, out, outputs = ok(shell, cell)
    assert "refused" in out
    lines = [t for t in texts(outputs) if "compil" in t]
    assert lines and lines[-1].startswith("compiling broken with ") and " failed after " in lines[-1], lines


def test_unloading_the_extension_unsubscribes(tmp_path, monkeypatch) -> None:
    with extension_shell(tmp_path, monkeypatch) as shell:
        progress = extension_for(shell).progress
        assert progress in events.SUBSCRIBERS
    assert progress not in events.SUBSCRIBERS


def test_a_jupyter_kernel_routes_the_progress_line_to_the_running_cell(tmp_path) -> None:
    """A real ipykernel (a notebook's kernel): the display and its updates, sent from the helper
    thread, are messages of the cell that compiles (its parent header), ending "compiled"."""
    jupyter_client = pytest.importorskip("jupyter_client")
    pytest.importorskip("ipykernel")
    import os
    import sys
    from pathlib import Path
    root = str(Path(jk.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JITKERNEL_CACHE_DIR=str(tmp_path / "cache"))
    km = jupyter_client.KernelManager()
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel(env=env, cwd=str(tmp_path))
    kc = km.client()
    try:
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        msg_id = kc.execute("%load_ext jitkernel\nimport numpy as np, jitkernel as jk\n"
                            "jk.config.update('compile_progress_after', 0.2)\n"
                            f"jk.jit(lambda x: x * {fresh_constant()!r}, backend='cuda-emulator')(np.ones(3))")
        shown = []
        while True:
            m = kc.get_iopub_msg(timeout=120)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] in ("display_data", "update_display_data"):
                shown.append((m["msg_type"], m["content"]["data"]["text/plain"]))
            if m["msg_type"] == "error":
                pytest.fail(str(m["content"]))
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert shown and shown[0][0] == "display_data" and shown[0][1].startswith("compiling <lambda> with "), shown
    assert shown[-1][0] == "update_display_data" and shown[-1][1].startswith("compiled <lambda> with "), shown


def test_the_profiler_keeps_the_compile_not_its_progress_signals():
    from jitkernel import profiler
    from jitkernel import events
    profiler.start()
    profiler.reset()
    try:
        events.publish(events.CompileProgressEvent("f", events.clock(), 0.0, phase="start", tool="g++"))
        events.publish(events.CompileEvent("f", events.clock(), 0.5, "cuda-emulator"))
        phases = {r["phase"] for r in profiler.report().records()}
        assert "compile" in phases and not any("progress" in p for p in phases), phases
    finally:
        profiler.stop()
