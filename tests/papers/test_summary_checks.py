"""The summary confidence mark says how a summary was checked; vague summaries are found by a heuristic."""
import csv
import shutil
from pathlib import Path

import pytest

from papers import Catalog
from papers.verification import vague_summary
from taxonomy import DataError

DATA = Path(__file__).resolve().parents[2] / "papers" / "data"


def test_high_confidence_means_checked_against_the_paper(catalog):
    with (DATA / "summaries.csv").open(encoding="utf-8", newline="") as f:
        rows = {r["key"]: r for r in csv.DictReader(f)}
    high = [w.key for w in catalog if w.summary_confidence == "high"]
    assert high, "no summary is checked: the rule below would be untested"
    assert all(rows[k]["checked"] == "paper" and rows[k]["checked_source"] for k in high)
    assert all(rows[w.key]["checked"] == "none" for w in catalog if w.summary_confidence == "low")


@pytest.mark.parametrize("edit, field", [
    ({"confidence": "high", "checked": "none", "checked_source": ""}, "confidence"),
    ({"confidence": "high", "checked": "paper", "checked_source": ""}, "checked_source"),
    ({"confidence": "low", "checked": "guessed"}, "checked"),
])
def test_a_mark_that_does_not_match_the_check_is_refused(tmp_path, edit, field):
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    path = data / "summaries.csv"
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    rows[0].update(edit)
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(DataError, match=rf"summaries.csv, row 2, field '{field}'"):
        Catalog.load(data)


def test_vague_summary_heuristic():
    title = "A survey of direct preference optimization"
    assert vague_summary(title, "A 2025 review of direct preference optimization, cited alongside other alignment "
                                "surveys when the introduction lists RLHF extensions such as RLAIF and DPO.") == "placement"
    assert vague_summary(title, "Survey of direct preference optimization.") == "restates title"
    assert vague_summary(title, "Reviews DPO variants by loss design, data construction, on-policy sampling and "
                                "reference-free objectives, comparing their stability and benchmark results.") == ""


def test_no_summary_checked_against_the_paper_is_vague(catalog):
    checked = [w for w in catalog if w.summary_confidence == "high"]
    assert [w.key for w in checked if vague_summary(w.title, w.summary)] == []
