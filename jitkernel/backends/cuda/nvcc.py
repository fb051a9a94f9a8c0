"""nvcc, where it exists: cubins and PTX of rendered translation units (no GPU needed).

>>> from jitkernel.backends.cuda.nvcc import find_nvcc
>>> find_nvcc() is None or find_nvcc().endswith("nvcc")
True
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ...errors import BackendUnavailableError, CompileError

ARCH = "sm_90"  # the H200 of the project's GPU machine


def find_nvcc() -> str | None:
    return os.environ.get("NVCC") or shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def _run(source: str, kind: str, arch: str, options: tuple[str, ...] = ()) -> bytes:
    nvcc = find_nvcc()
    if nvcc is None:
        raise BackendUnavailableError("nvcc is not on PATH (set NVCC=...): the CUDA source cannot be compiled here")
    work = Path(tempfile.mkdtemp(prefix="jk-nvcc-"))
    src, out = work / "program.cu", work / f"program.{kind}"
    src.write_text(source)
    proc = subprocess.run([nvcc, f"-{kind}", f"-arch={arch}", "-w", *options, "-o", str(out), str(src)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CompileError(f"nvcc rejected the CUDA source (saved at {src}):\n{proc.stderr[-4000:]}")
    data = out.read_bytes()
    shutil.rmtree(work, ignore_errors=True)
    return data


def cubin(source: str, arch: str = ARCH, options: tuple[str, ...] = ()) -> bytes:
    """The cubin of `source` for `arch` (CompileError with nvcc's message on failure)."""
    return _run(source, "cubin", arch, options)


def ptx(source: str, arch: str = ARCH) -> str:
    """The PTX of `source` for `arch`."""
    return _run(source, "ptx", arch).decode()
