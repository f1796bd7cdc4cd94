"""The year rule (papers.venues): a published work carries its venue's year, an unpublished one its first
arXiv version's; the arXiv year is kept as its own field."""
import pytest

from papers.venues import arxiv_year, is_journal, is_published, rule_year, venue_year
from papers.verification import apply_year_rule


def test_every_published_work_carries_its_venues_year(catalog):
    wrong = {w.key: (w.year, w.venue) for w in catalog if venue_year(w.venue) is not None and w.year != venue_year(w.venue)}
    assert wrong == {}
    # a published venue that names no year is a journal label ("JMLR"): the year is its source's
    assert all(is_journal(w.venue) for w in catalog if is_published(w.venue) and venue_year(w.venue) is None)


def test_every_unpublished_work_with_an_arxiv_id_carries_its_arxiv_year(catalog):
    wrong = {w.key: (w.year, w.arxiv_id) for w in catalog if not is_published(w.venue) and w.arxiv_id
             and w.year != arxiv_year(w.arxiv_id)}
    assert wrong == {}


def test_the_arxiv_year_is_its_own_field(catalog):
    assert all(w.year_arxiv == arxiv_year(w.arxiv_id) for w in catalog)
    assert sum(1 for w in catalog if w.year_arxiv and w.year != w.year_arxiv) > 0  # published a year after arXiv


@pytest.mark.parametrize("venue, arxiv_id, year", [
    ("ICLR 2026", "2509.24704", 2026), ("ICLR 2025 Workshop on Reasoning and Planning for LLMs", "", 2025),
    ("NeurIPS 2025 Datasets and Benchmarks", "2412.14161", 2025), ("Computer Games Workshop at ICML/IJCAI 2018", "", 2018),
    ("arXiv", "2412.10400", 2024), ("Web/blog", "", None), ("JMLR", "1511.00001", None), ("", "hep-th/9901001", 1999),
    ("OpenReview", "", None),
])
def test_rule_year(venue, arxiv_id, year):
    assert rule_year(venue, arxiv_id) == year


def test_the_rule_rewrites_a_wrong_year_and_can_fail():
    rows = [{"key": "a", "year": "2025", "year_arxiv": "", "venue": "ICLR 2026", "arxiv_id": "2509.24704"},
            {"key": "b", "year": "2025", "year_arxiv": "", "venue": "arXiv", "arxiv_id": "2412.10400"},
            {"key": "c", "year": "2016", "year_arxiv": "", "venue": "JMLR", "arxiv_id": ""}]
    assert apply_year_rule(rows) == 4
    assert [(r["year"], r["year_arxiv"]) for r in rows] == [("2026", "2025"), ("2024", "2024"), ("2016", "")]
    assert apply_year_rule(rows) == 0


def test_the_work_page_shows_the_arxiv_year_beside_a_later_venue_year(catalog):
    from app.presentation.work import work_page

    later = next(w for w in catalog if w.year_arxiv and w.year and w.year > w.year_arxiv)
    facts = dict(work_page(catalog, later.key).facts)
    assert facts["Year"] == str(later.year) and facts["First on arXiv"] == str(later.year_arxiv)
    same = next(w for w in catalog if w.year_arxiv and w.year == w.year_arxiv)
    assert "First on arXiv" not in dict(work_page(catalog, same.key).facts)
