"""docs/tutorial.md is run as written: every `$ command` of its console blocks, in order, in one
fresh folder, with the files its titled code blocks show, and the output it shows is the real one.

Only volatile parts are normalised on both sides (durations, dates, the folder's path). The install
block (`pip install -e .`) is not run: the tests run in the environment it makes, whose `bin/`
comes first on PATH as an activated venv's does. `simlab view` is interactive: it is played in its
own test through Textual's pilot, on the run the tutorial made.

`SIMLAB_DOCS_UPDATE=1 pytest tests/test_docs_tutorial.py -n 0` writes the real outputs into the
page instead of comparing (then read the diff before committing it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widget import Widget

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = REPO / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\n", re.M | re.S)
INTERACTIVE = ("simlab view",)


@dataclass
class Step:
    kind: str  # "command" or "file"
    text: str  # the command, or the file's path
    shown: str  # the output shown under the command, or the file's content
    span: tuple[int, int] = (0, 0)  # where the shown output is in the page (commands)


def steps(page: str) -> list[Step]:
    """The page's steps in order: commands of ```console blocks, files of ```LANG title="PATH"."""
    found: list[Step] = []
    for block in FENCE.finditer(page):
        lang, info, body = block.group(1), block.group(2), block.group(3)
        title = re.search(r'title="([^"]+)"', info)
        if title:
            found.append(Step("file", title.group(1), body))
        elif lang == "console":
            start = block.start(3)
            lines = body.splitlines(keepends=True)
            offset = start
            for line in lines:
                if line.startswith("$ "):
                    found.append(Step("command", line[2:].strip(), "", (offset + len(line),) * 2))
                elif found and found[-1].kind == "command":
                    found[-1].shown += line
                    found[-1].span = (found[-1].span[0], offset + len(line))
                offset += len(line)
    return found


def normalise(text: str, folder: Path) -> str:
    text = text.replace(str(folder), "FOLDER")
    text = re.sub(r"\b\d{8}-\d{6}\b", "YYYYMMDD-HHMMSS", text)  # default run ids
    text = re.sub(r"\b\d+\.\d+s\b", "N.NNs", text)  # durations
    text = re.sub(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?\S*", "DATE", text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIMLAB_", "GITHUB_")) and k != "COLUMNS"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(PYTHONUNBUFFERED="1", NO_COLOR="1", TERM="dumb")
    return env


def play(folder: Path) -> list[tuple[Step, str]]:
    """Run the tutorial's steps in ``folder``; (step, real output) for each command."""
    cwd, last, results = folder, 0, []
    state = folder / ".tutorial-cwd"
    for step in steps(TUTORIAL.read_text(encoding="utf-8")):
        if step.kind == "file":
            (cwd / step.text).parent.mkdir(parents=True, exist_ok=True)
            (cwd / step.text).write_text(step.shown, encoding="utf-8")
            continue
        if step.text.startswith(INTERACTIVE):
            results.append((step, ""))
            continue
        script = f'cd "{cwd}" && (exit {last}); {step.text}\n__rc=$?; pwd > "{state}"; exit $__rc'
        done = subprocess.run(["bash", "-c", script], env=environment(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        last, cwd = done.returncode, Path(state.read_text().strip())
        results.append((step, done.stdout))
    return results


def text_of(widget: Widget) -> str:
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join("".join(segment.text for segment in line).rstrip() for line in lines)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[Step, str]]]:
    folder = tmp_path_factory.mktemp("tutorial")
    return folder, play(folder)


def test_every_command_shows_its_real_output(played: tuple[Path, list[tuple[Step, str]]]) -> None:
    folder, results = played
    assert len(results) >= 8, "the tutorial's console blocks were not found"
    if os.environ.get("SIMLAB_DOCS_UPDATE") == "1":
        page = TUTORIAL.read_text(encoding="utf-8")
        for step, real in sorted(results, key=lambda r: -r[0].span[0]):
            if step.text.startswith(INTERACTIVE):
                continue
            text = real.replace(str(folder), "FOLDER")
            text = "\n".join(line.rstrip() for line in text.splitlines())
            page = page[:step.span[0]] + (text + "\n" if text else "") + page[step.span[1]:]
        TUTORIAL.write_text(page, encoding="utf-8")
        return
    for step, real in results:
        if step.text.startswith(INTERACTIVE):
            continue
        assert normalise(step.shown, folder) == normalise(real, folder), f"$ {step.text}"


def test_the_tutorial_ends_with_a_failed_gate(played: tuple[Path, list[tuple[Step, str]]]) -> None:
    """What the page says in words holds: the new scenario fails, the suite's gate fails (exit 1)."""
    folder, results = played
    outputs = {step.text: real for step, real in results}
    assert "borrow-by-author │  0/3" in outputs["simlab run --run-id second"]
    assert "result: a gate failed (exit 1)" in outputs["simlab run --suite suites/smoke.yaml --run-id nightly"]
    assert outputs["echo $?"].strip() == "1"
    assert (folder / "mylab" / "transcripts" / "second" / "trials.jsonl").is_file()


async def test_the_viewer_shows_the_failing_trial_and_quits_on_q(
        played: tuple[Path, list[tuple[Step, str]]]) -> None:
    """`simlab view second`, as the tutorial walks it: the scenario, its trial, the failed check, `q`."""
    from textual.widgets import DataTable

    from simlab.tui import make_app
    from simlab.tui.screens.scenarios import ScenariosScreen
    from simlab.tui.screens.transcript import TranscriptScreen

    folder, _ = played
    app = make_app(folder / "mylab" / "transcripts", "second", poll_interval=None)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if isinstance(app.screen, ScenariosScreen) and app.screen.query_one(DataTable).row_count == 3:
                break
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=table.get_row_index("borrow-by-author"))
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TranscriptScreen)
        shown = "\n".join(text_of(w) for w in app.screen.query("*") if not w.children and w.size.area)
        assert "Beloved lent to the member" in shown
        assert "Which book would you like to borrow?" in shown
        await pilot.press("escape", "escape", "q")
        await pilot.pause()
    assert app.return_code in (0, None)
