"""The notebooks, executed by nbclient in a real kernel started from the installed
"Python 3 (jitkernel)" kernelspec, and `jitkernel demo` end to end."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from jitkernel.cli import main

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
KERNEL = "jitkernel-test"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def kernels_dir(tmp_path_factory):
    """The kernelspec installed by the CLI into a temporary prefix; a private disk cache."""
    prefix = tmp_path_factory.mktemp("prefix")
    assert main(["install-kernel", "--prefix", str(prefix), "--name", KERNEL]) == 0
    saved = os.environ.get("JITKERNEL_CACHE_DIR")
    os.environ["JITKERNEL_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))  # inherited by the kernel
    yield prefix / "share" / "jupyter" / "kernels"
    if saved is None:
        os.environ.pop("JITKERNEL_CACHE_DIR", None)
    else:
        os.environ["JITKERNEL_CACHE_DIR"] = saved


def _execute(name: str, kernels_dir: Path, cwd: Path):
    from jitkernel.magics.nbrun import execute_notebook
    return execute_notebook(NOTEBOOKS / f"{name}.ipynb", KERNEL, kernels_dir, cwd=cwd, timeout=120,
                            kernel_log=cwd / "kernel.log")


def _text(nb) -> str:
    """All stream and text/plain output of the notebook. Consecutive stream outputs of a cell are
    one text: the kernel flushes stdout on a timer, so under load one print() can arrive as two
    stream messages ("matches NumPy:" and " True ..."), and a newline between them would split it."""
    parts = []
    for cell in nb.cells:
        streamed = ""
        for o in cell.get("outputs", []):
            if o["output_type"] == "stream":
                streamed += o["text"]
                continue
            if streamed:
                parts.append(streamed)
                streamed = ""
            if "data" in o and "text/plain" in o["data"]:
                parts.append(o["data"]["text/plain"])
        if streamed:
            parts.append(streamed)
    return _ANSI.sub("", "\n".join(parts))


def _count(nb, mime: str) -> int:
    return sum(mime in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))


def _reason(fn: str, arg: str, old: str, new: str) -> str:
    """The diagnostics line for a shape change naming the argument and both shapes (further
    reasons, such as a dimension becoming dynamic, may follow)."""
    return (rf"^jit: {fn} recompiled \({arg}: shape {re.escape(old)} -> {re.escape(new)}(?:; [^\n]*)?\); "
            rf"trace [\d.]+ ms, compile [\d.]+ ms$")


def test_committed_notebooks_have_no_outputs():
    for path in NOTEBOOKS.glob("*.ipynb"):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


def test_quickstart(kernels_dir, tmp_path):
    nb = _execute("quickstart", kernels_dir, tmp_path)
    text = _text(nb)
    assert "results match NumPy: float32 (512,)" in text
    assert "program layer(a: f32[512,256], b: f32[256,128], c: f32[128])" in text
    assert "kernels layer:" in text and "library k0_dot_general" in text
    assert re.search(_reason("layer", "x", "(512, 256)", "(256, 256)"), text, re.M), text  # a new shape
    assert "rows: 256" in text
    assert "extension is already loaded" not in text  # the kernelspec loaded it; no %load_ext needed
    # warm calls against NumPy: medians after a warm-up; the fused elementwise + reduction wins
    timings = dict(re.findall(r"^(layer|row_loss)\s+jitkernel\s+[\d.]+ ms\s+NumPy\s+[\d.]+ ms\s+"
                              r"NumPy / jitkernel\s+([\d.]+)$", text, re.M))
    assert set(timings) == {"layer", "row_loss"}, text
    assert float(timings["row_loss"]) > 1.0, text  # about 10x here: fusion saves four full passes
    table = [o for c in nb.cells if "jitkernel-profile" in c.metadata.get("tags", []) for o in c.outputs
             if "text/html" in o.get("data", {})]
    assert len(table) == 1 and ">layer</td>" in table[0]["data"]["text/html"]
    # iterating on shapes: the first new size recompiles (said under the cell), later ones reuse it
    assert re.search(_reason("row_loss", "x", "(2048, 1024)", "(256, 1024)"), text, re.M), text
    assert "row_loss on 1024 rows; recompilations: 1" in text, text
    row = next(line.split() for line in table[0]["data"]["text/plain"].splitlines() if line.startswith("row_loss"))
    assert row[4:6] == ["3", "1"], table[0]["data"]["text/plain"]  # shape-generic, recompiles
    assert _count(nb, "image/png") == 2
    assert 'extern "C" __global__ void jk_' in text  # the CUDA C of softmax, shown on every machine
    from jitkernel.backends.cuda import missing_for_cuda
    assert ("No GPU here, so the %%jit -b cuda cell is not run." in text) == bool(missing_for_cuda()), text


def test_messages_and_warnings_name_the_cell_not_the_kernels_file(kernels_dir, tmp_path):
    """In a real kernel, cell code lives in ipykernel's temporary files
    (`<tempdir>/ipykernel_<pid>/<hash>.py`); warnings (jitkernel's own CacheLimitWarning, NumPy's
    complex-to-real cast warning while tracing, a plain one) and error messages that name a user's
    line say `Cell In[N], line L` instead, as IPython's tracebacks do."""
    import nbformat
    cells = [
        "import warnings\nimport numpy as np\nimport jitkernel as jk",
        "jk.config.update('max_cache_entries', 2)\nf = jk.jit(lambda x: x + 1)\nfor n in range(4):\n    f(np.ones(n + 1))",
        "def g(x):\n    return x + np.random.rand(3)\ntry:\n    jk.jit(g)(np.ones(3))\nexcept jk.TracedRandomError as e:\n"
        "    print(e)",
        "def real(z):\n    return z.astype(np.float64)\njk.jit(real)(np.ones(2, complex))",
        "warnings.warn('a plain warning')",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    path = tmp_path / "cells.ipynb"
    nbformat.write(nb, path)
    from jitkernel.magics.nbrun import execute_notebook
    text = _text(execute_notebook(path, KERNEL, kernels_dir, cwd=tmp_path, timeout=120))
    assert "ipykernel_" not in text and ".py:" not in text, text
    assert re.search(r"^Cell In\[2\], line 4: CacheLimitWarning: jitted function '<lambda>' reached 2", text, re.M), text
    assert "(at Cell In[3], line 2: return x + np.random.rand(3))" in text, text
    assert re.search(r"^Cell In\[4\], line 2: ComplexWarning: Casting complex values to real", text, re.M), text
    assert re.search(r"^Cell In\[5\], line 1: UserWarning: a plain warning$", text, re.M), text


def test_profiling(kernels_dir, tmp_path):
    nb = _execute("profiling", kernels_dir, tmp_path)
    text = _text(nb)
    assert "True" in text  # softmax matches NumPy
    assert "kernels softmax:" in text
    assert re.search(_reason("normalize", "x", "(2048, 256)", "(1024, 256)"), text, re.M), text
    assert _count(nb, "image/png") == 3  # fusion, breakdown, timeline: one image each
    trace = json.loads((tmp_path / "profile_trace.json").read_text())
    phases = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {"trace", "fuse", "compile", "run"} <= {e["name"] for e in phases}
    assert f"{len(phases)} phases;" in text


def test_recompilation(kernels_dir, tmp_path):
    nb = _execute("recompilation", kernels_dir, tmp_path)
    text = _text(nb)
    assert re.search(_reason("step", "x", "(1000, 64)", "(2000, 64)"), text, re.M), text
    assert re.search(r"^jit: step recompiled \(x: dtype float32 -> float64", text, re.M), text
    assert re.search(r"^step: [2-4] recompilations, \d signature\(s\) cached$", text, re.M), text
    assert "before: x: float32[1000, 64]" in text
    assert re.search(_reason("cell_y_s", "x", "(1000,)", "(5000,)"), text, re.M), text
    assert "jit: power recompiled (n: static value 2 -> 3)" in text
    # the edited `step` is profiled apart from the first one, not merged into it
    profile = next(o["data"]["text/plain"] for o in nb.cells[-1].outputs if "text/html" in o.get("data", {}))
    rows = {line.split("  ")[0]: line.split() for line in profile.splitlines() if line.startswith("step")}
    assert set(rows) == {"step", "step (2)"}, profile
    assert rows["step (2)"][2:5] == ["1", "0", "1"], profile  # calls, cache hits, compiles
    assert _count(nb, "image/png") == 1


def test_debugging(kernels_dir, tmp_path):
    """notebooks/debugging.ipynb: jk.debug.print at run time (calls, loops, grad, vmap), the
    kernels a print leaves fused, and %jit_debug nans naming the notebook's line."""
    nb = _execute("debugging", kernels_dir, tmp_path)
    text = _text(nb)
    assert text.count("plain print sees: Tracer") == 1, text  # trace time: once
    assert "jk.debug.print sees: y = [0. 0. 0.], total = 0.00" in text, text
    assert "jk.debug.print sees: y = [0.84147098 0.84147098 0.84147098], total = 3.00" in text, text
    assert re.findall(r"^iteration (\d): x = ", text, re.M) == ["0", "1", "2"], text
    assert "loss sees w = [1. 2.]" in text and "grad: [2. 4.]" in text, text
    assert "loss sees w = [[0. 1.]\n [2. 3.]\n [4. 5.]]" in text, text  # vmap: once, batched
    assert "the callback received: [np.float64(8.0)]" in text, text
    fused = [line for line in text.splitlines() if "fuses:" in line]
    assert len(fused) == 1 and "sin" in fused[0] and "reduce_sum" in fused[0], text
    assert "jit debug nans: on" in text and "jit debug nans: off" in text, text
    assert re.search(r"FloatingPointError: debug_nans: NaN produced by 'log' in model \(kernel k\w+\), "
                     r"at (Cell In\[\d+\], line 4|\S+:4): z = np.log\(y - 3\)", text), text
    assert re.search(r"NaN passed in is not an error: \[ +nan 2\.9459", text) and "off again: [nan nan nan]" in text, text
    assert "Traceback" not in text, text
    assert _count(nb, "image/png") == 1  # the timeline with the debug_nans marker


def test_demo_writes_notebook_and_html_and_prints_the_profile(tmp_path, capsys, temp_cache_dir):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^function\s+calls\s+cache hits\s+compiles", printed, re.M), printed
    assert re.search(r"^layer\s+\d+\s+\d+", printed, re.M), printed
    executed = json.loads((out / "quickstart.ipynb").read_text())
    assert any(c.get("outputs") for c in executed["cells"] if c["cell_type"] == "code")
    html = (out / "quickstart.html").read_text()
    assert html.count("<img src='data:image/png;base64,") == 2
    assert "<table>" in html and "results match NumPy" in html and "<h1>jitkernel quickstart</h1>" in html


def test_numpy_as_written(kernels_dir, tmp_path):
    """NumPy code as written: a stencil time loop, a triangular solve and a masked update of an argument, as
    NumPy users write them, each checked against NumPy running the same function and timed."""
    nb = _execute("numpy-as-written", kernels_dir, tmp_path)
    text = _text(nb)
    assert "stencil matches NumPy: True" in text, text
    assert "triangular solve matches NumPy: True and solves L x = b: True" in text, text
    assert "masked update matches NumPy: True and the argument was updated: True" in text, text
    for what in ("stencil", "triangular solve", "masked update"):
        assert re.search(rf"^{what}: numpy [\d.]+ ms, jit [\d.]+ ms, speedup [\d.]+x$", text, re.M), text
    assert "writes: A, B" in text, text
    assert "Error" not in text and "Traceback" not in text, text


def test_distributed(kernels_dir, tmp_path):
    """notebooks/distributed.ipynb: a 2-worker LocalCluster started and closed in the notebook."""
    nb = _execute("distributed", kernels_dir, tmp_path)
    text = _text(nb)
    assert "workers: 2" in text
    assert "ShardedArray" in text and "matches NumPy: True" in text
    assert "worker 0" in text and "worker 1" in text  # visualize_sharding's boxes
    assert "dask result matches NumPy: (2000, 250) float64 True" in text
    tracks = re.findall(r"^  normalize @ (worker \S+ tcp://127\.0\.0\.1:\d+): (\d+) block\(s\)", text, re.M)
    assert len({w for w, _ in tracks}) == 2 and sum(int(n) for _, n in tracks) >= 8, text  # a track per worker
    assert re.search(r"normalize: worker \S+ tcp://\S+ -> client: [\d.]+ [kM]?B", text), text
    assert "NumPy" in text
    assert "cluster closed" in text
    assert _count(nb, "image/png") >= 3  # the sharding picture, the timeline, the bench plot
