"""The layers of ARCHITECTURE.md are a rule, not a habit: a module imports only its own layer and
the layers below it (imports inside functions count too), and each heavy library is imported only
in the folder that owns it. Read from the source with ``ast``: nothing is imported to check it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "simlab"

# package (or top-level module) -> layer, as ARCHITECTURE.md's table lists them
LAYERS: dict[str, float] = {
    "errors": 0, "imports": 0, "redact": 0, "inert": 0, "version": 0,
    "specs": 1, "transcript": 2, "traces": 2.5, "llm": 3, "env": 4, "domains": 4,
    "sim": 5, "serve": 5, "frameworks": 5, "graders": 6, "runner": 7, "results": 8, "report": 8,
    "cli": 9, "tui": 9, "api": 9, "testing": 9, "pytest_plugin": 9, "starter": 9, "__main__": 9,
}
ADK = {"schema": 1, "grader": 6, "judge": 6, "trajectory": 6, "convert": 9, "cli": 9}  # adk/ spans layers, module by module
FACADE = 9  # simlab/__init__.py and what it exports (``from simlab import run``)

# heavy library -> the modules (path prefixes under simlab/) that may import it
HEAVY: dict[str, tuple[str, ...]] = {
    "litellm": ("llm/",), "textual": ("tui/",), "pandas": ("api.py",), "pygal": ("report/charts.py",),
    "mcp": ("serve/",), "uvicorn": ("serve/",), "langgraph": ("frameworks/langgraph.py",),
    "langchain_core": ("frameworks/langgraph.py",), "agents": ("frameworks/openai_agents.py",),
    "pydantic_ai": ("frameworks/pydantic_ai.py",), "openai": ("llm/",), "anthropic": ("llm/",),
}


def layer_of(module: str) -> float | None:
    """The layer of a ``simlab.…`` module (None: not simlab's)."""
    parts = module.split(".")
    if parts[0] != "simlab":
        return None
    if len(parts) == 1:
        return FACADE
    if parts[1] == "adk":
        return ADK.get(parts[2], FACADE) if len(parts) > 2 else FACADE
    return LAYERS.get(parts[1], FACADE)  # a name the facade exports: ``from simlab import run``


def imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import in the tree, at any depth."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "simlab":  # ``from simlab import x``: the submodule x, or a name of the facade
                found += [(node.lineno, f"simlab.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def violations(root: Path) -> list[str]:
    """Every import of a higher layer and every heavy import outside its owner, as 'file:line: why'."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        module = ".".join(("simlab", *relative.with_suffix("").parts)).removesuffix(".__init__")
        mine = layer_of(module)
        for line, name in imported(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            theirs = layer_of(name)
            if mine is not None and theirs is not None and theirs > mine:
                found.append(f"{relative}:{line}: layer {mine:g} imports {name} (layer {theirs:g})")
            owners = HEAVY.get(name.split(".")[0])
            if owners and not str(relative).startswith(owners):
                found.append(f"{relative}:{line}: imports {name}, which only {', '.join(owners)} may import")
    return found


def test_no_module_imports_a_layer_above_its_own_nor_a_heavy_library_it_does_not_own() -> None:
    assert violations(ROOT) == []


@pytest.mark.parametrize(("where", "code", "why"), [
    ("specs/planted.py", "from simlab.runner.store import RunStore\n", "layer 1 imports simlab.runner.store"),
    ("graders/planted.py", "def f():\n    from simlab.report import html\n", "layer 6 imports simlab.report"),
    ("runner/planted.py", "from simlab import __version__\n", "layer 7 imports simlab.__version__ (layer 9)"),
    ("report/planted.py", "import litellm\n", "imports litellm, which only llm/ may import"),
    ("sim/planted.py", "from textual.app import App\n", "imports textual.app, which only tui/ may import"),
])
def test_a_planted_upward_or_heavy_import_is_caught(tmp_path: Path, where: str, code: str, why: str) -> None:
    root = tmp_path / "simlab"
    (root / where).parent.mkdir(parents=True)
    (root / where).write_text(code)
    (root / "llm").mkdir(exist_ok=True)
    (root / "llm" / "ok.py").write_text("import litellm\nfrom simlab.specs import Scenario\n")  # allowed
    found = violations(root)
    assert len(found) == 1 and found[0].startswith(f"{where}:") and why in found[0], found


def package_cycles(root: Path) -> list[tuple[str, str]]:
    """Pairs of simlab's packages that import each other, directly or through others."""
    edges: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        mine = path.relative_to(root).parts[0].removesuffix(".py")
        for _, name in imported(ast.parse(path.read_text(encoding="utf-8"))):
            parts = name.split(".")
            if parts[0] == "simlab" and len(parts) > 1 and parts[1] != mine and (root / parts[1]).is_dir():
                edges.setdefault(mine, set()).add(parts[1])

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            here = todo.pop()
            if here == goal:
                return True
            if here not in seen:
                seen.add(here)
                todo += sorted(edges.get(here, ()))
        return False

    return sorted((a, b) for a in edges for b in edges[a] if a < b and reaches(b, a))


def test_no_two_packages_import_each_other() -> None:
    """sim/http_agent once imported serve/, which builds on sim's ToolHandle: the runner now hands
    the agent its tool server (the viewer's screens and app import each other inside tui/, lazily)."""
    assert package_cycles(ROOT) == []
