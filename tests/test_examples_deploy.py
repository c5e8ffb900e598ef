"""examples/ci and examples/k8s: valid for their engines (the engines' own schemas), every simlab
command in them parses, and their commands, played here as the engine would play them, turn N
shards into exactly the unsharded run (and a missing shard into an inconclusive gate)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from simlab.cli.main import build_parser
from simlab.runner.shard import AUTO_SOURCES
from tests.test_shard import records

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "examples" / "ci" / "github-nightly.yml"
K8S = REPO / "examples" / "k8s"
BIN = Path(sys.executable).parent
NIGHT = "2026-12-05"
AUTO_VARIABLES = {name for _, index, count, _ in AUTO_SOURCES for name in (index, count)}


def manifest(name: str) -> str:
    """A manifest as `envsubst '$NIGHT'` hands it to kubectl (play-job.yaml's instructions)."""
    return (K8S / name).read_text().replace("${NIGHT}", NIGHT)


def job(name: str) -> dict[str, Any]:
    return yaml.safe_load(manifest(name))


def container(name: str) -> dict[str, Any]:
    return job(name)["spec"]["template"]["spec"]["containers"][0]


def workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def run_steps(job_name: str) -> list[dict[str, Any]]:
    return [step for step in workflow()["jobs"][job_name]["steps"] if "run" in step]


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True, timeout=120)


def test_the_workflow_is_valid_for_github_actions_and_a_broken_one_is_not(tmp_path):
    done = tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW))
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "run-on:", 1))
    assert tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(broken)).returncode != 0


def test_the_manifests_are_valid_kubernetes_and_a_broken_one_is_not(tmp_path):
    for path in sorted(K8S.glob("*.yaml")):
        (tmp_path / path.name).write_text(manifest(path.name))
        done = tool("kubernetes-validate", "--strict", str(tmp_path / path.name))
        assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text(manifest("play-job.yaml").replace("completions: 4", "completion: 4"))
    assert tool("kubernetes-validate", "--strict", str(broken)).returncode != 0


def simlab_commands() -> list[str]:
    """Every simlab command line of the examples, as written."""
    lines = [step["run"] for name in workflow()["jobs"] for step in run_steps(name)]
    lines.append(shlex.join(container("play-job.yaml")["command"]))
    lines += re.split(r"&&|;", container("merge-gate-job.yaml")["command"][-1])
    found = [part.strip() for line in lines for part in re.split(r"&&|;", line) if "simlab " in part]
    return [re.sub(r"^\S*simlab ", "simlab ", " ".join(part.split())) for part in found]


def test_every_simlab_command_in_the_examples_parses():
    commands = simlab_commands()
    assert {c.split()[1] for c in commands} >= {"run", "merge", "gate", "report"}
    parser = build_parser()
    for command in commands:
        argv = shlex.split(command.replace('"$SUITE"', "suites/nightly.yaml"))[1:]
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"simlab cannot parse {command!r} from the examples")
        if argv[0] == "run":
            assert "--shard" in argv and argv[argv.index("--shard") + 1] == "auto"


def project(tmp_path: Path) -> Path:
    """`simlab init`'s starter project with a nightly suite of 2 scenarios × 9 trials, and the
    unsharded run of that suite as transcripts/nightly."""
    assert simlab(tmp_path, "init", "project").returncode == 0
    root = tmp_path / "project"
    smoke = (root / "suites" / "smoke.yaml").read_text()
    (root / "suites" / "nightly.yaml").write_text(smoke.replace("trials: 4", "trials: 9"))
    return root


def simlab(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "simlab", *args], cwd=cwd, env=clean_env(env),
                          capture_output=True, text=True, timeout=300)


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in AUTO_VARIABLES and k != "GITHUB_STEP_SUMMARY"}
    return environ | (extra or {})


def shell(command: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=clean_env(env), capture_output=True,
                          text=True, timeout=300)


def unsharded(root: Path) -> dict[str, dict]:
    single = root.parent / "single"
    shutil.copytree(root, single)
    assert simlab(single, "run", "--suite", "suites/nightly.yaml", "--run-id", "nightly",
                  "--no-progress").returncode == 0
    return records(single / "transcripts" / "nightly" / "trials.jsonl")


def test_the_kubernetes_jobs_played_here_merge_into_the_unsharded_run(tmp_path):
    root = project(tmp_path)
    expected = unsharded(root)
    bin_dir = tmp_path / "bin"  # `simlab` on PATH, as in the image
    bin_dir.mkdir()
    (bin_dir / "simlab").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m simlab "$@"\n')
    (bin_dir / "simlab").chmod(0o755)
    path = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    runs = tmp_path / "runs"  # the shared volume
    play, spec = container("play-job.yaml"), job("play-job.yaml")["spec"]
    env = {e["name"]: e["value"] for e in play["env"] if "value" in e}
    mount = play["volumeMounts"][0]
    assert mount["mountPath"] == "/project/transcripts" and play["workingDir"] == "/project"
    for index in range(spec["completions"]):  # one pod per index
        pod = tmp_path / f"pod-{index}"
        shutil.copytree(root, pod)
        share = runs / mount["subPathExpr"].replace("$(JOB_COMPLETION_INDEX)", str(index))
        share.mkdir(parents=True)
        (pod / "transcripts").symlink_to(share)
        done = subprocess.run(play["command"], cwd=pod, capture_output=True, text=True, timeout=300,
                              env=clean_env(env | path | {"JOB_COMPLETION_INDEX": str(index)}))
        assert done.returncode == 0, done.stderr

    gate = container("merge-gate-job.yaml")
    assert gate["volumeMounts"][0]["mountPath"] == "/runs"
    script = gate["command"][-1].replace("/runs", str(runs))
    done = shell(script, root, path)
    assert done.returncode == 0, done.stdout + done.stderr
    night = runs / NIGHT
    assert records(night / "merged" / "trials.jsonl") == expected
    assert (night / "nightly.xml").is_file() and (night / "nightly.html").is_file()

    shutil.rmtree(night / "shard-1")  # a pod that never wrote anything
    done = shell(script, root, path)
    assert done.returncode == 3, done.stdout + done.stderr  # the merged run is short: inconclusive


EXPRESSIONS = {"${{ strategy.job-total }}": "{count}", "${{ strategy.job-index }}": "{index}",
               "${{ matrix.shard }}": "{shard}"}


def step_env(step: dict[str, Any], **values: Any) -> dict[str, str]:
    """A step's environment (the workflow's, then the step's), its expressions evaluated as Actions
    would for this matrix job; secrets are left out, and an expression this test does not know fails it."""
    out: dict[str, str] = {}
    for name, value in {**workflow().get("env", {}), **step.get("env", {})}.items():
        text = str(value)
        if text.startswith("${{ secrets."):
            continue
        for expression, template in EXPRESSIONS.items():
            if expression in text:
                text = text.replace(expression, template.format(**values))
        assert "${{" not in text, f"teach this test the expression in {name}: {value}"
        out[name] = text
    return out


def play_steps(steps: list[dict[str, Any]], cwd: Path, **values: Any) -> dict[str, int]:
    """The steps' `run:` commands in order, as a runner plays them: after a failure only `always()`
    steps run. The install step is this test's own venv (a `.venv/bin/simlab` in the folder)."""
    status: dict[str, int] = {}
    failed = False
    for step in steps:
        if "pip install" in step["run"]:
            continue
        condition = step.get("if", "success()")
        if (failed and condition != "always()") or (not failed and condition == "failure()"):
            continue
        done = shell(step["run"], cwd, step_env(step, **values))
        status[step.get("name", step["run"])] = done.returncode
        failed = failed or done.returncode != 0
    return status


def test_the_workflow_played_here_merges_its_matrix_into_the_unsharded_run(tmp_path):
    root = project(tmp_path)
    expected = unsharded(root)
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "simlab").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m simlab "$@"\n')
    (venv_bin / "simlab").chmod(0o755)
    play = workflow()["jobs"]["play"]
    shards = play["strategy"]["matrix"]["shard"]
    gate_job = tmp_path / "gate"
    shutil.copytree(root, gate_job)
    for index, shard in enumerate(shards):
        runner = tmp_path / f"runner-{shard}"
        shutil.copytree(root, runner, symlinks=True)
        status = play_steps(run_steps("play"), runner, index=index, count=len(shards), shard=shard)
        assert set(status.values()) == {0}, status
        upload = next(s for s in play["steps"] if "upload-artifact" in s.get("uses", ""))
        name = upload["with"]["name"].replace("${{ matrix.shard }}", str(shard))
        shutil.copytree(runner / upload["with"]["path"], gate_job / "shards" / name)  # download-artifact
    status = play_steps(run_steps("gate"), gate_job)
    assert set(status.values()) == {0}, status
    assert records(gate_job / "transcripts" / "nightly" / "trials.jsonl") == expected
    assert (gate_job / "nightly.xml").is_file() and (gate_job / "nightly.html").is_file()
    assert records(gate_job / "transcripts" / "nightly-baseline" / "trials.jsonl") == expected
