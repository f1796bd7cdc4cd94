"""Authors: the shipped data (coverage, checks, strict loading), name parsing and the author filter."""

import pytest

from papers import Catalog
from papers.authors import (UnknownAuthorError, bibtex_author, display_authors, is_truncated, matches_author,
                            split_authors, works_by)
from taxonomy import DataError


def test_coverage_and_second_source(catalog):
    survey = [w for w in catalog if w.origin == "survey"]
    with_authors = [w for w in survey if w.authors]
    assert len(with_authors) >= 0.95 * len(survey)
    checks = {w.key: w.authors_check for w in survey}
    assert {w.key for w in survey if not w.authors} == {k for k, c in checks.items() if c == "unknown"}
    # a check names where it was done
    agreed = [w for w in survey if w.authors_check == "agrees"]
    assert len(agreed) >= 200 and all("checked against" in w.authors_source for w in agreed)


def test_known_author_lists(catalog):
    assert catalog.get("search-r1").authors.startswith("Bowen Jin and Hansi Zeng")
    assert catalog.get("search-r1").authors.endswith("and Jiawei Han")
    assert catalog.get("ppo").authors == "John Schulman and Filip Wolski and Prafulla Dhariwal and Alec Radford and Oleg Klimov"
    # a companion-list work, read from its own repository's citation block
    assert catalog.get("luffy").authors.startswith("Jianhao Yan")
    # a list no source gave in full stays marked as cut ("et al."); DAPO's, once cut, is now complete (35 names)
    assert is_truncated(catalog.get("gemini-robotics").authors)
    assert not is_truncated(catalog.get("dapo").authors) and catalog.get("dapo").authors.count(" and ") == 34


@pytest.mark.parametrize("text,want", [
    ("Bowen Jin and Hansi Zeng", ["Bowen Jin", "Hansi Zeng"]),
    ("Jin, Bowen and Zeng, Hansi", ["Bowen Jin", "Hansi Zeng"]),
    ("Bowen Jin, Hansi Zeng and Jiawei Han", ["Bowen Jin", "Hansi Zeng", "Jiawei Han"]),
    ("Bowen Jin, Hansi Zeng, and Jiawei Han", ["Bowen Jin", "Hansi Zeng", "Jiawei Han"]),
    ("Jin, Bowen", ["Bowen Jin"]),
    ("{Qwen Team} and OpenAI", ["Qwen Team", "OpenAI"]),
    ("Ludwig van Beethoven and others", ["Ludwig van Beethoven"]),
    ("", []),
])
def test_split_authors(text, want):
    assert [p.display for p in split_authors(text)] == want


def test_name_forms():
    (p,) = split_authors("Ludwig van Beethoven")
    assert (p.given, p.family, p.sort_form) == ("Ludwig", "van Beethoven", "van Beethoven, Ludwig")
    assert bibtex_author("Bowen Jin and {Qwen Team} and others") == "Jin, Bowen and {Qwen Team} and others"
    assert display_authors("A B and C D and E F", limit=2) == "A B, C D, et al."
    assert display_authors("A B and C D") == "A B, C D"


def test_matches_author_is_exact_on_names():
    authors = "Bowen Jin and Jiawei Han and Marc-Alexandre Côté"
    assert matches_author(authors, "Jiawei Han") and matches_author(authors, "jiawei  han")
    assert matches_author(authors, "Han, Jiawei") and matches_author(authors, "Han")
    assert matches_author(authors, "Marc-Alexandre Cote")
    assert not matches_author(authors, "Jiawei Hang") and not matches_author(authors, "Jiawei")
    assert not matches_author(authors, "")


def test_works_by(catalog):
    keys = works_by(catalog, ["Jiawei Han"])
    assert "search-r1" in keys and all(matches_author(catalog.get(k).authors, "Jiawei Han") for k in keys)
    with pytest.raises(UnknownAuthorError) as e:
        works_by(catalog, ["Jiawei Hann"])
    assert "Jiawei Han" in str(e.value)


def test_search_index_filters_by_keys(catalog):
    from papers.search import SearchFilters, SearchIndex

    index = SearchIndex.load_or_build(catalog)
    keys = works_by(catalog, ["Jiawei Han"])
    res = index.search("", k=100, filters=SearchFilters(keys=keys))
    assert sorted(h.key for h in res.hits) == sorted(keys) and res.total == len(keys)
    assert index.search("search", k=10, filters=SearchFilters(keys=[])).total == 0


@pytest.mark.parametrize("row,field", [
    ("nope,A B,1,,survey ref [1],agrees,x", "key"),
    ("ppo,A B,2,,survey ref [1],agrees,x", "n_authors"),
    ("ppo,,,,,agrees,", "authors"),
    ("ppo,A B,1,,survey ref [1],maybe,", "check"),
])
def test_bad_authors_file_names_row_and_field(data_copy, row, field):
    papers_dir, tax_dir = data_copy
    path = papers_dir / "authors.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], row, *[ln for ln in lines[1:] if not ln.startswith("ppo,")]]) + "\n", encoding="utf-8")
    from taxonomy import Taxonomy

    with pytest.raises(DataError) as e:
        Catalog.load(papers_dir, taxonomy=Taxonomy.load(tax_dir / "nodes.yaml", tax_dir / "descriptions.yaml"))
    assert "authors.csv" in str(e.value) and "row 2" in str(e.value) and f"'{field}'" in str(e.value)


def test_catalog_loads_without_authors_file(data_copy):
    papers_dir, tax_dir = data_copy
    (papers_dir / "authors.csv").unlink()
    from taxonomy import Taxonomy

    cat = Catalog.load(papers_dir, taxonomy=Taxonomy.load(tax_dir / "nodes.yaml", tax_dir / "descriptions.yaml"))
    assert not any(w.authors for w in cat)


def test_the_product_never_reads_the_author_sources():
    """Only scripts/ read shared/author-sources; the shipped packages read papers/data/authors.csv."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    reads = re.compile(r"author-sources|^\s*(import|from)\s+(scripts\.)?import_authors\b", re.M)
    offenders = [str(f.relative_to(root)) for pkg in ("app", "papers", "atlas_data", "taxonomy", "lab", "reference_impls")
                 for f in (root / pkg).rglob("*.py") if reads.search(f.read_text(encoding="utf-8"))]
    assert offenders == []
