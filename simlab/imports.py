"""Import what a spec names as ``module:attr`` (a dotted module, or a path to a ``.py`` file)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from typing import Any, Callable


class RefError(ValueError):
    """The reference is malformed, does not import, or names nothing callable; one line to show."""


def load_callable(ref: str, *, example: str = "module:function") -> Callable[..., Any]:
    module_name, sep, attr = ref.rpartition(":")
    if not sep or not module_name or not attr:
        raise RefError(f"{ref!r} is not module:attr (e.g. {example})")
    try:
        if module_name.endswith(".py"):
            name = "simlab_user_" + hashlib.sha256(module_name.encode()).hexdigest()[:12]
            spec = importlib.util.spec_from_file_location(name, module_name)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {module_name}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except Exception as exc:  # user code: any import failure is reported in one line
        raise RefError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    func = getattr(module, attr, None)
    if func is None or not callable(func):
        raise RefError(f"{module_name!r} has no callable {attr!r}")
    return func  # type: ignore[no-any-return]
