"""The import graph of the project, read from the source with ``ast`` (nothing is imported): every ``import``
and ``from ... import`` of every module of the packages below, at module level or inside a function,
relative imports resolved. Three rules:

(a) no cycle between modules of ``reference_impls``;
(b) packages import one way, down the layers of :data:`LAYERS` (scripts -> benchmarks -> app -> lab ->
    reference_impls -> papers -> taxonomy -> atlas_data);
(c) the environments (``reference_impls.envs``) never import the measurement layer (``reference_impls.measure``):
    a measurement runs an env, never the other way round.

Modules are found by path, so a new subpackage (``reference_impls/algorithms/<family>/``, say) is checked
with no change here. One idiom is not a cycle: a package whose ``__init__`` imports its submodules (the env
registry imports every env so that it registers) while they import the package's API (``from . import
register_env``). Edges from a module to a package that contains it are left out of the cycle check; an edge
into the package from a module *outside* it still counts (``envs.reports -> measure.evaluate -> rollout ->
envs -> envs.reports`` is a cycle).
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
#: the project's packages, bottom first: a module imports from its own package and from packages below it
LAYERS = ("atlas_data", "taxonomy", "papers", "reference_impls", "lab", "app", "benchmarks", "scripts")
ALLOWED = {pkg: set(LAYERS[:i]) for i, pkg in enumerate(LAYERS)}


def find_modules(root: Path, packages=LAYERS) -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (file, is a package's __init__)}`` for every ``.py`` file under the package folders."""
    found = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _known(name: str, modules) -> str | None:
    """The module ``name`` refers to: itself, else its nearest enclosing module (``pkg.mod.attr`` -> ``pkg.mod``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, is_package: bool, modules) -> dict[str, int]:
    """``{project module imported: first line}`` of one module, function-level imports included."""
    package = name if is_package else name.rpartition(".")[0]
    out: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module
            # ``from pkg import mod`` imports the submodule; ``from pkg import name`` the package
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                       for alias in node.names]
        else:
            continue
        for target in targets:
            target = _known(target, modules)
            if target and target != name:
                out.setdefault(target, node.lineno)
    return out


def import_graph(root: Path = ROOT, packages=LAYERS) -> nx.DiGraph:
    modules = find_modules(root, packages)
    graph = nx.DiGraph()
    for name, (path, is_package) in modules.items():
        graph.add_node(name, path=path.relative_to(root))
        for target, line in imports_of(name, path, is_package, modules).items():
            graph.add_edge(name, target, line=line)
    return graph


def _inside(module: str, package: str) -> bool:
    return module.startswith(package + ".")


def cycles(graph: nx.DiGraph, package: str) -> list[list[str]]:
    """One import cycle for each tangle (strongly connected set) of modules of ``package``, the registry idiom
    left out (see above); ``[]`` when the imports of ``package`` form a DAG."""
    sub = nx.DiGraph([(a, b) for a, b in graph.edges
                      if (a == package or _inside(a, package)) and (b == package or _inside(b, package))
                      and not _inside(a, b)])
    tangles = sorted((sorted(c) for c in nx.strongly_connected_components(sub) if len(c) > 1), key=len)
    return [[a for a, _ in nx.find_cycle(sub.subgraph(tangle), source=tangle[0])] for tangle in tangles]


def _shown(graph: nx.DiGraph, path: list[str]) -> str:
    return " -> ".join(f"{a} ({graph.nodes[a]['path']}:{graph.edges[a, b]['line']})"
                       for a, b in zip(path, path[1:])) + f" -> {path[-1]}"


def layer_violations(graph: nx.DiGraph, allowed=ALLOWED) -> list[str]:
    top = lambda module: module.split(".")[0]  # noqa: E731
    return [_shown(graph, [a, b]) for a, b in graph.edges
            if top(a) != top(b) and top(b) not in allowed[top(a)]]


# ---------------------------------------------------------------------------------------------------------------

GRAPH = import_graph()


def test_every_package_has_a_layer():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert packages <= set(LAYERS), f"place {sorted(packages - set(LAYERS))} in LAYERS"
    assert {"reference_impls.envs", "reference_impls.measure.evaluate", "reference_impls.rollout"} <= set(GRAPH)


def test_no_import_cycles_in_reference_impls():
    found = cycles(GRAPH, "reference_impls")
    assert not found, "import cycles (one per tangle):\n" + "\n".join(_shown(GRAPH, c + c[:1]) for c in found)


def test_packages_import_down_the_layers():
    bad = layer_violations(GRAPH)
    assert not bad, "imports against the layers " + " -> ".join(reversed(LAYERS)) + ":\n" + "\n".join(bad)


def test_environments_never_import_the_measurement_layer():
    bad = [_shown(GRAPH, [a, b]) for a, b in GRAPH.edges
           if _inside(a, "reference_impls.envs") and (b == "reference_impls.measure"
                                                       or _inside(b, "reference_impls.measure"))]
    assert not bad, "\n".join(bad)


def test_collecting_the_algorithms_leaves_transformers_unimported():
    """A node page and the Lab's catalog collect every row (``registry.implementations``), which imports torch;
    transformers is imported only to load a model or by the reference ``generate`` engine, so a cold page does not
    wait for it too. In a fresh interpreter, so only what the collection imports counts."""
    code = ("import sys\nfrom reference_impls import registry\nregistry.implementations()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'transformers'))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[-1] == "[]", "a module the registry imports imports transformers at its top"


def test_the_checks_see_a_cycle_and_a_layer_broken(tmp_path):
    """The checker on a small tree: the registry idiom passes, a function-level relative cycle is found, and so
    is an import up the layers."""
    files = {
        "low/__init__.py": "from . import a  # registers\n",
        "low/a.py": "from . import REGISTRY\nfrom .sub.b import f\n",
        "low/sub/__init__.py": "",
        "low/sub/b.py": "def f():\n    from ..c import g\n    return g\n",
        "low/c.py": "import os\nfrom low.sub import b\n",
        "high/__init__.py": "",
        "high/x.py": "from low.a import f\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    graph = import_graph(tmp_path, ("low", "high"))
    assert set(graph.successors("low.sub.b")) == {"low.c"} and set(graph.successors("low.c")) == {"low.sub.b"}
    assert sorted(map(sorted, cycles(graph, "low"))) == [["low.c", "low.sub.b"]]
    assert layer_violations(graph, {"low": set(), "high": {"low"}}) == []
    (tmp_path / "low/a.py").write_text("from high import x\n")
    assert layer_violations(import_graph(tmp_path, ("low", "high")), {"low": set(), "high": {"low"}}) == [
        "low.a (low/a.py:1) -> high.x"]
