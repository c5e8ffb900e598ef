"""Long lines for people, broken between phrases: after ``; `` or ``: `` or ``, ``, before `` (``,
never inside a tool call's arguments or a quoted string when a break outside them fits, and
never in the middle of a phrase such as ``rubric:no-date-promise ×4`` or ``to fail at most 5%``.
Used by every terminal surface that prints a line which may be longer than the terminal (a CI
log: 160 columns): the report's notes, the gates, ``simlab compare``, the viewer's key help.
Machine output (JSON) is never wrapped."""

from __future__ import annotations

from rich.cells import cell_len

__all__ = ["phrase_lines"]

# the strength of a break after each separator (a space: a break between two words, the last resort)
_AFTER = {"; ": 4, "   ": 4, " — ": 4, " · ": 4, ": ": 3, ", ": 2}
_OPEN, _CLOSE = "([{", ")]}"


def _breaks(text: str) -> list[tuple[int, int, int]]:
    """(position, depth, strength) of every place a line may break: the position is where the
    next line starts; the depth counts open brackets and double quotes there."""
    out: list[tuple[int, int, int]] = []
    depth, quoted = 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in _OPEN:
            depth += 1
        elif not quoted and ch in _CLOSE:
            depth = max(0, depth - 1)
        if ch != " " or i == 0:
            continue
        strength = max((s for sep, s in _AFTER.items() if text.endswith(sep, 0, i + 1)), default=0)
        if not strength and text.startswith("(", i + 1):
            strength = 1  # before a parenthesis: the aside goes down whole
        out.append((i + 1, depth + quoted, strength))
    return out


def _cut(text: str, width: int) -> int:
    """Where to end the first line of ``text`` so that it holds at most ``width`` cells: at a
    phrase boundary outside brackets and quotes if one fits (inside them only if none does), a
    late one rather than an early one (a stub line), a stronger one a little earlier; between two
    words only when no phrase boundary fits; mid-word only when nothing else does."""
    fits = [b for b in _breaks(text) if 0 < b[0] and cell_len(text[: b[0]].rstrip()) <= width]
    if not fits:
        return _hard_cut(text, width)
    pool = [b for b in fits if b[2]] or fits  # phrase boundaries first
    shallowest = min(b[1] for b in pool)
    pool = [b for b in pool if b[1] == shallowest]
    pool = [b for b in pool if b[0] >= width * 2 // 5] or pool  # a break too early leaves a stub
    return max(pool, key=lambda b: b[0] + 10 * b[2])[0]


def _hard_cut(text: str, width: int) -> int:
    n = 0
    for i, ch in enumerate(text):
        n += cell_len(ch)
        if n > width:
            return max(i, 1)
    return len(text)


def phrase_lines(text: str, width: int, *, first: int = 0, indent: int = 0) -> list[str]:
    """``text`` as lines of at most ``width`` cells, broken between phrases. ``first``: the cells
    already taken on the first line (a label printed before it); the lines after the first start
    with ``indent`` spaces. A text that fits is one line, unchanged."""
    lines: list[str] = []
    rest, room = text, max(1, width - first)
    while cell_len(rest) > room:
        at = _cut(rest, room)
        lines.append(rest[:at].rstrip())
        rest = rest[at:].lstrip()
        room = max(1, width - indent)
    lines.append(rest)
    return [lines[0], *(" " * indent + line for line in lines[1:])]
