"""JSON Schemas of the spec files, so editors validate and complete hand-written YAML.

A YAML file opts in with a first line such as
``# yaml-language-server: $schema=../schemas/scenario.json``. The schemas come from the pydantic
models, patched where a model accepts a shorthand that pydantic cannot see (a ``mode='before'``
validator): an agent, a simulator or a grader given as one string, ``never_reveal`` given as a list.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from simlab.specs.base import SPEC_SCHEMA_VERSION
from simlab.specs.config import ProjectConfig, Suite
from simlab.specs.expect import COMPARISONS, RULE_KEYS
from simlab.specs.persona import Persona
from simlab.specs.scenario import Scenario

DRAFT = "https://json-schema.org/draft/2020-12/schema"

SPECS: dict[str, tuple[type[BaseModel], str]] = {
    "persona": (Persona, "simlab persona (personas/*.yaml)"),
    "scenario": (Scenario, "simlab scenario (scenarios/**/*.yaml)"),
    "suite": (Suite, "simlab suite (--suite FILE)"),
    "config": (ProjectConfig, "simlab project config (simlab.yaml)"),
}

# Models whose ``mode='before'`` validator also takes one string instead of a mapping.
STRING_FORMS = {
    "AgentSpec": "A LiteLLM model string (e.g. openai/gpt-4o-2024-08-06) or 'python:module:attr'.",
    "SimulatorSpec": "'rules', 'scripted', or a LiteLLM model string for an LLM simulator.",
    "JudgeSpec": "A LiteLLM model string (e.g. anthropic/claude-3-5-sonnet-20241022).",
    "Gate": "'METRIC OP NUMBER', e.g. 'pass^3 >= 0.8' or 'policy_violations == 0'.",
    "GraderUse": "A grader without parameters: module:function of a @grader factory, "
    "or a built-in grader's name.",
}


def json_schemas() -> dict[str, dict[str, Any]]:
    """One JSON Schema per spec file kind: persona, scenario, suite, config."""
    return {name: _schema(name, model, title) for name, (model, title) in SPECS.items()}


def write_schemas(folder: Path) -> list[Path]:
    """Write ``<name>.json`` per kind into ``folder``; stable output (sorted keys, newline at end)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in json_schemas().items():
        path = folder / f"{name}.json"
        path.write_text(
            json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        written.append(path)
    return written


def _schema(name: str, model: type[BaseModel], title: str) -> dict[str, Any]:
    schema = copy.deepcopy(model.model_json_schema(mode="validation"))
    defs = schema.get("$defs", {})
    for def_name, text in STRING_FORMS.items():
        if def_name in defs:
            defs[def_name] = _or_string(defs[def_name], text)
    if "UserSpec" in defs:
        reveal = defs["UserSpec"]["properties"]["never_reveal"]
        described = {"description": reveal.pop("description")} if "description" in reveal else {}
        defs["UserSpec"]["properties"]["never_reveal"] = {
            **described,
            "anyOf": [
                reveal,
                {
                    "type": "array",
                    "items": {"anyOf": [{"type": ["string", "number", "boolean"]}, {"type": "object"}]},
                },
            ],
        }
    if "StateAssertion" in defs:  # at least one comparison (the model says so after validation)
        defs["StateAssertion"]["anyOf"] = [{"required": [c]} for c in COMPARISONS]
    if "Rule" in defs:  # at least one rule key; "exactly one" is left to the loader's message
        defs["Rule"]["anyOf"] = [{"required": [k]} for k in RULE_KEYS]
    return {
        "$schema": DRAFT,
        "$id": f"urn:simlab:schema:v{SPEC_SCHEMA_VERSION}:{name}",
        **schema,
        "title": title,
        "description": schema.get("description") or title,
    }


def _or_string(obj: dict[str, Any], text: str) -> dict[str, Any]:
    obj = dict(obj)
    description = obj.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [{"type": "string", "minLength": 1, "description": text}, obj]}
    if description:
        wrapped["description"] = description
    return wrapped
