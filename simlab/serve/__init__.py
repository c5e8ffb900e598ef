"""The domain's tools served to agents that run outside simlab, over MCP (streamable HTTP), one
endpoint per trial. ``sessions`` (which trial a token names, and what a call does to it) needs
nothing beyond simlab; ``server`` (the MCP app and the HTTP server) needs the ``serve`` extra
(``pip install 'simlab[serve]'``: the official ``mcp`` SDK and uvicorn), imported only when a run
or ``simlab serve`` needs it."""

from __future__ import annotations

import importlib.util

from simlab.errors import UsageError

__all__ = ["require_serve_extra"]

EXTRA_HINT = "pip install 'simlab[serve]'"


def require_serve_extra(what: str) -> None:
    """Raise a ``UsageError`` naming the install command when the ``serve`` extra is missing."""
    missing = [name for name in ("mcp", "uvicorn") if _absent(name)]
    if missing:
        raise UsageError(
            f"{what} needs {' and '.join(missing)} (the serve extra), which is not installed: {EXTRA_HINT}"
        )


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken install
        return True
