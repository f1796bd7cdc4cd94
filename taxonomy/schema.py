"""Validated shape of a taxonomy node."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Dimension = Literal["capability", "task", "algorithm", "environment", "framework", "foundation"]
DIMENSIONS: tuple[str, ...] = ("capability", "task", "algorithm", "environment", "framework", "foundation")


class Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str = Field(min_length=1)
    parent: str | None = None
    dimension: Dimension
    survey_section: str = ""
    description: str = Field(min_length=1)
