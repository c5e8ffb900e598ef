"""Shared base for spec models: strict about unknown fields, carries a schema version."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SPEC_SCHEMA_VERSION = 1


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
