"""How the repository installs: pyproject.toml lists every package folder, and magics/ and
profiler/ install inside the jitkernel package as jitkernel.magics and jitkernel.profiler (the
top-level names belong to other PyPI projects), which importing jitkernel does not import."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
INSTALLED_AS = {"magics": "jitkernel.magics", "profiler": "jitkernel.profiler"}  # folder -> package


def package_folders() -> dict[str, Path]:
    """Installed package name -> folder, for every folder with an `__init__.py` that installs."""
    found = {".".join(init.parent.relative_to(ROOT).parts): init.parent
             for init in (ROOT / "jitkernel").rglob("__init__.py")}
    for folder, package in INSTALLED_AS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            found[".".join((package, *init.parent.relative_to(ROOT / folder).parts))] = init.parent
    return found


def test_every_package_folder_is_listed():
    # setuptools' discovery cannot map a folder to a nested name, so the list is explicit:
    # a new package folder must be added to [tool.setuptools] packages or the wheel lacks it.
    assert sorted(SETUPTOOLS["packages"]) == sorted(package_folders())


def test_magics_and_profiler_install_inside_jitkernel():
    assert SETUPTOOLS["package-dir"] == {package: folder for folder, package in INSTALLED_AS.items()}
    assert [p for p in SETUPTOOLS["packages"] if p.split(".")[0] != "jitkernel"] == []


def test_importing_jitkernel_imports_neither_magics_nor_profiler():
    code = ("import sys, jitkernel\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('magics', 'profiler')\n"
            "             or m.startswith(('jitkernel.magics', 'jitkernel.profiler'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_magics_and_profiler_import_from_this_checkout():
    # The editable install maps jitkernel.magics/profiler to the folders of the checkout it was made
    # from; `jitkernel` itself comes from the working directory. Run from another checkout with that
    # install, the tests would check this checkout's engine against the other one's magics.
    code = ("import jitkernel, jitkernel.magics, jitkernel.profiler\n"
            "print(jitkernel.magics.__file__); print(jitkernel.profiler.__file__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for path in done.stdout.split():
        assert Path(path).resolve().is_relative_to(ROOT), (
            f"{path} is not in {ROOT}: install this checkout (pip install -e '.[test]')")


def test_folder_names_fail_naming_the_installed_package():
    # From the repository root `profiler/` is importable as the top-level `profiler`: a second copy
    # of the package, whose session collector never sees the engine's events (an empty report).
    for folder, package in INSTALLED_AS.items():
        for module in (folder, f"{folder}.{'collector' if folder == 'profiler' else 'cell'}"):
            done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True,
                                  text=True, timeout=300)
            assert done.returncode != 0 and "ImportError" in done.stderr, (module, done.stderr)
            assert f"import {package} instead" in done.stderr, done.stderr


def test_folders_import_under_their_installed_names():
    # The guard against the folder names lets this checkout's folders load as jitkernel.magics /
    # jitkernel.profiler (whatever checkout the editable install maps those names to).
    code = ("import importlib.util, sys\n"
            "for folder, package in (('profiler', 'jitkernel.profiler'), ('magics', 'jitkernel.magics')):\n"
            "    spec = importlib.util.spec_from_file_location(package, folder + '/__init__.py',\n"
            "                                                  submodule_search_locations=[folder])\n"
            "    module = importlib.util.module_from_spec(spec); sys.modules[package] = module\n"
            "    spec.loader.exec_module(module)\n"
            "    print(module.__file__)\n"
            "import jitkernel.profiler.collector as c; print(c.__file__)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for path in done.stdout.split():
        assert Path(path).resolve().is_relative_to(ROOT), path
