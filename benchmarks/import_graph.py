"""The import graph of mldebug_cli, every import counted (top-level and inside functions): module cycles, folder-level
cycles, and the imports ``core/`` makes into other folders (it is the lowest floor: there should be none but
``core -> core``). Reads the source with ``ast``; imports nothing of the package.

    python benchmarks/import_graph.py            # this checkout
    python benchmarks/import_graph.py PATH       # another checkout (PATH holds mldebug_cli/)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "mldebug_cli"


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package's __init__)."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def edges(found: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    def known(name: str) -> str | None:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name or None

    out: dict[str, set[str]] = {name: set() for name in found}
    for name, (path, package) in found.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if package else name.split(".")[:-1]
                    base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in found else base for a in node.names]
            for target in targets:
                resolved = known(target) if target.startswith(PACKAGE) else None
                if resolved and resolved != name:
                    out[name].add(resolved)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def folder(name: str) -> str:
    """The first level under the package (a top-level module is its own folder)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "(package)"


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    graph = edges(modules(root))
    folders: dict[str, set[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            if folder(source) != folder(target):
                folders.setdefault(folder(source), set()).add(folder(target))
    print(f"modules {len(graph)}, imports {sum(map(len, graph.values()))}")
    print(f"module cycles: {len(cycles(graph))} {cycles(graph)}")
    print(f"folder-level cycles: {len(cycles(folders))} {cycles(folders)}")
    upward = sorted(f"{s} -> {t}" for s, ts in graph.items() for t in ts if folder(s) == "core" and folder(t) != "core")
    print(f"imports from core/ into other folders: {len(upward)}", *upward, sep="\n  ")


if __name__ == "__main__":
    main()
