"""app.presentation.search: what the Search page offers to export and when it offers "More like the top 3"."""
from app.presentation.search import export_choices, show_more_like_top


def test_export_offers_the_top_results_first_and_says_which_in_the_file_name():
    top, every = export_choices(171)
    assert (top.label, top.count, top.stem) == ("The top 10 (ranked)", 10, "atlas-search-top10")
    assert (every.label, every.count, every.stem) == ("All 171 matches", 171, "atlas-search-all171")
    [only] = export_choices(4)  # fewer matches than the top: one set, named by its size
    assert (only.count, only.stem) == (4, "atlas-search-top4")
    assert export_choices(30, like=True)[1].label == "All 30 similar works"


def test_more_like_the_top_3_needs_a_typed_query():
    assert show_more_like_top("memory agents", like=False, hits=10)
    assert not show_more_like_top("", like=False, hits=10)  # browsing the catalog newest first
    assert not show_more_like_top("  ", like=False, hits=10)
    assert not show_more_like_top("memory", like=True, hits=10)
    assert not show_more_like_top("memory", like=False, hits=1)
