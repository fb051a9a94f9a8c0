"""`jitkernel` command line.

- `jitkernel demo`: executes notebooks/quickstart.ipynb headless in the "Python 3 (jitkernel)"
  kernel (installing that kernelspec into this environment if needed), writes the executed
  notebook and an HTML rendering with the inline plots, and prints the profile table.
- `jitkernel install-kernel`: installs the kernelspec (into this environment, or with `--user`
  for a Jupyter installed elsewhere).
- `jitkernel lab`: opens notebooks/ in JupyterLab with that kernel (JupyterLab comes with the
  optional `notebook` extra: `pip install -e '.[notebook]'`, or `make lab`).
- `jitkernel cache [list]`: the persistent compile cache's entries (backend, size, last use)
  and their total against its cap; `jitkernel cache clear` deletes them all (every backend).
- `jitkernel --version`: prints `jitkernel <version>` (jitkernel/_version.py).

`python -m jitkernel ...` runs the same command line (jitkernel/__main__.py).

The notebook tooling lives in the `magics` package and is imported only by these commands.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import time
from pathlib import Path

PROFILE_TAG = "jitkernel-profile"  # the quickstart cell whose report the demo prints


def _default_notebook() -> Path:
    return Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"


def demo(args: argparse.Namespace) -> int:
    """Run the quickstart notebook in a real kernel; write it and its HTML; print the profile."""
    import nbformat
    from nbclient.exceptions import CellExecutionError

    from jitkernel.magics.kernelspec import KERNEL_NAME, ensure_kernelspec
    from jitkernel.magics.nbhtml import notebook_to_html
    from jitkernel.magics.nbrun import cell_outputs, execute_notebook

    notebook = Path(args.notebook) if args.notebook else _default_notebook()
    if not notebook.is_file():
        print(f"jitkernel demo: notebook not found: {notebook} (the demo runs from a source checkout; "
              "pass --notebook PATH)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spec_dir = ensure_kernelspec(KERNEL_NAME)
    print(f"kernel: {KERNEL_NAME} ({spec_dir})")
    print(f"executing {notebook} ...", flush=True)
    t0 = time.perf_counter()
    failed: CellExecutionError | None = None
    try:
        nb = execute_notebook(notebook, KERNEL_NAME, spec_dir.parent, cwd=out, timeout=args.timeout,
                              kernel_log=out / "kernel.log")
    except CellExecutionError as e:
        failed = e
        nb = getattr(e, "nb", None)
    elapsed = time.perf_counter() - t0
    if nb is None:
        nb = nbformat.read(notebook, as_version=4)
    ipynb = out / notebook.name
    html_path = ipynb.with_suffix(".html")
    nbformat.write(nb, ipynb)
    html_path.write_text(notebook_to_html(nb, title=f"jitkernel demo: {notebook.stem}"), encoding="utf-8")
    if failed is not None:
        print(f"\na cell failed ({failed.ename}: {failed.evalue})", file=sys.stderr)
        print(re.sub(r"\x1b\[[0-9;]*m", "", str(failed))[-3000:], file=sys.stderr)
        print(f"\npartial outputs: {ipynb}; kernel log: {out / 'kernel.log'}", file=sys.stderr)
        return 1
    print(f"executed in {elapsed:.1f} s\n")
    tables = [o["data"]["text/plain"] for o in cell_outputs(nb, PROFILE_TAG)
              if o.get("output_type") in ("display_data", "execute_result") and "text/html" in o.get("data", {})]
    if tables:
        print(tables[0] if isinstance(tables[0], str) else "".join(tables[0]))
    else:
        print(f"(no profile table found in the cell tagged {PROFILE_TAG!r})")
    images = sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    print(f"\nwrote {ipynb}")
    print(f"wrote {html_path} ({images} inline plot{'s' if images != 1 else ''})")
    return 0


def install_kernel(args: argparse.Namespace) -> int:
    """Install the "Python 3 (jitkernel)" kernelspec."""
    from jitkernel.magics.kernelspec import install_kernelspec

    path = install_kernelspec(args.name, user=args.user, prefix=args.prefix)
    print(f"installed kernelspec {args.name!r} (\"Python 3 (jitkernel)\") in {path}")
    return 0


def lab_missing_message() -> str:
    """What `jitkernel lab` says when JupyterLab is not installed in this environment."""
    return (f"jitkernel lab: JupyterLab is not installed in this environment ({sys.prefix}).\n"
            f"  Install the optional notebook extra from the source checkout:\n"
            f"      {sys.executable} -m pip install -e '.[notebook]'\n"
            f"  or run `make lab`, which installs it into .venv and opens the notebooks.\n"
            f"  With a Jupyter installed elsewhere: `jitkernel install-kernel --user`, then pick the\n"
            f"  \"Python 3 (jitkernel)\" kernel there.")


def _lab_directory() -> Path:
    """notebooks/ of the source checkout, else the current directory (an installed package)."""
    notebooks = _default_notebook().parent
    return notebooks if notebooks.is_dir() else Path.cwd()


def _effective_uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else -1  # Windows has no root


def lab_command(directory: Path, jupyter_args: list[str], euid: int | None = None) -> tuple[list[str], str | None]:
    """The command line `jitkernel lab` runs, and a line to print first (None: nothing to say).
    JupyterLab refuses to start as root without `--allow-root` ("Running as root is not
    recommended"), which made `make lab` fail in a root container: as root it gets that flag,
    unless the user gave an allow-root setting of their own (which is then theirs to decide)."""
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={directory}"]
    euid = _effective_uid() if euid is None else euid
    user_decided = any("allow-root" in a or "allow_root" in a for a in jupyter_args)
    if euid != 0 or user_decided:
        return [*command, *jupyter_args], None
    return ([*command, "--allow-root", *jupyter_args],
            "jitkernel lab: running as root, so JupyterLab is started with --allow-root "
            "(it refuses to start as root without it)")


def lab(args: argparse.Namespace) -> int:
    """Open JupyterLab on notebooks/ with the "Python 3 (jitkernel)" kernel installed here."""
    if importlib.util.find_spec("jupyterlab") is None:
        print(lab_missing_message(), file=sys.stderr)
        return 2
    from jitkernel.magics.kernelspec import KERNEL_NAME, ensure_kernelspec

    spec_dir = ensure_kernelspec(KERNEL_NAME)
    directory = Path(args.dir) if args.dir else _lab_directory()
    print(f"kernel: {KERNEL_NAME} ({spec_dir}); opening JupyterLab in {directory}", flush=True)
    command, note = lab_command(directory, args.jupyter_args)
    if note:
        print(note, flush=True)
    os.execv(sys.executable, command)  # JupyterLab handles Ctrl-C and its own shutdown
    return 0  # not reached


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def cache_command(args: argparse.Namespace) -> int:
    """List the persistent compile cache's entries, or clear them."""
    import warnings

    from jitkernel import cache
    from jitkernel.config import config

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        directory = cache.usable_dir()
    for w in seen:
        print(w.message, file=sys.stderr)
    if directory is None:
        why = cache.disabled_reason()
        print(f"jitkernel cache: {cache.disk_cache_dir()}: " + (why or "no cache there yet (0 entries)"),
              file=sys.stderr if why else sys.stdout)
        return 1 if why else 0
    if args.action == "clear":
        removed, size = cache.clear_all()
        print(f"jitkernel cache: cleared {directory}: {removed} entries, {_size(size)}")
        return 0
    found = sorted(cache.entries(directory), key=lambda e: e.last_used, reverse=True)
    for e in found:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.last_used))
        print(f"{e.backend:<14} {_size(e.bytes):>10}  {used}  {e.name}")
    total = sum(e.bytes for e in found)
    print(f"jitkernel cache: {directory}: {len(found)} entries, {_size(total)} "
          f"(at most {_size(config.disk_cache_max_bytes)}: jk.config.disk_cache_max_bytes, "
          f"JITKERNEL_CACHE_MAX_BYTES)")
    return 0


def main(argv: list[str] | None = None) -> int:
    from jitkernel._version import __version__

    parser = argparse.ArgumentParser(prog="jitkernel", description="NumPy traced, fused and compiled with LLVM.")
    parser.add_argument("--version", action="version", version=f"jitkernel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="run the quickstart notebook headless; write it as .ipynb and .html "
                                         "and print the profile table")
    p_demo.add_argument("--out", default="jitkernel-demo-output",
                        help="output folder (default: ./jitkernel-demo-output)")
    p_demo.add_argument("--notebook", default=None, help="notebook to run (default: notebooks/quickstart.ipynb)")
    p_demo.add_argument("--timeout", type=int, default=300, help="per-cell timeout in seconds (default 300)")
    p_demo.set_defaults(run=demo)
    p_kernel = sub.add_parser("install-kernel", help='install the "Python 3 (jitkernel)" Jupyter kernelspec')
    where = p_kernel.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for the current user")
    where.add_argument("--prefix", default=None, help="install under PREFIX/share/jupyter/kernels "
                                                      "(default: this environment, sys.prefix)")
    p_kernel.add_argument("--name", default="jitkernel", help="kernelspec name (default: jitkernel)")
    p_kernel.set_defaults(run=install_kernel)
    p_lab = sub.add_parser("lab", help="open the notebooks in JupyterLab with the jitkernel kernel "
                                       "(needs the optional extra: pip install -e '.[notebook]')")
    p_lab.add_argument("--dir", default=None, help="folder to open (default: the checkout's notebooks/); "
                                                   "other arguments go to JupyterLab, e.g. --no-browser --port 8889")
    p_lab.set_defaults(run=lab)
    p_cache = sub.add_parser("cache", help="list the persistent compile cache's entries (backend, size, last use) "
                                           "and their total, or clear it (JITKERNEL_CACHE_DIR)")
    p_cache.add_argument("action", nargs="?", choices=("list", "clear"), default="list",
                         help="list (default): the entries and the total size; clear: delete every entry")
    p_cache.set_defaults(run=cache_command)
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "lab":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.jupyter_args = [a for a in extra if a != "--"]
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
