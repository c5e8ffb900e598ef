"""Import what a spec names as ``module:attr`` (a dotted module, or a path to a ``.py`` file).

This runs code: the module's own, when it is imported. A dotted module comes from the project
(its root is on ``sys.path``) or from what is installed. A ``.py`` path is read from the project
and must lie inside it (symbolic links resolved): a scenario file from elsewhere cannot make simlab
run ``/tmp/x.py`` or ``../../x.py`` unless the user opts in with
``SIMLAB_ALLOW_CODE_OUTSIDE_PROJECT=1``. The project is the current folder (the CLI), or the one
``in_project`` names for the code it runs (the public API): a context variable, so a run in one
thread never moves another thread's project, and the process's working directory never moves.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

OPT_IN = "SIMLAB_ALLOW_CODE_OUTSIDE_PROJECT"
_PROJECT: ContextVar[Path | None] = ContextVar("simlab_project", default=None)


def project_root() -> Path:
    """The project's folder, absolute: the one ``in_project`` set here, else the current folder."""
    return _PROJECT.get() or Path.cwd().resolve()


@contextlib.contextmanager
def in_project(root: Path) -> Iterator[Path]:
    """Resolve ``.py`` references against ``root`` in this context (this thread, and the tasks and
    forked processes it starts), with ``root`` on ``sys.path`` as the CLI has its folder: the
    project's own modules import the same way from ``simlab run``, the API and the pytest plugin."""
    target = root.resolve()
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    token = _PROJECT.set(target)
    try:
        yield target
    finally:
        _PROJECT.reset(token)


class RefError(ValueError):
    """The reference is malformed, does not import, or names nothing callable; one line to show."""


def load_callable(ref: str, *, example: str = "module:function") -> Callable[..., Any]:
    func = load_attr(ref, example=example, what="callable")
    if not callable(func):
        raise RefError(f"{ref.rpartition(':')[0]!r} has no callable {ref.rpartition(':')[2]!r}")
    return func


def offline_price_map() -> None:
    """LiteLLM reads its bundled price map, never fetches one at import: set before simlab imports
    LiteLLM (``llm/lazy.py``) and before it imports a user's module (an agent that imports LiteLLM
    itself would otherwise fetch the map from the network). A value the user set is kept."""
    # Literal "True": LiteLLM compares the string; without it the price map is fetched at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def load_attr(ref: str, *, example: str = "module:attr", what: str = "attribute") -> Any:
    """The object ``module:attr`` names (not necessarily callable: a compiled graph, an agent)."""
    module_name, sep, attr = ref.rpartition(":")
    if not sep or not module_name or not attr:
        raise RefError(f"{ref!r} is not module:attr (e.g. {example})")
    if module_name.endswith(".py"):
        confine(module_name)
    offline_price_map()  # the user's module may import LiteLLM before simlab does
    try:
        if module_name.endswith(".py"):
            path = os.path.normpath(project_root() / module_name)
            name = "simlab_user_" + hashlib.sha256(path.encode()).hexdigest()[:12]
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {module_name}")
            module = importlib.util.module_from_spec(spec)
            # registered before it runs, as an import would do: a @dataclass (or pickle, or
            # typing.get_type_hints) looks its module up in sys.modules while the file executes
            previous = sys.modules.get(name)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                if previous is None:
                    del sys.modules[name]
                else:
                    sys.modules[name] = previous
                raise
        else:
            module = importlib.import_module(module_name)
    except Exception as exc:  # user code: any import failure is reported in one line
        # chained (not ``from None``): SIMLAB_DEBUG=1 prints the user's own traceback
        raise RefError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    found = getattr(module, attr, None)
    if found is None:
        raise RefError(f"{module_name!r} has no {what} {attr!r}")
    return found


def confine(path_text: str) -> Path:
    """The path of a ``.py`` file a spec names, if it lies inside the project; ``RefError`` if not."""
    root = project_root()
    path = (root / path_text).resolve()
    if os.environ.get(OPT_IN) == "1" or path.is_relative_to(root):
        return path
    raise RefError(
        f"{path_text!r} is outside the project ({root}): a spec may only load code from files inside "
        f"it. Move the file into the project, or set {OPT_IN}=1 if you trust every spec you run"
    )
