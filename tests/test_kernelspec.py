"""`jitkernel install-kernel`: the kernelspec it writes, and that a kernel whose extension
cannot load fails to start instead of starting without the magics."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from jitkernel.cli import main
from jitkernel.magics.kernelspec import EXTRA_ARGUMENTS, ensure_kernelspec, is_current


def test_install_kernel_into_a_prefix(tmp_path, capsys):
    assert main(["install-kernel", "--prefix", str(tmp_path), "--name", "jk-test"]) == 0
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "jk-test"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 (jitkernel)"
    assert spec["argv"][0] == sys.executable and "ipykernel_launcher" in spec["argv"]
    assert "{connection_file}" in spec["argv"]
    assert spec["argv"][-2:] == ["--ext=jitkernel", "--InteractiveShellApp.reraise_ipython_extension_failures=True"]
    assert str(spec_dir) in capsys.readouterr().out
    assert is_current(spec_dir)
    assert ensure_kernelspec("jk-test", prefix=tmp_path) == spec_dir


def test_ensure_kernelspec_replaces_a_stale_spec(tmp_path):
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "jk-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({"argv": ["/nonexistent/python", "-m", "ipykernel_launcher"],
                                                      "display_name": "old", "language": "python"}))
    assert not is_current(spec_dir)
    assert Path(ensure_kernelspec("jk-test", prefix=tmp_path)).resolve() == spec_dir.resolve()
    assert is_current(spec_dir)


def test_user_and_prefix_are_exclusive():
    with pytest.raises(SystemExit):
        main(["install-kernel", "--user", "--prefix", "/tmp/x"])


def test_a_kernel_whose_extension_fails_does_not_start(tmp_path):
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    broken = [a.replace("--ext=jitkernel", "--ext=jitkernel_no_such_extension") for a in EXTRA_ARGUMENTS]
    write_kernel_spec(tmp_path / "broken", extra_arguments=broken)
    km = KernelManager(kernel_name="broken", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path)]))
    with open(tmp_path / "kernel.log", "w") as log:
        km.start_kernel(stderr=log)
    kc = km.client()
    kc.start_channels()
    try:
        with pytest.raises(RuntimeError):
            kc.wait_for_ready(timeout=30)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert "jitkernel_no_such_extension" in (tmp_path / "kernel.log").read_text()
