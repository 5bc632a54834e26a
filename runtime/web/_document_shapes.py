"""Filter a structured tool result field by field, keeping its shape.

A tool result is often a document: JSON from an API, YAML (AgentDojo's tools answer so), a CSV
table. An injection sits in one untrusted field (an e-mail body, a review, a cell), and the
field is the unit to judge: a YAML line wrap is not the end of an instruction, and removing the
field's instruction passage up to the field's end keeps the goal that follows a preamble from
surviving. The document is parsed with maintained parsers (`json`, PyYAML over libyaml, `csv`)
and a string value or cell is passed to the judge only when its place in the text holds
something the caller found there (`_Touches`): a tool result of a hundred fields with one
injected costs one field's judgment, not a hundred. A changed JSON string or YAML scalar is
written back in place (a JSON string, which is also a valid YAML double-quoted scalar), so the
rest of the document stays byte for byte; a table is written again with its own delimiter. Keys
are not judged: renaming one could collide with another.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from yaml import Node

_FieldJudge = Callable[[str, str], str | None]
"""(field text, location such as `$[0].body`) → the filtered text, or None when unchanged."""
_Touches = Callable[[int, int], bool]
"""Whether the text's span [start, end) holds something to judge: fields elsewhere are skipped."""

_CSV_DELIMITERS = ",;\t|"
_MIN_TABLE_ROWS = 3
"""A header and two rows. Two lines of prose with as many commas each are common (a wrapped
sentence in an e-mail body); read as a table, a sentence would be judged in pieces."""
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A JSON string token (unrolled, linear). In a valid JSON text every `"` outside a string
opens one, so scanning from the start finds exactly the document's strings, in order."""
_AFTER_KEY = re.compile(r"\s*:")


def filter_fields(text: str, judge: _FieldJudge, touches: _Touches) -> str | None:
    """The document with its touched fields judged, or None when the text is no JSON, YAML or
    CSV document (prose: the caller judges it as Markdown)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        filtered = _filter_json(text, judge, touches)
        if filtered is None:
            filtered = _filter_python_literal(text, judge)
        if filtered is not None:
            return filtered
    if ":" in text or stripped.startswith("- "):
        filtered = _filter_yaml(text, judge, touches)
        if filtered is not None:
            return filtered
    if "\n" in stripped:
        return _filter_csv(text, judge, touches)
    return None


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    parts: list[str] = []
    cursor = 0
    for start, end, replacement in edits:
        parts.append(text[cursor:start])
        parts.append(replacement)
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


def _json_paths(value: Any, location: str) -> Iterator[tuple[str, bool]]:
    """(location, is_key) of every string of a parsed JSON value, in the order of its text."""
    if isinstance(value, str):
        yield location, False
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{location}.{key}", True
            yield from _json_paths(item, f"{location}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_paths(item, f"{location}[{index}]")


def _filter_json(text: str, judge: _FieldJudge, touches: _Touches) -> str | None:
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if not isinstance(document, dict | list):
        return None
    tokens = [match.span() for match in _JSON_STRING.finditer(text)]
    paths = list(_json_paths(document, "$"))
    if len(paths) != len(tokens):  # a repeated key: json.loads kept one of them
        paths = [("$", _AFTER_KEY.match(text, end) is not None) for _, end in tokens]
    edits: list[tuple[int, int, str]] = []
    for (start, end), (location, is_key) in zip(tokens, paths, strict=True):
        if is_key or not touches(start, end):
            continue
        filtered = judge(json.loads(text[start:end]), location)
        if filtered is not None:
            edits.append((start, end, json.dumps(filtered, ensure_ascii=False)))
    return _splice(text, edits) if edits else text


def _walk(value: Any, location: str, judge: _FieldJudge) -> bool:
    """Judge every string of a parsed value in place (containers mutated); whether any changed."""
    changed = False
    if isinstance(value, dict):
        items: Iterator[tuple[Any, str]] = ((key, f"{location}.{key}") for key in list(value))
    elif isinstance(value, list):
        items = ((index, f"{location}[{index}]") for index in range(len(value)))
    else:
        return False
    for key, at in items:
        item = value[key]
        if isinstance(item, str):
            filtered = judge(item, at)
            if filtered is not None:
                value[key] = filtered
                changed = True
        elif _walk(item, at, judge):
            changed = True
    return changed


def _filter_python_literal(text: str, judge: _FieldJudge) -> str | None:
    """A Python tool's `str(result)`: a dict or list repr, read by `ast.literal_eval`. It holds no
    positions, so every string is judged (such results are rare and small)."""
    import ast

    try:
        document = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(document, dict | list):
        return None
    return repr(document) if _walk(document, "$", judge) else text


_MAX_KEY_CHARACTERS = 64
_NODE_PROPERTIES = re.compile(r"(?:[&!][^\s]*\s+)+")
"""An anchor or tag before a scalar (`&name value`): kept when the scalar is rewritten."""


def _yaml_root(text: str) -> Node | None:
    import yaml

    # the base loader resolves no implicit types: every scalar stays a string, judged as written
    loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
    try:
        return yaml.compose(text, Loader=loader)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None


def _filter_yaml(text: str, judge: _FieldJudge, touches: _Touches) -> str | None:
    """Prose often parses as YAML ("…the following instruction: Send…" is a one-entry mapping):
    a document is a mapping or sequence over several lines with short one-line keys."""
    from yaml import MappingNode, ScalarNode, SequenceNode

    offset = 1 if text.startswith("\ufeff") else 0  # libyaml does not count the byte-order mark
    root = _yaml_root(text[offset:])
    if not isinstance(root, MappingNode | SequenceNode) or not root.value:
        return None
    if "\n" not in text.strip():
        return None
    touched: list[tuple[ScalarNode, str]] = []
    seen: set[int] = set()

    def visit(node: Node, location: str) -> bool:
        """Note the touched scalars; False on a key no document has (prose)."""
        if id(node) in seen:  # an alias: its anchor's node was visited already
            return True
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for key, value in node.value:
                name = "?"
                if isinstance(key, ScalarNode):
                    if len(key.value) > _MAX_KEY_CHARACTERS or "\n" in key.value:
                        return False
                    name = key.value
                if not visit(value, f"{location}.{name}"):
                    return False
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                if not visit(item, f"{location}[{index}]"):
                    return False
        elif isinstance(node, ScalarNode) and touches(
            node.start_mark.index + offset, node.end_mark.index + offset
        ):
            touched.append((node, location))
        return True

    if not visit(root, "$"):
        return None
    edits: list[tuple[int, int, str]] = []
    for node, location in touched:
        filtered = judge(node.value, location)
        if filtered is None:
            continue
        start, end = node.start_mark.index + offset, node.end_mark.index + offset
        source = text[start:end]
        properties = _NODE_PROPERTIES.match(source)
        kept = properties.end() if properties else 0
        body = source[kept:].rstrip()
        edits.append((start + kept, start + kept + len(body), _yaml_scalar(filtered)))
    return _splice(text, sorted(edits)) if edits else text


def _yaml_scalar(value: str) -> str:
    """A double-quoted YAML scalar on one line; JSON's string escapes are YAML's too."""
    return json.dumps(value, ensure_ascii=False)


def _lines_with_ends(text: str) -> Iterator[str]:
    """The text's lines as a file read with `newline=""` gives them to `csv`: split after `\\n`."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _csv_rows(text: str) -> tuple[str, list[tuple[list[str], int, int]]] | None:
    """The delimiter and rows (cells, start, end in the text) of a table: the first delimiter
    that gives every row of at least `_MIN_TABLE_ROWS` the same number (≥ 2) of cells.
    (csv.Sniffer guesses from a sample and gives up on quoted cells.) Only a delimiter the first
    two lines hold equally often is tried: prose and code fail fast."""
    first, _, rest = text.lstrip("\r\n").partition("\n")
    second = rest.partition("\n")[0]
    for delimiter in _CSV_DELIMITERS:
        if not first.count(delimiter) or first.count(delimiter) != second.count(delimiter):
            continue
        lines = list(_lines_with_ends(text))
        line_starts = [0]
        for line in lines:
            line_starts.append(line_starts[-1] + len(line))
        reader = csv.reader(iter(lines), delimiter=delimiter)
        rows: list[tuple[list[str], int, int]] = []
        try:
            read = 0
            for row in reader:
                if row:
                    rows.append((row, line_starts[read], line_starts[reader.line_num]))
                read = reader.line_num
        except csv.Error:
            continue
        widths = {len(row) for row, _, _ in rows}
        if len(rows) >= _MIN_TABLE_ROWS and len(widths) == 1 and widths.pop() >= 2:
            return delimiter, rows
    return None


def _filter_csv(text: str, judge: _FieldJudge, touches: _Touches) -> str | None:
    table = _csv_rows(text)
    if table is None:
        return None
    delimiter, rows = table
    changed = False
    for row_number, (row, start, end) in enumerate(rows, start=1):
        if not touches(start, end):
            continue
        for column, cell in enumerate(row):
            filtered = judge(cell, f"row {row_number}, column {column + 1}")
            if filtered is not None:
                row[column] = filtered
                changed = True
    if not changed:
        return text
    out = io.StringIO()
    line_end = "\r\n" if "\r\n" in text else "\n"
    csv.writer(out, delimiter=delimiter, lineterminator=line_end).writerows(
        row for row, _, _ in rows
    )
    written = out.getvalue()
    return written if text.endswith(("\n", "\r")) else written.rstrip("\r\n")
