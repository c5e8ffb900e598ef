"""`simlab report --html FILE` (issue 18): one self-contained file, no network, no script; checked
as text and in a real headless Chromium (a screenshot's pixels and the rendered DOM)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.report.charts import COLOURS
from simlab.report.html import FAILED_COLOUR

REPO = Path(__file__).resolve().parents[1]
REFUND = "scenarios/retail/refund-damaged-card.yaml"
HOSTILE = 'def agent(inp):\n    return "<script>alert(1)</script><img src=x onerror=alert(2)> no refund today"\n'


@pytest.fixture
def report(tmp_path: Path, monkeypatch, capsys) -> Path:
    """The HTML report of a run whose trials all fail: a hostile agent's text in every transcript."""
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    (tmp_path / "hostile_agent.py").write_text(HOSTILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert main(["run", "--run-id", "bad", "--no-progress", "--trials", "3", "--agent",
                 "python:hostile_agent.py:agent", REFUND]) == 0
    assert main(["report", "bad", "--html", "out/report.html"]) == 2  # no such folder: a usage error
    (tmp_path / "out").mkdir()
    assert main(["report", "bad", "--html", "out/report.html"]) == 0
    assert "html: out/report.html" in capsys.readouterr().err
    return tmp_path / "out/report.html"


def test_the_html_report_is_one_file_that_needs_no_network(report: Path):
    text = report.read_text(encoding="utf-8")
    tags, attributes, styles = parse(text)
    assert not tags & {"script", "link", "iframe", "img", "object", "embed", "image", "use"}, tags
    assert not {a for a in attributes if a.endswith("src") or a.startswith("on") or a.endswith(":href")}, attributes
    links = re.findall(r'<a href="([^"]*)"', text)  # only links inside the page: a failure mode's first trial
    assert links and all(link.startswith("#") and f'id="{link[1:]}"' in text for link in links), links
    assert text.count("href=") == len(links)
    assert not any("url(" in css or "@import" in css for css in styles)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in text
    for section in ("suite", "scenarios", "pass^k curves", "checks that fail most", "cost and latency",
                    "trials that did not pass"):
        assert f">{section}</h2>" in text
    assert text.count("<svg") == 2  # the curves and the duration histogram: no cost chart, as
    assert "cost unknown for 3 of 3 trials" in text  # a plain Python agent's cost is unknown
    for trial in (1, 2, 3):
        assert f"refund-damaged-card#{trial}</code>" in text
        assert f"transcripts/bad/trials.jsonl:{trial}" in text
    assert 'class="failing"' in text  # the failing event is marked


def parse(text: str) -> tuple[set[str], set[str], list[str]]:
    """The tag names, the attribute names and the stylesheets of an HTML document."""
    from html.parser import HTMLParser

    tags: set[str] = set()
    attributes: set[str] = set()
    styles: list[str] = []

    class Collect(HTMLParser):
        in_style = False

        def handle_starttag(self, tag: str, attrs: list) -> None:
            tags.add(tag)
            attributes.update(name for name, _ in attrs)
            self.in_style = tag == "style"

        def handle_data(self, data: str) -> None:
            if self.in_style:
                styles.append(data.lower())

        def handle_endtag(self, tag: str) -> None:
            self.in_style = False

    Collect().feed(text)
    assert "svg" in tags and "style" in tags
    return tags, attributes, styles


def pixels(path: Path) -> tuple[tuple[int, int], list[tuple[int, int, int]]]:
    """The size and RGB pixels of a screenshot."""
    from PIL import Image

    with Image.open(path) as image:
        rgb = image.convert("RGB")
        data = rgb.tobytes()
        return rgb.size, [(data[i], data[i + 1], data[i + 2]) for i in range(0, len(data), 3)]


def count_colour(pixels: list[tuple[int, int, int]], hex_colour: str) -> int:
    target = tuple(bytes.fromhex(hex_colour.lstrip("#")))
    return sum(1 for pixel in pixels if pixel == target)


def count_blue(pixels: list[tuple[int, int, int]]) -> int:
    """Pixels of a clearly blue hue: the charts' first series (drawn translucent, so not one exact
    colour); nothing else on the page is blue."""
    return sum(1 for r, g, b in pixels if b > r + 60 and b > g + 20)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium from the OS packages (apt-get install chromium); "
                                             "not installed here, so the browser check did not run")
def test_the_html_report_renders_offline_in_a_headless_browser(report: Path, tmp_path: Path):
    assert CHROMIUM is not None
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             f"--user-data-dir={tmp_path / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
             "--hide-scrollbars", "--window-size=1280,4000"]
    url = report.resolve().as_uri()
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True, timeout=300, check=True).stdout
    assert "<svg" in dom and "refund-damaged-card#1" in dom and "trials that did not pass" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([*flags, f"--screenshot={shot}", url], capture_output=True, timeout=300, check=True)
    size, shown = pixels(shot)
    assert size == (1280, 4000)
    assert count_colour(shown, FAILED_COLOUR) > 1000  # the first failed trial is open, its failing event marked
    assert count_blue(shown) > 1000  # the charts were drawn (their first series is blue: COLOURS[0])
    assert COLOURS[0] == "#1f77b4"
    # nothing widens the page past a laptop's window: a wide table scrolls inside its own box, long
    # lines wrap (a copy of the page measures itself: the report carries no script of its own)
    probe = tmp_path / "probe.html"
    measure = "<script>document.title = 'width ' + document.documentElement.scrollWidth</script>"
    probe.write_text(report.read_text().replace("</body>", measure + "</body>"))
    dom = subprocess.run([*flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    width = re.search(r"<title>width (\d+)</title>", dom)
    assert width is not None and int(width.group(1)) <= 1280, width


def test_chart_labels_from_files_stay_text_and_no_script_is_left():
    from simlab.report.charts import curves_svg, histogram_svg

    svg = curves_svg({"</script><b onmouseover=x>bold</b>": [1.0, 0.5, None]})
    tags, attributes, _ = parse(f"<style></style>{svg}")
    assert "script" not in tags and "b" not in tags and "onmouseover" not in attributes
    assert "&lt;/script&gt;&lt;b onmouseover=x&gt;" in svg
    assert "<script" not in histogram_svg("cost", [0.0, 0.0]) + histogram_svg("cost", [0.1, 0.3, 0.2])


def axis_labels(svg: str) -> list[str]:
    """The x axis's labels of a pygal chart, as drawn."""
    start = svg.index('class="axis x')
    ends = [i for i in (svg.find('class="axis', start + 1), svg.find('class="series', start)) if i > 0]
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg[start:min(ends, default=len(svg))])


def test_histogram_labels_tell_the_bins_apart_and_a_zero_cost_draws_no_range():
    from simlab.report.charts import histogram_svg

    durations = [0.000544 + i * 0.0001 for i in range(50)] + [0.0066]  # a fast offline run: milliseconds
    labels = axis_labels(histogram_svg("trial duration", durations, "s"))
    assert labels == ["0.5 ms", "1.6 ms", "2.6 ms", "3.6 ms", "4.6 ms", "5.6 ms", "6.6 ms"]  # every other edge
    assert not any("…" in label for label in labels)
    costs = axis_labels(histogram_svg("cost per trial (USD)", [0.0012, 0.0031, 0.0024], "$"))
    assert costs[0] == "$0.00120" and costs[-1] == "$0.00310" and len(set(costs)) == 7, costs
    zero = histogram_svg("cost per trial (USD)", [0.0] * 40, "$")
    assert axis_labels(zero) == ["all 40 at $0"]  # one bar at $0, never a bar from $0 to $0.01
    assert "0.01" not in zero and "0.001" not in zero
