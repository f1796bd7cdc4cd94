"""Validated shape of a work (a paper, system, benchmark or framework) in the catalog."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Kind = Literal["method", "benchmark", "environment", "framework", "survey", "foundation"]
KINDS: tuple[str, ...] = ("method", "benchmark", "environment", "framework", "survey", "foundation")


class Work(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
    name: str = ""
    title: str = Field(min_length=1)
    title_original: str = ""
    # the year a citation gives: a published work's venue year, else its first arXiv version's (papers.venues)
    year: int | None = Field(default=None, ge=1900, le=2100)
    # the year of the first arXiv version (from the id's yymm), whatever the venue; None without an id
    year_arxiv: int | None = Field(default=None, ge=1900, le=2100)
    venue: str = ""
    arxiv_id: str = ""
    url: str = ""
    code_url: str = ""
    nodes: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = ()
    kind: Kind = "method"
    source: str = ""
    aliases: tuple[str, ...] = ()
    survey_refs: tuple[str, ...] = ()
    reward_type: str = ""
    tags: tuple[str, ...] = ()
    summary: str = ""
    keywords: tuple[str, ...] = ()
    summary_confidence: Literal["high", "low", ""] = ""
    origin: Literal["survey", "user"] = "survey"
    # the author list, "First Last and First Last" (papers.authors); survey works: from data/authors.csv
    authors: str = ""
    # survey works: where the authors were read, and whether a second source agrees
    # ("agrees", "first-author", "differs", "single-source", "unknown"; see scripts/import_authors.py)
    authors_source: str = ""
    authors_check: str = ""
    # user works only: the user's own abstract
    abstract: str = ""

    @field_validator("title")
    @classmethod
    def _title_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("title is empty")
        return v

    @property
    def display_name(self) -> str:
        """The short name when the survey gives one, else the title."""
        return self.name or self.title

    @property
    def has_code(self) -> bool:
        return bool(self.code_url)

    @property
    def arxiv_url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv_id}" if self.arxiv_id else ""


LIST_FIELDS = ("nodes", "algorithms", "aliases", "survey_refs", "tags", "keywords")
