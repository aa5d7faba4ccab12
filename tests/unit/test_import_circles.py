"""Issue 36 item 4: no import circle is left between the package's parts.

import-linter's layers contracts (pyproject.toml) order the core and the console wing module by module;
this holds the whole package to it one level up: no part of ``nvls_tui`` (a subpackage or a top-level
module) imports, directly or through others, a part that imports it back. The App, its screens and
widgets used to be three parts that imported each other (app -> screens -> commands -> app).
"""

from __future__ import annotations

import grimp


def _part(module: str) -> str:
    names = module.split(".")
    return names[1] if len(names) > 1 else names[0]


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one part (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_two_parts_of_the_package_import_each_other():
    graph = grimp.build_graph("nvls_tui")
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if _part(module) != _part(imported):
                edges.setdefault(_part(module), set()).add(_part(imported))
    assert "console" in edges  # the graph was read (the console imports the core)
    assert _circles(edges) == []


def test_the_finder_finds_a_circle_when_there_is_one():
    assert _circles({"app": {"screens"}, "screens": {"commands"}, "commands": {"app"}, "model": set()}) == [
        ["app", "commands", "screens"]]
