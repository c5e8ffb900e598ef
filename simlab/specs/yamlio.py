"""Safe YAML loading that remembers where every value came from.

Returns the data and a map from field path (tuple of keys and indexes) to the 1-based line, so
that a validation error can name the line. Duplicate keys, Python and custom tags, alias bombs,
deep nesting, huge files and anything but a regular file are rejected before any value is built.
A syntax error names its line and, where indentation tells, the field it is in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from simlab.errors import SpecError

MAX_NODES = 200_000  # far beyond any hand-written spec; stops billion-laughs expansion
MAX_DEPTH = 64
MAX_BYTES = 5_000_000
LineMap = dict[tuple[Any, ...], int]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"
# Plain data only: no Python objects, custom tags, sets or bytes (they do not survive JSON).
_ALLOWED_TAGS = {
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq", "merge")
}


def load_yaml_file(path: Path) -> tuple[Any, LineMap]:
    return load_yaml_bytes(read_spec_bytes(path), path)


def load_yaml_bytes(raw: bytes, path: Path, *, empty_ok: bool = False) -> tuple[Any, LineMap]:
    """YAML from bytes already read (``read_spec_bytes``): a loader hashes the same bytes it parsed."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise SpecError(f"{path}:{line}: not UTF-8 text (byte {exc.start}); is this a YAML file?") from None
    return load_yaml_text(text, str(path), empty_ok=empty_ok)


def read_spec_bytes(path: Path) -> bytes:
    """The file's bytes, refusing anything but a regular file of at most ``MAX_BYTES`` (a link to
    /dev/zero or a FIFO would otherwise be read forever)."""
    try:
        if not path.is_dir() and path.exists() and not path.is_file():
            raise SpecError(f"{path}: not a regular file (a device, FIFO or socket); specs are YAML files")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
            if len(raw) > MAX_BYTES:
                size = max(path.stat().st_size, len(raw))
                raise SpecError(f"{path}: file is {size:,} bytes; specs are limited to {MAX_BYTES:,}")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return raw


def load_yaml_text(text: str, source: str, *, empty_ok: bool = False) -> tuple[Any, LineMap]:
    """The document and its lines; an empty file (or comments only) is an error, or with
    ``empty_ok`` the value None (a file whose every field has a default)."""
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise SpecError(f"{source}:{line}: contains NUL bytes; is this a YAML file?")
    try:
        _prescan(text, source)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None or (node.tag == "tag:yaml.org,2002:null" and node.value == ""):
                if empty_ok:
                    return None, {}
                raise SpecError(f"{source}: the file is empty; expected a mapping of fields")
            lines: LineMap = {}
            _check_expansion(node, source)
            _Walker(loader, source, lines).walk(node, ())
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f":{mark.line + 1}" if mark else ""
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        in_flow = exc.context_mark is not None and "flow" in (exc.context or "")  # [ or { left open
        hint = exc.context_mark if in_flow else exc.problem_mark or exc.context_mark
        near = _enclosing_field(text, hint.line) if hint else ""
        raise SpecError(f"{source}{where}: YAML syntax error: {problem}{near}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        raise SpecError(
            f"{source}:{line}: character {exc.character!r} is not allowed in YAML ({exc.reason})"
        ) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: YAML error: {exc}") from None
    except RecursionError:
        raise SpecError(f"{source}: YAML nested too deeply") from None
    return data, lines


def _prescan(text: str, source: str) -> None:
    """Count values and nesting on the event stream (cheap, not recursive) before composing."""
    depth = count = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1
                raise SpecError(f"{source}:{line}: YAML nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            count += 1
            if count > MAX_NODES:
                raise SpecError(f"{source}: more than {MAX_NODES:,} YAML values; is this a spec file?")


def _check_expansion(root: yaml.Node, source: str) -> None:
    """Refuse an alias bomb before walking it: the expanded size of every node, counted once per
    node (iteratively, memoised), so a billion laughs costs microseconds. Cycles are left to the
    walker, which reports them as too deep."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    active: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = (
            [n for pair in node.value for n in pair]
            if isinstance(node, yaml.MappingNode)
            else (node.value if isinstance(node, yaml.SequenceNode) else [])
        )
        if not children_done:
            if key in active:
                return  # a recursive alias: the walker names it
            active.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        active.discard(key)
        if any(id(child) not in sizes for child in children):
            return  # part of a cycle
        sizes[key] = 1 + sum(sizes[id(child)] for child in children)
        if sizes[key] > MAX_NODES:
            raise SpecError(f"{source}: YAML expands to more than {MAX_NODES:,} values (alias bomb?)")


_KEY_LINE = re.compile(r"""^(\s*)(?:-\s+)?([A-Za-z_][\w.-]*|"[^"]*"|'[^']*')\s*:(\s|$)""")


def _enclosing_field(text: str, line_index: int) -> str:
    """`` (near field a.b)``: the block-style keys around 0-based ``line_index`` (a hint, found
    by indentation, for syntax errors where YAML itself cannot say), or "" when unsure."""
    lines = text.splitlines()
    if not 0 <= line_index < len(lines):
        return ""
    here = lines[line_index]
    limit = (
        len(here) - len(here.lstrip()) + (1 if _KEY_LINE.match(here) else 0)
    )  # this key, or enclosing ones
    path: list[str] = []
    for line in reversed(lines[: line_index + 1]):
        match = _KEY_LINE.match(line)
        indent = len(match.group(1)) if match else None
        if match and indent is not None and indent < limit:
            path.append(match.group(2).strip("'\""))
            limit = indent
            if indent == 0:
                return f" (near field {'.'.join(reversed(path))})"
    return ""


def _short(value: str, limit: int = 60) -> str:
    return value if len(value) <= limit else f"{value[:limit]}… ({len(value):,} characters)"


def _shown(value: str, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters with the full length said."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value):,} characters)"


class _Walker:
    """Record the line of every path; reject duplicate keys, unknown tags and alias bombs."""

    def __init__(self, loader: Any, source: str, lines: LineMap):
        self.loader, self.source, self.lines, self.count = loader, source, lines, 0

    def walk(self, node: yaml.Node, path: tuple[Any, ...]) -> None:
        self.count += 1
        if self.count > MAX_NODES:
            raise SpecError(f"{self.source}: YAML expands to more than {MAX_NODES:,} values (alias bomb?)")
        line = node.start_mark.line + 1
        if len(path) > MAX_DEPTH:
            raise SpecError(f"{self.source}:{line}: YAML nested deeper than {MAX_DEPTH} levels")
        self._check_tag(node, path)
        self.lines.setdefault(path, line)
        if isinstance(node, yaml.ScalarNode):
            self._scalar(node, path)
        elif isinstance(node, yaml.MappingNode):
            self._mapping(node, path)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, (*path, index))

    def _check_tag(self, node: yaml.Node, path: tuple[Any, ...]) -> None:
        if node.tag not in _ALLOWED_TAGS:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            dotted = ".".join(str(p) for p in path) or "(top level)"
            raise SpecError(
                f"{self.source}:{node.start_mark.line + 1}: {dotted}: YAML tag {tag!r} is not allowed; "
                "specs are plain data (no Python objects or custom tags)"
            )

    def _mapping(self, node: yaml.MappingNode, path: tuple[Any, ...]) -> None:
        seen: dict[Any, int] = {}
        merges = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merges.append(value_node)
                continue
            self._check_tag(key_node, path)
            key = self._key(key_node, path)
            line = key_node.start_mark.line + 1
            if key in seen:
                dotted = ".".join(str(p) for p in (*path, key))
                raise SpecError(
                    f"{self.source}:{line}: {dotted}: duplicate key (first at line {seen[key]}); remove one"
                )
            seen[key] = line
            self.lines[(*path, key)] = line
            self.walk(value_node, (*path, key))
        for value_node in merges:  # `<<: *base` puts base's keys here unless given explicitly
            self.walk(value_node, (*path, "<<"))
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                if isinstance(source, yaml.MappingNode):
                    for key_node, _ in source.value:
                        key = self._key(key_node, path)
                        if key not in seen:
                            self.lines.setdefault((*path, key), key_node.start_mark.line + 1)

    def _scalar(self, node: yaml.ScalarNode, path: tuple[Any, ...]) -> Any:
        """Build the value now (it is cached for the document), so a bad one names its line."""
        try:
            return self.loader.construct_object(node)
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            dotted = ".".join(str(p) for p in path) or "(top level)"
            why = f" ({_short(str(exc), 120)})" if isinstance(exc, (ValueError, OverflowError)) else ""
            raise SpecError(
                f"{self.source}:{node.start_mark.line + 1}: {dotted}: cannot read {_shown(node.value)} as "
                f"{tag}{why}; "
                "put it in quotes to keep it as text"
            ) from None

    def _key(self, key_node: yaml.Node, path: tuple[Any, ...] = ()) -> Any:
        """The key as it will be in the data (``1`` and ``'1'`` differ), so error paths match."""
        if isinstance(key_node, yaml.ScalarNode):
            key = self._scalar(key_node, (*path, key_node.value))
            try:
                hash(key)
                return key
            except TypeError:
                return key_node.value
        return repr(key_node.value)


def line_for(lines: LineMap, loc: tuple[Any, ...]) -> int | None:
    """The line of the deepest known prefix of ``loc``."""
    loc = tuple(loc)
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return lines.get(())


_SIGNAL_COMMENT = re.compile(r"#*\s*#*\s*(STOP|GIVE[_ ]UP|TRANSFER)\s*#{2,3}", re.IGNORECASE)


def signal_comments(text: str) -> list[tuple[int, str]]:
    """(line, comment) for each YAML comment that starts with a control signal.

    ``- Thanks. ###STOP###`` unquoted is the text "Thanks." and a comment: the stop signal the
    author meant is silently lost. Comments are what the scanner's tokens leave uncovered after
    whitespace; a file the scanner rejects has none to report (its syntax error is reported)."""
    covered: dict[int, list[tuple[int, int]]] = {}
    try:
        for token in yaml.scan(text, Loader=_Loader):
            start, end = token.start_mark, token.end_mark
            for line in range(start.line, end.line + 1):
                first = start.column if line == start.line else 0
                last = end.column if line == end.line else 1 << 30
                covered.setdefault(line, []).append((first, last))
    except yaml.YAMLError:
        return []
    found = []
    for number, source in enumerate(text.splitlines()):
        for match in re.finditer(r"(?:^|(?<=[ \t]))#", source):
            col = match.start()
            if any(a <= col < b for a, b in covered.get(number, [])):
                continue
            comment = source[col:]
            if _SIGNAL_COMMENT.match(comment):
                found.append((number + 1, comment.strip()))
            break  # the rest of the line is this comment
    return found
