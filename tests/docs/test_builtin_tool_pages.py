"""The Built-in tools page tells an administrator every setting of every built-in tool as its
definition has it: each field is named there, and a settings table row (`| field | meaning | type
| default | allowed |`) shows the field's default and every choice it takes — so a changed
default or a new choice fails here rather than on the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from policy.builtin import builtin_tools
from policy.definitions import SettingField
from tests.e2e._kit import ROOT

PAGE = ROOT / "docs" / "developers" / "built-in-tools.md"
_ROW = re.compile(r"^\| `([\w.]+)` \| (.+) \|$", re.M)


@dataclass(frozen=True)
class _Row:
    tool: str
    field: str
    default: str
    allowed: str


def _fields() -> dict[str, dict[str, SettingField]]:
    return {
        tool.definition.id: dict(tool.definition.settings_schema.properties)
        for tool in builtin_tools()
        if tool.definition.settings_schema is not None
    }


def _rows(text: str) -> list[_Row]:
    rows = []
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        tool = section.split("\n", 1)[0].strip()
        for match in _ROW.finditer(section):
            cells = [cell.strip() for cell in match.group(2).split(" | ")]
            if len(cells) == 4:
                rows.append(_Row(tool, match.group(1), cells[2].strip("`"), cells[3]))
    return rows


ROWS = _rows(PAGE.read_text(encoding="utf-8"))


def test_every_setting_of_every_built_in_tool_is_named_on_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    fields = _fields()
    assert {"web_search", "read_web_page", "search_confluence"} <= fields.keys()
    assert [
        f"{tool}.{field}"
        for tool, own in fields.items()
        for field in own
        if f"`{field}`" not in text
    ] == []


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.tool}.{r.field}" for r in ROWS])
def test_a_settings_row_shows_the_default_and_the_choices_of_its_field(row: _Row) -> None:
    field = _fields()[row.tool].get(row.field)
    assert field is not None, f"{row.tool} has no setting {row.field}"
    if field.default is not None:
        assert row.default == field.default, f"{row.tool}.{row.field}: the default"
    else:
        assert row.default in ("—", "backend default"), f"{row.tool}.{row.field}: has no default"
    missing = [choice for choice in field.enum_values if choice not in row.allowed]
    assert missing == [], f"{row.tool}.{row.field}: choices the page leaves out"


def test_the_page_has_a_settings_table_per_tool() -> None:
    assert {row.tool for row in ROWS} == {"web_search", "read_web_page", "search_confluence"}
    assert len(ROWS) > 15
