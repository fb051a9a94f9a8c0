"""The IPython extension in a real in-process shell: %%jit and its options, the diagnostics
line, the line magics, and unloading."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import jitkernel as jk
from jitkernel import profiler
from jitkernel import events
from jitkernel.api import Jitted
from tests.ipython_shell import extension_shell, ok, run  # noqa: F401  (ok, run: used by other test modules too)


@pytest.fixture
def ip(tmp_path, monkeypatch):
    with extension_shell(tmp_path, monkeypatch) as shell:
        yield shell


def usage_error(ip, cell: str) -> str:
    result, out, _ = run(ip, cell)
    assert isinstance(result.error_in_exec, UsageError), out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("UsageError: "), out
    return lines[0]


NODEF = "%%jit\ny = np.sin(x) * np.cos(x)\ns = y.sum()\ns"


# -- %%jit without defs -------------------------------------------------------------------
def test_nodef_cell_writes_back_and_returns_last_expression(ip):
    x = np.linspace(0, 1, 1000).astype(np.float32)
    ip.user_ns["x"] = x
    result, out, _ = ok(ip, NODEF)
    y = ip.user_ns["y"]
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (1000,)
    np.testing.assert_allclose(y, np.sin(x) * np.cos(x), rtol=1e-5, atol=1e-6)
    assert ip.user_ns["s"] == pytest.approx(float((np.sin(x) * np.cos(x)).sum()), rel=1e-4)
    assert result.result is ip.user_ns["s"] or result.result == ip.user_ns["s"]
    assert out.count("Out[") == 1  # returned, not also displayed
    assert "recompiled" not in out


def test_nodef_cell_reuses_its_compile_and_reports_a_shape_change(ip):
    ip.user_ns["x"] = np.ones(1000, np.float32)
    ok(ip, NODEF)
    _, out, _ = ok(ip, NODEF)
    assert "recompiled" not in out
    st = profiler.report("cell_y_s")["cell_y_s"]
    assert (st.compiles, st.cache_hits) == (1, 1)
    ip.user_ns["x"] = np.ones((10, 20), np.float32)  # a rank change: never a symbolic dimension
    _, out, _ = ok(ip, NODEF)
    assert re.search(r"^jit: cell_y_s recompiled \(x: shape \(1000,\) -> \(10, 20\)\); "
                     r"trace \d+\.\d ms, compile \d+\.\d ms$", out, re.M), out
    assert ip.user_ns["y"].shape == (10, 20)


def test_nodef_cell_inputs_are_reads_before_assignment(ip):
    ip.user_ns.update(x=np.arange(4.0), y=np.zeros((7, 7)), k=3, label="not an array")
    ok(ip, "%%jit\ny = x * k\nz = y + 1\nlabel2 = label\n")
    np.testing.assert_array_equal(ip.user_ns["z"], np.arange(4.0) * 3 + 1)
    assert "label2" not in ip.user_ns  # only arrays and numbers are written back
    ip.user_ns["y"] = np.zeros((9, 9))  # y is assigned before it is read: not an input
    _, out, _ = ok(ip, "%%jit\ny = x * k\nz = y + 1\nlabel2 = label\n")
    assert "recompiled" not in out


def test_quiet_suppresses_the_line(ip):
    ip.user_ns["x"] = np.ones(10)
    ok(ip, "%%jit -q\nz = x + 1")
    ip.user_ns["x"] = np.ones((2, 3))
    _, out, _ = ok(ip, "%%jit -q\nz = x + 1")
    assert out.strip() == ""
    assert ip.user_ns["z"].shape == (2, 3)


def test_static_option_in_a_nodef_cell(ip):
    ip.user_ns.update(x=np.ones(5), n=2)
    ok(ip, "%%jit --static n\nz = x * n\nw = np.zeros(n)")
    assert ip.user_ns["w"].shape == (2,)
    ip.user_ns["n"] = 3
    _, out, _ = ok(ip, "%%jit --static n\nz = x * n\nw = np.zeros(n)")
    assert "jit: cell_z_w recompiled (n: static value 2 -> 3)" in out
    assert ip.user_ns["w"].shape == (3,) and ip.user_ns["z"][0] == 3


# -- %%jit with defs ------------------------------------------------------------------------
def test_defs_cell_jits_each_function_and_runs_the_rest(ip):
    ip.user_ns["x"] = np.ones((100, 8), np.float32)
    cell = ("%%jit\n"
            "def step(x):\n    return np.tanh(x * 0.5).sum(axis=1)\n\n"
            "def twice(x):\n    return step(x) * 2\n\n"
            "r = twice(x)\ns = step(x)\nr.shape")
    result, _, _ = ok(ip, cell)
    assert isinstance(ip.user_ns["step"], Jitted) and isinstance(ip.user_ns["twice"], Jitted)
    assert result.result == (100,)
    np.testing.assert_allclose(ip.user_ns["r"], np.tanh(np.ones((100, 8)) * 0.5).sum(axis=1) * 2, rtol=1e-5)
    assert "__jitkernel_cell_jit__" not in ip.user_ns
    # A shape change in a later, ordinary cell prints the reason naming the argument and both shapes.
    _, out, _ = ok(ip, "r = step(np.ones((100, 3), np.float32))")
    assert re.search(r"^jit: step recompiled \(x: shape \(100, 8\) -> \(100, 3\)(; [^\n]*)?\); trace [\d.]+ ms, "
                     r"compile [\d.]+ ms$", out, re.M), out


def test_defs_cell_static_and_backend(ip):
    cell = "%%jit --static n -b interpret\ndef power(x, n):\n    return x ** n\n"
    ok(ip, cell)
    f = ip.user_ns["power"]
    assert f.backend == "interpret" and "n" in f.static_argnames
    _, out, _ = ok(ip, "a = power(np.arange(3.0), 2); b = power(np.arange(3.0), 3)")
    assert "jit: power recompiled (n: static value 2 -> 3)" in out
    np.testing.assert_array_equal(ip.user_ns["b"], np.arange(3.0) ** 3)
    ok(ip, "%%jit -b auto\ndef g(x):\n    return x + 1\n")
    assert ip.user_ns["g"].backend == "cpu"


def test_functions_jitted_outside_jit_cells_stay_silent(ip):
    ok(ip, "import jitkernel as jk\nf = jk.jit(lambda x: x + 1)")
    ok(ip, "a = f(np.ones(3))")
    _, out, _ = ok(ip, "a = f(np.ones(4))")
    assert out.strip() == ""
    assert len(ip.user_ns["f"].recompilations()) == 1


def test_show_stage_lazily_for_defs_and_after_running_for_nodef(ip):
    _, out, _ = ok(ip, "%%jit --show kernels\ndef step(x):\n    return np.sin(x) * 2\n")
    assert out.strip() == ""  # nothing until the first call
    _, out, _ = ok(ip, "z = step(np.ones(16, np.float32))")
    assert "--- step (x: float32[16]): kernels ---" in out and "kernel k0" in out
    _, out, _ = ok(ip, "z = step(np.ones(16, np.float32))")
    assert out.strip() == ""  # once per compiled signature
    ip.user_ns["x"] = np.ones(8)
    _, out, _ = ok(ip, "%%jit --show ir\nw = np.exp(x)")
    assert "--- cell_w (x: float64[8]): ir ---" in out and "program cell_w(" in out


def test_profile_option_shows_this_cells_profile(ip):
    ip.user_ns["x"] = np.ones(32)
    _, _, outputs = ok(ip, "%%jit --profile\nw = np.exp(x)")
    htmls = [o.data["text/html"] for o in outputs if "text/html" in o.data]
    assert len(htmls) == 1 and "%%jit profile: cell_w" in htmls[0] and "<td style='text-align:left'>cell_w</td>" in htmls[0]


def test_no_cache_keeps_the_disk_cache_out(ip, tmp_path):
    from jitkernel import cache
    ip.user_ns["x"] = np.ones(64)
    ok(ip, "%%jit --no-cache\nw = np.exp(x) + 1")
    assert cache.disk_cache_info()["entries"] == 0
    ok(ip, "%%jit\nw = np.exp(x) + 2")
    assert cache.disk_cache_info()["entries"] == 1


# -- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("line, message", [
    ("--bogus", "unrecognized arguments: --bogus"),
    ("-b gpu", "invalid choice: 'gpu'"),
    ("--show nope", "invalid choice: 'nope'"),
    ("-b cuda", "%%jit: cuda: "),
    ("--static 1x", "--static expects comma-separated argument names"),
    ("--static q", "--static q: the cell does not read 'q'"),
])
def test_bad_options_are_one_line_usage_errors(ip, line, message):
    ip.user_ns["x"] = np.ones(3)
    assert message in usage_error(ip, f"%%jit {line}\ny = x + 1")


def test_static_name_must_be_a_parameter_in_a_defs_cell(ip):
    assert "not a parameter of any function" in usage_error(ip, "%%jit --static k\ndef f(x):\n    return x\n")


def test_user_error_fails_the_cell_and_points_at_the_cell_line(ip):
    ip.user_ns["x"] = np.ones(3)
    result, out, _ = run(ip, "%%jit\ny = np.sin(x)\nz = y.no_such_attribute\n")
    assert isinstance(result.error_in_exec, AttributeError)
    assert re.search(r"^Cell In\[\d+\], line 3$", out, re.M) and "----> 3 z = y.no_such_attribute" in out
    assert "      2 y = np.sin(x)" in out
    assert "jitkernel/api.py" not in out  # the engine's plumbing frames are pruned
    # (an `if` on a traced value compiles (jitkernel/autograph); a `raise` inside one cannot)
    result, out, _ = run(ip, "%%jit\ndef g(v):\n    if v.sum() > 0:\n        raise ValueError('no')\n    return -v\ng(x)")
    assert type(result.error_in_exec).__name__ == "UnsupportedOperationError"
    assert re.search(r"Cell In\[\d+\], line 3, in g", out) and "----> 3     if v.sum() > 0:" in out


@pytest.mark.parametrize("cell, error", [
    ("import jitkernel as jk\njk.jit(lambda x: x.sum())([1, 2, 3])", "AttributeError"),
    ("import jitkernel as jk\njk.jit(lambda x: np.sum(x))([1, 2, 3])", "TracerArrayConversionError"),
    ("%%jit\ndef total(x):\n    return np.sum(x, axis=1)\ntotal(np.ones(3))", "AxisError"),
])
def test_tracebacks_show_the_cells_lines_not_numpys(ip, cell, error):
    """In a shell as in a script: NumPy's internal frames are hidden like the engine's, and a
    Python list argument's error starts with what to do."""
    result, out, _ = run(ip, cell)
    assert type(result.error_in_exec).__name__ == error, out
    assert re.search(r"^Cell In\[\d+\], line \d", out, re.M), out
    for hidden in ("fromnumeric.py", "numeric.py", "jitkernel/jitted", "site-packages/numpy"):
        assert hidden not in out, out
    if "[1, 2, 3]" in cell:
        assert re.search(rf"^\w*{error}: jitted functions take arrays, not Python lists: pass np\.asarray\(x\)$",
                         out, re.M), out


def test_warnings_and_messages_name_the_cell(ip):
    """jitkernel's own warnings, anyone's warnings and error messages that name a user's line
    say `Cell In[N], line L` (IPython's name for the cell's code), not the code's file name;
    unloading the extension restores Python's warning format."""
    import warnings
    ip.run_cell("import warnings, jitkernel as jk", store_history=True)
    limit = jk.config.max_cache_entries
    cells = ["jk.config.update('max_cache_entries', 2)\nf = jk.jit(lambda x: x + 1)\nfor n in range(4):\n    f(np.ones(n + 1))",
             "warnings.warn('plain')",
             "def g(x):\n    return x + np.random.rand(3)\njk.jit(g)(np.ones(3))"]
    try:
        outs = []
        with warnings.catch_warnings():  # shown as Python shows them, not recorded by pytest
            warnings.simplefilter("always")
            warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: \
                sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
            for cell in cells:
                with capture_output() as cap:
                    ip.run_cell(cell, store_history=True)
                outs.append(cap.stdout + cap.stderr)
    finally:
        jk.config.update("max_cache_entries", limit)
    numbers = re.findall(r"Cell In\[(\d+)\]", outs[0])
    assert numbers and re.search(rf"^Cell In\[{numbers[0]}\], line 4: CacheLimitWarning: ", outs[0], re.M), outs[0]
    assert re.search(r"^Cell In\[\d+\], line 1: UserWarning: plain\n  warnings.warn\('plain'\)$", outs[1], re.M), outs[1]
    assert re.search(r"\(at Cell In\[\d+\], line 2: return x \+ np.random.rand\(3\)\)", outs[2]), outs[2]
    assert "<ipython-input" not in "".join(outs)
    ip.extension_manager.unload_extension("jitkernel")
    assert warnings.formatwarning.__module__ == "warnings"
    ip.extension_manager.load_extension("jitkernel")


def test_syntax_error_is_reported_at_the_cell_line(ip):
    result, out, _ = run(ip, "%%jit\ndef k(:\n    pass\n")
    assert not result.success
    assert re.search(r'File "Cell In\[\d+\]", line 2', out) and "SyntaxError: invalid syntax" in out
    assert "interactiveshell.py" not in out


def test_trailing_semicolon_silences_the_value(ip):
    ip.user_ns["x"] = np.ones(3)
    result, out, _ = ok(ip, "%%jit\nz = x + 1\nz;")
    assert "Out[" not in out


# -- line magics -------------------------------------------------------------------------------
def _three_sizes(ip):
    ok(ip, "%%jit\ndef step(x):\n    return np.tanh(x).sum(axis=1)\n")
    for arg in ("(100, 8), np.float32", "(100, 8), np.float32", "(100, 3), np.float32", "(7, 2), np.float64"):
        ok(ip, f"r = step(np.ones({arg}))")


def test_jit_profile_table_plots_export_and_reset(ip, tmp_path):
    _three_sizes(ip)
    _, _, outputs = ok(ip, "%jit_profile")
    assert len(outputs) == 1
    html = outputs[0].data["text/html"]
    assert "<table>" in html and ">step</td>" in html and "recompilations" in html
    assert "step" in outputs[0].data["text/plain"]
    _, _, outputs = ok(ip, "%jit_profile step --plot all")
    pngs = [o.data["image/png"] for o in outputs if "image/png" in o.data]
    assert len(pngs) == 3 and len(outputs) == 4
    _, out, _ = ok(ip, "%jit_profile step --export trace.json")
    data = json.loads((tmp_path / "trace.json").read_text())
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(profiler.report("step").records())
    assert {"trace", "compile", "run", "recompile"} <= {e["name"] for e in complete}
    assert f"wrote {len(complete)} phases" in out
    _, out, _ = ok(ip, "%jit_profile --reset")
    assert out.strip() == "jit profile reset" and profiler.report().functions == []
    assert "nothing recorded for nope" in usage_error(ip, "%jit_profile nope")
    assert "invalid choice" in usage_error(ip, "%jit_profile --plot pie")


def test_jit_explain_lists_the_history(ip):
    _three_sizes(ip)
    step = ip.user_ns["step"]
    n, cached = len(step.recompilations()), step.cache_size()
    assert n >= 2
    _, out, _ = ok(ip, "%jit_explain step")
    lines = out.splitlines()
    assert lines[0] == f"step: {n} recompilations, {cached} signature(s) cached"
    assert lines[1].startswith("  1. x: shape (100, 8) -> (100, 3)") and re.search(r"\(trace [\d.]+ ms, compile [\d.]+ ms\)$", lines[1])
    assert lines[2].strip().startswith("now:    x: float32[100, 3]")
    assert lines[3].strip().startswith("before: x: float32[100, 8]")
    assert re.search(r"^  2\. x: (shape|dtype) ", out, re.M), out
    assert len(lines) == 1 + 3 * n
    _, out, _ = ok(ip, "%jit_explain")
    assert f"step: {n} recompilations" in out
    assert "no jitted function named 'nope'" in usage_error(ip, "%jit_explain nope")
    ip.user_ns["notjit"] = 3
    assert "notjit is a int, not a jitted function" in usage_error(ip, "%jit_explain notjit")


def test_jit_ir_stages_of_the_last_compile(ip):
    ok(ip, "%%jit\ndef step(x):\n    return np.exp(x) + 1\n")
    assert "has not been compiled yet" in usage_error(ip, "%jit_ir step")
    ok(ip, "a = step(np.ones(4)); b = step(np.ones(6, np.float32))")
    _, out, _ = ok(ip, "%jit_ir step --stage ir")
    assert out.startswith("--- step (x: float32[6]): ir ---") and "program step(a: f32[6])" in out
    _, out, _ = ok(ip, "%jit_ir step")
    assert ": optimized ---" in out
    _, out, _ = ok(ip, "%jit_ir step --stage llvm")
    assert "define " in out
    ip.user_ns["x"] = np.ones(3)
    ok(ip, "%%jit\nq = x * 2")
    _, out, _ = ok(ip, "%jit_ir cell_q --stage kernels")  # no-def cells are found by name
    assert "kernels cell_q" in out
    assert "invalid choice" in usage_error(ip, "%jit_ir step --stage bogus")


def test_jit_cache_info_and_clear(ip):
    _three_sizes(ip)
    n = ip.user_ns["step"].cache_size()
    assert n >= 2
    _, out, _ = ok(ip, "%jit_cache")
    assert f"memory: {n} compiled entries in 1 functions (step: {n})" in out
    assert out.startswith("disk cache: ")
    _, out, _ = ok(ip, "%jit_cache --clear")
    assert f"{n} in-memory entries of 1 functions" in out
    assert ip.user_ns["step"].cache_size() == 0
    _, out, _ = ok(ip, "%jit_cache --info")
    assert "memory: 0 compiled entries" in out
    if "entries" in out:
        assert re.search(r"disk cache: .*: 0 entries", out), out
    assert "either --info or --clear" in usage_error(ip, "%jit_cache --info --clear")
    assert "--all goes with --clear" in usage_error(ip, "%jit_cache --all")


def test_jit_cache_clear_keeps_other_processes_entries_unless_all(ip):
    """The disk cache is shared: --clear removes this process's functions' entries only; --all
    removes the rest too and says how many of other functions it removed."""
    from jitkernel import cache
    cache.store("0" * 64, b"object code", "another process's function", owner="somebody_else")
    cache.store("1" * 64, b"object code", "an earlier session's function")
    _three_sizes(ip)
    mine = cache.disk_cache_info()["entries"] - 2  # step's entries (keys_of holds earlier tests' too)
    assert mine >= 1 and cache.keys_of(["step"]) >= {p.name.removesuffix(".jko") for p in
                                                     Path(cache.disk_cache_dir()).glob("*.jko")} - {"0" * 64, "1" * 64}
    _, out, _ = ok(ip, "%jit_cache --clear")
    assert f"{mine} disk entries of theirs (other disk entries kept: the disk cache is shared; " \
           "--clear --all empties it)" in out, out
    assert cache.disk_cache_info()["entries"] == 2
    ok(ip, "step(np.ones((5, 4), np.float32))")  # compiles again: one entry of this process
    _, out, _ = ok(ip, "%jit_cache --clear --all")
    assert "1 disk entries of theirs; --all: 2 disk entries of other functions removed" in out, out
    assert cache.disk_cache_info()["entries"] == 0


def test_jit_backend_show_and_set(ip):
    _, out, _ = ok(ip, "%jit_backend")
    assert out.strip() == f"jit backend: {jk.config.default_backend}"
    ok(ip, "%jit_backend interpret")
    assert jk.config.default_backend == "interpret"
    ok(ip, "%%jit\ndef g(x):\n    return x + 1\ny = g(np.ones(2))")
    assert ip.user_ns["g"]._cache and next(iter(ip.user_ns["g"]._cache.values())).backend == "interpret"
    ok(ip, "%jit_backend auto")
    assert jk.config.default_backend == "cpu"
    assert "%jit_backend: cuda: " in usage_error(ip, "%jit_backend cuda")
    assert "invalid choice" in usage_error(ip, "%jit_backend npu")


def test_docs_list_every_line_magic_and_count_them(ip):
    """docs/magics.md names each line magic the extension registers, in its table and its own
    section, and says how many there are."""
    from pathlib import Path
    from jitkernel.magics.extension import MAGIC_CLASSES
    names = sorted(n for cls in MAGIC_CLASSES for n in cls.magics["line"])
    doc = (Path(__file__).resolve().parent.parent / "docs" / "magics.md").read_text()
    words = {5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
    assert f"one cell magic and {words[len(names)]} line magics" in doc
    for name in names:
        assert f"| `%{name}" in doc and f"## `%{name}" in doc, name


def test_unload_removes_the_magics_and_subscriptions(ip):
    ext_subscribers = len(events.SUBSCRIBERS)
    ip.extension_manager.unload_extension("jitkernel")
    for kind, names in (("cell", ["jit"]), ("line", ["jit_profile", "jit_explain", "jit_ir", "jit_cache", "jit_backend"])):
        for name in names:
            assert name not in ip.magics_manager.magics[kind]
    assert len(events.SUBSCRIBERS) == ext_subscribers - 3  # diagnostics, compile progress, the profiler session
    result, out, _ = run(ip, "%%jit\ny = 1")
    assert "Cell magic `%%jit` not found" in out
    assert ip.extension_manager.load_extension("jitkernel") is None
    ip.user_ns["x"] = np.ones(2)
    ok(ip, "%%jit\ny = x + 1")
