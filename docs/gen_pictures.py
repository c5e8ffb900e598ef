"""Regenerate the docs' pictures: SVG screenshots of the viewer, taken by Textual itself.

    python docs/gen_pictures.py          # writes docs/assets/viewer-*.svg and docs/assets/report-*.png

It plays the tutorial's project (docs/tutorial.md: `simlab init`, the scenario it adds, the run
`second`) in a temporary folder, offline, then opens that run in the viewer through Textual's pilot
and saves what a 110×32 terminal shows: the run's scenarios, and the transcript of a failing trial.
It also writes the demo's HTML report (`simlab report --html`, the repository's own demo) and has
headless Chromium (the OS package) take pictures of it: its top, and its "why trials failed"
section. Without Chromium it says so and writes the viewer's pictures only.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
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
    subprocess.run(
        [simlab, "run", "--run-id", "second"], cwd=project, check=True, capture_output=True, env=env
    )
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


def report_pictures(folder: Path) -> list[str]:
    """PNGs of the demo's HTML report, taken by headless Chromium (none without it)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("note: no Chromium (apt-get install chromium): the HTML report's pictures were not taken")
        return []
    demo = folder / "demo"
    demo.mkdir()
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, demo / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", demo / "simlab.yaml")
    simlab = str(Path(sys.executable).parent / "simlab")
    env = {**os.environ, "NO_COLOR": "1"}
    subprocess.run([simlab, "run", "--run-id", "demo"], cwd=demo, capture_output=True, env=env)
    page = demo / "report.html"
    subprocess.run(
        [simlab, "report", "demo", "--html", str(page)], cwd=demo, check=True, capture_output=True, env=env
    )
    flags = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={folder / 'profile'}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--hide-scrollbars",
    ]
    text = page.read_text(encoding="utf-8")  # the "why trials failed" section alone, with the report's style
    head, section = text[: text.index("<body>") + 6], re.search(r'<h2 id="why">.*?</p>', text, re.S)
    why = demo / "why.html"
    why.write_text(head + (section.group(0) if section else "") + "</body></html>", encoding="utf-8")
    written = []
    for name, source, size in (("report-top.png", page, "1280,900"), ("report-why.png", why, "1280,640")):
        subprocess.run(
            [*flags, f"--window-size={size}", f"--screenshot={ASSETS / name}", source.resolve().as_uri()],
            check=True,
            capture_output=True,
            timeout=300,
        )
        written.append(name)
    return written


def main() -> None:
    ASSETS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(screenshots(tutorial_project(Path(tmp))))
        pictures = report_pictures(Path(tmp))
    for name in ("viewer-scenarios.svg", "viewer-transcript.svg", *pictures):
        print(f"wrote docs/assets/{name}")


if __name__ == "__main__":
    main()
