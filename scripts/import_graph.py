"""Measures of the package's import graph: modules, internal imports, cycles, imports that run
against the data flow, the largest modules and functions, and one module's fan-out.

    python scripts/import_graph.py [--root wdn_explain] [--module timeline]

Stages follow the data flow (network -> simulation -> dataset -> model -> explain engine ->
timeline -> app): an import from a module of an earlier stage to one of a later stage runs
"back up". Modules not listed form their own stage 0 (shared helpers: errors, files, ...).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import networkx as nx

STAGES = [
    ["network"],
    ["scenario", "design"],
    ["simulation", "waq", "cluster"],
    ["features", "dataset"],
    ["model"],
    ["training"],
    ["explain"],
    ["timeline", "stepstore"],
    ["pipeline", "shipped"],
    ["plot", "narrative", "report"],
    ["cli", "chem"],
]


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module, name: str, package: str) -> set[str]:
    found = set()
    base = name.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + (1 if name.endswith("__init__") else 0)]
                target = ".".join([*anchor, *(node.module.split(".") if node.module else [])])
            else:
                target = node.module or ""
            if target.startswith(package):
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(package))
    return found


def _stage(module: str, package: str) -> int:
    first = module.removeprefix(package + ".").split(".")[0]
    return next((i + 1 for i, names in enumerate(STAGES) if first in names), 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="wdn_explain")
    parser.add_argument("--module", default="timeline")
    args = parser.parse_args()
    root = Path(args.root)
    package = root.name
    sources = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph = nx.DiGraph()
    functions = []
    for name, path in sources.items():
        tree = ast.parse(path.read_text())
        graph.add_node(name, lines=len(path.read_text().splitlines()))
        for target in _imports(
            tree, name if path.name != "__init__.py" else name + ".__init__", package
        ):
            if target in sources and target != name:
                graph.add_edge(name, target)
        functions += [
            (n.end_lineno - n.lineno + 1, f"{name}.{n.name}")
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
    inner = [n for n in graph if not n.endswith(("__init__", package)) and n != package]
    cycles = [c for c in nx.strongly_connected_components(graph) if len(c) > 1]
    back = [
        (a, b)
        for a, b in graph.edges
        if a in inner
        and b in inner
        and _stage(a, package)
        and _stage(a, package) < _stage(b, package)
    ]
    print(f"modules: {len(sources)}; internal imports: {graph.number_of_edges()}")
    print(f"cycles: {len(cycles)}; imports against the data flow: {len(back)}")
    for a, b in back:
        print(f"  back: {a} -> {b}")
    largest = sorted(((graph.nodes[n]["lines"], n) for n in graph), reverse=True)[:5]
    print("largest modules: " + ", ".join(f"{n} {k}" for k, n in largest))
    print("largest functions: " + ", ".join(f"{n} {k}" for k, n in sorted(functions)[::-1][:5]))
    target = f"{package}.{args.module}"
    if target in graph:
        out = sorted(graph.successors(target))
        print(
            f"fan-out of {args.module}: {len(out)} ({', '.join(m.split('.', 1)[1] for m in out)})"
        )
        reach = nx.descendants(graph, target)
        print(f"modules {args.module} depends on (transitively): {len(reach)}")


if __name__ == "__main__":
    main()
