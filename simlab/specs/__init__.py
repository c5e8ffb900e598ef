"""Spec models (personas, scenarios, suites, project config) and their YAML loading."""

from simlab.specs.config import (
    AgentSpec,
    CacheSpec,
    JudgeSpec,
    ProjectConfig,
    RunSettings,
    SimulatorSpec,
    Suite,
)
from simlab.specs.expect import Expect, GraderUse
from simlab.specs.loader import (
    Loaded,
    LoadedScenario,
    load_config,
    load_model,
    load_personas,
    load_scenarios,
    load_suite,
    scenario_files,
)
from simlab.specs.persona import Persona
from simlab.specs.scenario import HistoryItem, Limits, Scenario, UserSpec
from simlab.specs.schema import json_schemas, write_schemas

__all__ = [
    "AgentSpec",
    "CacheSpec",
    "JudgeSpec",
    "Expect",
    "GraderUse",
    "HistoryItem",
    "Limits",
    "Loaded",
    "LoadedScenario",
    "Persona",
    "ProjectConfig",
    "RunSettings",
    "Scenario",
    "SimulatorSpec",
    "Suite",
    "UserSpec",
    "json_schemas",
    "load_config",
    "load_model",
    "load_personas",
    "load_scenarios",
    "load_suite",
    "scenario_files",
    "write_schemas",
]
