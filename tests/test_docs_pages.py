"""Every output the docs show is real: each page of ``PAGES`` is played in a temp copy of its
project, offline, and what it shows under each `$ command` is compared with what the command
prints. (The tutorial is played by tests/test_docs_tutorial.py, with the same page syntax.)

The page syntax, one rule for every page:

- a ```` ```console ```` block holds `$ command` lines (a line ending in `\\` goes on), each
  followed by the output the page shows for it. The commands of a page run in order, in one
  folder, as a reader would type them (``$?`` is the previous command's exit status);
- a code block with ``title="PATH"`` (any other language) is a file: it is written to PATH before
  the commands that follow it run;
- the shown output is compared whole, unless it has a line `…` (or one starting with `…`, as
  `…   (abridged)`): then every other line shown is a line of the real output, in order;
- a console block titled ``not run …`` (``title="not run by the docs tests: needs a model
  provider"``) is not played; the title says why, on the page. Only what needs the network or a
  real model provider is marked so, and ``NOT_RUN`` counts them;
- `simlab serve` runs until Ctrl-C: the calls its output shows are made by an MCP client, and the
  shown `^C` is sent as SIGINT (``serve``).

Normalised on both sides, and only these, each because it cannot be the same twice: durations
(`0.13s`, JUnit's `time="0.046"`: wall clock), the project's temp folder (its path), run ids and
dates made from the clock (`20261201-230038`, ISO dates), and `simlab serve`'s port and URL token
(chosen at random at each start).

``SIMLAB_DOCS_UPDATE=1 pytest -m slow -n 0 tests/test_docs_pages.py`` writes the real outputs
of whole blocks into the pages (read the diff before committing it) and prints the real output of
abridged ones; ``-k PAGE`` plays one page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^( *)```(\w*)([^\n]*)\n(.*?)^\1```[ \t]*\n", re.M | re.S)  # indented in a list too
DEMO = ("scenarios", "personas", "examples", "suites", "simlab.yaml")


@dataclass
class Setup:
    """The project a page's commands run in: ``demo`` (this repository's scenarios, personas,
    examples, suites and simlab.yaml), ``starter`` (what `simlab init` writes) or ``empty``; and
    files copied in from the repository (destination: source), for inputs too long to show."""

    project: str = "demo"
    copies: dict[str, str] = field(default_factory=dict)


PAGES: dict[str, Setup] = {
    "docs/concepts/failures.md": Setup(),
    "docs/concepts/statistics.md": Setup(),
    "docs/how-to/adk.md": Setup(copies={"adk-current": "tests/fixtures/adk/generated/current",
                                         "adk/refund.evalset.json": "tests/fixtures/adk/refund.evalset.json",
                                         "adk/test_config.json": "tests/fixtures/adk/test_config.json"}),
    "docs/how-to/coverage.md": Setup(),
    "docs/how-to/custom-graders.md": Setup(),
    "docs/how-to/dataset-figures.md": Setup(),
    "docs/how-to/faults.md": Setup(),
    "docs/how-to/frameworks.md": Setup(),
    "docs/how-to/http-agent.md": Setup(),
    "docs/how-to/import-traces.md": Setup(copies={"adk_default.jsonl": "tests/fixtures/traces/adk_default.jsonl"}),
    "docs/how-to/lint.md": Setup(),
    "docs/how-to/nightly-ci.md": Setup(),
    "docs/how-to/pytest.md": Setup(),
    "docs/how-to/python-api.md": Setup(),
    "docs/how-to/replay.md": Setup(),
    "docs/how-to/report-compare-gate.md": Setup(),
    "docs/how-to/run-scenarios.md": Setup(project="starter"),
    "docs/how-to/write-scenarios.md": Setup(),
}
TUTORIAL = "docs/tutorial.md"  # played by tests/test_docs_tutorial.py
NOT_RUN = [  # the console blocks not played, one entry each: every one needs a model provider
    "docs/how-to/generate.md",  # a model drafts the scenarios (the output shown: an in-process double)
    "docs/how-to/triage.md",  # a judge model writes the causes
]


@dataclass
class Step:
    kind: str  # "command" or "file"
    text: str  # the command, or the file's path
    shown: str = ""  # the output shown under the command, or the file's content
    span: tuple[int, int] = (0, 0)  # where the shown output is in the page (commands)
    run: bool = True  # False in a block titled "not run …"
    indent: str = ""  # the block's indent (a block inside a list item)


def title_of(info: str) -> str | None:
    found = re.search(r'title="([^"]+)"', info)
    return found.group(1) if found else None


def steps(page: str) -> list[Step]:
    """The page's steps in order: the commands of its console blocks, its titled files."""
    found: list[Step] = []
    for block in FENCE.finditer(page):
        indent, lang, title, body = block.group(1), block.group(2), title_of(block.group(3)), block.group(4)
        if lang != "console":
            if title:
                found.append(Step("file", title, "".join(line.removeprefix(indent)
                                                         for line in body.splitlines(keepends=True))))
            continue
        run = not (title or "").startswith("not run")
        offset, going_on = block.start(4), False
        for raw in body.splitlines(keepends=True):
            line = raw.removeprefix(indent)
            if going_on:
                found[-1].text += "\n" + line.rstrip("\n")
                found[-1].span = (offset + len(raw),) * 2
                going_on = line.rstrip("\n").endswith("\\")
            elif line.startswith("$ "):
                found.append(Step("command", line[2:].rstrip("\n"), "", (offset + len(raw),) * 2, run, indent))
                going_on = line.rstrip("\n").endswith("\\")
            elif found and found[-1].kind == "command":
                found[-1].shown += line
                found[-1].span = (found[-1].span[0], offset + len(raw))
            offset += len(raw)
    return found


def normalise(text: str, folder: Path | None = None) -> str:
    if folder is not None:
        text = text.replace(str(folder), "FOLDER")
    text = re.sub(r"\b\d+\.\d+s\b", "N.NNs", text)  # durations
    text = re.sub(r"\b\d{8}-\d{6}\b", "YYYYMMDD-HHMMSS", text)  # default run ids
    text = re.sub(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?[^\s\"',]*", "DATE", text)
    text = re.sub(r'\btime="[\d.]+"', 'time="N.NN"', text)  # JUnit durations
    text = re.sub(r"http://127\.0\.0\.1:\d+/t/[\w-]+/mcp", "http://127.0.0.1:PORT/t/TOKEN/mcp", text)  # serve
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def abridged(shown: str) -> bool:
    return any(line.strip().startswith("…") for line in shown.splitlines())


def mismatch(shown: str, real: str, folder: Path) -> str | None:
    """None when the real output is the one shown (whole, or abridged at its `…` lines)."""
    want, got = normalise(shown, folder), normalise(real, folder)
    if not abridged(shown):
        return None if want == got else f"shown:\n{want}\nreal:\n{got}"
    lines, at = got.splitlines(), 0
    for line in want.splitlines():
        if line.strip().startswith("…") or not line.strip():
            continue
        if line not in lines[at:]:
            return f"not in the real output (in order): {line}\nreal:\n{got}"
        at = lines.index(line, at) + 1
    return None


def environment(base: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SIMLAB_", "GITHUB_", "PYTEST_")) and k != "COLUMNS"}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(REPO),
               PYTHONUNBUFFERED="1", NO_COLOR="1", TERM="dumb", SIMLAB_BACKOFF_SCALE="0")
    if base:
        env["BASE"] = base
    return env


def make_project(setup: Setup, folder: Path) -> None:
    if setup.project == "demo":
        for name in DEMO:
            source = REPO / name
            if source.is_dir():
                shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(source, folder / name)
    elif setup.project == "starter":
        subprocess.run([sys.executable, "-m", "simlab", "init"], cwd=folder, check=True,
                       capture_output=True, env=environment(None))
    for dest, source in setup.copies.items():
        (folder / dest).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / source).is_dir():
            shutil.copytree(REPO / source, folder / dest)
        else:
            shutil.copy(REPO / source, folder / dest)


def play(page: str, folder: Path, base: str | None) -> list[tuple[Step, str]]:
    """Run the page's steps in ``folder``; (step, real output) for each command played."""
    make_project(PAGES[page], folder)
    cwd, last, results = folder, 0, []
    state = folder.parent / f"{folder.name}.cwd"
    for step in steps((REPO / page).read_text(encoding="utf-8")):
        if step.kind == "file":
            (cwd / step.text).parent.mkdir(parents=True, exist_ok=True)
            (cwd / step.text).write_text(step.shown, encoding="utf-8")
            continue
        if not step.run:
            continue
        if step.text.startswith("simlab serve "):
            results.append((step, serve(step, cwd, environment(base))))
            continue
        script = f'cd "{cwd}" && (exit {last}); {step.text}\n__rc=$?; pwd > "{state}"; exit $__rc'
        done = subprocess.run(["bash", "-c", script], env=environment(base), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        last, cwd = done.returncode, Path(state.read_text().strip())
        results.append((step, done.stdout))
    return results


def serve(step: Step, cwd: Path, env: dict[str, str]) -> str:
    """`simlab serve` runs until Ctrl-C, driven by hand: the calls its shown output prints
    (`tool_call   NAME {arguments}`) are made here, in order, by the official MCP client, as the
    reader's agent made them; the shown `^C` is the reader's Ctrl-C, sent here as SIGINT."""
    import asyncio

    from mcp import Client

    calls = [line.split(None, 2)[1:] for line in step.shown.splitlines() if line.startswith("tool_call ")]
    server = subprocess.Popen(["bash", "-c", f"exec {step.text}"], cwd=cwd, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        banner: list[str] = []
        while not banner or banner[-1].strip() not in ("Ctrl-C stops it.", ""):
            banner.append(server.stdout.readline())  # type: ignore[union-attr]
        url = next(line.strip() for line in banner if line.startswith("http"))

        async def agent() -> None:
            async with Client(url) as client:
                for name, arguments in calls:
                    await client.call_tool(name, json.loads(arguments))

        asyncio.run(agent())
        server.send_signal(signal.SIGINT)
        rest, _ = server.communicate(timeout=60)
        # every call was printed before its answer came back, so before the Ctrl-C
        return "".join(banner) + rest.replace("stopped after", "^C\nstopped after", 1)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    """The example agent service of the HTTP guide, on 127.0.0.1, as `$BASE`."""
    from tests.agent_service import AgentService

    with AgentService() as service:
        yield service.base


def update(page: str, results: list[tuple[Step, str]], folder: Path) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    for step, real in sorted(results, key=lambda r: -r[0].span[0]):
        if abridged(step.shown):
            print(f"\n{page}: $ {step.text}\n{real}")
            continue
        out = "\n".join((step.indent + line).rstrip() for line in real.replace(str(folder), "FOLDER").splitlines())
        text = text[:step.span[0]] + (out + "\n" if out else "") + text[step.span[1]:]
    (REPO / page).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_output_shown_is_real(page: str, base: str, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    results = play(page, folder, base)
    assert results, f"{page} plays no command"
    if os.environ.get("SIMLAB_DOCS_UPDATE") == "1":
        update(page, results, folder)
        return
    wrong = [f"$ {step.text}\n{why}" for step, real in results
             if (why := mismatch(step.shown, real, folder)) is not None]
    assert not wrong, f"{page}:\n" + "\n\n".join(wrong)


# --- the page syntax, without playing anything (fast) ----------------------------------------


def every_page() -> list[Path]:
    return sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]


def test_every_command_block_is_played_or_marked_not_run() -> None:
    """A block that shows `$ command` lines is a console block; the page of each played one is
    played here (or is the tutorial), and each one not played says why in its title."""
    unplayed, played_pages = [], set()
    for path in every_page():
        name = str(path.relative_to(REPO))
        for block in FENCE.finditer(path.read_text(encoding="utf-8")):
            lang, title = block.group(2), title_of(block.group(3)) or ""
            if any(line.lstrip().startswith("$ ") for line in block.group(4).splitlines()):
                assert lang == "console", f"{name}: a block of `$ ` commands is not a console block"
            if lang != "console":
                continue
            if title.startswith("not run"):
                assert re.match(r"not run[^:]*: \w", title), f"{name}: {title!r} does not say why"
                unplayed.append(name)
            else:
                played_pages.add(name)
    assert played_pages - {TUTORIAL} == set(PAGES), "pages with console blocks and PAGES differ"
    assert sorted(unplayed) == NOT_RUN, "the console blocks not run changed: count them in NOT_RUN"


def test_no_block_shows_output_without_its_command() -> None:
    """An output is shown in a console block, under its command. A block with no language is
    allowed only where a test generates or checks it otherwise: the CLI reference
    (tests/test_docs_reference.py) and the demo reports (tests/test_docs_site.py)."""
    allowed = {"docs/reference/cli.md", "README.md", "docs/concepts/reading-a-report.md"}
    bare = [f"{path.relative_to(REPO)}:{path.read_text()[:block.start()].count(chr(10)) + 1}"
            for path in every_page() if str(path.relative_to(REPO)) not in allowed
            for block in FENCE.finditer(path.read_text(encoding="utf-8")) if not block.group(2)]
    assert bare == []


def test_the_syntax_is_read_as_documented() -> None:
    page = ('```yaml title="a.yaml"\nx: 1\n```\n'
            "```console\n$ simlab run \\\n    --list\nline one\n…\n$ echo $?\n0\n```\n"
            '```console title="not run: needs a model provider"\n$ simlab triage r --judge m\nout\n```\n')
    found = steps(page)
    assert [(s.kind, s.text, s.shown, s.run) for s in found] == [
        ("file", "a.yaml", "x: 1\n", True), ("command", "simlab run \\\n    --list", "line one\n…\n", True),
        ("command", "echo $?", "0\n", True), ("command", "simlab triage r --judge m", "out\n", False)]
    assert page[found[1].span[0]:found[1].span[1]] == "line one\n…\n"
    folder = Path("/tmp/x")
    assert mismatch("a\n…\nc\n", "a\nb\nc\n", folder) is None
    listed = steps("- a list item:\n\n  ```console\n  $ simlab report r\n  line\n  ```\n")
    assert [(s.text, s.shown, s.indent) for s in listed] == [("simlab report r", "line\n", "  ")]
    assert mismatch("c\n…\na\n", "a\nb\nc\n", folder) is not None  # out of order
    assert mismatch("a\nc\n", "a\nb\nc\n", folder) is not None  # whole unless marked abridged
    assert mismatch("took 0.13s in /tmp/x/p\n", "took 2.50s in /tmp/x/p\n", folder) is None
