"""The package's layers, checked over its imports: no cycles, algorithms below Scrapy, optional packages lazy.

The import graph is read from the source (every ``import`` and ``from ... import`` anywhere in a module, function
bodies included, so a cycle hidden in a lazy import counts too), at the granularity of modules.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "newsdedup"
# The algorithm and storage layers: no Scrapy, no Scrapy settings module, nothing of the crawl or the run.
PURE_LAYERS = ("dedup", "text", "extract", "storage", "dedupstore")
# The algorithms alone: no store either (the dedup state kept level with a store is dedupstore, above both).
ALGORITHMS = ("dedup", "text", "extract")
BELOW_ALGORITHMS = ("newsdedup.storage", "newsdedup.dedupstore", "newsdedup.crawl")
ABOVE_PURE = ("scrapy", "scrapy_redis", "twisted", "newsdedup.settings", "newsdedup.crawl", "newsdedup.distributed",
              "newsdedup.run", "newsdedup.monitoring", "newsdedup.cli", "newsdedup.evaluation", "newsdedup.demo")
OPTIONAL = ("redis", "scrapy_redis", "psycopg", "matplotlib", "datasketch", "tqdm")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules ``name`` imports (the package's own resolved to modules; others by their full name)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in known else base)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def test_the_package_has_no_import_cycle():
    edges = {name: {target for target in targets if target in graph_nodes} for name, targets in graph().items()
             for graph_nodes in [set(modules())]}
    # A module importing its own package's __init__ (``from newsdedup.dedup import x``) is not a cycle.
    for name in edges:
        edges[name] = {target for target in edges[name] if not name.startswith(target + ".")}
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert cycles == []


@pytest.mark.parametrize("layer", PURE_LAYERS)
def test_algorithms_and_storage_import_nothing_of_scrapy_or_the_run(layer):
    offending = {}
    for name, targets in graph().items():
        if name.startswith(f"newsdedup.{layer}"):
            bad = sorted(t for t in targets if any(t == above or t.startswith(above + ".") for above in ABOVE_PURE))
            if bad:
                offending[name] = bad
    assert offending == {}


@pytest.mark.parametrize("layer", ALGORITHMS)
def test_the_algorithms_import_no_store(layer):
    """dedup, text and extract are algorithms over texts: the state kept level with a store is newsdedup.dedupstore."""
    offending = {}
    for name, targets in graph().items():
        if name == f"newsdedup.{layer}" or name.startswith(f"newsdedup.{layer}."):
            bad = sorted(t for t in targets if any(t == below or t.startswith(below + ".") for below in BELOW_ALGORITHMS))
            if bad:
                offending[name] = bad
    assert offending == {}


def test_the_run_policy_imports_nothing_of_the_crawl_glue():
    """newsdedup.run (options, retry, verdict, retention) is policy the crawl, monitor and api read: below the glue."""
    glue = ("scrapy", "twisted", "newsdedup.crawl", "newsdedup.distributed", "newsdedup.settings")
    offending = {name: sorted(t for t in targets if any(t == g or t.startswith(g + ".") for g in glue))
                 for name, targets in graph().items() if name.startswith("newsdedup.run")}
    assert {name: bad for name, bad in offending.items() if bad} == {}


def test_importing_the_package_and_its_algorithms_loads_neither_scrapy_nor_an_optional_package():
    code = ("import sys, newsdedup, newsdedup.dedup.engine, newsdedup.extract.extractor, newsdedup.storage, "
            "newsdedup.text.normalize, newsdedup.defaults; "
            f"print(sorted(m for m in {('scrapy', 'twisted') + OPTIONAL!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_the_graph_sees_a_cycle_when_there_is_one(tmp_path, monkeypatch):
    """The cycle search itself: two modules importing each other are found."""
    package = tmp_path / "newsdedup"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from newsdedup import b\n")
    (package / "b.py").write_text("def f():\n    from newsdedup.a import g\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    with pytest.raises(AssertionError):
        test_the_package_has_no_import_cycle()
