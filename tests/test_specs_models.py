"""Spec models through their files: each wrong field is one line naming file, line, field, problem."""

from __future__ import annotations

import sys
from pathlib import Path

FIXTURES = str(Path(__file__).parent / "fixtures" / "specs")
if FIXTURES not in sys.path:
    sys.path.insert(0, FIXTURES)

import pytest  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from spec_helpers import SCENARIO, one_problem, problems, write  # noqa: E402

from simlab.specs import (  # noqa: E402
    AgentSpec,
    ProjectConfig,
    Scenario,
    SimulatorSpec,
    Suite,
    load_config,
    load_model,
    load_suite,
)
from simlab.specs.config import ONE_KIND  # noqa: E402

GOAL = "  goal: Get order A123 refunded.\n"


def scenario_problems(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, "s.yaml", text)
    return [p.replace(f"{path}:", "s.yaml:") for p in problems(load_model, path, Scenario)]


def config_problems(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, "simlab.yaml", text)
    return [p.replace(f"{path}:", "simlab.yaml:") for p in problems(load_config, path)]


def test_minimal_scenario_gets_defaults(tmp_path: Path) -> None:
    loaded = load_model(write(tmp_path, "s.yaml", SCENARIO), Scenario)
    spec = loaded.spec
    assert (spec.id, spec.persona, spec.persona_id, spec.max_turns, spec.trials) == ("s1", "polite", "polite", 12, None)
    assert spec.expect.state == [] and spec.limits.max_agent_steps == 10
    assert loaded.lines[("user", "goal")] == 6 and len(loaded.sha256) == 64


def test_unknown_top_level_key_suggests_the_right_one(tmp_path: Path) -> None:
    [msg] = scenario_problems(tmp_path, SCENARIO + "titel: again\n")
    assert msg.startswith("s.yaml:7: titel: unknown field; did you mean 'title'? allowed here: id, title, ")


def test_unknown_nested_key(tmp_path: Path) -> None:
    found = scenario_problems(tmp_path, SCENARIO.replace(GOAL, "  goall: x\n"))
    assert found == [
        "s.yaml:5: user.goal: required field is missing",
        "s.yaml:6: user.goall: unknown field; did you mean 'goal'? allowed here: goal, known_facts, never_reveal, "
        "success_phrases, reject_phrases, give_up_phrases, opening, script",
    ]


def test_unknown_key_in_a_state_assertion(tmp_path: Path) -> None:
    found = scenario_problems(tmp_path, SCENARIO + "expect:\n  state:\n    - path: refunds.0.method\n      equalz: x\n")
    assert found == [
        "s.yaml:10: expect.state.0.equalz: unknown field; did you mean 'equals'? allowed here: path, equals, "
        "not_equals, contains, exists, absent, gt, ge, lt, le, tolerance, name",
    ]


def test_unknown_key_without_a_close_match_lists_the_allowed(tmp_path: Path) -> None:
    [msg] = scenario_problems(tmp_path, SCENARIO + "limits: {zzz: 1}\n")
    assert msg == ("s.yaml:7: limits.zzz: unknown field; allowed here: max_tokens, max_cost_usd, max_seconds, "
                   "max_agent_steps, max_tool_result_bytes, max_reply_bytes, max_turn_seconds")


def test_missing_required_fields_all_at_once(tmp_path: Path) -> None:
    assert scenario_problems(tmp_path, "title: t\n") == [
        f"s.yaml:1: {name}: required field is missing" for name in ("id", "domain", "persona", "user")
    ]


def test_missing_field_in_a_nested_block_names_the_block(tmp_path: Path) -> None:
    found = scenario_problems(tmp_path, SCENARIO + "expect:\n  rubric:\n    - id: r1\n")
    assert found == ["s.yaml:9: expect.rubric.0.text: required field is missing"]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("max_turns: many\n", "s.yaml:7: max_turns: Input should be a valid integer, unable to parse string as an "
                              "integer (got 'many')"),
        ("tags: refund\n", "s.yaml:7: tags: Input should be a valid list (got 'refund')"),
        ("trials: 0\n", "s.yaml:7: trials: Input should be greater than or equal to 1 (got 0)"),
        ("max_turns: 501\n", "s.yaml:7: max_turns: Input should be less than or equal to 500 (got 501)"),
        ("limits: 3\n", "s.yaml:7: limits: Input should be a mapping of fields (got 3)"),
        ("agent_context: [a, b]\n", "s.yaml:7: agent_context: Input should be a valid dictionary (got a list)"),
        ("expect: {groundedness: maybe}\n",
         "s.yaml:7: expect.groundedness: Input should be a valid boolean, unable to interpret input (got 'maybe')"),
        ("expect:\n  budgets: {max_cost_usd: -1}\n",
         "s.yaml:8: expect.budgets.max_cost_usd: Input should be greater than or equal to 0 (got -1)"),
    ],
)
def test_wrong_types_name_field_line_and_value(tmp_path: Path, extra: str, expected: str) -> None:
    assert scenario_problems(tmp_path, SCENARIO + extra) == [expected]


def test_id_pattern(tmp_path: Path) -> None:
    [msg] = scenario_problems(tmp_path, SCENARIO.replace("id: s1", "id: Bad Id"))
    assert msg == "s.yaml:1: id: String should match pattern '^[a-z0-9][a-z0-9_.-]*$' (got 'Bad Id')"


def test_empty_block_is_reported_as_nothing(tmp_path: Path) -> None:
    [msg] = scenario_problems(tmp_path, SCENARIO.replace(GOAL, ""))
    assert msg == "s.yaml:5: user: Input should be a mapping of fields (got nothing)"


def test_problems_come_in_line_order(tmp_path: Path) -> None:
    found = scenario_problems(tmp_path, "id: s1\nmax_turns: x\ntitle: 3\ndomain: d\npersona: p\nuser: {goal: g}\n")
    assert [int(p.split(":")[1]) for p in found] == [2, 3]


# --- persona: a reference or inline -------------------------------------------------------------


def test_inline_persona(tmp_path: Path) -> None:
    text = SCENARIO.replace("persona: polite", "persona:\n  id: one-off\n  description: Someone.")
    spec = load_model(write(tmp_path, "s.yaml", text), Scenario).spec
    assert spec.persona.description == "Someone." and spec.persona_id == "one-off"


def test_inline_persona_errors_do_not_mention_the_string_form(tmp_path: Path) -> None:
    text = SCENARIO.replace("persona: polite", "persona:\n  id: one-off\n  descriptionn: typo")
    assert scenario_problems(tmp_path, text) == [
        "s.yaml:4: persona.description: required field is missing",
        "s.yaml:6: persona.descriptionn: unknown field; did you mean 'description'? allowed here: id, description, "
        "traits, speaking_style, behaviours, give_up_after, volunteers_facts",
    ]


@pytest.mark.parametrize(("value", "got"), [("5", "5"), ("[a, b]", "a list"), ("true", "True")])
def test_persona_of_neither_form_is_one_problem(tmp_path: Path, value: str, got: str) -> None:
    found = scenario_problems(tmp_path, SCENARIO.replace("persona: polite", f"persona: {value}"))
    assert found == [f"s.yaml:4: persona: Input should be a string or a mapping (got {got})"]


# --- user ---------------------------------------------------------------------------------------


def test_never_reveal_list_becomes_a_mapping(tmp_path: Path) -> None:
    text = SCENARIO.replace(GOAL, GOAL + "  never_reveal: [the card number, 4111, {pin: '1234'}]\n")
    spec = load_model(write(tmp_path, "s.yaml", text), Scenario).spec
    assert spec.user.never_reveal == {"the card number": "the card number", "4111": 4111, "pin": "1234"}


def test_never_reveal_mapping_is_kept(tmp_path: Path) -> None:
    text = SCENARIO.replace(GOAL, GOAL + "  never_reveal: {card: '4111 1111'}\n")
    assert load_model(write(tmp_path, "s.yaml", text), Scenario).spec.user.never_reveal == {"card": "4111 1111"}


def test_never_reveal_nested_list_is_refused(tmp_path: Path) -> None:
    text = SCENARIO.replace(GOAL, GOAL + "  never_reveal: [[a]]\n")
    assert scenario_problems(tmp_path, text) == [
        "s.yaml:7: user.never_reveal: give facts as text or {name: value}, not nested lists"
    ]


def test_never_reveal_scalar_is_refused(tmp_path: Path) -> None:
    text = SCENARIO.replace(GOAL, GOAL + "  never_reveal: the card\n")
    assert scenario_problems(tmp_path, text) == [
        "s.yaml:7: user.never_reveal: Input should be a valid dictionary (got 'the card')"
    ]


# --- expect -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("{before: [a, b], limit: 'a.x < 1'}", "a rule needs exactly one of before, after_confirmation, max_calls, "
                                               "limit, no_write_after_refusal, owner, forbid_args, python; got before, limit"),
        ("{name: lonely}", "a rule needs exactly one of before, after_confirmation, max_calls, limit, "
                           "no_write_after_refusal, owner, forbid_args, python; got none"),
        ("{before: [a, b], unless: c}", "'unless' only goes with 'limit'"),
    ],
)
def test_rule_needs_exactly_one_rule_key(tmp_path: Path, rule: str, problem: str) -> None:
    found = scenario_problems(tmp_path, SCENARIO + f"expect:\n  rules:\n    - {{name: ok, max_calls: {{a: 1}}}}\n"
                                                   f"    - {rule}\n")
    assert found == [f"s.yaml:10: expect.rules.1: {problem}"]


def test_rule_limit_syntax(tmp_path: Path) -> None:
    found = scenario_problems(tmp_path, SCENARIO + "expect:\n  rules:\n    - {limit: amount <= 100}\n")
    assert found == [
        "s.yaml:9: expect.rules.0.limit: write a limit as 'tool.argument OP value' (e.g. 'issue_refund.amount <= 100'); "
        "OP is one of <=, <, >=, >, ==, !=; got 'amount <= 100'"
    ]


def test_before_needs_two_tools(tmp_path: Path) -> None:
    [msg] = scenario_problems(tmp_path, SCENARIO + "expect:\n  rules:\n    - before: [a]\n")
    assert msg.startswith("s.yaml:9: expect.rules.0.before: List should have at least 2 items")


def test_state_assertion_needs_a_comparison(tmp_path: Path) -> None:
    text = SCENARIO + "expect:\n  state:\n    - {path: a, equals: null}\n    - {path: b, name: sub-goal}\n"
    assert scenario_problems(tmp_path, text) == [
        "s.yaml:10: expect.state.1: give one comparison: equals, not_equals, contains, exists, absent, gt, ge, lt, le"
    ]


def test_explicit_null_is_a_comparison(tmp_path: Path) -> None:
    text = SCENARIO + "expect:\n  state:\n    - {path: refunds, equals: null}\n"
    spec = load_model(write(tmp_path, "s.yaml", text), Scenario).spec
    assert spec.expect.state[0].equals is None and "equals" in spec.expect.state[0].model_fields_set


def test_trajectory_call_errors_drop_union_member_names(tmp_path: Path) -> None:
    text = SCENARIO + "expect:\n  trajectory:\n    mode: sideways\n    calls:\n      - a\n" \
                      "      - {tool: b, argz: 1}\n      - 3\n      - {tool: c, compare: {x: 3}}\n"
    assert scenario_problems(tmp_path, text) == [
        "s.yaml:9: expect.trajectory.mode: Input should be 'exact', 'in_order', 'any_order', 'subset' or 'superset' "
        "(got 'sideways')",
        "s.yaml:12: expect.trajectory.calls.1.argz: unknown field; did you mean 'args'? allowed here: tool, args, compare",
        "s.yaml:13: expect.trajectory.calls.2: Input should be a string or a mapping (got 3)",
        "s.yaml:14: expect.trajectory.calls.3.compare.x: Input should be a string or a mapping (got 3)",
    ]


def test_forbidden_errors_drop_union_member_names(tmp_path: Path) -> None:
    text = SCENARIO + "expect:\n  forbidden:\n    - issue_store_credit\n    - {args: {amount: 5}}\n    - [x]\n"
    assert scenario_problems(tmp_path, text) == [
        "s.yaml:10: expect.forbidden.1.tool: required field is missing",
        "s.yaml:11: expect.forbidden.2: Input should be a string or a mapping (got a list)",
    ]


def test_trajectory_needs_calls(tmp_path: Path) -> None:
    found = scenario_problems(tmp_path, SCENARIO + "expect:\n  trajectory: {mode: exact}\n")
    assert found == ["s.yaml:8: expect.trajectory.calls: required field is missing"]


# --- agent and simulator ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "model", "python", "ref"),
    [
        ("python:mypkg.agents:answer", None, "mypkg.agents:answer", "python:mypkg.agents:answer"),
        ("python:agents/local.py:answer", None, "agents/local.py:answer", "python:agents/local.py:answer"),
        ("openai/gpt-4o-2024-08-06", "openai/gpt-4o-2024-08-06", None, "openai/gpt-4o-2024-08-06"),
        ("ollama/llama3:8b", "ollama/llama3:8b", None, "ollama/llama3:8b"),
        ({"model": "openai/gpt-4o", "temperature": 0.2}, "openai/gpt-4o", None, "openai/gpt-4o"),
        ({"python": "m:f"}, None, "m:f", "python:m:f"),
    ],
)
def test_agent_spec_forms(value: object, model: str | None, python: str | None, ref: str) -> None:
    spec = AgentSpec.model_validate(value)
    assert (spec.model, spec.python, spec.ref) == (model, python, ref)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("'python:'", "'python' must be module:attr (e.g. mypkg.agents:answer), got ''"),
        ("'python:mypkg.agents'", "'python' must be module:attr (e.g. mypkg.agents:answer), got 'mypkg.agents'"),
        ("'python::f'", "'python' must be module:attr (e.g. mypkg.agents:answer), got ':f'"),
        ("''", "'model' is empty; give a LiteLLM model string, e.g. openai/gpt-4o-2024-08-06"),
        ("5", "expected a LiteLLM model string, 'python:module:attr', an http:// URL, or a mapping; got 5"),
        ("[a]", "expected a LiteLLM model string, 'python:module:attr', an http:// URL, or a mapping; got ['a']"),
        ("{}", ONE_KIND),
        ("{model: a, python: 'b:c'}", ONE_KIND),
        ("{model: a, http: 'http://127.0.0.1:8000/v1'}", ONE_KIND),
    ],
)
def test_agent_spec_errors(tmp_path: Path, value: str, problem: str) -> None:
    assert config_problems(tmp_path, f"seed: 1\nagent: {value}\n") == [f"simlab.yaml:2: agent: {problem}"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{http: 'ftp://x'}", "agent.http.url: 'url' must be an http:// or https:// URL, got 'ftp://x'"),
        ("{http: {url: 'http://h/chat', format: rest, body: {q: '{mesage}'}}}",
         "agent.http: body: unknown placeholder {mesage}; use {message}, {messages}, {session_id}, {tools_url}, "
         "{context}, {turn}"),
        ("{http: {url: 'http://h/v1', body: {q: '{message}'}}}",
         "agent.http: 'body' and 'reply_path' are for format: rest (an OpenAI-compatible endpoint gets the "
         "conversation and answers a chat completion)"),
        ("{http: {url: 'http://h/x', format: rest, reply_path: 'a..b'}}",
         "agent.http.reply_path: empty segment in path 'a..b'"),
        ("{http: {url: 'http://h/x', price: {input: 1}}}",
         "agent.http.price: price must be {input: USD per million tokens, output: USD per million tokens}, both ≥ 0"),
    ],
)
def test_http_agent_spec_errors(tmp_path: Path, value: str, problem: str) -> None:
    assert config_problems(tmp_path, f"seed: 1\nagent: {value}\n") == [f"simlab.yaml:2: {problem}"]


def test_http_agent_spec_forms() -> None:
    url = AgentSpec.model_validate("http://127.0.0.1:8000/v1")  # --agent URL
    assert url.http is not None and (url.http.format, url.http.endpoint) == \
        ("openai", "http://127.0.0.1:8000/v1/chat/completions")
    assert url.ref == "http://127.0.0.1:8000/v1/chat/completions"
    rest = AgentSpec.model_validate({"http": {"url": "https://u:pw@h/agent", "format": "rest"}})
    assert rest.http is not None and rest.http.endpoint == "https://u:pw@h/agent"
    assert rest.ref == "https://u:***@h/agent"  # the ref is shown and pinned: never a password


def test_agent_unknown_field(tmp_path: Path) -> None:
    [msg] = config_problems(tmp_path, "agent:\n  modl: openai/gpt-4o\n")
    assert msg.startswith("simlab.yaml:2: agent.modl: unknown field; did you mean 'model'? allowed here: model, python")


@pytest.mark.parametrize(
    ("value", "kind", "model", "ref"),
    [
        ("rules", "rules", None, "rules"),
        ("scripted", "scripted", None, "scripted"),
        ("anthropic/claude-3-5-sonnet-20241022", "llm", "anthropic/claude-3-5-sonnet-20241022",
         "anthropic/claude-3-5-sonnet-20241022"),
        ({"model": "gemini/gemini-1.5-pro-002", "temperature": 1.0}, "llm", "gemini/gemini-1.5-pro-002",
         "gemini/gemini-1.5-pro-002"),
        ({"kind": "scripted"}, "scripted", None, "scripted"),
    ],
)
def test_simulator_spec_forms(value: object, kind: str, model: str | None, ref: str) -> None:
    spec = SimulatorSpec.model_validate(value)
    assert (spec.kind, spec.model, spec.ref) == (kind, model, ref)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("llm", "an llm simulator needs 'model' (a LiteLLM model string)"),
        ("{kind: llm}", "an llm simulator needs 'model' (a LiteLLM model string)"),
        ("{kind: rules, model: x}", "a rules simulator takes no model"),
        ("'python:a:b'", "a simulator is 'rules', 'scripted' or a LiteLLM model, not a Python callable"),
        ("3", "expected 'rules', 'scripted', a LiteLLM model string, or a mapping; got 3"),
    ],
)
def test_simulator_spec_errors(tmp_path: Path, value: str, problem: str) -> None:
    assert config_problems(tmp_path, f"simulator: {value}\n") == [f"simlab.yaml:1: simulator: {problem}"]


def test_simulator_kind_literal(tmp_path: Path) -> None:
    found = config_problems(tmp_path, "simulator: {kind: human}\n")
    assert found == ["simlab.yaml:1: simulator.kind: Input should be 'rules', 'scripted', 'llm' or 'replay' (got 'human')"]


def test_models_built_in_code_still_validate() -> None:
    settings = ProjectConfig(agent=AgentSpec(model="m"), simulator=SimulatorSpec(kind="rules"))
    assert settings.agent is not None and settings.agent.ref == "m"
    with pytest.raises(ValidationError):
        AgentSpec.model_validate(3.5)


# --- config and suites --------------------------------------------------------------------------


def test_missing_config_file_gives_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "simlab.yaml")
    assert config.scenarios == ["scenarios"] and config.personas == "personas" and config.agent is None


def test_config_field_errors(tmp_path: Path) -> None:
    found = config_problems(tmp_path, "concurrency: 0\nmodel_concurrency: {openai/gpt-4o: lots}\nlimits: {max_cost_usd: 0}\n")
    assert found == [
        "simlab.yaml:1: concurrency: Input should be greater than or equal to 1 (got 0)",
        "simlab.yaml:2: model_concurrency.openai/gpt-4o: Input should be a valid integer, unable to parse string as "
        "an integer (got 'lots')",
        "simlab.yaml:3: limits.max_cost_usd: Input should be greater than 0 (got 0)",
    ]


def test_suite_file(tmp_path: Path) -> None:
    path = write(tmp_path, "suite.yaml", "id: nightly\nscenarios: [a/*.yaml]\nagent: python:m:f\nsimulator: rules\n")
    suite = load_suite(path).spec
    assert isinstance(suite, Suite)
    assert suite.agent is not None and suite.agent.python == "m:f" and suite.simulator is not None


def test_suite_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "suite.yaml", "id: nightly\ntrials: 0\n")
    assert problems(load_suite, path) == [
        f"{path}:1: scenarios: required field is missing",
        f"{path}:2: trials: Input should be greater than or equal to 1 (got 0)",
    ]
    assert one_problem(load_suite, tmp_path / "nope.yaml") == f"{tmp_path / 'nope.yaml'}: no such suite file"


# --- values checked when the spec loads, not when a trial runs ----------------------------------


def test_phrases_must_be_regular_expressions(tmp_path: Path) -> None:
    text = SCENARIO.replace(GOAL, GOAL + "  success_phrases: [refunded, 'refund (.* issued']\n")
    assert scenario_problems(tmp_path, text) == [
        "s.yaml:7: user.success_phrases.1: not a valid regular expression: missing ), unterminated subpattern at "
        "position 7"
    ]


def test_python_references_need_module_and_function(tmp_path: Path) -> None:
    text = SCENARIO + "expect:\n  predicate: checks.refund_ok\n  rules:\n    - {python: 'mypkg.rules:'}\n"
    assert scenario_problems(tmp_path, text) == [
        "s.yaml:8: expect.predicate: expected module:function (e.g. mypkg.checks:refund_ok), got 'checks.refund_ok'",
        "s.yaml:10: expect.rules.0.python: expected module:function (e.g. mypkg.checks:refund_ok), got 'mypkg.rules:'",
    ]


def test_rubric_ids_are_unique(tmp_path: Path) -> None:
    text = SCENARIO + "expect:\n  rubric:\n    - {id: a, text: x}\n    - {id: a, text: y}\n"
    assert scenario_problems(tmp_path, text) == ["s.yaml:8: expect.rubric: rubric ids must be unique; repeated: a"]


def test_model_concurrency_is_at_least_one(tmp_path: Path) -> None:
    assert config_problems(tmp_path, "model_concurrency: {openai/gpt-4o: 0}\n") == [
        "simlab.yaml:1: model_concurrency.openai/gpt-4o: Input should be greater than or equal to 1 (got 0)"
    ]
