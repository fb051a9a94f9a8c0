"""The notebook UI: `jitkernel lab` serves the quickstart notebook and a real Chromium, driven by
Playwright, runs it in JupyterLab with the "Python 3 (jitkernel)" kernel.

The server is headless on a free loopback port, with temporary Jupyter and IPython
directories, a temporary HOME and a temporary copy of the notebook, and is stopped by its own
pid whatever happens. Chromium is the system's (Debian's `chromium` package; CI's `.ci/run`
installs it): Playwright's own browser download is not used. Without Chromium the test skips and
says so. Every wait polls for a state of the page or the server; the limits only bound a hang.

The screenshot of the run is saved in the test's tmp_path (its path is printed) and, when
JITKERNEL_SCREENSHOT_DIR is set, copied into that folder.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "quickstart.ipynb"
DISPLAY_NAME = "Python 3 (jitkernel)"
SERVER_START_S = 300  # bounds a hang only: a loaded machine starts JupyterLab in 5-60 s
RUN_ALL_S = 900  # the quickstart takes 10 s alone, a minute or two on a loaded machine
# The line the extension prints when `layer` is called with 256 rows instead of 512 (magics/diagnostics.py).
RECOMPILED = re.compile(r"jit: layer recompiled \(x: shape \(512, 256\) -> \(256, 256\)[^\n]*\); "
                        r"trace [\d.]+ ms, compile [\d.]+ ms")


def _chromium() -> str | None:
    """The system Chromium: $JITKERNEL_CHROMIUM, else `chromium` / `chromium-browser` on PATH."""
    given = os.environ.get("JITKERNEL_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _no_chromium_reason() -> str:
    given = os.environ.get("JITKERNEL_CHROMIUM")
    if given:
        return f"JITKERNEL_CHROMIUM={given} is not an executable"
    return ("Chromium is not installed: no `chromium` or `chromium-browser` on PATH (Debian: apt-get install "
            "chromium, as .ci/run does as root; or set JITKERNEL_CHROMIUM to its executable)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until(condition, timeout: float, what: str, interval: float = 0.25):
    """Poll `condition` until it returns something true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def _jupyter_dirs(tmp_path: Path) -> dict[str, str]:
    """Temporary Jupyter, IPython and home directories, and the JupyterLab settings the test needs:
    every cell rendered (no windowing, which leaves off-screen cells out of the page)."""
    dirs = {name: tmp_path / sub for name, sub in [("JUPYTER_DATA_DIR", "jupyter-data"),
                                                   ("JUPYTER_CONFIG_DIR", "jupyter-config"),
                                                   ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"),
                                                   ("IPYTHONDIR", "ipython"), ("HOME", "home")]}
    for path in dirs.values():
        path.mkdir()
    settings = dirs["JUPYTER_CONFIG_DIR"] / "lab" / "user-settings" / "@jupyterlab"
    (settings / "notebook-extension").mkdir(parents=True)
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))
    (settings / "apputils-extension").mkdir(parents=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))  # no "news?" toast over the page
    return {name: str(path) for name, path in dirs.items()}


def _ready(url: str, server: subprocess.Popen, log: Path) -> bool:
    """Whether the server answers `url`; fails at once if it exited."""
    assert server.poll() is None, f"JupyterLab exited ({server.returncode}):\n{log.read_text()}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _stop(server: subprocess.Popen) -> None:
    """Stop the server by its pid: SIGTERM (it shuts its kernels down), SIGKILL if it hangs."""
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """`jitkernel lab` on a temporary copy of the quickstart notebook: (base URL, token)."""
    pytest.importorskip("jupyterlab", reason="JupyterLab (the notebook extra, part of the test extra) is missing")
    env = _jupyter_dirs(tmp_path)
    for name, value in env.items():  # Playwright's driver and Chromium inherit these too
        monkeypatch.setenv(name, value)
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    shutil.copy(NOTEBOOK, notebooks / NOTEBOOK.name)
    port, token = _free_port(), secrets.token_hex(16)
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "jitkernel", "lab", "--dir", str(notebooks), "--no-browser",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={token}", "--LabApp.news_url=None"],
            stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path, env=dict(os.environ))
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until(lambda: _ready(f"{base}/api/status?token={token}", server, log), SERVER_START_S,
                    f"JupyterLab on port {port} (log: {log})", interval=0.5)
        yield base, token, log
    finally:
        _stop(server)


@pytest.mark.skipif(_chromium() is None, reason=_no_chromium_reason())
def test_quickstart_runs_in_jupyterlab_in_chromium(lab, tmp_path, capsys):
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (part of the test extra) is missing")
    base, token, log = lab
    screenshot = tmp_path / "quickstart-in-jupyterlab.png"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)
            try:
                page.goto(f"{base}/lab/tree/{NOTEBOOK.name}?token={token}")
                outputs = _run_all_cells(page)
                _scroll_to_first_plot(page)
            finally:
                page.screenshot(path=str(screenshot))  # of a failed run too
                print(f"screenshot of the run: {screenshot}; JupyterLab's log: {log}")
        finally:
            browser.close()
    copies = os.environ.get("JITKERNEL_SCREENSHOT_DIR")
    if copies:
        shutil.copy(screenshot, Path(copies) / screenshot.name)
    with capsys.disabled():  # shown by a passing run too (a failing one shows the captured print above)
        print(f"\nscreenshot of the run: {screenshot}" + (f" (copied to {copies})" if copies else ""))
    text = outputs["text"]
    assert not _errors(outputs), _errors(outputs)
    assert "results match NumPy: float32 (512,)" in text, text  # after the first %%jit cell
    assert "kernels layer:" in text, text
    assert "z: float32 (512, 256)" in text, text  # the %%jit cell without functions
    assert RECOMPILED.search(text), text
    assert "rows: 256" in text, text
    assert "extension is already loaded" not in text, text  # the kernelspec loaded it
    assert outputs["images"] == 2 and outputs["images_loaded"] == 2, outputs  # the two %jit_profile plots
    assert screenshot.stat().st_size > 10_000


def _run_all_cells(page) -> dict:
    """Wait for the kernel, run every cell from the Run menu, wait until each code cell has an
    execution count and the kernel is idle; the outputs as seen on the page."""
    notebook = json.loads(NOTEBOOK.read_text())
    code_cells = sum(c["cell_type"] == "code" for c in notebook["cells"])
    page.locator(".jp-Notebook .jp-CodeCell").nth(code_cells - 1).wait_for()
    kernel = page.locator(".jp-NotebookPanel-toolbar .jp-KernelName, .jp-NotebookPanel-toolbar "
                          "[data-jp-item-name='kernelName']").first
    _wait_until(lambda: DISPLAY_NAME in kernel.inner_text(), 180, f"the {DISPLAY_NAME} kernel in the toolbar")
    _wait_until(lambda: _kernel_status(page) == "idle", 300, "the kernel to start (idle)")
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt")

    def finished() -> bool:
        """Every code cell has its execution count and the kernel is idle, or the run stopped at an
        error (JupyterLab then leaves the cells after it unrun)."""
        if _kernel_status(page) != "idle":
            return False
        counted = [bool(re.fullmatch(r"\[\d+\]:", p.strip())) for p in prompts.all_inner_texts()]
        assert not _errors(_outputs(page)) or all(counted), f"a cell failed: {_errors(_outputs(page))}"
        return all(counted)

    _wait_until(finished, RUN_ALL_S, "every code cell to have an execution count", interval=1.0)
    assert prompts.count() == code_cells
    return _outputs(page)


def _outputs(page) -> dict:
    """The text of every output area, the stderr ones apart, and the output images: how many, how many
    loaded and decoded."""
    return page.evaluate("""() => {
        const outs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
        const imgs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output img')];
        return {
            text: outs.map(o => o.innerText).join('\\n'),
            stderr: outs.filter(o => o.dataset.mimeType === 'application/vnd.jupyter.stderr').map(o => o.innerText),
            images: imgs.length,
            images_loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
        };
    }""")


def _errors(outputs: dict) -> list[str]:
    """The stderr outputs (an exception's output is shown as one) that report an error."""
    return [text for text in outputs["stderr"] if "Traceback" in text or "Error" in text]


def _kernel_status(page) -> str | None:
    """The kernel state the notebook toolbar shows ("idle", "busy", ...)."""
    return page.locator(".jp-NotebookPanel-toolbar .jp-Notebook-ExecutionIndicator").first.get_attribute(
        "data-status")


def _scroll_to_first_plot(page) -> None:
    image = page.locator(".jp-Notebook .jp-OutputArea-output img").first
    image.scroll_into_view_if_needed()
