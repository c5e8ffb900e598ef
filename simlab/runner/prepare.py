"""From a command line to a runnable plan: load specs, resolve settings, plan units, pin everything."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simlab.env.checks import check_scenarios
from simlab.env.domain import Domain
from simlab.errors import SpecError, UsageError
from simlab.redact import MASK, mask_tree, safe_settings
from simlab.runner.plan import WorkUnit, plan_units
from simlab.runner.store import MANIFEST_SCHEMA_VERSION
from simlab.specs import (
    AgentSpec,
    CacheSpec,
    GraderUse,
    JudgeSpec,
    Limits,
    LoadedScenario,
    ProjectConfig,
    SimulatorSpec,
    load_config,
    load_personas,
    load_scenarios,
    load_suite,
    scenario_files,
)
from simlab.version import __version__

DEFAULT_CONCURRENCY = 8
CACHE_DIR = ".cache"  # under the runs' folder; llm/cache.py's CACHE_DIR (not imported: llm/ loads lazily)


@dataclass
class RunRequest:
    """What the user asked for; ``None`` means "not given here". Relative paths (``paths``,
    ``suite``) are read from ``root``, the project's folder (``simlab.yaml``): the current folder for
    the CLI, the one the public API is given (it never changes the process's working directory)."""

    root: Path = Path(".")
    paths: list[str] = field(default_factory=list)
    suite: str | None = None
    agent: str | None = None
    simulator: str | None = None
    judge: str | None = None
    trials: int | None = None
    # scenario id → trials, below ``trials`` and above the rest (``--replay RUN``: RUN's own counts)
    scenario_trials: dict[str, int] = field(default_factory=dict)
    concurrency: int | None = None
    run_id: str | None = None
    seed: int | None = None
    allow_same_family: bool = False
    keywords: str | None = None  # -k EXPR: scenarios whose id, title or tags match
    tags: list[str] = field(default_factory=list)  # --tags: scenarios carrying one of them
    cache: bool | None = None  # --cache: answer repeated model requests from the response cache
    partial_ok: bool = (
        False  # --partial-ok: a part of the suite (-k, --tags, paths) may be gated, said partial
    )
    command: list[str] = field(default_factory=list)


@dataclass
class RunPlan:
    run_id: str
    folder: Path
    scenarios: dict[str, LoadedScenario]
    domains: dict[str, Domain]
    units: list[WorkUnit]
    agent: AgentSpec
    simulator: SimulatorSpec
    judge: JudgeSpec | None
    concurrency: int
    seed: int
    limits: Limits
    max_retries: int
    call_timeout_s: float
    model_concurrency: dict[str, int]
    manifest: dict[str, Any]
    max_run_cost_usd: float | None = None
    model_rpm: dict[str, int] = field(default_factory=dict)
    model_limits_scope: str = "run"  # "machine": every shard gets the whole caps (specs/config.py)
    notes: list[str] = field(default_factory=list)  # said once before playing (e.g. settings a flag kept)
    trial_sources: dict[str, tuple[int, str]] = field(default_factory=dict)  # scenario → (trials, who set it)
    max_error_rate: float | None = None  # None: the default of a plain run (report.gates.RUN_MAX_ERROR_RATE)
    allow_unjudged: list[str] = field(default_factory=list)  # check kinds that may stay unjudged
    earlier_attempts: dict[str, list[dict[str, Any]]] = field(
        default_factory=dict
    )  # unit id → retired errors
    graders: list[GraderUse] = field(default_factory=list)  # what the suite adds to every scenario's graders
    summary_evaluators: list[str] = field(default_factory=list)  # the suite's dataset-level functions
    cache_dir: Path | None = None  # the response cache's folder (llm/cache.py); None: off
    cache_max_mb: float = 1024.0
    root: Path = Path(".")  # the project's folder (RunRequest.root)


def cache_folder(config: ProjectConfig, root: Path = Path(".")) -> Path:
    """Where the response cache lives: beside the runs (``transcripts/.cache``), never a run itself."""
    return root / config.transcripts / CACHE_DIR


def cache_max_mb(setting: bool | CacheSpec | None) -> float:
    """The size cap a ``cache:`` setting asks for (``true``: the default cap)."""
    return setting.max_mb if isinstance(setting, CacheSpec) else CacheSpec().max_mb


def prepare(req: RunRequest) -> RunPlan:
    root = req.root
    config: ProjectConfig = load_config(root / "simlab.yaml")
    suite_path = root / req.suite if req.suite else None
    suite_file = load_suite(suite_path) if suite_path else None
    suite = suite_file.spec if suite_file else None
    layers = [s for s in (suite, config) if s is not None]

    def pick(name: str, flag: Any = None, default: Any = None) -> Any:
        if flag is not None:
            return flag
        for layer in layers:
            value = getattr(layer, name)
            if value is not None:
                return value
        return default

    if req.paths:
        files = scenario_files(req.paths, base=root)
    elif suite is not None and suite_path is not None:
        files = scenario_files(suite.scenarios, base=suite_path.parent)
    else:
        files = scenario_files(config.scenarios, base=root)
    personas = load_personas(root / config.personas)
    loaded = load_scenarios(files, personas)
    if suite is not None and suite.tags:
        loaded = [s for s in loaded if set(s.spec.tags) & set(suite.tags)]
    if req.tags:
        loaded = [s for s in loaded if set(s.spec.tags) & set(req.tags)]
    if req.keywords:
        from simlab.runner.select import keyword_filter

        wanted = keyword_filter(req.keywords)
        loaded = [s for s in loaded if wanted([s.spec.id, s.spec.title, *s.spec.tags])]
    if not loaded:
        raise UsageError(
            "no scenarios to run: check the paths, the suite's scenarios and tags, and -k/--tags"
        )
    domains = check_scenarios(loaded)
    _check_graders(loaded, suite_file)
    if suite_file is not None and (problems := summary_function_problems(suite_file)):
        raise SpecError(problems)

    notes: list[str] = []
    agent = agent_spec(req.agent, pick("agent"), notes)
    notes.extend(_unjudgeable_cost(agent, loaded))
    simulator = _simulator(req.simulator, pick("simulator"), req.allow_same_family, notes)
    seed = int(pick("seed", req.seed, 0))
    trial_sources = {
        s.spec.id: (req.scenario_trials[s.spec.id], "the replayed run")
        if req.trials is None and s.spec.id in req.scenario_trials
        else trials_of(s.spec.trials, req.trials, suite.trials if suite else None, config.trials)
        for s in loaded
    }
    trials = {sid: n for sid, (n, _) in trial_sources.items()}
    units = plan_units(trials, seed)
    run_id = check_run_id(req.run_id) if req.run_id is not None else _new_run_id()
    folder = root / config.transcripts / run_id
    plan = RunPlan(
        run_id=run_id,
        folder=folder,
        scenarios={s.spec.id: s for s in loaded},
        domains=domains,
        units=units,
        agent=agent,
        simulator=simulator,
        judge=_with_flag(JudgeSpec, req.judge, pick("judge"), "--judge", notes)
        if req.judge
        else pick("judge"),
        concurrency=int(pick("concurrency", req.concurrency, DEFAULT_CONCURRENCY)),
        seed=seed,
        limits=pick("limits", None, Limits()),
        max_retries=int(pick("max_retries", None, 4)),
        call_timeout_s=float(pick("call_timeout_s", None, 60.0)),
        model_concurrency=pick("model_concurrency", None, {}) or {},
        manifest={},
        max_run_cost_usd=suite.max_run_cost_usd if suite else None,
        model_rpm=pick("model_rpm", None, {}) or {},
        model_limits_scope=pick("model_limits_scope", None, "run"),
        notes=notes,
        trial_sources=trial_sources,
        max_error_rate=pick("max_error_rate"),
        allow_unjudged=list(pick("allow_unjudged", None, []) or []),
        graders=list(suite.graders) if suite else [],
        summary_evaluators=list(suite.summary_evaluators) if suite else [],
        root=root,
    )
    cache = pick("cache", req.cache)
    if cache:
        plan.cache_dir = cache_folder(config, root)
        plan.cache_max_mb = cache_max_mb(cache)
    plan.manifest = manifest_for(plan, req, trials)
    if suite_path is not None:  # the suite's own plan, against which its gates judge this run
        from simlab.runner.suite_plan import pin_suite

        pin_suite(
            plan.manifest,
            plan.notes,
            trials,
            suite_path,
            suite.id if suite else None,
            root,
            partial_ok=req.partial_ok,
        )
    return plan


def trials_of(
    scenario: int | None, flag: int | None, suite: int | None, project: int | None
) -> tuple[int, str]:
    """A scenario's trial count and who set it. Precedence: the ``--trials`` flag, then the suite,
    then the scenario file, then ``simlab.yaml``, then 1."""
    for value, source in (
        (flag, "--trials"),
        (suite, "the suite"),
        (scenario, "the scenario file"),
        (project, "simlab.yaml"),
    ):
        if value is not None:
            return value, source
    return 1, "default"


def summary_function_problems(suite: Any) -> list[str]:
    """Why a summary function the suite (a ``Loaded`` suite) names does not import or is not
    callable, one line each naming file, line and field: checked by ``simlab validate`` and before
    a run plays anything, so a typo does not leave the run's gates inconclusive."""
    from simlab.imports import RefError, load_callable
    from simlab.specs.yamlio import line_for

    problems = []
    for index, ref in enumerate(suite.spec.summary_evaluators):
        try:
            load_callable(ref)
        except RefError as exc:
            line = line_for(suite.lines, ("summary_evaluators", index))
            problems.append(f"{suite.path}:{line or '?'}: summary_evaluators.{index}: {exc}")
    return problems


def _check_graders(loaded: list[LoadedScenario], suite: Any) -> None:
    """Every grader a scenario or the suite names imports and takes its parameters; ``SpecError``
    listing every problem before anything runs."""
    from simlab.graders.registry import GraderError, graders_for, use_problems

    problems = use_problems(suite, ("graders",)) if suite is not None else []
    for entry in loaded:
        problems.extend(use_problems(entry, ("expect", "graders")))
    if not problems:
        extra = suite.spec.graders if suite is not None else []
        for entry in loaded:
            try:
                graders_for(entry.spec, extra)
            except GraderError as exc:
                problems.append(f"{entry.path}: expect.graders: {exc}")
    if problems:
        raise SpecError(problems)


def agent_spec(flag: str | None, configured: AgentSpec | None, notes: list[str]) -> AgentSpec:
    """The agent ``--agent FLAG`` names over the configured one (``_with_flag``), or the configured one."""
    if flag:
        return _with_flag(AgentSpec, flag, configured, "--agent", notes)
    if configured is None:
        raise UsageError(
            "no agent under test: pass --agent (a LiteLLM model, or python:module:attr) or set 'agent' in "
            "simlab.yaml"
        )
    return configured


def _simulator(
    flag: str | None, configured: SimulatorSpec | None, allow_same_family: bool, notes: list[str]
) -> SimulatorSpec:
    spec = (
        _with_flag(SimulatorSpec, flag, configured, "--simulator", notes)
        if flag
        else configured or SimulatorSpec()
    )
    return spec.model_copy(update={"allow_same_family": True}) if allow_same_family else spec


def _parse(model: Any, value: str, flag: str) -> Any:
    from pydantic import ValidationError

    parsed: Any = value
    if value.lstrip().startswith("{"):  # a whole mapping, in YAML flow style: replaces the configured one
        import yaml

        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise UsageError(f"{flag} {value!r}: not a YAML mapping ({exc})") from None
    try:
        return model.model_validate(parsed)
    except ValidationError as exc:
        raise UsageError(f"{flag} {value!r}: {exc.errors()[0]['msg']}") from None


_ENDPOINT_KEYS = ("api_base", "api_key_env", "params", "price")


def _with_flag(model: Any, flag: str, configured: Any, name: str, notes: list[str]) -> Any:
    """The spec a flag names. A bare model string replaces only the configured *model*: the endpoint
    settings beside it (api_base, api_key_env, params, price…) are kept, and a note says so, so that
    ``--agent openai/x`` never sends to the real provider what simlab.yaml points at a local server.
    A mapping (``--agent '{model: openai/x}'``) replaces the configured spec whole."""
    parsed = _parse(model, flag, name)
    if (
        flag.lstrip().startswith("{")
        or configured is None
        or not getattr(parsed, "model", None)
        or not getattr(configured, "model", None)
    ):
        return parsed
    kept = {
        key: getattr(configured, key)
        for key in _ENDPOINT_KEYS
        if key in type(configured).model_fields and getattr(configured, key)
    }
    if not kept:
        return parsed
    merged = configured.model_copy(update={"model": parsed.model})
    shown = ", ".join(f"{key} {_shown(key, value)}" for key, value in kept.items())
    notes.append(
        f"{name} {parsed.model}: keeping {shown} from the configuration; to replace the whole "
        f"mapping, pass {name} '{{model: {parsed.model}}}'"
    )
    return merged


def judge_flag(flag: str, configured: JudgeSpec | None, name: str = "--judge") -> tuple[JudgeSpec, list[str]]:
    """The judge ``--judge FLAG`` names, as ``simlab run`` reads it (``_with_flag``: a bare model keeps
    the configured endpoint and price), and the notes that say what was kept (``name``: the flag
    they name, ``simlab generate --model`` reads a model so too)."""
    notes: list[str] = []
    return _with_flag(JudgeSpec, flag, configured, name, notes), notes


def _shown(key: str, value: Any) -> str:
    from simlab.redact import mask_url

    if key == "api_base":
        return mask_url(str(value))
    if isinstance(value, dict):
        return "{" + ", ".join(sorted(value)) + "}"
    if hasattr(value, "model_dump"):
        return str(value.model_dump())
    return str(value)


def _unjudgeable_cost(agent: AgentSpec, loaded: list[Any]) -> list[str]:
    """Said once before playing: a cost budget that no trial of this agent can be judged on."""
    why = agent.cost_unknown()
    budgeted = [
        s.spec.id for s in loaded if s.spec.expect.budgets and s.spec.expect.budgets.max_cost_usd is not None
    ]
    if why is None or not budgeted:
        return []
    shown = ", ".join(budgeted[:3]) + (f" and {len(budgeted) - 3} more" if len(budgeted) > 3 else "")
    return [
        f"{why}: its cost is unknown, so the max_cost_usd budget of {len(budgeted)} scenario(s) ({shown}) "
        "cannot be judged and their trials will be unjudged; give the agent a price: "
        "{input: USD per million tokens, output: USD per million tokens}"
    ]


def check_run_id(run_id: str) -> str:
    """A run id is one printable path component: the name of one folder under transcripts/, never
    a way out of it (``..``, ``/abs``, ``../x``) nor a line break into the terminal or a CI log."""
    problem = ""
    if not run_id or run_id != run_id.strip():
        problem = "it is empty or starts or ends with a space"
    elif run_id in (".", "..") or "/" in run_id or "\\" in run_id:
        problem = "it must be one folder name (no '/', no '..')"
    elif run_id.startswith("."):
        problem = "it starts with '.': such names are simlab's own (the response cache is transcripts/.cache)"
    elif not run_id.isprintable():
        problem = "it holds control characters or line breaks"
    elif len(run_id.encode("utf-8")) > 200:
        problem = "it is longer than 200 bytes"
    if problem:
        raise UsageError(
            f"--run-id {run_id!r}: {problem}; a run id names one folder under transcripts/, "
            "e.g. nightly-2024-06-01"
        )
    return run_id


def _new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def manifest_for(plan: RunPlan, req: RunRequest, trials: dict[str, int]) -> dict[str, Any]:
    """Everything that decides a run's results. Never secrets: keys are named by env var only."""
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "run_id": plan.run_id,
        "simlab_version": __version__,
        "python": sys.version.split()[0],
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": req.command,
        "pins": pins_of(plan, trials),
        "units": len(plan.units),
        # how reports count unjudged trials: a reporting setting, not a pin (it changes no trial)
        "allow_unjudged": plan.allow_unjudged,
        # the share of infrastructure errors past which the run is no result: every report holds it
        **({"max_error_rate": plan.max_error_rate} if plan.max_error_rate is not None else {}),
        # the suite's summary functions, run by every report: a reporting setting too
        **({"summary_evaluators": plan.summary_evaluators} if plan.summary_evaluators else {}),
    }


def _judge_pin(judge: JudgeSpec | None) -> str | dict[str, Any] | None:
    pin = judge.pin() if judge else None
    return safe_settings(pin) if isinstance(pin, dict) else pin


def judge_pin_of(ref: JudgeSpec | str | dict[str, Any] | None) -> Any:
    """``pins.judge`` of the judge ``ref`` names (a spec, a model string, a pinned mapping), as
    ``pins_of`` writes it: what ``simlab grade --rejudge`` records when it judged with another."""
    spec = ref if isinstance(ref, JudgeSpec) or ref is None else JudgeSpec.model_validate(ref)
    return mask_tree(_judge_pin(spec or None))


def _headers_named(agent: dict[str, Any]) -> dict[str, Any]:
    """An HTTP agent's pin with its headers' values masked: a header's value may be a credential by
    any name (``X-Signature``), so only which headers are sent is pinned."""
    http = agent.get("http")
    if isinstance(http, dict) and isinstance(http.get("headers"), dict):
        agent["http"] = {**http, "headers": dict.fromkeys(http["headers"], MASK)}
    return agent


def pins_of(plan: RunPlan, trials: dict[str, int]) -> dict[str, Any]:
    """The pins of a run, credentials masked (``redact.mask_tree``): a password in an ``api_base``
    URL is not a pin, and two runs that differ only in it compare equal."""
    graders = {"graders": [use.model_dump(mode="json") for use in plan.graders]} if plan.graders else {}
    return mask_tree(
        {
            **graders,  # only when a suite adds graders: the pins of other runs stay as they were
            "agent": _headers_named(safe_settings(plan.agent.model_dump(mode="json", exclude_none=True))),
            "simulator": safe_settings(plan.simulator.model_dump(mode="json", exclude_none=True)),
            "judge": _judge_pin(plan.judge),
            "seed": plan.seed,
            "limits": plan.limits.model_dump(mode="json"),
            "code": _code(plan),
            "scenarios": {
                sid: {
                    "path": _pinned_path(s.path, plan.root),
                    "sha256": s.sha256,
                    "persona": s.persona.id,
                    "persona_sha256": s.persona_sha256,
                    "trials": trials[sid],
                }
                for sid, s in plan.scenarios.items()
            },
        }
    )


def _pinned_path(path: Path, root: Path) -> str:
    """A scenario's path as pinned: relative to the project's folder when it lies there, as the CLI
    run from that folder writes it (a resume and ``simlab grade`` read it from there)."""
    if path.is_absolute() and root.is_absolute() and path.is_relative_to(root):
        return str(path.relative_to(root))
    return str(path)


def _code(plan: RunPlan) -> dict[str, Any]:
    """``pins.code`` (``code_pins.py``): the agent's and the domains' files, simlab, the commit."""
    from simlab.runner.code_pins import run_code_pins

    return run_code_pins(plan.agent, [s.spec.domain for s in plan.scenarios.values()], plan.root)


def pin_differences(stored: dict[str, Any], current: dict[str, Any], prefix: str = "") -> list[str]:
    """Human-readable differences between two pin trees (paths are ignored: files may move),
    compared and shown with their credentials masked (a run.json of an older simlab may hold them)."""
    stored, current = mask_tree(stored), mask_tree(current)
    diffs: list[str] = []
    for key in sorted(set(stored) | set(current)):
        if key == "path":
            continue
        a, b = stored.get(key), current.get(key)
        where = f"{prefix}.{key}" if prefix else key
        if isinstance(a, dict) and isinstance(b, dict):
            diffs.extend(pin_differences(a, b, where))
        elif a != b:
            diffs.append(f"{where}: stored {a!r}, now {b!r}")
    return diffs
