"""The architecture holds: the import-linter contracts of pyproject.toml ``[tool.importlinter]``
(layers; calculations never import charts or UI; acyclic siblings) and zero import cycles.

Imports inside functions and under ``TYPE_CHECKING`` count (grimp reads every import statement).
Imports made by name at run time (``importlib.import_module``, as ``cli`` finds its subcommands)
are invisible to a static graph, so cycles are also looked for between the top-level packages,
where ``cli -> commands`` is a plain import.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "gpucluster_lib"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, cache_dir=None)


def _digraph(graph: grimp.ImportGraph, node=lambda m: m) -> nx.DiGraph:
    """Importer -> imported, with the module-level imports behind each edge."""
    g = nx.DiGraph()
    for importer in graph.modules:
        g.add_node(node(importer))
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = node(importer), node(imported)
            if a == b:
                continue
            if not g.has_edge(a, b):
                g.add_edge(a, b, imports=[])
            g.edges[a, b]["imports"].append((importer, imported))
    return g


def _top(module: str) -> str:
    """gpucluster_lib.network.clos -> gpucluster_lib.network; the root package stays itself."""
    return ".".join(module.split(".")[:2])


def _where(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    details = graph.get_import_details(importer=importer, imported=imported)
    return "; ".join(f"l.{d['line_number']}: {d['line_contents']}" for d in details) or "?"


def _cycles(g: nx.DiGraph) -> list[list[str]]:
    """For every edge inside a strongly connected component, the shortest cycle through it
    (so every import that takes part in a cycle is shown), without repeats."""
    seen, out = set(), []
    for scc in sorted(nx.strongly_connected_components(g), key=lambda c: sorted(c)):
        if len(scc) < 2:
            continue
        sub = g.subgraph(scc)
        for a, b in sorted(sub.edges):
            cycle = [a, *nx.shortest_path(sub, b, a)[:-1]]
            i = cycle.index(min(cycle))
            key = tuple(cycle[i:] + cycle[:i])
            if key not in seen:
                seen.add(key)
                out.append(list(key))
    return out


def _report(graph: grimp.ImportGraph, g: nx.DiGraph, cycles: list[list[str]]) -> str:
    lines = []
    for cycle in cycles:
        lines.append(" -> ".join([*cycle, cycle[0]]))
        for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
            for importer, imported in g.edges[a, b]["imports"]:
                lines.append(f"    {importer} -> {imported} ({_where(graph, importer, imported)})")
    return "\n".join(lines)


def test_import_linter_contracts() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.fail(f"{exe} is missing: install the test extra (pip install -e '.[test]', or make venv)")
    proc = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        report = proc.stdout.split("Contracts\n---------", 1)[-1].strip()  # drop the banner
        pytest.fail(f"lint-imports exited {proc.returncode}:\n{report}\n{proc.stderr}".strip(), pytrace=False)


def test_no_import_cycles_between_modules(graph: grimp.ImportGraph) -> None:
    g = _digraph(graph)
    cycles = _cycles(g)
    if cycles:
        pytest.fail(f"{len(cycles)} import cycle(s) between modules:\n{_report(graph, g, cycles)}", pytrace=False)


def test_no_import_cycles_between_packages(graph: grimp.ImportGraph) -> None:
    g = _digraph(graph, node=_top)
    cycles = _cycles(g)
    if cycles:
        pytest.fail(f"{len(cycles)} import cycle(s) between packages:\n{_report(graph, g, cycles)}", pytrace=False)


def test_the_graph_sees_imports_inside_functions(graph: grimp.ImportGraph) -> None:
    """A guard on the tool: if imports inside functions left the graph, the tests above went blind."""
    indented = []
    for importer in graph.modules:
        lines = _source(importer).splitlines()
        for imported in graph.find_modules_directly_imported_by(importer):
            for d in graph.get_import_details(importer=importer, imported=imported):
                if lines[d["line_number"] - 1][:1].isspace():
                    indented.append((importer, imported))
    assert len(graph.modules) > 50
    assert indented, "grimp found no import inside a function: the cycle and layer checks cannot see them"


def _source(module: str) -> str:
    base = ROOT.joinpath(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    return path.read_text(encoding="utf-8")


#: Private names still imported across modules, each waiting for its owner to publish them.
#: Listed by name: a further private name imported from the same module is a new contract and fails.
#: Empty now: every name another module needs is public.
PRIVATE_IMPORTS_LEFT: dict[tuple[str, str], set[str]] = {}


def _private_imports(module: str, source: str) -> dict[tuple[str, str], set[str]]:
    """(importer, imported module) -> the private names ``module`` imports from the package,
    absolute or relative (``from .core import _x`` in gpucluster_lib.training.search is from
    gpucluster_lib.training.core)."""
    import ast

    package = module.split(".")
    out: dict[tuple[str, str], set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - node.level]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target != PACKAGE and not target.startswith(PACKAGE + "."):
            continue
        private = {a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")}
        if private:
            out.setdefault((module, target), set()).update(private)
    return out


def _unlisted(found: dict[tuple[str, str], set[str]], allowed: dict[tuple[str, str], set[str]]) -> list[str]:
    return [
        f"{importer} imports {', '.join(sorted(names - allowed.get((importer, imported), set())))} from {imported}"
        for (importer, imported), names in sorted(found.items())
        if names - allowed.get((importer, imported), set())
    ]


@functools.cache
def _package_private_imports() -> dict[tuple[str, str], set[str]]:
    """Every private name imported across the package's modules (read once for the two tests below)."""
    found: dict[tuple[str, str], set[str]] = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        # a package's __init__ resolves relative imports against itself
        source_module = module + ".__init__" if parts[-1] == "__init__" else module
        for (_, imported), names in _private_imports(source_module, path.read_text(encoding="utf-8")).items():
            found.setdefault((module, imported), set()).update(names)
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    """A name another module needs is public, with a docstring: a ``from gpucluster_lib.x import
    _name`` makes a private helper a contract nobody declared."""
    assert _unlisted(_package_private_imports(), PRIVATE_IMPORTS_LEFT) == []


def test_the_private_import_allow_list_holds_only_names_still_imported() -> None:
    """A name published by its owner leaves the list, so the list cannot keep a pass for it."""
    found = _package_private_imports()
    stale = {
        pair: sorted(names - found.get(pair, set()))
        for pair, names in PRIVATE_IMPORTS_LEFT.items()
        if names - found.get(pair, set())
    }
    assert stale == {}, f"no longer imported, remove from PRIVATE_IMPORTS_LEFT: {stale}"


def test_a_new_private_name_from_an_allowed_module_is_caught() -> None:
    """The allow-list is by name: training/search.py importing one more private helper of
    training/core.py, absolutely or relatively, is reported; the listed ones are not."""
    search = "gpucluster_lib.training.search"
    allowed = {(search, "gpucluster_lib.training.core"): {"_old_a", "_old_b"}}
    for source in (
        "from gpucluster_lib.training.core import _old_a, _old_b, _new_helper\n",
        "from .core import _old_a, _new_helper\n",
        "def f():\n    from gpucluster_lib.training import core\n    from gpucluster_lib.training.core import _new_helper\n",
    ):
        assert _unlisted(_private_imports(search, source), allowed) == [
            "gpucluster_lib.training.search imports _new_helper from gpucluster_lib.training.core"
        ], source
    listed = "from gpucluster_lib.training.core import _old_a, _old_b, PUBLIC\n"
    assert _unlisted(_private_imports(search, listed), allowed) == []
    # with nothing allowed, the same import is reported
    assert _unlisted(_private_imports(search, listed), {}) == [
        "gpucluster_lib.training.search imports _old_a, _old_b from gpucluster_lib.training.core"
    ]
