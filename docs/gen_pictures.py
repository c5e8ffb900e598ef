"""Regenerate the docs' pictures: SVG screenshots of the viewer, taken by Textual itself.

    python docs/gen_pictures.py          # writes docs/assets/viewer-*.svg

It plays the tutorial's project (docs/tutorial.md: `simlab init`, the scenario it adds, the run
`second`) in a temporary folder, offline, then opens that run in the viewer through Textual's pilot
and saves what a 110×32 terminal shows: the run's scenarios, and the transcript of a failing trial.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "docs" / "assets"
SIZE = (110, 32)


def tutorial_project(folder: Path) -> Path:
    """The tutorial's project with its run `second`, made as the tutorial makes it."""
    simlab = str(Path(sys.executable).parent / "simlab")
    project = folder / "mylab"
    project.mkdir()
    env = {**os.environ, "NO_COLOR": "1"}
    subprocess.run([simlab, "init"], cwd=project, check=True, capture_output=True, env=env)
    page = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
    for path, body in re.findall(r'^```\w+ title="([^"]+)"\n(.*?)^```\n', page, re.M | re.S):
        (project / path).write_text(body, encoding="utf-8")
    subprocess.run([simlab, "run", "--run-id", "second"], cwd=project, check=True, capture_output=True, env=env)
    return project / "transcripts"


async def screenshots(root: Path) -> None:
    from simlab.tui import make_app
    from simlab.tui.screens.scenarios import ScenariosScreen

    app = make_app(root, "second", poll_interval=None)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if isinstance(app.screen, ScenariosScreen) and app.screen.query_one("DataTable").row_count == 3:
                break
        table = app.screen.query_one("DataTable")
        table.move_cursor(row=table.get_row_index("borrow-by-author"))
        await pilot.pause()
        app.save_screenshot("viewer-scenarios.svg", str(ASSETS))
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        app.save_screenshot("viewer-transcript.svg", str(ASSETS))


def main() -> None:
    ASSETS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(screenshots(tutorial_project(Path(tmp))))
    for name in ("viewer-scenarios.svg", "viewer-transcript.svg"):
        print(f"wrote docs/assets/{name}")


if __name__ == "__main__":
    main()
