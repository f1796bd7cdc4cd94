"""Issue 45's smaller items: documentation paths as links to the app's document page, the Work page's title
variant, /overview, the Lab preset notes per environment."""
from app import routes
import pytest

from app.presentation.docs import doc_file, doc_markdown, doc_names, link_doc_paths
from app.presentation.source import source_file, source_text


def test_doc_paths_become_links_to_existing_documents_only():
    text = "How often: docs/axis_inference.md. Missing: docs/no-such-doc.md. Linked: [docs/security.md](x)"
    out = link_doc_paths(text)
    assert f"[docs/axis_inference.md]({routes.doc('axis_inference.md').url})." in out
    assert "Missing: docs/no-such-doc.md." in out and "[docs/security.md](x)" in out
    assert routes.doc("security.md").url == "docs?path=security.md"


def test_source_paths_become_links_to_the_source_page():
    out = link_doc_paths("The loop: reference_impls/rollout.py; the preset: lab/recipes/smollm2.yaml; "
                         "missing: reference_impls/no_such.py; tests: tests/reference_impls/test_stats.py.")
    assert f"[reference_impls/rollout.py]({routes.source('reference_impls/rollout.py').url});" in out
    assert routes.source("reference_impls/rollout.py").url == "source?path=reference_impls%2Frollout.py"
    assert f"[lab/recipes/smollm2.yaml]({routes.source('lab/recipes/smollm2.yaml').url})" in out
    # a missing file, and a folder the app does not show (inside another path: not even its tail)
    assert "missing: reference_impls/no_such.py;" in out and "tests: tests/reference_impls/test_stats.py." in out


def test_paths_in_code_links_and_tags_stay_as_written():
    doc = routes.doc("compare.md").url
    for kept in ("`docs/compare.md`", "``a `docs/compare.md` b``", "[the method](docs/compare.md)",
                 "![chart](docs/compare.md)", "[docs/compare.md](https://example.org/x)", "<docs/compare.md>",
                 '<a href="docs/compare.md">', "```\ndocs/compare.md\n```", "~~~md\nreference_impls/rollout.py\n~~~",
                 "    docs/compare.md  (an indented code line)", "mydocs/compare.md", "/docs/compare.md",
                 "docs/compare.mdx", "docs/compare.md/x"):
        assert link_doc_paths(kept) == kept, kept
    # text around them is still linked, once
    out = link_doc_paths("See `docs/compare.md` and docs/compare.md, then [x](y) docs/compare.md.")
    assert out == f"See `docs/compare.md` and [docs/compare.md]({doc}), then [x](y) [docs/compare.md]({doc})."
    assert link_doc_paths(out) == out  # linking twice changes nothing
    fenced = link_doc_paths("```\ndocs/compare.md\n```\nafter docs/compare.md")
    assert fenced == f"```\ndocs/compare.md\n```\nafter [docs/compare.md]({doc})"


def test_escaped_markdown_keeps_its_text_and_links_the_real_file():
    from app.presentation.common import md_escape

    text = md_escape("GRPO family: docs/algorithms_grpo_family.md (and reference_impls/envs/memory.py).")
    out = link_doc_paths(text)
    assert (f"[docs/algorithms\\_grpo\\_family.md]({routes.doc('algorithms_grpo_family.md').url})"
            in out)
    assert f"\\(and [reference\\_impls/envs/memory.py]({routes.source('reference_impls/envs/memory.py').url})\\)." in out
    # user text cannot close the link the helper opens: its brackets stay escaped
    tricky = link_doc_paths(md_escape("docs/compare.md](javascript:alert(1))"))
    assert tricky == f"[docs/compare.md]({routes.doc('compare.md').url})\\]\\(javascript\\:alert\\(1\\)\\)"


def test_source_files_never_leave_their_folders():
    assert source_file("reference_impls/rollout.py") is not None
    assert "def " in source_text("reference_impls/rollout.py")
    for bad in ("reference_impls/../README.md", "reference_impls/../../etc/passwd.py", "/etc/hosts.py",
                "tests/conftest.py", "docs/compare.md", "reference_impls/rollout.pyc", ".venv/x.py", "", None,
                "reference_impls/no_such.py"):
        assert source_file(bad) is None, bad
    with pytest.raises(KeyError, match="no source file"):
        source_text("tests/conftest.py")


def test_node_page_text_links_its_documentation_paths():
    from papers import Catalog

    from app.presentation.node_sections import NodeContext, node_sections

    sections = dict(node_sections(NodeContext(Catalog.load(), "planning-external-guide", load_grids=list)))
    texts = [p.body for b in sections["value search"] for p in b.parts if p.kind == "markdown"]
    assert any(f"[docs/env_textgames_value.md]({routes.doc('env_textgames_value.md').url})" in t for t in texts)


def test_doc_names_never_leave_the_docs_folder():
    assert doc_file("security.md") is not None and "security.md" in doc_names()
    for bad in ("../README.md", "redesign/../security.md", "/etc/passwd.md", "security.txt", "", "a b.md", None):
        assert doc_file(bad) is None, bad


def test_a_document_links_its_neighbours_inside_the_app():
    text = doc_markdown("README.md")
    assert f"]({routes.doc('ARCHITECTURE.md').url})" in text
    assert "](../README.md)" in text  # outside docs/: left as written
    try:
        doc_markdown("../README.md")
    except KeyError as err:
        assert "no document '../README.md'" in str(err)
    else:
        raise AssertionError("a name outside docs/ must be refused")


def test_work_page_leaves_out_a_title_variant_that_differs_only_in_case():
    from papers import Catalog

    from app.presentation.work import work_page

    catalog = Catalog.load()  # its own: one work is changed below
    label = "Title in the survey's reference list"
    work = catalog.get("deepseekmath")
    assert work.title_original and work.title_original != work.title  # the stored list lost the case
    assert label not in dict(work_page(catalog, "deepseekmath").facts)
    catalog.works["deepseekmath"] = work.model_copy(update={"title_original": "DeepSeekMath (v2): another title"})
    assert dict(work_page(catalog, "deepseekmath").facts)[label] == "DeepSeekMath (v2): another title"


def test_the_default_page_path_is_served():
    """Streamlit serves the default page at "/" and reserves its path; /overview is a hidden alias page that
    redirects there (app/streamlit_app.py), so the route's own URL works."""
    import ast
    from pathlib import Path

    source = (Path(routes.__file__).parent / "streamlit_app.py").read_text()
    assert "ui.redirect" in source and 'p.path + "-home" if p.default' in source
    ast.parse(source)
    assert [p.path for p in routes.PAGES.values() if p.default] == ["overview"]


def test_preset_notes_per_environment():
    from lab.recipes import load, note

    assert note("quick", "calculator") == load("quick")["note"]
    assert note("quick", "memory") == load("quick")["notes"]["memory"] != load("quick")["note"]
