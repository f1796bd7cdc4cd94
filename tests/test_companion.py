"""Companion-list rows: the section's columns, cells from the survey tables, the list's conventions."""
from pathlib import Path

import pytest

from papers.companion import companion_row
from papers.schema import Work

from inprocess import papers_cli

ROOT = Path(__file__).resolve().parents[1]


# expected rows written out by hand in the list's format (Sec4.1, Sec2.7, Sec4.3, Sec4.7, Sec5.1)
@pytest.mark.parametrize("key,section,row", [
    ("search-r1", "Sec4.1", "| Search-R1 | External | Qwen2.5-3B/7B-Base/Instruct | [Paper](https://arxiv.org/abs/2503.09516) "
                            "| [Code](https://github.com/PeterGriffinJin/Search-R1) |"),
    ("ppo", "Sec2.7", "| PPO | 2017 | Policy gradient | Yes | No | Policy ratio clipping | Reward | "
                      "[Paper](https://arxiv.org/abs/1707.06347) | - |"),
    ("torl", "Sec4.3", "| ToRL | Outcome | [Paper](https://arxiv.org/abs/2503.23383) | [Code](https://github.com/GAIR-NLP/ToRL) |"),
    ("camel", "Sec4.7", None),
    ("alfworld", "Sec5.1", "| ALFWorld | ②, ① | Embodied, Text Games | Text | [Paper](https://openreview.net/forum?id=0IOX0YcCdTn) "
                           "| [Code](https://github.com/alfworld/alfworld) |"),
])
def test_rows_in_the_lists_format(catalog, key, section, row):
    got = companion_row(catalog, catalog.get(key))
    assert got.section.startswith(section)
    if row:
        assert got.row == row
    cells = got.row.strip("|").split(" | ")
    assert len(cells) == got.header.splitlines()[0].count("|") - 1  # one cell per column


def test_camel_marks_and_repository_links(catalog):
    row = companion_row(catalog, catalog.get("camel")).row
    assert row.startswith("| CAMEL | ✗ | ✗ | - | [Paper](")
    verifiers = companion_row(catalog, catalog.get("verifiers")).row
    assert verifiers.endswith("| - | [Code](https://github.com/willccbb/verifiers) |")  # a repository is no paper


def test_pipes_are_escaped_and_unknown_cells_are_dashes(catalog):
    w = Work(key="mine", title="A | B", name="My | Agent", origin="user", nodes=("search-research",))
    got = companion_row(catalog.with_works([w]), w)
    assert got.row == "| My \\| Agent | - | - | - | - |"


def test_cli_companion_row():
    r = papers_cli("companion-row", "Search-R1", "--with-header", cwd=ROOT)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "<!-- Sec4.1 Task: Search & Research Agent -->"
    assert lines[1] == "| Method | Category | Base LLM | Link | Resource |" and lines[3].startswith("| Search-R1 | External |")
