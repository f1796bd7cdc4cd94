"""The survey's 10 tables, each a DataFrame with its caption; rows link to works by ``work_key``."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from papers.csvio import read_csv_rows


@dataclass(frozen=True)
class SurveyTable:
    name: str  # file stem, e.g. "table05_code_swe_agents"
    number: int
    caption: str
    frame: pd.DataFrame

    @property
    def title(self) -> str:
        """Caption up to the source note, e.g. 'Table 5: A summary of RL methods for code ...'."""
        return self.caption.split(" Source:")[0]

    def rows_for(self, keys: set[str]) -> pd.DataFrame:
        if "work_key" not in self.frame.columns:
            return self.frame.iloc[0:0]
        # a row may name several works ("skyrl-v0;skyrl-v0-1")
        hits = self.frame["work_key"].map(lambda v: not keys.isdisjoint(k.strip() for k in v.split(";")))
        return self.frame[hits]


def load_tables(folder: Path) -> dict[str, SurveyTable]:
    tables: dict[str, SurveyTable] = {}
    for path in sorted(Path(folder).glob("table*.csv")):
        caption, rows = read_csv_rows(path, skip_comment_lines=True)
        m = re.match(r"table(\d+)", path.stem)
        frame = pd.DataFrame([r for _, r in rows]).fillna("")
        frame.attrs["lines"] = [line for line, _ in rows]
        tables[path.stem] = SurveyTable(path.stem, int(m.group(1)) if m else 0, caption or path.stem, frame)
    return tables
