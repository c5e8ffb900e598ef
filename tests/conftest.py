"""Shared test fixtures. Keep this small; append, do not rewrite.

How the suite stays fast (the default ``pytest`` runs on every core with pytest-xdist, each worker
collecting the whole suite, then running whole files):
- A test module imports no heavy library at module level (LiteLLM, an agent SDK, pandas, mcp/uvicorn:
  seconds each): import it in the test or a fixture, or name it with ``tests.support.LazyModule``.
  ``tests/test_suite_speed.py`` (slow) names any module that breaks this.
- A test is safe beside any other test in another process: files under ``tmp_path`` (never in the
  repository), servers on 127.0.0.1 port 0, environment and cwd through ``monkeypatch``.
- A test that takes seconds (child processes, kills, the viewer's pilot, fuzzing) goes in ``SLOW``.
"""

from __future__ import annotations

import os
import signal

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM must never fetch prices


@pytest.fixture(autouse=True)
def llm_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Back-off waits cost nothing in tests: each requested sleep is recorded here instead."""
    from simlab.llm import retry

    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(retry, "backoff_sleep", fake_sleep)
    return waits


@pytest.fixture
def virtual_time():
    """Every ``asyncio.run`` of the test runs on a loop whose clock only moves when nothing can run
    (``tests/virtual_time.py``): timeouts then depend on what waits, never on the machine's speed."""
    import asyncio

    from simlab.sim import agent_thread
    from tests.virtual_time import VirtualTimePolicy, wait_for_turn

    previous, waited = asyncio.get_event_loop_policy(), agent_thread.wait_for_turn
    asyncio.set_event_loop_policy(VirtualTimePolicy())
    agent_thread.wait_for_turn = wait_for_turn
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(previous)
        agent_thread.wait_for_turn = waited


@pytest.fixture
def tool_timeouts_without_a_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A domain tool times out exactly when it is the one that hangs (``helpers.spin``), never
    because a loaded machine ran a healthy tool past its ``tool_timeout_s``."""
    import simlab.env.domain
    from tests.fixtures.hostile import helpers

    monkeypatch.setattr(simlab.env.domain, "wait_for_tool", helpers.wait_for_tool_without_a_clock)
    helpers.SPINNING.clear()


@pytest.fixture
def demo_project(tmp_path, monkeypatch):
    """A copy of the demo project (scenarios, personas, examples, suites, simlab.yaml), as cwd."""
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    for name in ("scenarios", "personas", "examples", "suites"):
        shutil.copytree(repo / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(repo / "simlab.yaml", tmp_path / "simlab.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def pinned_demo_project(demo_project, monkeypatch):
    """The demo project's copy whose ``examples.*`` are imported from the copy (its files are what
    a run pins), the modules of the repository's own ``examples`` put back afterwards."""
    import sys

    def loaded() -> dict[str, object]:
        return {n: m for n, m in sys.modules.items() if n == "examples" or n.startswith("examples.")}

    monkeypatch.syspath_prepend(str(demo_project))
    before = loaded()
    for name in before:
        del sys.modules[name]
    yield demo_project
    for name in loaded():
        del sys.modules[name]
    sys.modules.update(before)


# The long drills: `pytest` leaves them out (pyproject: -m "not slow"); `pytest -m slow` runs them, and
# .ci/run runs both. Chosen by measurement (`pytest --durations=80`, every test of 2 s or more on the
# shared 2-core machine under load: subprocess kills and Ctrl-Cs, child processes that import LiteLLM
# or a framework, the viewer's pilot tests, fuzzing), except two smoke tests kept in the fast suite (the
# offline demo through the CLI, help/validate without LiteLLM). Every function here keeps all its
# parameters; a name that no longer exists is reported (see pytest_collection_modifyitems).
# A shell that starts pytest in the background (``cmd &`` without job control, ``nohup``) hands it
# SIGINT ignored, and every child it starts inherits that: the Ctrl-C drills' ``simlab run``
# children would never see their Ctrl-C. The suite restores Python's own handler, so its children
# start with SIGINT at its default, as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


SLOW: dict[str, set[str]] = {
    "tests/test_cli.py": {"test_demo_is_deterministic"},
    "tests/test_cli_grade.py": {"test_regrade_after_changing_an_expectation_reports_the_change"},
    "tests/test_cli_graders.py": {"test_validate_of_a_judge_named_with_parameters_imports_no_litellm"},
    "tests/test_faults_lab.py": {"test_a_second_run_on_the_same_id_is_refused", "test_sigint_at_random_moments_then_resume_equals_an_uninterrupted_run", "test_twenty_sigkills_then_resume_equals_an_uninterrupted_run"},
    "tests/test_faults_model.py": {"test_concurrent_callers_see_the_same_faults_as_sequential_ones"},
    "tests/test_faults_providers.py": {"test_context_window_ends_the_trial_with_its_own_reason", "test_malformed_replies_are_recorded_faithfully", "test_thirty_percent_transient_faults_complete_every_trial"},
    "tests/test_faults_storm.py": {"test_back_off_is_jittered", "test_calls_in_flight_per_model_stay_under_the_cap", "test_requests_per_minute_bound_every_attempt_retries_included", "test_without_a_cap_the_storm_runs_wide"},
    "tests/test_frameworks_specs.py": {"test_a_missing_extra_is_a_clear_error_with_exit_2", "test_first_tool_call_names_a_tool_of_the_domain", "test_the_base_install_never_imports_a_framework"},
    "tests/test_hostile_specs.py": {"test_mutated_scenarios_run_or_are_refused", "test_a_valid_scenario_with_random_damage_gives_0_or_2", "test_mutated_scenarios_give_0_or_2", "test_random_yamlish_text_never_crashes"},
    "tests/test_http_agent.py": {"test_a_careful_agent_service_passes_and_the_planted_defect_fails", "test_each_worker_process_serves_its_own_trials_tools"},
    "tests/test_llm_import.py": {"test_importing_simlab_llm_does_not_import_litellm", "test_load_litellm_sets_local_cost_map"},
    "tests/test_real_server.py": {"test_a_server_that_crashes_mid_run_stops_it_and_a_resume_after_the_restart_completes", "test_errors_stop_a_plain_run_with_their_causes_and_a_resume_plays_them_again"},
    "tests/test_runner.py": {"test_resume_after_sigkill_has_every_unit_exactly_once", "test_sigint_stops_cleanly_and_keeps_finished_trials"},
    "tests/test_serve_cli.py": {"test_an_http_agent_run_imports_no_litellm_even_when_its_endpoint_fails", "test_nothing_of_the_serve_extra_is_imported_unless_asked_for", "test_sigterm_stops_simlab_serve_as_cleanly", "test_simlab_serve_serves_a_scenarios_state_prints_each_call_and_stops_on_ctrl_c"},
    "tests/test_serve_tools.py": {"test_concurrent_trials_each_see_only_their_own_state_and_events"},
    "tests/test_tui_app.py": {"test_selecting_a_failed_check_jumps_to_its_event", "test_compare_two_trials_of_a_scenario", "test_help_theme_and_quit", "test_markdown_export_writes_a_file_and_says_where", "test_next_failure_walks_failed_checks_and_shows_the_state_diff", "test_search_across_visible_trials", "test_tab_moves_between_panes_and_e_cycles_tool_calls", "test_tool_calls_expand_and_long_results_fold", "test_trials_screen_filters", "test_view_does_not_import_litellm_or_pandas", "test_views_refresh_while_a_run_is_written"},
    "tests/test_tui_snapshots.py": {"test_tool_call_screen", "test_find_in_transcript", "test_compare_screen", "test_transcript_screen", "test_transcript_screen_light_theme"},
    "tests/test_workers.py": {"test_a_killed_run_resumes_with_every_unit_exactly_once", "test_a_worker_held_by_a_slow_trial_leaves_the_other_units_to_the_others", "test_ctrl_c_stops_every_worker_and_keeps_finished_trials", "test_two_workers_play_every_unit_once_with_the_results_of_one_process"},
    "tests/test_pytest_plugin.py": {"test_markers_from_tags_and_a_gate_of_ones_own", "test_the_flaky_agent_fails_naming_checks_and_transcripts", "test_scenarios_pass_with_the_careful_agent_and_write_junit", "test_without_an_agent_nothing_is_collected"},
    "tests/test_report_html.py": {"test_the_html_report_renders_offline_in_a_headless_browser"},
    "tests/test_tui_review.py": {"test_find_inside_one_transcript_walks_its_hits", "test_one_tool_call_opens_whole_from_the_keyboard_and_copies"},
    "tests/test_examples_deploy.py": {"test_the_kubernetes_jobs_played_here_merge_into_the_unsharded_run", "test_the_workflow_played_here_merges_its_matrix_into_the_unsharded_run"},
    "tests/test_shard.py": {"test_shard_processes_of_an_indexed_job_merge_into_exactly_one_runs_units_and_verdicts"},
    "tests/test_suite_speed.py": {"test_collecting_the_suite_imports_no_heavy_library"},
    # the docs: the site's strict build, the demo report, every page's commands, the tutorial's viewer
    "tests/test_docs_site.py": {"test_the_site_builds_strictly", "test_the_demo_reports_shown_are_the_real_one"},
    "tests/test_docs_pages.py": {"test_every_output_shown_is_real"},
    "tests/test_docs_tutorial.py": {"test_every_command_shows_its_real_output", "test_the_tutorial_ends_with_a_failed_gate",
                                    "test_the_viewer_shows_the_failing_trial_and_quits_on_q"},
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the listed drills ``slow``. When the whole of a listed file was collected, a listed name
    that matched nothing is an error: a renamed drill must not drift into the fast suite unseen."""
    seen: dict[str, set[str]] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        name = getattr(item, "originalname", None) or item.name
        seen.setdefault(path, set()).add(name)
        if name in SLOW.get(path, ()):
            item.add_marker(pytest.mark.slow)
    if any("::" in arg for arg in config.args):
        return  # single tests asked for by id: their files were not collected whole
    for path, names in SLOW.items():
        missing = sorted(names - seen.get(path, names))
        if missing:
            raise pytest.UsageError(f"tests/conftest.py SLOW names tests that {path} no longer has: "
                                    f"{', '.join(missing)}; update the list")
