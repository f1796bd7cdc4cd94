"""Issue 45's smaller items: documentation paths as links to the app's document page, the Work page's title
variant, /overview, the Lab preset notes per environment."""
from app import routes
from app.presentation.docs import doc_file, doc_markdown, doc_names, link_doc_paths


def test_doc_paths_become_links_to_existing_documents_only():
    text = "How often: docs/axis_inference.md. Missing: docs/no-such-doc.md. Linked: [docs/security.md](x)"
    out = link_doc_paths(text)
    assert f"[docs/axis_inference.md]({routes.doc('axis_inference.md').url})." in out
    assert "Missing: docs/no-such-doc.md." in out and "[docs/security.md](x)" in out
    assert routes.doc("security.md").url == "docs?path=security.md"


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
