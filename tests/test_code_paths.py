"""Code in spec files: ``.py`` paths named by a scenario (predicates, python rules, comparators)
stay inside the project unless the user opts in; a domain is a module name, never a path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simlab.cli.main import main
from tests.support import write_project

EVIL = '''
from pathlib import Path
Path({marker!r}).write_text("ran")

def check(*args):
    return True
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    write_project(root, scenarios=1, trials=1)
    monkeypatch.chdir(root)
    return root


def with_expect(root: Path, expect: str) -> None:
    path = root / "scenarios" / "s0.yaml"
    path.write_text(path.read_text() + "expect:\n" + expect)


@pytest.mark.parametrize("where", ["absolute", "dotdot", "symlink"])
@pytest.mark.parametrize("field", ["predicate", "rule", "comparator"])
def test_a_py_path_outside_the_project_is_not_run(project: Path, capfd, where: str, field: str) -> None:
    marker = project.parent / "ran.txt"
    evil = project.parent / "evil.py"
    evil.write_text(EVIL.format(marker=str(marker)))
    ref = {"absolute": str(evil), "dotdot": "../evil.py", "symlink": "inside.py"}[where]
    if where == "symlink":
        (project / "inside.py").symlink_to(evil)
    expect = {"predicate": f"  predicate: '{ref}:check'\n",
              "rule": f"  rules:\n    - python: '{ref}:check'\n",
              "comparator": "  trajectory: {mode: subset, calls: [{tool: set_item, args: {key: k0}, "
                            f"compare: {{key: '{ref}:check'}}}}]}}\n"}[field]
    with_expect(project, expect)
    main(["validate"])
    main(["run", "--run-id", "r", "--no-progress"])
    out, err = capfd.readouterr()
    assert not marker.exists(), "code outside the project ran"
    record = json.loads((project / "transcripts/r/trials.jsonl").read_text())
    reasons = " ".join(c.get("reason") or "" for c in record["checks"])
    assert "is outside the project" in reasons + out + err


def test_the_user_can_opt_in_and_code_inside_the_project_runs(project: Path, monkeypatch, capfd) -> None:
    marker = project.parent / "ran.txt"
    (project.parent / "evil.py").write_text(EVIL.format(marker=str(marker)))
    (project / "checks.py").write_text(EVIL.format(marker=str(project / "inside-ran.txt")))
    with_expect(project, "  predicate: 'checks.py:check'\n")
    assert main(["run", "--run-id", "inside", "--no-progress"]) == 0
    assert (project / "inside-ran.txt").exists()
    path = project / "scenarios" / "s0.yaml"  # now outside, opted in
    path.write_text(path.read_text().replace("checks.py:check", "../evil.py:check"))
    monkeypatch.setenv("SIMLAB_ALLOW_CODE_OUTSIDE_PROJECT", "1")
    assert main(["run", "--run-id", "outside", "--no-progress"]) == 0
    assert marker.exists()


@pytest.mark.parametrize("domain", ["../evil.py", "../x", ".hidden"])
def test_a_domain_is_a_module_name_and_a_path_is_a_clear_error(project: Path, capfd, domain: str) -> None:
    path = project / "scenarios" / "s0.yaml"
    path.write_text(path.read_text().replace("domain: tests.support:KV", f"domain: '{domain}'"))
    assert main(["validate"]) == 2
    out, err = capfd.readouterr()
    assert "domain: cannot import" in out + err and "internal error" not in out + err
