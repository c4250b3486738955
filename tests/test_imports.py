"""No two modules of the package import each other, directly or through others.

Every ``import`` and ``from ... import`` of ``scrapy_simhash`` modules counts,
wherever it is: at module level, inside a function, under ``TYPE_CHECKING``
(a cycle that only type checkers see still ties the two modules together).
"""

from __future__ import annotations

import ast
from pathlib import Path


PACKAGE = Path(__file__).resolve().parent.parent / "scrapy_simhash"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports. ``from pkg import name``
    imports ``pkg`` (Python runs its ``__init__`` and reads the name there) and
    ``pkg.name`` too when that is a module."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    files.update({module_name(p): p for p in PACKAGE.rglob("*.pyx")})
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:  # a .pyx file: Cython, not Python
            continue
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [source] + [
                    f"{source}.{alias.name}" for alias in node.names
                    if f"{source}.{alias.name}" in files
                ]
            else:
                continue
            for target in targets:
                while target and target not in files:  # a name below a module
                    target = target.rpartition(".")[0]
                if target.startswith("scrapy_simhash") and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
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
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_graph_sees_local_and_type_checking_imports():
    graph = import_graph()
    # module level, function-local (cli/crawl.py's load_state) and relative forms
    assert "scrapy_simhash.index" in graph["scrapy_simhash.backends.memory"]
    assert "scrapy_simhash.backends.state" in graph["scrapy_simhash.cli.crawl"]
    assert "scrapy_simhash.fingerprinting.signature" in graph["scrapy_simhash.backends"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "modules that import each other: " + "; ".join(
        " <-> ".join(c) for c in found
    )
