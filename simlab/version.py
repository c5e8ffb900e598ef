"""simlab's version, read from the installed package's metadata: ``pyproject.toml`` is the one place
it is written. Base layer: every layer may read it (a manifest pins it, ``--version`` prints it)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("simlab")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
