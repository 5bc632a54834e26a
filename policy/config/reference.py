"""The site's plugin.lua reference, `docs/administrators/plugin-lua.md`, from the declarations.

`globals_table()` lists the plugin's own globals (`ID`, `NAME`, …, `CONFIG`), `settings_table()`
the `CONFIG["SETTINGS"]` keys toolpolicy acts on, `section_table()` the fields of one list of
entries, `reference_page()` the whole page with all of them. The page is the one place these
tables live (the guide's pages link to it rather than copy it).
`python -m policy.config.reference` writes it again after a declaration changed (another path may
be given, for a page outside a checkout), and a test keeps it equal.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from policy._patterns import LazyPattern
from policy.config.fields import Field, FieldType, Mistake, Section, UnknownFields
from policy.config.plugin_globals import PLUGIN_GLOBALS
from policy.config.sections import SECTIONS
from policy.config.settings import LEVEL_NAMES, TOOLPOLICY_KEYS, SettingKey, SettingKind

_CODE_SPAN = LazyPattern(r"(`[^`]*`)")

_MISTAKES = {
    Mistake.SKIPS_ENTRY: "skips the entry",
    Mistake.IGNORED: "ignored, with a warning",
    Mistake.NOT_CHECKED: "kept, not checked",
}
_UNKNOWN = {
    UnknownFields.KEPT: "Fields not listed are kept as given.",
    UnknownFields.NEAR_MISS_SKIPS: (
        "Fields not listed are kept as given, unless one looks like a listed field misspelled: "
        "then the entry is skipped."
    ),
    UnknownFields.SKIP_ENTRY: "Any field not listed skips the entry.",
}
_SETTING_VALUES = {
    SettingKind.BOOL: "`bool`",
    SettingKind.STRING: "`str`",
    SettingKind.STRING_SET: "`tuple[str, ...]`",
    SettingKind.STRING_MAP: '`{"tool.field": str}`',
    SettingKind.LEVEL_MAP: "`{id: LEVEL}`",
    SettingKind.ENUM_MAP: "`{PROVIDER_KIND: LEVEL}`",
    SettingKind.COMPONENT_IDS: "`{COMPONENT: tuple[str, ...]}`",
    SettingKind.CHOICE_LISTS: "`{tool id: tuple[EFFECT, ...]}`",
    SettingKind.GROUP_IDS: "`{group: tuple[configuration id, ...]}`",
    SettingKind.CALL_LIMITS: '`{tool id or glob: "N/window"}`',
    SettingKind.LEVEL: "`LEVEL`",
}


def settings_table(keys: Sequence[SettingKey] = TOOLPOLICY_KEYS) -> str:
    """Key, value as `ManagedSetting.value` holds it, default, `.AllowUserOverride`, scope, and
    each key's declared meaning."""
    rows = [
        "| Key | Value | Default | `.AllowUserOverride` | Meaning |",
        "|---|---|---|---|---|",
    ]
    for key in keys:
        value = _SETTING_VALUES.get(key.kind) or " / ".join(f"`{c}`" for c in key.choices)
        if key.organization_only:
            value += ", organization plugins only"
        if key.rejects_plugin:
            value += "; a malformed value rejects the plugin"
        override = "honored" if key.honors_user_override else "ignored: always locked"
        rows.append(
            f"| `{key.name}` | {value} | {_default(key.default)} | {override} | {_cell(key.doc)} |"
        )
    levels = ", ".join(f"`{name}`" for name in LEVEL_NAMES)
    return "\n".join([*rows, "", f"`LEVEL` is one of {levels}."]) + "\n"


def globals_table() -> str:
    """A row per global a plugin declares about itself (and CONFIG), in reading order."""
    rows = [
        "| Global | Value | Required | A mistake | Meaning |",
        "|---|---|---|---|---|",
    ]
    for declared in PLUGIN_GLOBALS:
        if declared.required:
            mistake = "rejects the plugin"
        elif declared.rejects_organization_plugin:
            mistake = (
                "rejects an organization plugin (a near miss of the name too); in a local one "
                f"ignored, with a warning: read as {declared.default}"
            )
        else:
            mistake = f"ignored, with a warning: read as {declared.default}"
        required = "yes" if declared.required else "no"
        rows.append(
            f"| `{declared.name}` | {_cell(declared.wanted)} | {required} | {mistake} | {declared.doc} |"
        )
    return "\n".join(rows) + "\n"


def section_table(section: Section) -> str:
    """One line on the section's failure rule, then a row per field (a table's fields below it)."""
    skipped = (
        "a skipped entry is an error (it fails closed)"
        if section.fails_closed
        else "a skipped entry is a warning"
    )
    lines = [
        f'`CONFIG["{section.name}"]`: {skipped}. {_UNKNOWN[section.unknown_fields]}',
        "",
        "| Field | Value | Required | Default | A mistake | Meaning |",
        "|---|---|---|---|---|---|",
    ]
    for declared in section:
        lines.append(_field_row(declared, ""))
        if declared.checked:
            lines.extend(_field_row(inner, f"{declared.name}.") for inner in declared.fields)
    return "\n".join(lines) + "\n"


def _field_row(declared: Field, prefix: str) -> str:
    return (
        f"| `{prefix}{declared.name}` | {_value(declared)} | {_required(declared)} | "
        f"{_default(declared.default)} | {_MISTAKES[declared.mistake]} | {declared.doc} |"
    )


def _value(declared: Field) -> str:
    kind = declared.type
    if kind is FieldType.CHOICE:
        return ", ".join(f"`{c}`" for c in declared.choices) + " (any case)"
    if kind is FieldType.FLAG_MAP:
        return "table of true/false by name: " + ", ".join(f"`{c}`" for c in declared.choices)
    if kind is FieldType.CHOICE_LIST_MAP:
        return "table of lists by name, each of: " + ", ".join(f"`{c}`" for c in declared.choices)
    if kind is FieldType.WHOLE_NUMBER:
        return f"whole number {declared.minimum:.0f} to {declared.maximum:.0f}"
    if kind is FieldType.NUMBER:
        return f"number above {declared.minimum:g}, at most {declared.maximum:g}"
    if kind is FieldType.TABLE:
        return "table: " + ", ".join(f"`{inner.name}`" for inner in declared.fields)
    if declared.pattern and kind is FieldType.NONBLANK_TEXT:
        return f"text matching `{declared.pattern}`"
    return {
        FieldType.GUID: "GUID",
        FieldType.TEXT: "text",
        FieldType.NONBLANK_TEXT: "non-blank text",
        FieldType.BOOL: "true/false",
        FieldType.SECRET: "`ENC:v1:` value that decrypts",
        FieldType.TEXT_LIST: "list of texts",
        FieldType.SECRET_TEXT_MAP: "table of texts by name",
        FieldType.PIN_MAP: "table of `sha256:<64 hex digits>` by tool name",
    }[kind]


def _required(declared: Field) -> str:
    if declared.required:
        return "yes"
    if declared.required_when:
        return "when " + " and ".join(f"`{n}` = `{v}`" for n, v in declared.required_when)
    return "no"


def _default(value: object) -> str:
    if value is None:
        return "—"
    if value == ():
        return "`{}`"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


_PAGE_MARK = (
    "<!-- Written by `python -m policy.config.reference`: change policy/config/ instead. -->"
)


def reference_page() -> str:
    """The site's plugin.lua reference: every `CONFIG` key and field toolpolicy reads."""
    parts = [
        _PAGE_MARK,
        "",
        "# plugin.lua reference",
        "",
        'Every global of a plugin, every key of `CONFIG["SETTINGS"]` and every field of the '
        "`CONFIG` lists of entries that "
        "toolpolicy reads, written from their declarations in `policy/config/` — the same "
        "declarations the plugin reader checks against (and, for `CONFIG`, `policy schema` "
        "describes and `policy template` names), so this page cannot drift from what "
        "`policy check` does. Look a key or field up here while writing a plugin; how plugins "
        "load, merge and fail closed is on [Writing plugins](writing-plugins.md).",
        "",
        "## The plugin's globals",
        "",
        "What a plugin says about itself, and `CONFIG`. A required global that is missing or "
        "wrong rejects the whole plugin, as AI Studio does; `policy check` names it with the "
        "file and, when it is there, its line.",
        "",
        globals_table(),
        '## `CONFIG["SETTINGS"]`',
        "",
        "`ManagedSetting.value` per key; `.AllowUserOverride` is the companion key "
        '`"<key>.AllowUserOverride" = true`, which makes the value an editable default where it '
        "is honored.",
        "",
        settings_table(),
    ]
    for section in SECTIONS:
        parts += [f'## `CONFIG["{section.name}"]`', "", section.doc, "", section_table(section)]
    return "\n".join(parts)


def _cell(text: str) -> str:
    """`text` in one table cell, its `<name>` placeholders shown rather than read as HTML."""
    spans = _CODE_SPAN.split(text.replace("\n", " "))
    return "".join(
        span if span.startswith("`") else span.replace("|", "\\|").replace("<", "\\<")
        for span in spans
    )


PAGE = Path("docs/administrators/plugin-lua.md")
"""Where the page lives, from the repository root: the target when none is given."""


def main(arguments: Sequence[str]) -> int:
    """Write the page to each path given (the site's page when none is), refusing a file that
    holds anything else: the reference is written whole, so it would replace that file's text."""
    targets = [Path(name) for name in arguments] or [PAGE]
    for path in targets:
        problem = _target_problem(path)
        if problem:
            print(f"Error: {path}: {problem}", file=sys.stderr)
            return 2
    for path in targets:
        path.write_text(reference_page(), encoding="utf-8")
    return 0


def _target_problem(path: Path) -> str | None:
    if not path.parent.is_dir():
        return f"no folder {path.parent}; run it from the repository root, or name the page's path"
    if path.exists() and not path.read_text(encoding="utf-8").startswith(_PAGE_MARK):
        return (
            f"not the plugin.lua reference page (it does not start with {_PAGE_MARK!r}), and "
            f"the page is written whole, so its text would be lost; the reference tables live "
            f"only in {PAGE}"
        )
    return None


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
