"""The import floors (docs/development.md): no loop of imports between modules or between folders, every import
counted (top-level, inside functions and under TYPE_CHECKING), as ``benchmarks/import_graph.py`` reports them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _import_graph():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "benchmarks" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_no_module_or_folder_imports_in_a_loop():
    graph_tool = _import_graph()
    graph = graph_tool.edges(graph_tool.modules(ROOT))
    folders: dict[str, set[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            if graph_tool.folder(source) != graph_tool.folder(target):
                folders.setdefault(graph_tool.folder(source), set()).add(graph_tool.folder(target))
    assert graph_tool.cycles(graph) == []
    assert graph_tool.cycles(folders) == []
    assert graph_tool.cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]  # the loop finder finds a loop
