"""Safe YAML loading that remembers where every value came from.

Returns the data and a map from field path (tuple of keys and indexes) to the 1-based line, so
that a validation error can name the line. Duplicate keys, Python tags and alias bombs are
rejected before any value is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from simlab.errors import SpecError

MAX_NODES = 200_000  # far beyond any hand-written spec; stops billion-laughs expansion
MAX_BYTES = 5_000_000
LineMap = dict[tuple[Any, ...], int]


def load_yaml_file(path: Path) -> tuple[Any, LineMap]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise SpecError(f"{path}: file is {len(raw):,} bytes; specs are limited to {MAX_BYTES:,}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start}); is this a YAML file?") from None
    if "\x00" in text:
        raise SpecError(f"{path}: contains NUL bytes; is this a YAML file?")
    return load_yaml_text(text, str(path))


def load_yaml_text(text: str, source: str) -> tuple[Any, LineMap]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise SpecError(f"{source}: the file is empty; expected a mapping of fields")
        lines: LineMap = {}
        _walk(node, (), lines, source, [0])
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f":{mark.line + 1}" if mark else ""
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise SpecError(f"{source}{where}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: YAML error: {exc}") from None
    except RecursionError:
        raise SpecError(f"{source}: YAML nested too deeply") from None
    finally:
        loader.dispose()
    return data, lines


def _walk(node: yaml.Node, path: tuple[Any, ...], lines: LineMap, source: str, count: list[int]) -> None:
    count[0] += 1
    if count[0] > MAX_NODES:
        raise SpecError(f"{source}: YAML expands to more than {MAX_NODES:,} values (alias bomb?)")
    if len(path) > 64:
        raise SpecError(f"{source}:{node.start_mark.line + 1}: YAML nested deeper than 64 levels")
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node)
            line = key_node.start_mark.line + 1
            if key in seen and key != "<<":
                dotted = ".".join(str(p) for p in (*path, key))
                raise SpecError(
                    f"{source}:{line}: {dotted}: duplicate key (first at line {seen[key]}); remove one"
                )
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, source, count)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), lines, source, count)


def line_for(lines: LineMap, loc: tuple[Any, ...]) -> int | None:
    """The line of the deepest known prefix of ``loc``."""
    loc = tuple(loc)
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return lines.get(())
