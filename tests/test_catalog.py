import csv
from pathlib import Path

import pytest
import yaml

from papers import Catalog, UnknownKeyError
from papers.catalog import DATA_DIR
from taxonomy import DataError, Taxonomy

ROOT = Path(__file__).resolve().parents[1]


def work_rows(papers_dir: Path = ROOT / "papers" / "data") -> int:
    """The works of a works.csv, counted by the csv module alone (not the loader under test)."""
    with open(papers_dir / "works.csv", newline="") as f:
        return sum(1 for _ in csv.DictReader(f))


# the shipped works.csv's columns, counted from its header (a column added later must not break the test)
N_WORK_COLUMNS = len(next(csv.reader([(DATA_DIR / "works.csv").read_text(encoding="utf-8").splitlines()[0]])))


def test_counts(catalog):
    s = catalog.stats()
    nodes = yaml.safe_load((ROOT / "taxonomy" / "data" / "nodes.yaml").read_text())["nodes"]
    tables = list((ROOT / "papers" / "data" / "tables").glob("*.csv"))
    assert (s["works"], s["nodes"], s["tables"]) == (work_rows(), len(nodes), len(tables))
    assert (s["nodes"], s["tables"]) == (140, 10)  # the survey's taxonomy and tables, all of them
    assert s["nodes_without_description"] == 0
    assert s["works_without_node"] == 0
    assert s["works_without_summary"] == 0


def test_title_casing_restored(catalog):
    w = catalog.get("search-r1")
    assert w.title.startswith("Search-R1: Training LLMs")
    assert w.title_original.startswith("Search-r1: Training llms")
    assert catalog.get("deepseek-r1").title.startswith("DeepSeek-R1:")
    # never invents capitals: lower-casing both sides gives the same text, except where a reviewed
    # change took the title as printed by an independent source (papers/data/verification)
    from papers.verification import VERIFICATION_DIR, accepted, load_changes

    verified = {k: c.proposed for (k, f), c in accepted(load_changes(VERIFICATION_DIR / "changes.csv")).items() if f == "title"}
    assert verified, "no verified title: the exception below would be untested"
    for work in catalog:
        if work.key in verified:
            assert work.title == verified[work.key], work.key
        else:
            assert work.title.lower() == (work.title_original or work.name).lower(), work.key


def test_lookups(catalog):
    assert catalog.resolve("Search-R1").key == "search-r1"
    assert catalog.by_arxiv("1707.06347").key == "ppo"
    assert catalog.by_arxiv("1707.06347v2").key == "ppo"
    assert catalog.by_alias("group relative policy optimization").key == "deepseekmath"
    with pytest.raises(UnknownKeyError) as e:
        catalog.get("serch-r1")
    assert "search-r1" in e.value.suggestions


def test_placements_expand(catalog):
    assert catalog.placements("search-r1") == list(catalog.get("search-r1").nodes)
    expanded = catalog.placements("search-r1", expand=True)
    assert {"tasks", "search-research"} <= set(expanded)


def test_table_rows(catalog):
    rows = catalog.table_rows_for_work("ppo")
    assert "table02_rl_algorithm_variants" in rows
    assert rows["table02_rl_algorithm_variants"].iloc[0]["method"] == "PPO"
    node_rows = catalog.table_rows_for_node("code")
    assert "table05_code_swe_agents" in node_rows
    assert len(node_rows["table05_code_swe_agents"]) >= 20


def test_select_filters(catalog):
    bench = catalog.select(kind="benchmark")
    assert bench and all(w.kind == "benchmark" for w in bench)
    recent = catalog.select(node="math", year_from=2025, year_to=2025)
    assert recent and all(w.year == 2025 for w in recent)
    assert {w.key for w in recent} <= {w.key for w in catalog.works_in("math")}
    with pytest.raises(UnknownKeyError):
        catalog.select(kind="paper")


def _corrupt(data_copy, transform):
    papers_dir, tax_dir = data_copy
    path = papers_dir / "works.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(transform(lines)))
    return papers_dir, tax_dir


def _load(papers_dir, tax_dir):
    return Catalog.load(papers_dir, Taxonomy.load(tax_dir / "nodes.yaml", tax_dir / "descriptions.yaml"))


def _without_titles(line: str) -> str:
    """A works.csv row with its title and title_original emptied (whatever they say: a verified title may change)."""
    import csv
    import io

    row = next(csv.reader([line]))
    row[2] = row[3] = ""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(row)
    return out.getvalue()


@pytest.mark.parametrize(
    "transform,expect",
    [
        (lambda ls: ls + [ls[1]], ["row 575", "field 'key'", "duplicate key 'ppo'"]),
        (lambda ls: [ls[0], ls[1].replace("introduction;alg-ppo", "introduction;alg-ppoo")] + ls[2:], ["row 2", "field 'nodes'", "unknown node 'alg-ppoo'", "alg-ppo"]),
        (lambda ls: [ls[0], _without_titles(ls[1])] + ls[2:], ["row 2", "field 'title'", "missing title"]),
        (lambda ls: [ls[0], ls[1].replace(",2017,", ",20x7,")] + ls[2:], ["row 2", "field 'year'", "'20x7' is not a year"]),
        (lambda ls: [ls[0], ls[1].replace("ppo,PPO,", 'ppo,"PPO"x,', 1)] + ls[2:], ["row 2", "broken CSV quoting"]),
        (lambda ls: [ls[0], ls[1].replace("ppo,PPO,", 'ppo,"PPO,', 1)] + ls[2:], ["row 2", "broken CSV quoting", "parser stopped at line"]),
        (lambda ls: ls[:3] + [ls[3].rstrip("\n") + ',extra\n'] + ls[4:], ["row 4", f"expected {N_WORK_COLUMNS} fields"]),
    ],
    ids=["duplicate-key", "unknown-node", "missing-title", "bad-year", "broken-quoting", "unterminated-quote", "extra-field"],
)
def test_bad_works_file_named(data_copy, transform, expect):
    papers_dir, tax_dir = _corrupt(data_copy, transform)
    with pytest.raises(DataError) as e:
        _load(papers_dir, tax_dir)
    msg = str(e.value)
    assert "works.csv" in msg
    for part in expect:
        assert part in msg, msg


def test_bad_summaries_named(data_copy):
    papers_dir, tax_dir = data_copy
    path = papers_dir / "summaries.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2] + lines[3:]))  # drop one work's summary
    with pytest.raises(DataError, match=r"summaries.csv.*1 works have no summary"):
        _load(papers_dir, tax_dir)
    path.write_text("".join(lines + [lines[1]]))
    with pytest.raises(DataError, match=r"summaries.csv, row \d+, field 'key'"):
        _load(papers_dir, tax_dir)


def test_shipped_data_loads_unchanged(data_copy):
    papers_dir, tax_dir = data_copy
    assert len(_load(papers_dir, tax_dir)) == work_rows(papers_dir) > 0


def test_bad_table_row_named(data_copy):
    papers_dir, tax_dir = data_copy
    t = papers_dir / "tables" / "table02_rl_algorithm_variants.csv"
    t.write_text(t.read_text().replace(",ppo,survey", ",ppo-typo,survey", 1))
    with pytest.raises(DataError, match=r"table02_rl_algorithm_variants.csv, row 3, field 'work_key': unknown work 'ppo-typo'"):
        _load(papers_dir, tax_dir)
