"""JSON Schemas for editors: generated from the models, accepting every form the models accept."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FIXTURES = str(Path(__file__).parent / "fixtures" / "specs")
if FIXTURES not in sys.path:
    sys.path.insert(0, FIXTURES)

import jsonschema  # noqa: E402
import pytest  # noqa: E402
from spec_helpers import PROJECT  # noqa: E402

from simlab.specs import AgentSpec, Persona, ProjectConfig, Scenario, SimulatorSpec, Suite  # noqa: E402
from simlab.specs.schema import json_schemas, write_schemas  # noqa: E402
from simlab.specs.yamlio import load_yaml_file  # noqa: E402

REPO_SCHEMAS = Path(__file__).parent.parent / "schemas"
MODELS: dict[str, Any] = {"persona": Persona, "scenario": Scenario, "suite": Suite, "config": ProjectConfig}


def validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = json_schemas()[kind]
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_accepts(kind: str, data: Any) -> bool:
    return validator(kind).is_valid(data)


def model_accepts(kind: str, data: Any) -> bool:
    try:
        MODELS[kind].model_validate(data)
    except ValueError:
        return False
    return True


def test_one_schema_per_spec_kind_with_metadata() -> None:
    schemas = json_schemas()
    assert list(schemas) == ["persona", "scenario", "suite", "config"]
    for name, schema in schemas.items():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"].endswith(f":{name}")
        assert schema["title"].startswith("simlab ") and schema["description"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        jsonschema.Draft202012Validator.check_schema(schema)


def test_fields_carry_their_descriptions() -> None:
    scenario = json_schemas()["scenario"]
    assert "hidden goal" in scenario["$defs"]["UserSpec"]["properties"]["goal"]["description"]
    assert "persona id" in scenario["properties"]["persona"]["description"]
    assert "LiteLLM" in json_schemas()["config"]["$defs"]["AgentSpec"]["description"]


def test_write_schemas_is_stable_sorted_and_ends_with_a_newline(tmp_path: Path) -> None:
    written = write_schemas(tmp_path / "schemas")
    assert [p.name for p in written] == ["persona.json", "scenario.json", "suite.json", "config.json"]
    first = {p.name: p.read_bytes() for p in written}
    write_schemas(tmp_path / "schemas")
    assert {p.name: p.read_bytes() for p in written} == first
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert text.endswith("}\n") and not text.endswith("\n\n")
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_the_committed_schemas_are_up_to_date(tmp_path: Path) -> None:
    for path in write_schemas(tmp_path):
        committed = REPO_SCHEMAS / path.name
        assert committed.exists(), f"{committed} is missing; regenerate with simlab.specs.schema.write_schemas"
        assert committed.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            f"{committed} is stale; regenerate with simlab.specs.schema.write_schemas"
        )


@pytest.mark.parametrize(
    ("relative", "kind"),
    [
        ("simlab.yaml", "config"),
        ("personas/impatient-terse.yaml", "persona"),
        ("personas/polite.yaml", "persona"),
        ("scenarios/refunds/damaged.yaml", "scenario"),
        ("scenarios/inline-persona.yml", "scenario"),
        ("suites/nightly.yaml", "suite"),
    ],
)
def test_fixture_files_point_at_their_schema_and_pass_it(relative: str, kind: str) -> None:
    path = PROJECT / relative
    first = path.read_text(encoding="utf-8").splitlines()[0]
    prefix = "# yaml-language-server: $schema="
    assert first.startswith(prefix)
    assert (path.parent / first[len(prefix):]).resolve() == (REPO_SCHEMAS / f"{kind}.json").resolve()
    data, _ = load_yaml_file(path)
    errors = [e.message for e in validator(kind).iter_errors(data)]
    assert errors == []
    assert model_accepts(kind, data)


SCENARIO: dict[str, Any] = {"id": "s1", "title": "t", "domain": "d", "persona": "p", "user": {"goal": "g"}}


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("config", {"agent": "openai/gpt-4o-2024-08-06"}),
        ("config", {"agent": "python:mypkg.agents:answer"}),
        ("config", {"agent": {"model": "openai/gpt-4o", "temperature": 0.3}}),
        ("config", {"agent": None, "simulator": None}),
        ("config", {"simulator": "rules"}),
        ("config", {"simulator": "scripted"}),
        ("config", {"simulator": "anthropic/claude-3-5-sonnet-20241022"}),
        ("config", {"simulator": {"model": "anthropic/claude-3-5-sonnet-20241022"}}),
        ("suite", {"id": "n", "scenarios": ["a/*.yaml"], "agent": "python:m:f", "simulator": "rules"}),
        ("scenario", {**SCENARIO, "user": {"goal": "g", "never_reveal": ["the card number", 4111, {"pin": "1"}]}}),
        ("scenario", {**SCENARIO, "user": {"goal": "g", "never_reveal": {"card": "4111"}}}),
        ("scenario", {**SCENARIO, "persona": {"id": "me", "description": "Me."}}),
        ("scenario", {**SCENARIO, "expect": {"state": [{"path": "a", "equals": None}],
                                             "trajectory": {"calls": ["a", {"tool": "b", "args": {"x": 1}}]},
                                             "forbidden": ["c", {"tool": "d"}],
                                             "rules": [{"before": ["a", "b"]}, {"limit": "a.x <= 1", "unless": "b"}]}}),
        ("persona", {"id": "p", "description": "x", "give_up_after": None}),
    ],
)
def test_schema_accepts_what_the_models_accept(kind: str, data: Any) -> None:
    assert model_accepts(kind, data)
    assert [e.message for e in validator(kind).iter_errors(data)] == []


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("scenario", {**SCENARIO, "titel": "x"}),
        ("scenario", {**SCENARIO, "user": {"goall": "g"}}),
        ("scenario", {**SCENARIO, "expect": {"state": [{"path": "a", "equalz": 1}]}}),
        ("scenario", {**SCENARIO, "expect": {"state": [{"path": "a"}]}}),
        ("scenario", {**SCENARIO, "expect": {"rules": [{"name": "no rule key"}]}}),
        ("scenario", {**SCENARIO, "expect": {"trajectory": {"calls": [3]}}}),
        ("scenario", {**SCENARIO, "persona": 5}),
        ("scenario", {**SCENARIO, "max_turns": 0}),
        ("scenario", {**SCENARIO, "id": "Bad Id"}),
        ("config", {"agent": 5}),
        ("config", {"agent": {"modl": "x"}}),
        ("config", {"simulator": ""}),
        ("config", {"simulator": {"kind": "human"}}),
        ("suite", {"id": "n"}),
        ("persona", {"id": "p"}),
    ],
)
def test_schema_and_models_both_refuse(kind: str, data: Any) -> None:
    assert not model_accepts(kind, data)
    assert not schema_accepts(kind, data)


def test_string_forms_come_from_the_models() -> None:
    assert AgentSpec.model_validate("python:m:f").python == "m:f"
    assert SimulatorSpec.model_validate("rules").kind == "rules"
    agent = json_schemas()["config"]["$defs"]["AgentSpec"]
    assert {"type": "string", "minLength": 1} == {k: v for k, v in agent["anyOf"][0].items() if k != "description"}
