"""The import graph read from the code (scripts/import_graph.py): no module imports a higher
layer than its own (docs/architecture.md, "Layers and imports"), and the packages that have
been untangled stay free of circles."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "import_graph.py"


def _import_graph():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_import_runs_back_up_the_layers():
    g = _import_graph()
    edges, _ = g.graph()
    assert g.back_up(edges) == []


def test_every_module_has_a_layer():
    g = _import_graph()
    edges, _ = g.graph()
    for module in edges:
        g.layer_of(module)  # KeyError names a module added outside every layer


# Packages whose modules import each other in one direction only (no circle through them).
ACYCLIC = ("numpy", "random", "passes", "jitted", "backends.base", "magics", "profiler", "fusion", "ir", "trace",
           "distributed", "autograph", "backends.cpu", "backends.cuda")


def test_untangled_packages_have_no_circle():
    g = _import_graph()
    edges, _ = g.graph()
    for circle in g.circles(edges):
        for package in ACYCLIC:
            inside = [m for m in circle if m == package or m.startswith(package + ".")]
            assert not inside, f"a circle of imports through {package}: {circle}"
