"""How much YAML toolpolicy parses: the size and nesting limits, checked before ruamel.yaml sees
the text, in one pass over it.

ruamel.yaml's scanner takes time quadratic in the depth of flow collections (`[[[[…`: 2 KB cost
2 s of CPU, 4 KB 4 s) before any depth check on the parsed data can run, and about 7 µs per byte
otherwise. Every YAML text that arrives from outside — a user settings file, settings pasted into
`policy serve`'s simulate form, a tool definitions file — is checked here first. (The injection
filter reads tool results with libyaml, whose scanner is linear and stops at its own depth limit.)
"""

from __future__ import annotations

from policy._dataclass import dataclass

MAX_YAML_BYTES = 256 * 1024
"""The largest YAML text parsed, in UTF-8 bytes (a user settings file has a few hundred; ruamel
needs about 2 s of CPU for this many)."""

MAX_NESTING = 100
"""The deepest data parsed: YAML (flow brackets and indentation levels) and definition data
alike (deeper data would exhaust the recursion of whoever reads it)."""


@dataclass(frozen=True, slots=True)
class YamlLimitExceeded:
    """Why a YAML text is not parsed: `problem` names the limit, `line` (1-based, 0 for the
    whole text) where it was crossed."""

    problem: str
    line: int


def yaml_limit_exceeded(text: str) -> YamlLimitExceeded | None:
    """Whether `text` is over the size or nesting limit, in time linear in its length.

    The nesting counted is an upper bound of what ruamel.yaml would build: each open indentation
    level of block context (a compact `- ` or `? ` opens one too), plus each open `[` or `{`,
    wherever it stands (within a plain or quoted scalar too), except in a comment of block
    context. Counting too much refuses only text with about a hundred unclosed brackets; counting
    too little is what must not happen (`&anchor[[[…` is flow all the same), since flow depth is
    what makes the scanner slow.
    """
    size = len(text)
    if size <= MAX_YAML_BYTES:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        return YamlLimitExceeded(f"{size:,} bytes of YAML; at most {MAX_YAML_BYTES:,} are read", 0)
    import re

    marks = re.compile(r"[\[\]{}#]")
    flow = 0
    indents: list[int] = []
    for number, line in enumerate(text.split("\n"), 1):
        start = 0
        if flow == 0:
            content = line.lstrip(" ")
            if not content.strip() or content.startswith("#"):
                continue
            column = len(line) - len(content)
            while indents and indents[-1] >= column:
                indents.pop()
            indents.append(column)
            while content[:2] in ("- ", "? "):
                rest = content[2:].lstrip(" ")
                column += len(content) - len(rest)
                content = rest
                indents.append(column)
            start = column
        for mark in marks.finditer(line, start):
            character, position = mark.group(), mark.start()
            if character in "[{":
                flow += 1
            elif character != "#":
                flow = max(0, flow - 1)
            elif not flow and (position == 0 or line[position - 1] in " \t"):
                break  # a comment (or the rest of a scalar): nothing in it opens a collection
            if len(indents) + flow > MAX_NESTING:
                break
        if len(indents) + flow > MAX_NESTING:
            return YamlLimitExceeded(
                f"YAML nested too deeply: more than {MAX_NESTING} levels (brackets and "
                "indentation levels count)",
                number,
            )
    return None
