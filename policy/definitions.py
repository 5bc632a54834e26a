"""Tool definitions: what a tool is, independent of any provider's wire format.

The models mirror AI Studio's `ToolDefinition` record. Validation (the 13 ordered rules of
in order) lives in `validate_definition`; definitions that arrive as data go through a
JSON Schema check first (`policy/definition_schema.json`) and then the same rules.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from policy._dataclass import dataclass
from policy.configuration import Finding, Severity
from policy.flow import EFFECT_NAMES, Effect
from policy.provenance import SourceLocation
from policy.vocabulary import (
    CONFIGURABLE_CONFIDENCE_LEVELS,
    Component,
    ConfidenceLevel,
    ToolActivation,
    is_known_option_source,
    parse_confidence_level,
)
from policy.yaml_limits import MAX_NESTING, YamlLimitExceeded, yaml_limit_exceeded


def _effects_by_name(value: Any) -> Any:
    """Definitions name effects ("SENDS_OUT"); a misspelled one is refused, naming the four (a
    definition never loses an effect by a typo)."""
    if not isinstance(value, list | tuple):
        return value
    for item in value:
        if isinstance(item, str) and item not in EFFECT_NAMES:
            raise ValueError(
                f"'{item}' is not an effect; expected one of {', '.join(EFFECT_NAMES)}"
            )
    return tuple(dict.fromkeys(value))


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")


def _level_by_name(value: Any) -> Any:
    """Data files name levels ("HIGH", any case); code passes the enum. UNKNOWN is never a minimum."""
    if not isinstance(value, str):
        return value
    level = parse_confidence_level(value)
    if level is None:
        allowed = ", ".join(level.name for level in CONFIGURABLE_CONFIDENCE_LEVELS)
        raise ValueError(f"'{value}' is not a confidence level; expected one of {allowed}")
    return level


class ToolVisibility(_Frozen):
    """Where a tool may be offered; non-empty component lists replace the two flags."""

    chat: bool = True
    assistants: bool = True
    allowed_components: tuple[Component | str, ...] = ()
    denied_components: tuple[Component | str, ...] = ()


class SettingField(_Frozen):
    """One tool setting; every setting is a string field (rule 8)."""

    type: str = "string"
    title: str = ""
    description: str = ""
    enum_values: tuple[str, ...] = Field(default=(), alias="enum")
    option_source: str = ""
    secret: bool = False
    group: str = ""
    default: str | None = None
    """The tool's own default (last step of resolution); None = no default."""


class SettingsSchema(_Frozen):
    """The settings a tool takes (JSON Schema object shape): fields by name, and required ones."""

    type: str = "object"
    properties: dict[str, SettingField] = Field(default_factory=dict)
    required: tuple[str, ...] = ()


class ToolFunction(_Frozen):
    """What the model sees: name, description and JSON Schema parameters."""

    name: str
    description_for_llm: str = ""
    strict: bool = True
    parameters: Any = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolDefinition(_Frozen):
    """Everything the policy knows of a tool before it runs: where it shows, how it is activated,
    its settings, instructions, minimum provider confidence and the function the model sees."""

    schema_version: int = 1
    id: str
    implementation_key: str
    visible_in: ToolVisibility = Field(default_factory=ToolVisibility)
    activation: ToolActivation = ToolActivation.SELECTION
    settings_schema: SettingsSchema = Field(default_factory=SettingsSchema)
    system_prompt_instructions: str = ""
    minimum_provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    effects: tuple[Effect, ...] | None = None
    """What its calls and results do (`policy.flow.Effect`); None declares nothing, which the
    flow rule reads as all four."""
    function: ToolFunction

    _minimum_by_name = field_validator("minimum_provider_confidence", mode="before")(_level_by_name)
    _effects_by_name = field_validator("effects", mode="before")(_effects_by_name)


class ToolCollectionDefinition(_Frozen):
    """Tools that only make sense together: selected, trusted and switched off as one."""

    id: str
    tool_ids: tuple[str, ...]
    minimum_provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    description_for_llm: str = ""
    display_name: str = ""
    description: str = ""

    _minimum_by_name = field_validator("minimum_provider_confidence", mode="before")(_level_by_name)


@dataclass(frozen=True, slots=True)
class DefinitionSource:
    """Definitions from one place (a file, a package); the name appears in every warning."""

    name: str
    definitions: tuple[ToolDefinition, ...]


_COMPONENT_NAMES = frozenset(c.value for c in Component)
_FUNCTION_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_MAX_FUNCTION_NAME_LENGTH = 64


def is_valid_function_name(name: object) -> bool:
    """1-64 ASCII letters, digits, underscores or hyphens: what every provider accepts."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= _MAX_FUNCTION_NAME_LENGTH
        and all(ch in _FUNCTION_NAME_CHARS for ch in name)
    )


def _component_name(value: Component | str) -> str:
    return value.value if isinstance(value, Component) else value


def is_visible_in(visibility: ToolVisibility, component: Component) -> bool:
    """Empty lists → CHAT uses `chat`, everything else `assistants`; lists replace the flags."""
    allowed = {_component_name(c) for c in visibility.allowed_components}
    denied = {_component_name(c) for c in visibility.denied_components}
    if not allowed and not denied:
        return visibility.chat if component is Component.CHAT else visibility.assistants
    return (not allowed or component.value in allowed) and component.value not in denied


def visible_components(visibility: ToolVisibility) -> frozenset[Component]:
    """Every component the tool may be offered in (precomputed by the registry)."""
    return frozenset(c for c in Component if is_visible_in(visibility, c))


def validate_definition(definition: ToolDefinition) -> str | None:
    """The first failing definition rule, in its order, as a message naming the field."""
    for rule in _RULES:
        issue = rule(definition)
        if issue:
            return issue
    return None


def _rule_schema_version(d: ToolDefinition) -> str | None:
    if d.schema_version != 1:
        return (
            f"schema_version: unsupported schema version '{d.schema_version}' (only 1 is supported)"
        )
    return None


def _rule_id(d: ToolDefinition) -> str | None:
    return "id: the definition ID is empty" if not d.id.strip() else None


def _rule_implementation_key(d: ToolDefinition) -> str | None:
    if not d.implementation_key.strip():
        return "implementation_key: the implementation key is empty"
    return None


def _rule_function_name(d: ToolDefinition) -> str | None:
    if not is_valid_function_name(d.function.name):
        return (
            f"function.name: '{d.function.name}' is not valid; the function name must contain "
            "1-64 ASCII letters, digits, underscores, or hyphens"
        )
    return None


def _rule_parameters(d: ToolDefinition) -> str | None:
    if not isinstance(d.function.parameters, Mapping):
        return "function.parameters: the function parameters schema must be a JSON object"
    return None


def _rule_visibility(d: ToolDefinition) -> str | None:
    lists = (d.visible_in.allowed_components, d.visible_in.denied_components)
    unknown = [_component_name(c) for group in lists for c in group]
    unknown = [name for name in unknown if name not in _COMPONENT_NAMES]
    if unknown:
        return (
            "visible_in: the visibility definition must contain valid component lists "
            f"(unknown: {', '.join(repr(n) for n in unknown)})"
        )
    return None


def _rule_settings_type(d: ToolDefinition) -> str | None:
    if d.settings_schema.type.lower() != "object":
        return (
            f"settings_schema.type: the settings schema must have type 'object', "
            f"not '{d.settings_schema.type}'"
        )
    return None


def _rule_property_types(d: ToolDefinition) -> str | None:
    bad = [
        name or "<blank>"
        for name, f in d.settings_schema.properties.items()
        if not name.strip() or f.type.lower() != "string"
    ]
    if bad:
        return (
            "settings_schema.properties: settings properties must be named string fields "
            f"({', '.join(bad)})"
        )
    return None


def _rule_groups(d: ToolDefinition) -> str | None:
    bad = [n for n, f in d.settings_schema.properties.items() if f.group and not f.group.strip()]
    if bad:
        return f"settings_schema.properties: these settings declare a blank group name: {', '.join(bad)}"
    return None


def _rule_option_source_and_enum(d: ToolDefinition) -> str | None:
    bad = [
        n
        for n, f in d.settings_schema.properties.items()
        if f.option_source.strip() and f.enum_values
    ]
    if bad:
        return (
            "settings_schema.properties: these settings declare both an option source and an "
            f"enum list: {', '.join(bad)}"
        )
    return None


def _rule_unknown_option_source(d: ToolDefinition) -> str | None:
    bad = [
        f"{n} ('{f.option_source}')"
        for n, f in d.settings_schema.properties.items()
        if f.option_source.strip() and not is_known_option_source(f.option_source)
    ]
    if bad:
        return (
            "settings_schema.properties: these settings reference an unknown option source: "
            f"{', '.join(bad)}"
        )
    return None


def _rule_blank_required(d: ToolDefinition) -> str | None:
    if any(not name.strip() for name in d.settings_schema.required):
        return "settings_schema.required: required setting names cannot be empty"
    return None


def _rule_required_defined(d: ToolDefinition) -> str | None:
    missing = [n for n in d.settings_schema.required if n not in d.settings_schema.properties]
    if missing:
        return (
            "settings_schema.required: required settings are missing definitions: "
            f"{', '.join(missing)}"
        )
    return None


_RULES = (
    _rule_schema_version,
    _rule_id,
    _rule_implementation_key,
    _rule_function_name,
    _rule_parameters,
    _rule_visibility,
    _rule_settings_type,
    _rule_property_types,
    _rule_groups,
    _rule_option_source_and_enum,
    _rule_unknown_option_source,
    _rule_blank_required,
    _rule_required_defined,
)


# --- definitions as data ------------------------------------------------------------------------


@cache
def _definition_validator() -> Any:
    jsonschema = import_module("jsonschema")
    schema = json.loads(Path(__file__).with_name("definition_schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _finding(code: str, message: str, location: SourceLocation | None) -> Finding:
    return Finding(Severity.ERROR, code, message, location)


def _line_of(node: Any, path: Iterable[Any]) -> int:
    """1-based line of the deepest node of `path` that ruamel.yaml knows a position for."""
    line = 0
    current = node
    for key in path:
        lc = getattr(current, "lc", None)
        if lc is not None:
            try:
                line = (lc.key(key)[0] if isinstance(key, str) else lc.item(key)[0]) + 1
            except (KeyError, IndexError, TypeError):
                break
        try:
            current = current[key]
        except (KeyError, IndexError, TypeError):
            break
    return line


def _parse_file(path: Path) -> Any:
    text = path.read_text("utf-8-sig")
    if path.suffix.lower() == ".json":
        return json.loads(text)
    exceeded = yaml_limit_exceeded(text)
    if exceeded is not None:
        raise _OverYamlLimit(exceeded)
    from ruamel.yaml import YAML

    return YAML(typ="rt").load(text)


class _OverYamlLimit(ValueError):
    """A YAML file over the size or nesting limit, refused before it is parsed."""

    def __init__(self, exceeded: YamlLimitExceeded) -> None:
        super().__init__(exceeded.problem)
        self.exceeded = exceeded


class _SelfReference(ValueError):
    """A container inside itself (a YAML alias within the node it names) is no definition data."""


class _TooDeep(ValueError):
    """Data nested more than MAX_NESTING levels."""


def _plain(data: Any, enclosing: frozenset[int] = frozenset()) -> Any:
    """ruamel.yaml's commented containers as plain dicts/lists (pydantic and jsonschema want those)."""
    if not isinstance(data, Mapping | list):
        return data
    if id(data) in enclosing:
        raise _SelfReference
    if len(enclosing) >= MAX_NESTING:
        raise _TooDeep
    inner = enclosing | {id(data)}
    if isinstance(data, Mapping):
        return {str(k): _plain(v, inner) for k, v in data.items()}
    return [_plain(v, inner) for v in data]


def _json_path(parts: Iterable[Any]) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)
    return text.lstrip(".") or "<top level>"


def _too_deep(source_name: str) -> Finding:
    return _finding(
        "invalid-definitions-file",
        f"{source_name}: the data is nested more than {MAX_NESTING} levels deep; no tool "
        "definition needs that",
        SourceLocation(source_name, 0),
    )


def definitions_from_data(
    data: Any, source_name: str, *, raw: Any = None
) -> tuple[list[ToolDefinition], list[Finding]]:
    """Definitions from parsed JSON/YAML data: JSON Schema first, then the definition rules.

    A bad definition is skipped with a finding naming source, position and field; the others stay.
    `raw` is the ruamel.yaml tree (for line numbers) when the data came from YAML.
    """
    validator = _definition_validator()
    try:
        plain = _plain(data)
    except _SelfReference:
        message = (
            f"{source_name}: the data refers to itself (a YAML alias inside the node it names); "
            "write the values out instead"
        )
        return [], [_finding("invalid-definitions-file", message, SourceLocation(source_name, 0))]
    except _TooDeep:
        return [], [_too_deep(source_name)]
    items_path: list[Any] = []
    if isinstance(plain, Mapping) and "definitions" in plain:
        items_path = ["definitions"]
        plain = plain["definitions"]
    if not isinstance(plain, list):
        message = (
            f"{source_name}: expected a list of tool definitions (or an object with a "
            "'definitions' list)"
        )
        return [], [_finding("invalid-definitions-file", message, SourceLocation(source_name, 0))]
    raw_tree = raw if raw is not None else data
    definitions: list[ToolDefinition] = []
    findings: list[Finding] = []
    for index, item in enumerate(plain):
        where = [*items_path, index]
        ident = item.get("id", f"#{index + 1}") if isinstance(item, Mapping) else f"#{index + 1}"
        errors = sorted(validator.iter_errors(item), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            field_path = [*where, *first.absolute_path]
            line = _line_of(raw_tree, field_path)
            message = (
                f"Skipping tool definition '{ident}' from source '{source_name}': "
                f"{_json_path(first.absolute_path)}: {first.message}"
            )
            findings.append(
                _finding("invalid-tool-definition", message, SourceLocation(source_name, line))
            )
            continue
        try:
            definition = ToolDefinition.model_validate(item)
        except ValidationError as error:
            detail = error.errors()[0]
            loc = ".".join(str(p) for p in detail["loc"])
            message = (
                f"Skipping tool definition '{ident}' from source '{source_name}': "
                f"{loc}: {detail['msg']}"
            )
            line = _line_of(raw_tree, where)
            findings.append(
                _finding("invalid-tool-definition", message, SourceLocation(source_name, line))
            )
            continue
        issue = validate_definition(definition)
        if issue:
            message = f"Skipping tool definition '{ident}' from source '{source_name}': {issue}"
            line = _line_of(raw_tree, where)
            findings.append(
                _finding("invalid-tool-definition", message, SourceLocation(source_name, line))
            )
            continue
        definitions.append(definition)
    return definitions, findings


def load_definitions_file(path: Path) -> tuple[list[ToolDefinition], list[Finding]]:
    """Tool definitions from a JSON (`.json`) or YAML file; problems become findings, never raise."""
    name = str(path)
    try:
        data = _parse_file(path)
    except OSError as error:
        reason = error.strerror or str(error)
        return [], [
            _finding(
                "unreadable-definitions-file",
                f"{name}: cannot read the file: {reason}",
                SourceLocation(name, 0),
            )
        ]
    except UnicodeDecodeError as error:
        return [], [
            _finding(
                "unreadable-definitions-file",
                f"{name}: cannot read the file: not UTF-8 text (byte 0x{error.object[error.start]:02x} "
                f"at offset {error.start}); save it as UTF-8",
                SourceLocation(name, 0),
            )
        ]
    except json.JSONDecodeError as error:
        return [], [
            _finding(
                "invalid-definitions-file",
                f"{name}:{error.lineno}: not valid JSON: {error.msg}",
                SourceLocation(name, error.lineno),
            )
        ]
    except RecursionError:
        return [], [_too_deep(name)]
    except _OverYamlLimit as over:
        line = over.exceeded.line
        return [], [
            _finding(
                "invalid-definitions-file",
                f"{name}:{line}: {over.exceeded.problem}; no tool definition needs that",
                SourceLocation(name, line),
            )
        ]
    except Exception as error:  # ruamel.yaml's parser and scanner errors share no public base
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        return [], [
            _finding(
                "invalid-definitions-file",
                f"{name}:{line}: not valid YAML: {problem}",
                SourceLocation(name, line),
            )
        ]
    return definitions_from_data(data, name)


def definition_source_from_file(path: Path) -> tuple[DefinitionSource, list[Finding]]:
    """A file's valid definitions as a registry source named after the file, plus its findings."""
    definitions, findings = load_definitions_file(path)
    return DefinitionSource(str(path), tuple(definitions)), findings
