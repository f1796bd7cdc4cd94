"""The Algorithms page's data, computed without Streamlit: the survey's Table 2 with the catalog's links
(works using each variant, its taxonomy node, whether it runs in the Lab, the verdict of each claim about it:
issue 61), its filters and the side-by-side comparison of chosen variants.

    frame = algorithm_frame(cat)
    shown = AlgorithmFilter(families=("DPO family",)).apply(frame)
    side_by_side = compare_algorithms(frame, ["PPO", "GRPO"])
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from app import routes
from app.presentation.claims import verdict_column
from app.presentation.common import TABLE2, algorithm_nodes, work_label
from app.presentation.lab import lab_link
from papers.catalog import Catalog


COMPARE_FIELDS = [
    ("family", "Family"), ("year", "Year"), ("objective_type", "Objective"), ("clip", "Clip"),
    ("kl_penalty", "KL penalty"), ("key_mechanism", "Key mechanism"), ("signal", "Signal"),
    ("works_using", "Works in the catalog using it"), ("work", "Paper"),
]


def algorithm_frame(catalog: Catalog) -> pd.DataFrame:
    """The survey's Table 2 with the catalog's links: one row per algorithm variant."""
    t = catalog.tables[TABLE2].frame.copy()
    algo_nodes = algorithm_nodes(catalog)
    g = catalog.graph
    t["year"] = pd.to_numeric(t["year"], errors="coerce").astype("Int64")
    t["node"] = t["method"].map(lambda m: algo_nodes.get(m.lower()))
    t["works_using"] = t["method"].map(lambda m: len(g.works_using(m)))
    t["work"] = t["work_key"].map(lambda k: work_label(catalog.works[k]) if k in catalog.works else "")
    t["open"] = t["work_key"].map(lambda k: routes.work(k).url if k else None)
    t["lab"] = t["node"].map(lambda n: lab_link(n).url if n and lab_link(n) else None)
    t["runnable"] = t["lab"].notna()
    t["claims"] = verdict_column(t["node"].tolist())  # issue 61: each claim's verdict ("" without a claim)
    cols = ["family", "method", "year", "objective_type", "clip", "kl_penalty", "key_mechanism", "signal",
            "works_using", "work", "open", "runnable", "lab", "claims", "node", "work_key", "survey_ref", "source"]
    return t[cols].reset_index(drop=True)


@dataclass(frozen=True)
class AlgorithmFilter:
    families: tuple[str, ...] = ()
    clip: str = ""          # "", "Yes", "No"
    kl: tuple[str, ...] = ()
    text: str = ""

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = frame
        if self.families:
            out = out[out["family"].isin(self.families)]
        if self.clip:
            out = out[out["clip"].str.lower() == self.clip.lower()]
        if self.kl:
            out = out[out["kl_penalty"].isin(self.kl)]
        if self.text.strip():
            needle = self.text.strip().lower()
            hay = out[["method", "objective_type", "key_mechanism", "signal", "family"]].astype(str).agg(" ".join, axis=1)
            out = out[hay.str.lower().str.contains(needle, regex=False)]
        return out


def compare_algorithms(frame: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """Chosen variants side by side: one column per method, one row per attribute."""
    rows = frame.set_index("method")
    chosen = [m for m in methods if m in rows.index]
    out = pd.DataFrame(
        {m: [("" if pd.isna(rows.loc[m, f]) else str(rows.loc[m, f])) for f, _ in COMPARE_FIELDS] for m in chosen},
        index=[label for _, label in COMPARE_FIELDS],
    )
    out.index.name = "attribute"
    return out


def differing_attributes(comparison: pd.DataFrame) -> list[str]:
    """Attributes where the compared variants disagree."""
    if comparison.shape[1] < 2:
        return []
    return [idx for idx, row in comparison.iterrows() if row.nunique() > 1]
