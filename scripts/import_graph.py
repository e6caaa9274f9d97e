"""Measures of the package's import graph: modules, internal imports, cycles, imports that run
against the data flow, the largest modules and functions, and one module's fan-out.

    python scripts/import_graph.py [--root wdn_explain] [--module timeline]

Every import counts: at module level, inside functions (lazy) and under ``TYPE_CHECKING``.
Stages follow the data flow (helpers -> network -> scenario -> ... -> timeline -> run ->
views -> commands): an import from a module of an earlier stage to one of a later stage runs
"back up". Every module of the package belongs to a stage of :data:`STAGES` (a subpackage by
its first name); the script exits 1 on a cycle, an import against the data flow or a module in
no stage, so ``tests/test_import_graph.py`` fails on any of them.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import networkx as nx

STAGES = [
    # shared helpers: import nothing of the package but each other
    [
        "errors",
        "lazy",
        "files",
        "progress",
        "workers",
        "allocator",
        "recipe",
        "map_labels",
        "network_snapshot",
    ],  # fmt: skip
    ["network"],
    ["scenario", "design", "sizes"],
    ["features", "conformal", "records", "readings"],
    ["simulation", "servable", "waq", "cluster"],
    ["dataset"],
    ["model", "model_folder", "risk_net"],
    [
        "tree",
        "notice",
        "risk",
        "compliance",
        "risk_model",
        "evaluation",
        "scoring",
        "training",
        "risk_training",
    ],
    ["explain"],
    ["explain_settings", "timeline_file", "node_series", "timeline", "stepstore"],
    ["node_targets", "hydraulics", "pipeline", "on_demand", "shipped", "replay", "placement"],
    ["placement_scores"],
    ["narrative", "plot", "report"],
    ["onboard", "cli", "chem", "__main__"],
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


def _stage(module: str, package: str) -> int | None:
    """The index in :data:`STAGES` of a module's stage (None: in no stage)."""
    first = module.removeprefix(package + ".").split(".")[0]
    return next((i for i, names in enumerate(STAGES) if first in names), None)


def measures(root: Path) -> dict:
    """The import graph of the package at ``root`` and its measures: ``graph`` (modules and
    internal imports, each node with its ``lines``), ``cycles`` (sets of modules importing
    each other), ``back`` (imports against the data flow), ``unstaged`` (modules in no stage)
    and ``functions`` ((lines, name) of every function)."""
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
    inner = [n for n in graph if n != package]
    stage = {n: _stage(n, package) for n in inner}
    return {
        "graph": graph,
        "cycles": [c for c in nx.strongly_connected_components(graph) if len(c) > 1],
        "back": [
            (a, b)
            for a, b in graph.edges
            if a in inner
            and b in inner
            and None not in (stage[a], stage[b])
            and stage[a] < stage[b]
        ],
        "unstaged": sorted(n for n in inner if stage[n] is None),
        "functions": functions,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="wdn_explain")
    parser.add_argument("--module", default="timeline")
    args = parser.parse_args()
    root = Path(args.root)
    package = root.name
    found = measures(root)
    graph, cycles, back = found["graph"], found["cycles"], found["back"]
    print(f"modules: {graph.number_of_nodes()}; internal imports: {graph.number_of_edges()}")
    print(f"cycles: {len(cycles)}; imports against the data flow: {len(back)}")
    for cycle in cycles:
        print(f"  cycle: {' <-> '.join(sorted(cycle))}")
    for a, b in back:
        print(f"  back: {a} -> {b}")
    for name in found["unstaged"]:
        print(f"  in no stage: {name} (add it to STAGES)")
    largest = sorted(((graph.nodes[n]["lines"], n) for n in graph), reverse=True)[:5]
    print("largest modules: " + ", ".join(f"{n} {k}" for k, n in largest))
    longest = sorted(found["functions"])[::-1][:5]
    print("largest functions: " + ", ".join(f"{n} {k}" for k, n in longest))
    target = f"{package}.{args.module}"
    if target in graph:
        out = sorted(graph.successors(target))
        print(
            f"fan-out of {args.module}: {len(out)} ({', '.join(m.split('.', 1)[1] for m in out)})"
        )
        reach = nx.descendants(graph, target)
        print(f"modules {args.module} depends on (transitively): {len(reach)}")
    return 1 if cycles or back or found["unstaged"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
