"""Filter a structured tool result field by field, keeping its shape.

A tool result is often a document: JSON from an API, YAML (AgentDojo's tools answer so), a CSV
table. An injection sits in one untrusted field (an e-mail body, a review, a cell), and the
field is the unit to judge: a YAML line wrap is not the end of an instruction, and removing the
field's instruction passage up to the field's end keeps the goal that follows a preamble from
surviving. The document is parsed with maintained parsers (`json`, ruamel.yaml, `csv`), each
string value or cell is passed to the judge, and only when a field changed is the document
written again in its own format, so valid JSON stays valid JSON, YAML stays YAML and a table
keeps its columns. Keys are not judged: renaming one could collide with another.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

FieldJudge = Callable[[str, str], str | None]
"""(field text, location such as `$[0].body`) → the filtered text, or None when unchanged."""

_CSV_DELIMITERS = ",;\t|"


def filter_fields(text: str, judge: FieldJudge) -> str | None:
    """The document with its fields judged, or None when the text is no JSON, YAML or CSV
    document (prose: the caller judges it as Markdown)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        filtered = _filter_json(text, judge)
        if filtered is None:
            filtered = _filter_python_literal(text, judge)
        if filtered is not None:
            return filtered
    if ":" in text or stripped.startswith("- "):
        filtered = _filter_yaml(text, judge)
        if filtered is not None:
            return filtered
    if "\n" in stripped:
        return _filter_csv(text, judge)
    return None


def _walk(value: Any, location: str, judge: FieldJudge, wrap: Callable[[Any, str], Any]) -> Any:
    """The value with every string judged in place (containers mutated); None → unchanged."""
    if isinstance(value, str):
        filtered = judge(value, location)
        return None if filtered is None else wrap(value, filtered)
    if isinstance(value, dict):
        for key in list(value):
            changed = _walk(value[key], f"{location}.{key}", judge, wrap)
            if changed is not None:
                value[key] = changed
    elif isinstance(value, list):
        for index, item in enumerate(value):
            changed = _walk(item, f"{location}[{index}]", judge, wrap)
            if changed is not None:
                value[index] = changed
    return None


def _judged(document: Any, judge: FieldJudge, wrap: Callable[[Any, str], Any]) -> bool:
    """Judge every string of a parsed document in place; whether any changed."""
    changed = False

    def noting(field: str, location: str) -> str | None:
        nonlocal changed
        filtered = judge(str(field), location)
        changed = changed or filtered is not None
        return filtered

    _walk(document, "$", noting, wrap)
    return changed


def _as_is(_old: Any, new: str) -> str:
    return new


def _filter_json(text: str, judge: FieldJudge) -> str | None:
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if not isinstance(document, dict | list):
        return None
    if not _judged(document, judge, _as_is):
        return text
    if "\n" in text.strip():
        indent = _json_indent(text)
        return json.dumps(document, ensure_ascii=False, indent=indent)
    separators = (", ", ": ") if '": ' in text else (",", ":")
    return json.dumps(document, ensure_ascii=False, separators=separators)


def _filter_python_literal(text: str, judge: FieldJudge) -> str | None:
    """A Python tool's `str(result)`: a dict or list repr, read by `ast.literal_eval`."""
    import ast

    try:
        document = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(document, dict | list):
        return None
    return repr(document) if _judged(document, judge, _as_is) else text


def _json_indent(text: str) -> int:
    for line in text.strip().splitlines()[1:]:
        if line.strip():
            return max(1, len(line) - len(line.lstrip(" ")))
    return 2


def _filter_yaml(text: str, judge: FieldJudge) -> str | None:
    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import ScalarString

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    try:
        document = yaml.load(text)
    except Exception:
        return None
    if not _reads_as_yaml_document(text, document):
        return None

    def wrap(old: Any, new: str) -> Any:
        return type(old)(new) if isinstance(old, ScalarString) else new

    if not _judged(document, judge, wrap):
        return text
    out = io.StringIO()
    try:
        yaml.dump(document, out)
    except Exception:
        return None
    dumped = out.getvalue()
    return dumped if text.endswith("\n") else dumped.rstrip("\n")


_MAX_KEY_CHARACTERS = 64


def _reads_as_yaml_document(text: str, document: Any) -> bool:
    """Prose often parses as YAML ("…the following instruction: Send…" is a one-entry mapping);
    a document has several lines and short one-line keys."""
    if not isinstance(document, dict | list) or not document or "\n" not in text.strip():
        return False
    return _keys_are_short(document)


def _keys_are_short(value: Any) -> bool:
    if isinstance(value, dict):
        return all(
            not isinstance(key, str) or (len(key) <= _MAX_KEY_CHARACTERS and "\n" not in key)
            for key in value
        ) and all(_keys_are_short(item) for item in value.values())
    if isinstance(value, list):
        return all(_keys_are_short(item) for item in value)
    return True


def _csv_rows(text: str) -> tuple[str, list[list[str]]] | None:
    """The delimiter and rows of a table: the first delimiter that gives every row the same
    number (≥ 2) of cells. (csv.Sniffer guesses from a sample and gives up on quoted cells.)
    Only a delimiter the first two lines hold equally often is tried: prose and code fail fast."""
    first, _, rest = text.lstrip("\r\n").partition("\n")
    second = rest.partition("\n")[0]
    for delimiter in _CSV_DELIMITERS:
        if not first.count(delimiter) or first.count(delimiter) != second.count(delimiter):
            continue
        try:
            rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if row]
        except csv.Error:
            continue
        widths = {len(row) for row in rows}
        if len(rows) >= 2 and len(widths) == 1 and widths.pop() >= 2:
            return delimiter, rows
    return None


def _filter_csv(text: str, judge: FieldJudge) -> str | None:
    table = _csv_rows(text)
    if table is None:
        return None
    delimiter, rows = table
    changed = False
    for row_number, row in enumerate(rows, start=1):
        for column, cell in enumerate(row):
            filtered = judge(cell, f"row {row_number}, column {column + 1}")
            if filtered is not None:
                row[column] = filtered
                changed = True
    if not changed:
        return text
    out = io.StringIO()
    line_end = "\r\n" if "\r\n" in text else "\n"
    csv.writer(out, delimiter=delimiter, lineterminator=line_end).writerows(rows)
    written = out.getvalue()
    return written if text.endswith(("\n", "\r")) else written.rstrip("\r\n")
