"""Every list that a new algorithm, environment, page or catalog field must join (docs/extending.md): each test
here fails when one is added and a list it belongs in was not updated."""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app import routes

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def markdown_table_rows(text: str) -> list[list[str]]:
    """The cells of every table row of a Markdown text (header and separator rows included)."""
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.lstrip().startswith("|")]


# -- an algorithm ------------------------------------------------------------------------------------------

def test_every_algorithm_module_and_name_is_in_the_reference_impls_table():
    from reference_impls import registry

    rows = markdown_table_rows((DOCS / "reference_impls.md").read_text())
    table = " ".join(" ".join(row) for row in rows)
    for module in registry.algorithm_modules():
        family, leaf = module.__name__.split(".")[-2:]
        assert f"`{family}/{leaf}.py`" in table, f"docs/reference_impls.md's table does not name {family}/{leaf}.py"
    for name, cls in registry.algorithms().items():
        assert f"`{name}`" in table, f"docs/reference_impls.md's table does not name --algo {name} ({cls.__module__})"


def test_every_algorithm_has_a_row_in_an_algorithm_document():
    """A row whose first cell is one of the algorithm's taxonomy nodes (family headers, which open their base, left
    out) or its ``--algo`` name; algorithms that link no algorithm node (the agentic ones) are documented with their
    environments, which docs/README.md lists."""
    from reference_impls import registry
    from taxonomy import Taxonomy

    taxonomy = Taxonomy.load()
    rows = [row for name in ("algorithms_grpo_family.md", "algorithms_dpo_ppo_families.md")
            for row in markdown_table_rows((DOCS / name).read_text())]
    first_cells = {re.sub(r"[^a-z0-9]", "", row[0].lower()) for row in rows} | {row[0] for row in rows}
    for name in registry.algorithms():
        nodes = {node for impl in registry.implementations() if impl.algo == name for node in impl.nodes
                 if node.startswith("alg-") and not taxonomy.descendants(node)}
        if not nodes:
            continue
        assert nodes & first_cells or re.sub(r"[^a-z0-9]", "", name) in first_cells, (
            f"--algo {name} (nodes {sorted(nodes)}) has no row in docs/algorithms_*.md")


# -- an environment ----------------------------------------------------------------------------------------

def test_every_environment_has_a_document_in_the_index():
    from reference_impls.envs import ENVS

    index = (DOCS / "README.md").read_text()
    section = index[index.index("## Environments"):]
    section = section[:section.index("\n## ", 1)]
    for row in markdown_table_rows(section)[2:]:
        for link in re.findall(r"\]\(([^)]+)\)", row[0]):
            assert (DOCS / link).exists(), link
    listed = {name for row in markdown_table_rows(section)[2:] for name in re.findall(r"`([^`]+)`", row[1])}
    assert set(ENVS) <= listed, f"environments missing from docs/README.md's table: {sorted(set(ENVS) - listed)}"


# -- a page ------------------------------------------------------------------------------------------------

def test_every_page_is_timed_by_app_bench_or_says_why_not():
    from app.page_checks import COMPLETE, NOT_TIMED, page_of

    timed = {page_of(path) for path, _checks in COMPLETE.values()}
    assert timed | set(NOT_TIMED) == set(routes.PAGES), (
        f"pages in neither app.page_checks.COMPLETE nor NOT_TIMED: {sorted(set(routes.PAGES) - timed - set(NOT_TIMED))}")
    assert not timed & set(NOT_TIMED), "a page is both timed and said not to be"


def test_every_navigation_page_has_a_screenshot_in_the_tour():
    from app.page_checks import MID_RUN_SHOTS, page_of, screenshot_shots

    shots = screenshot_shots("RUN")
    shown = {page_of(path) for _file, path, _checks, _scroll in shots}
    listed = {p.path for p in routes.PAGES.values() if not p.hidden}
    assert listed <= shown, f"pages without a screenshot: {sorted(listed - shown)}"
    tour = (DOCS / "tour.md").read_text()
    pictured = set(re.findall(r"\]\(screenshots/([^)\s]+)\)", tour))
    files = {file for file, *_ in shots} | set(MID_RUN_SHOTS)
    assert files == pictured, (f"taken but not in docs/tour.md: {sorted(files - pictured)}; "
                               f"in docs/tour.md but never taken: {sorted(pictured - files)}")
    assert all((DOCS / "screenshots" / file).is_file() for file in files)


def test_preload_loads_every_module_an_explore_page_imports():
    """``app.serve.PRELOAD_MODULES`` loads what the Explore section's pages import (the Lab section's pages warm up
    in the background); checked in a fresh interpreter, so only what the preload itself imports counts."""
    from app import serve

    wanted = set()
    for page in routes.PAGES.values():
        if page.section != "Explore":
            continue
        for node in ast.parse((ROOT / "app" / page.script).read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"app.{a.name}" for a in node.names] if node.module == "app" else [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            wanted |= {n for n in names if n.split(".")[0] in ("app", "papers", "taxonomy", "atlas_data")}
    assert wanted, "no imports found: the views moved?"
    code = ("import importlib, json, sys\n"
            f"for m in {list(serve.PRELOAD_MODULES)!r}: importlib.import_module(m)\n"
            f"print(json.dumps(sorted(m for m in {sorted(wanted)!r} if m not in sys.modules)))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.splitlines()[-1]) == [], "add these to app.serve.PRELOAD_MODULES"


def test_presentation_index_names_every_module():
    import app.presentation as presentation

    modules = {p.stem for p in Path(presentation.__file__).parent.glob("*.py") if p.stem != "__init__"}
    indexed = set(re.findall(r"^    (\w+) {2,}", presentation.__doc__, re.M))
    assert modules == indexed, f"not in the index: {sorted(modules - indexed)}; no such module: {sorted(indexed - modules)}"


# -- a catalog field ---------------------------------------------------------------------------------------

#: fields of a work that the exports leave out, and why
NOT_EXPORTED = {
    "source": "where the import read the work (the survey's companion list); provenance, not a fact of the work",
    "survey_refs": "the survey's reference numbers: pointers into the survey, not into the work",
    "authors_source": "where the author list was read (docs/authors.md)",
    "authors_check": "whether a second source agrees with the author list (docs/authors.md)",
    "year_arxiv": "the year of the first arXiv version: read off the arXiv id, which every export carries",
}


def test_every_work_field_is_exported_or_said_why_not():
    from papers.export import EXPORT_FIELDS
    from papers.schema import Work

    fields = set(Work.model_fields)
    assert set(EXPORT_FIELDS) <= fields, f"exported but not a field: {sorted(set(EXPORT_FIELDS) - fields)}"
    assert fields - set(EXPORT_FIELDS) == set(NOT_EXPORTED), (
        f"neither exported nor in NOT_EXPORTED: {sorted(fields - set(EXPORT_FIELDS) - set(NOT_EXPORTED))}")


@pytest.mark.parametrize("doc", ["extending.md"])
def test_extending_names_files_that_exist(doc):
    """Every path docs/extending.md names (in backticks, with a folder) exists in the checkout."""
    text = (DOCS / doc).read_text()
    paths = {p for p in re.findall(r"`([\w./-]+/[\w.-]+)`", text) if not p.startswith(("<", "http"))
             and "<" not in p and "*" not in p}
    assert paths, "no paths found"
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"docs/extending.md names files that do not exist: {missing}"
