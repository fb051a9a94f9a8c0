#!/usr/bin/env python3
"""The import graph of `jitkernel/`, read from the code (every `import` and `from ... import`,
at module level or inside a function), and the figures docs/architecture.md quotes:

    python scripts/import_graph.py            # circles, imports running back up, function-level imports
    python scripts/import_graph.py --list     # ... and each circle and each import that runs back up

A *circle* is a set of files that import each other in a loop (a strongly connected component
of more than one file). An import *runs back up* when a file of a lower layer imports one of a
higher layer (LAYERS, low to high, as docs/architecture.md draws them). Imports of optional
dependencies and of the IPython extension hook are counted like any other.
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jitkernel"

# Layers, low to high: a file may import its own layer and those below. The first matching
# prefix (a dotted module path relative to jitkernel) names a file's layer.
LAYERS = [
    ("base", ("_version", "errors", "events", "config", "tree", "entry", "forking", "compile_progress", "tracebacks", "cache")),
    ("ir", ("ir", "interpreter")),  # the interpreter is the IR's reference semantics
    ("passes", ("passes",)),
    ("trace", ("trace", "startup")),  # startup: the one-time set-up of tracing
    ("fusion", ("fusion",)),
    ("backends", ("backends", "device_array")),
    ("pipeline", ("pipeline", "pickling")),
    ("transforms", ("transforms",)),
    ("numpy", ("numpy",)),
    ("library", ("lax", "random", "autograph", "debug", "array_api")),
    ("distributed", ("distributed", "sharding")),
    ("api", ("api", "jitted", "benchmarking", "coverage", "cli", "__main__", "__init__", "examples")),
]


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    raise KeyError(f"jitkernel.{module} is in no layer: add it to LAYERS")


def _resolve(module: str, is_package: bool, node: ast.ImportFrom | ast.Import, files=()) -> list[str]:
    """The jitkernel modules (relative names) an import statement reads. `from pkg import sub`
    reads the submodule `pkg.sub`, not the package's `__init__` (Python runs that file first
    for any import under the package, but nothing is read from it); a name that is not a
    submodule is read from the package itself."""
    if isinstance(node, ast.Import):
        return [a.name[len("jitkernel."):] for a in node.names if a.name.startswith("jitkernel.")]
    base = module.split(".") if module else []
    if node.level:
        base = base if is_package else base[:-1]
        base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
    elif node.module and node.module.startswith("jitkernel"):
        base = []
    else:
        return []
    target = ".".join(base + ([p for p in (node.module or "").split(".") if p and p != "jitkernel"]))
    names = [f"{target}.{a.name}" if target else a.name for a in node.names]
    if target and (not files or any(n not in files for n in names)):
        return [target] + names
    return names


def graph() -> tuple[dict[str, set[str]], int]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in files}
    function_level = 0
    for module, path in files.items():
        tree = ast.parse(path.read_text())
        is_package = path.name == "__init__.py"
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = {t for t in _resolve(module, is_package, node, files) if t in files and t != module}
            if targets and id(node) not in top and not _under_type_checking(tree, node):
                function_level += 1
            edges[module] |= targets
    return edges, function_level


def _under_type_checking(tree: ast.Module, node: ast.AST) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
            if any(n is node for n in ast.walk(stmt)):
                return True
    return False


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def back_up(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in edges.items() for b in targets if layer_of(a) < layer_of(b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print each circle and each import that runs back up")
    args = parser.parse_args()
    edges, function_level = graph()
    comps = circles(edges)
    ups = back_up(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports between them "
          f"({function_level} import statements inside functions)")
    print(f"circles: {len(comps)} (" + ", ".join(f"{len(c)} files" for c in sorted(comps, key=len, reverse=True)) + ")")
    print(f"imports running back up the layers: {len(ups)}")
    if args.list:
        for comp in sorted(comps, key=len, reverse=True):
            print(f"  circle of {len(comp)}: " + ", ".join(comp))
        for a, b in ups:
            print(f"  {a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})")


if __name__ == "__main__":
    sys.exit(main())
