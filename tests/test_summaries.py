"""Every work has a one-sentence summary in our own words (issue: describe every work)."""
import re

from papers.overlap import copied_runs, load_survey_shingles, overlap_report, shingle_hashes


def test_every_work_has_a_summary(catalog):
    for w in catalog:
        n = len(w.summary.split())
        assert 15 <= n <= 35, (w.key, n)
        assert len(re.findall(r"[.!?](\s|$)", w.summary.rstrip())) <= 2, w.key  # one sentence (abbreviations allowed)
        assert w.summary_confidence in ("high", "low")
        assert len(w.keywords) <= 8
    assert len({w.summary for w in catalog}) == len(catalog)


def test_no_summary_or_description_copies_the_survey(catalog):
    texts = [(w.key, w.summary) for w in catalog] + [(n.id, n.description) for n in catalog.taxonomy]
    assert overlap_report(texts) == []


def test_overlap_check_can_fail():
    survey = shingle_hashes("the model learns to call a search engine during multi turn reasoning with rewards")
    mine = "Here the model learns to call a search engine during multi turn reasoning, as shown."
    assert copied_runs(mine, survey) == [
        "the model learns to call a search engine",
        "model learns to call a search engine during",
        "learns to call a search engine during multi",
        "to call a search engine during multi turn",
        "call a search engine during multi turn reasoning",
    ]
    assert overlap_report([("mine", mine)], survey) == [("mine", "the model learns to call a search engine")]
    assert copied_runs("An entirely different sentence about Minecraft skills and code libraries here.", survey) == []


def test_shipped_hashes_are_real():
    survey = load_survey_shingles()
    assert len(survey) > 5000 and all(re.fullmatch(r"[0-9a-f]{16}", h) for h in list(survey)[:100])
