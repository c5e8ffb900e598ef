"""simlab's response cache (``--cache``, ``cache:``): the key is the full request plus the trial's seed
and role; one append-only file per model, safe for several processes; a size cap; ``simlab cache
clear``; a hit is recorded as cached with cost 0 and the first cost kept; judges are cached too, and
``grade --rejudge`` asks the judge again unless given ``--cache``."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.llm import LiteLLMModel, ModelError, ModelErrorKind, register_fake
from simlab.llm.cache import ResponseCache, clear_cache
from simlab.llm.types import ChatResult
from simlab.transcript import Usage
from tests.fixtures.hostile.helpers import read_lines, write_llm_project
from tests.support import kv_llm_agent

HELLO = [{"role": "user", "content": "Hello, where is my order A123?"}]
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order",
                                           "parameters": {"type": "object", "properties": {}}}}]


class Counting:
    """A fake provider's reply function that counts the calls that reached it."""

    def __init__(self, reply: Any = None):
        self.calls = 0
        self.reply = reply

    def __call__(self, messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> Any:
        self.calls += 1
        if self.reply is not None:
            return self.reply(messages, tools)
        return {"text": f"answer {self.calls}"}


async def test_the_same_request_seed_and_role_is_answered_from_disk(tmp_path: Path) -> None:
    fn = Counting()
    name = register_fake("cache-unit", fn)
    cache = ResponseCache(tmp_path)
    model = LiteLLMModel(name, role="agent", cache=cache, price={"input": 100.0, "output": 100.0})
    first = await model.chat(HELLO, tools=TOOLS, seed=1)
    again = await model.chat(HELLO, tools=TOOLS, seed=1)
    assert fn.calls == 1
    assert again.text == first.text == "answer 1"
    assert not first.usage.cached and first.usage.cost_usd == pytest.approx(0.001)  # 10 tokens at $100/M
    assert again.usage.cached and again.usage.cost_usd == 0.0 and again.usage.original_cost_usd == first.usage.cost_usd
    assert again.usage.input_tokens == first.usage.input_tokens  # the tokens it stood for
    # another trial (seed), another role, other tools, other messages: each a call of its own
    await model.chat(HELLO, tools=TOOLS, seed=2)
    await LiteLLMModel(name, role="simulator", cache=cache).chat(HELLO, tools=TOOLS, seed=1)
    await model.chat(HELLO, seed=1)
    await model.chat([*HELLO, {"role": "assistant", "content": "hi"}], tools=TOOLS, seed=1)
    assert fn.calls == 5
    # a fresh process (a new cache object) reads them back from the model's one file
    fresh = LiteLLMModel(name, role="agent", cache=ResponseCache(tmp_path))
    assert (await fresh.chat(HELLO, tools=TOOLS, seed=2)).usage.cached
    assert fn.calls == 5
    # ... and a request never stored is still a call
    assert (await LiteLLMModel(name, role="agent", cache=ResponseCache(tmp_path)).chat(HELLO, seed=2)).usage.cached \
        is False
    assert [p.name[:-len("-12345678.jsonl")] for p in tmp_path.iterdir()] == ["simlab-fake_cache-unit"]


async def test_a_cache_hit_needs_no_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-run answered from the cache works where the key is not set (a CI job replaying a suite)."""
    fn = Counting()
    name = register_fake("cache-key", fn)
    monkeypatch.setenv("SIMLAB_CACHE_TEST_KEY", "sk-secret-1")
    model = LiteLLMModel(name, role="agent", cache=ResponseCache(tmp_path), api_key_env="SIMLAB_CACHE_TEST_KEY")
    first = await model.chat(HELLO, tools=TOOLS, seed=1)
    monkeypatch.delenv("SIMLAB_CACHE_TEST_KEY")
    again = await model.chat(HELLO, tools=TOOLS, seed=1)
    assert again.usage.cached and again.text == first.text and fn.calls == 1
    with pytest.raises(ModelError) as missed:  # a miss still needs it, and says which variable
        await model.chat(HELLO, tools=TOOLS, seed=2)
    assert missed.value.kind is ModelErrorKind.AUTH and "SIMLAB_CACHE_TEST_KEY" in str(missed.value)
    assert "sk-secret-1" not in "".join(p.read_text() for p in tmp_path.iterdir())


async def test_without_a_cache_nothing_is_stored_and_the_usage_line_is_as_before(tmp_path: Path) -> None:
    fn = Counting()
    model = LiteLLMModel(register_fake("cache-off", fn), role="agent")
    await model.chat(HELLO, seed=1)
    result = await model.chat(HELLO, seed=1)
    assert fn.calls == 2 and not result.usage.cached
    assert set(json.loads(result.usage.model_dump_json())) == {"input_tokens", "output_tokens", "cached_tokens",
                                                               "cost_usd", "latency_s", "retries", "retry_wait_s"}


def _result(text: str) -> ChatResult:
    return ChatResult(text=text, usage=Usage(input_tokens=1, output_tokens=1, cost_usd=0.5))


def test_a_torn_or_damaged_line_is_a_miss_not_an_error(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("m", "k1", _result("one"), role="agent")
    path = cache.path_for("m")
    with path.open("ab") as f:
        f.write(b'{"key": "k2", "result": {"text": "half')  # a writer killed mid-line
    fresh = ResponseCache(tmp_path)
    assert fresh.get("m", "k1").text == "one" and fresh.get("m", "k2") is None
    path.write_bytes(path.read_bytes() + b"\nnot json\n")
    assert ResponseCache(tmp_path).get("m", "k1").text == "one"


def test_a_full_cache_is_read_but_no_longer_grows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = ResponseCache(tmp_path, max_mb=600 / (1024 * 1024))  # room for about two lines
    for i in range(5):
        cache.put("m", f"k{i}", _result(f"answer {i}"), role="agent")
    size = cache.path_for("m").stat().st_size
    assert size <= 600
    stored = sum(ResponseCache(tmp_path).get("m", f"k{i}") is not None for i in range(5))
    assert 1 <= stored < 5
    assert sum("is full" in r.message for r in caplog.records) == 1  # said once


def _append_many(folder: str, worker: int, n: int) -> None:
    cache = ResponseCache(folder)
    for i in range(n):
        cache.put("m", f"w{worker}-{i}", _result("x" * (3000 + i)), role="agent")  # lines longer than a pipe buffer


def test_processes_appending_at_once_leave_only_whole_lines(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), w, 60)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0, 0]
    lines = ResponseCache(tmp_path).path_for("m").read_bytes().splitlines()
    assert len(lines) == 180 and all(json.loads(line)["key"] for line in lines)
    fresh = ResponseCache(tmp_path)
    assert all(fresh.get("m", f"w{w}-{i}") is not None for w in range(3) for i in range(60))


def test_clear_removes_every_model_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    folder = tmp_path / "transcripts" / ".cache"
    for model in ("a", "b"):
        ResponseCache(folder).put(model, "k", _result("x"), role="agent")
    monkeypatch.chdir(tmp_path)
    assert main(["cache", "clear"]) == 0
    assert "2 model files" in capsys.readouterr().out
    assert list(folder.iterdir()) == []
    assert clear_cache(tmp_path / "nowhere") == (0, 0)


@pytest.fixture
def llm_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Counting, Counting]:
    agent, judge = Counting(kv_llm_agent), Counting(lambda m, t: '{"verdict": "yes", "reason": "polite"}')
    agent_name, judge_name = register_fake("cache-agent", agent), register_fake("cache-judge", judge)
    write_llm_project(tmp_path, agent=agent_name, scenarios=2, trials=3, rubric=True, extra=f"judge: {judge_name}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path, agent, judge


def _usages(root: Path, run: str) -> list[dict[str, Any]]:
    records = read_lines(root / "transcripts" / run / "trials.jsonl")
    return [e["usage"] for r in records for e in r["transcript"]["events"] if e["type"] == "model_call"]


def test_a_second_run_with_cache_calls_no_model_and_says_so(llm_project) -> None:
    root, agent, judge = llm_project
    assert main(["run", "--run-id", "plain", "--no-progress"]) == 0
    assert not (root / "transcripts" / ".cache").exists()  # off by default
    calls = agent.calls
    assert main(["run", "--run-id", "first", "--no-progress", "--cache"]) == 0
    assert agent.calls == 2 * calls  # nothing cached yet: every call made
    agent_calls, judge_calls = agent.calls, judge.calls
    assert main(["run", "--run-id", "second", "--no-progress", "--cache"]) == 0
    assert agent.calls == agent_calls  # every agent answer from the cache
    # and every judge's: its prompt depends on the trial, not on the run's id
    assert judge.calls == judge_calls
    first, second = _usages(root, "first"), _usages(root, "second")
    assert len(first) == len(second) > 0
    assert not any(u.get("cached") for u in first)
    cached = [u for u in second if u.get("cached")]
    # cached: the first run's agent calls and its judge calls (half of those made by "plain" and "first")
    assert len(cached) == (agent_calls - calls) + judge_calls // 2 and all(u["cost_usd"] == 0.0 for u in cached)
    stored = {p.name[:-len("-12345678.jsonl")] for p in (root / "transcripts" / ".cache").iterdir()}
    assert stored == {"simlab-fake_cache-agent", "simlab-fake_cache-judge"}
    verdicts = [r["verdict"] for r in read_lines(root / "transcripts" / "second" / "trials.jsonl")]
    assert verdicts == [r["verdict"] for r in read_lines(root / "transcripts" / "first" / "trials.jsonl")]


def test_cache_in_simlab_yaml_turns_it_on(llm_project) -> None:
    root, agent, _ = llm_project
    with (root / "simlab.yaml").open("a") as f:
        f.write("cache: {max_mb: 50}\n")
    assert main(["run", "--run-id", "a", "--no-progress"]) == 0
    calls = agent.calls
    assert main(["run", "--run-id", "b", "--no-progress"]) == 0
    assert agent.calls == calls


def test_rejudge_asks_the_judge_again_unless_told_to_use_the_cache(llm_project) -> None:
    root, _, judge = llm_project
    assert main(["run", "--run-id", "r", "--no-progress", "--cache"]) == 0
    asked = judge.calls
    assert asked > 0
    assert main(["grade", "r", "--rejudge"]) == 0
    assert judge.calls == 2 * asked  # bypassed: a re-judge is asked to judge afresh
    assert main(["grade", "r", "--rejudge", "--cache"]) == 0
    assert judge.calls == 2 * asked  # asked for: the stored answers


def test_a_bad_cache_setting_names_the_field(llm_project, capsys) -> None:
    root, _, _ = llm_project
    with (root / "simlab.yaml").open("a") as f:
        f.write("cache: {max_mb: -1}\n")
    assert main(["run", "--run-id", "x", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "simlab.yaml" in err and "cache" in err and "Traceback" not in err


def test_a_line_torn_by_a_killed_writer_costs_only_itself(tmp_path) -> None:
    """A writer killed mid-line leaves no newline; the next answer must still be read back whole."""
    from simlab.llm.cache import ResponseCache
    from simlab.llm.types import ChatResult
    from simlab.transcript import Usage

    cache = ResponseCache(tmp_path)
    path = cache.path_for("m")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"key":"torn","role":"agent","res')
    cache.put("m", "k1", ChatResult(text="hello", tool_calls=[], usage=Usage(), model="m"), role="agent")
    fresh = ResponseCache(tmp_path)
    assert fresh.get("m", "torn") is None
    found = fresh.get("m", "k1")
    assert found is not None and found.text == "hello"


def test_a_cache_that_cannot_be_written_is_a_miss_not_an_error(tmp_path) -> None:
    from simlab.llm.cache import ResponseCache
    from simlab.llm.types import ChatResult
    from simlab.transcript import Usage

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    cache = ResponseCache(blocker / "cache")
    cache.put("m", "k1", ChatResult(text="hello", tool_calls=[], usage=Usage(), model="m"), role="agent")
    assert cache.get("m", "k1") is None


@pytest.mark.parametrize("damage", [
    "poison", None, 7, [], {"text": "x", "tool_calls": "lookup_order"},
    {"text": "x", "tool_calls": [{"id": "c", "name": "lookup_order"}]},
    {"text": "x", "tool_calls": [{"id": 1, "name": "n", "arguments": "{}"}]},
    {"text": "x", "usage": {"input_tokens": "12"}}, {"text": "x", "usage": "lots"},
    {"text": ["x"]}, {"text": "x", "surprise": 1},
])
def test_a_damaged_entry_is_a_miss_said_once(tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Any) -> None:
    """A well-formed line whose answer is not an answer is a miss (the model is asked again), never
    a failed trial; the log says so once per file."""
    cache = ResponseCache(tmp_path)
    cache.put("m", "good", _result("fine"), role="agent")
    with cache.path_for("m").open("a") as f:
        for key in ("bad1", "bad2"):
            f.write(json.dumps({"key": key, "role": "agent", "result": damage}) + "\n")
    fresh = ResponseCache(tmp_path)
    assert fresh.get("m", "bad1") is None and fresh.get("m", "bad2") is None
    assert fresh.get("m", "good").text == "fine"
    assert sum("damaged answer" in r.message for r in caplog.records) == 1


async def test_a_run_whose_cache_is_damaged_asks_the_model_again(tmp_path: Path) -> None:
    fn = Counting()
    name = register_fake("cache-damaged", fn)
    cache = ResponseCache(tmp_path)
    model = LiteLLMModel(name, role="agent", cache=cache)
    await model.chat(HELLO, tools=TOOLS, seed=1)
    path = next(tmp_path.glob("*.jsonl"))
    entry = json.loads(path.read_text())
    entry["result"]["usage"]["output_tokens"] = "many"
    path.write_text(json.dumps(entry) + "\n")
    again = await LiteLLMModel(name, role="agent", cache=ResponseCache(tmp_path)).chat(HELLO, tools=TOOLS, seed=1)
    assert fn.calls == 2 and again.text == "answer 2" and not again.usage.cached


def test_clear_deletes_only_cache_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A run that a user once called ``.cache`` (refused now) keeps its trials through a clear."""
    folder = tmp_path / "transcripts" / ".cache"
    ResponseCache(folder).put("a", "k", _result("x"), role="agent")
    for name in ("trials.jsonl", "heads.jsonl", "retired.jsonl", "notes.jsonl"):
        (folder / name).write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["cache", "clear"]) == 0
    assert "1 model files" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == ["heads.jsonl", "notes.jsonl", "retired.jsonl", "trials.jsonl"]


def test_a_run_id_starting_with_a_dot_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from tests.support import write_project

    write_project(tmp_path, scenarios=1, trials=1)
    monkeypatch.chdir(tmp_path)
    for run_id in (".cache", ".hidden"):
        assert main(["run", "--run-id", run_id, "--no-progress"]) == 2
        assert "starts with '.'" in capsys.readouterr().err
        assert not (tmp_path / "transcripts" / run_id).exists()
