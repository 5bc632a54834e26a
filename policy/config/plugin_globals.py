"""The globals a configuration plugin declares about itself — `ID`, `NAME`, `VERSION`, … — and
`CONFIG`, declared once.

The plugin reader (`policy.plugins`) reads them in this order, each by its `GlobalKind`, and
names a missing or wrong one with its `wanted` text; the site's plugin.lua reference
(`policy.config.reference`) lists them with the same words. A required global that is missing
or wrong rejects the whole plugin, as AI Studio's loader does; an optional one is read as its
default, with a warning — except one whose default could loosen the policy
(`rejects_organization_plugin`: PRIORITY decides which organization plugin's value wins), which
rejects an organization plugin. A global the plugin sets whose name is a near miss of a declared
one it does not set ("PRIORTY") is read as that global misspelled.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import field
from enum import StrEnum

from policy._dataclass import dataclass
from policy.config.guid import GUID_EXAMPLE


class GlobalKind(StrEnum):
    """How a global's value is checked."""

    GUID = "guid"
    """A GUID other than the template's all-zero one."""
    NONBLANK_TEXT = "nonblank_text"
    TEXT = "text"
    """Any string, blank included."""
    VERSION = "version"
    """`MAJOR.MINOR.PATCH`, other than `0.0.0`."""
    NAMES = "names"
    """A table with at least one string."""
    ADDRESS = "address"
    """An absolute http, https or mailto address."""
    CHOICES = "choices"
    """A table with at least one of `choices` (case-sensitive)."""
    PLUGIN_TYPE = "plugin_type"
    """One of `choices` (case-sensitive); only `CONFIGURATION` is read further."""
    BOOL = "bool"
    WHOLE_NUMBER = "whole_number"
    TABLE = "table"
    """The configuration itself, read only from a plugin whose TYPE is CONFIGURATION."""


@dataclass(frozen=True, slots=True)
class PluginGlobal:
    """One global of a plugin.lua."""

    name: str
    kind: GlobalKind
    doc: str
    wanted: str
    """What the value must be, in the words a message uses: "ID must be <wanted>"."""
    required: bool = True
    choices: tuple[str, ...] = ()
    default: str = ""
    """What a missing or wrong optional global is read as, in words."""
    rejects_organization_plugin: bool = False
    """An optional global whose wrong value, or a near miss of its name, could loosen the
    policy as its default: in an organization plugin it rejects the plugin (it fails closed);
    in a local one it is read as its default, with a warning."""
    example: str = ""
    """A valid value as Lua text, as `policy template` writes it."""


@dataclass(frozen=True, slots=True)
class PluginGlobals:
    """The declared globals in reading order, and each by name."""

    declared: tuple[PluginGlobal, ...]
    _by_name: dict[str, PluginGlobal] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {g.name: g for g in self.declared})

    def __getitem__(self, name: str) -> PluginGlobal:
        return self._by_name[name]

    def __iter__(self) -> Iterator[PluginGlobal]:
        return iter(self.declared)


CATEGORIES: tuple[str, ...] = (
    "CORE", "BUSINESS", "INDUSTRY", "UTILITY", "SOFTWARE_DEVELOPMENT", "GAMING", "EDUCATION",
    "ENTERTAINMENT", "SOCIAL", "SHOPPING", "TRAVEL", "HEALTH", "FITNESS", "FOOD", "PARTY", "SPORTS",
    "NEWS", "WEATHER", "MUSIC", "POLITICAL", "SCIENCE", "TECHNOLOGY", "ART", "FICTION", "WRITING",
    "CONTENT_CREATION",
)  # fmt: skip
TARGET_GROUPS: tuple[str, ...] = (
    "EVERYONE", "CHILDREN", "TEENAGERS", "STUDENTS", "ADULTS", "INDUSTRIAL_WORKERS", "OFFICE_WORKERS",
    "BUSINESS_PROFESSIONALS", "SOFTWARE_DEVELOPERS", "SCIENTISTS", "TEACHERS", "ARTISTS",
)  # fmt: skip
PLUGIN_TYPES: tuple[str, ...] = ("LANGUAGE", "ASSISTANT", "CONFIGURATION", "THEME")
"""AI Studio's plugin types (its `NONE` is no type a plugin may declare)."""


def _one_of(choices: tuple[str, ...]) -> str:
    return f"a table with at least one of (case-sensitive): {', '.join(choices)}"


PLUGIN_GLOBALS = PluginGlobals(
    (
        PluginGlobal(
            "ID",
            GlobalKind.GUID,
            "The plugin's identity: another plugin with the same ID replaces it, and its "
            "last-known-good copy is found by it. Generate one for each plugin (`uuidgen`).",
            f"a GUID such as {GUID_EXAMPLE}",
            example=f'"{GUID_EXAMPLE}"',
        ),
        PluginGlobal(
            "NAME",
            GlobalKind.NONBLANK_TEXT,
            "The plugin's name, as `policy explain` and every message name the plugin.",
            "a non-blank string",
            example='"IT tool policy"',
        ),
        PluginGlobal(
            "DESCRIPTION",
            GlobalKind.NONBLANK_TEXT,
            "What the plugin is for, in a sentence.",
            "a non-blank string",
            example='"Which tools our AI apps may offer, and how."',
        ),
        PluginGlobal(
            "SUPPORT_CONTACT",
            GlobalKind.NONBLANK_TEXT,
            "Whom users ask about the plugin.",
            "a non-blank string",
            example='"it-support@example.org"',
        ),
        PluginGlobal(
            "VERSION",
            GlobalKind.VERSION,
            "The plugin's version, as the web page's status (`policy serve`) shows it.",
            'a string "MAJOR.MINOR.PATCH" other than "0.0.0", e.g. "1.0.0"',
            example='"1.0.0"',
        ),
        PluginGlobal(
            "AUTHORS",
            GlobalKind.NAMES,
            "Who wrote the plugin.",
            'a table with at least one name, e.g. { "IT department" }',
            example='{ "toolpolicy" }',
        ),
        PluginGlobal(
            "SOURCE_URL",
            GlobalKind.ADDRESS,
            "Where the plugin's source is kept, or whom to write to about it.",
            "an absolute http, https or mailto address",
            example='"https://example.org/ai/configuration"',
        ),
        PluginGlobal(
            "CATEGORIES",
            GlobalKind.CHOICES,
            "What the plugin is about, as AI Studio sorts plugins; toolpolicy checks it only.",
            _one_of(CATEGORIES),
            choices=CATEGORIES,
            example='{ "CORE" }',
        ),
        PluginGlobal(
            "TARGET_GROUPS",
            GlobalKind.CHOICES,
            "Whom the plugin is for, as AI Studio sorts plugins; toolpolicy checks it only.",
            _one_of(TARGET_GROUPS),
            choices=TARGET_GROUPS,
            example='{ "EVERYONE" }',
        ),
        PluginGlobal(
            "IS_MAINTAINED",
            GlobalKind.BOOL,
            "`false` still loads the plugin, with a warning that it is no longer maintained.",
            "true or false",
            example="true",
        ),
        PluginGlobal(
            "DEPRECATION_MESSAGE",
            GlobalKind.TEXT,
            'Why the plugin is deprecated and what replaces it; `""` when it is not.',
            'a string (may be "")',
            example='""',
        ),
        PluginGlobal(
            "TYPE",
            GlobalKind.PLUGIN_TYPE,
            'A configuration plugin says `"CONFIGURATION"`; a `LANGUAGE` or `ASSISTANT` plugin '
            "is left out with a warning (it is not one), `THEME` is not supported yet.",
            '"CONFIGURATION"',
            choices=PLUGIN_TYPES,
            example='"CONFIGURATION"',
        ),
        PluginGlobal(
            "DEPLOYED_USING_CONFIG_SERVER",
            GlobalKind.BOOL,
            "AI Studio's mark of a plugin delivered by a configuration server; kept, never acted on: "
            "whether a plugin is the organization's comes from `--org` or `--local` alone.",
            "true or false",
            required=False,
            default="not declared",
            example="false",
        ),
        PluginGlobal(
            "PRIORITY",
            GlobalKind.WHOLE_NUMBER,
            "Plugins with a higher priority are applied later and win per setting; organization "
            "plugins always come before local ones, whatever their priority.",
            "a whole number such as 100",
            required=False,
            default="0, as AI Studio does",
            rejects_organization_plugin=True,
            example="0",
        ),
        PluginGlobal(
            "CONFIG",
            GlobalKind.TABLE,
            'The configuration: `CONFIG["SETTINGS"]` (required, may be empty) and the lists of '
            "entries below.",
            "a table, e.g. CONFIG = {}",
            example="{}",
        ),
    )
)
"""In the order the reader reads them (CONFIG last: it is read only when TYPE is CONFIGURATION)."""
