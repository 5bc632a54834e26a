"""The tool catalog: which tools exist, their collections, settings and selection rules.

Built once per configuration change (the base of `policy.decide.ToolRegistry`): registration,
settings resolution, configuration states, switch-offs, minimum confidences and visibility are
computed then, so the offer checks (`policy.decide.checks`) and request planning only look them
up.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

from policy._dataclass import dataclass
from policy._log import logger
from policy.configuration import (
    Finding,
    ManagedSetting,
    PolicyConfiguration,
    Severity,
    UserSettings,
)
from policy.decision import CatalogEntry, Evidence
from policy.definitions import (
    DefinitionSource,
    ToolCollectionDefinition,
    ToolDefinition,
    validate_definition,
    visible_components,
)
from policy.errors import ToolPolicyError
from policy.flow import UNDECLARED, FlowRule, ToolEffects, configured_effects
from policy.provenance import Origin
from policy.resolve import (
    DEFAULT_TOOL_IDS_BY_COMPONENT,
    MinimumConfidence,
    ResolvedSettings,
    SecretReader,
    configuration_state,
    disabled_tool_ids,
    effective_minimum_confidence,
    managed_layer,
    misspelled_tool_ids,
    resolve_setting,
    resolve_tool_settings,
    values_state,
)
from policy.tools import (
    DefinedTool,
    RequestExtras,
    Tool,
    ToolConfigurationState,
    missing_members,
    misspelled_members,
)
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    ToolActivation,
)

_log = logger(__name__)
_IMPLEMENTATIONS_SOURCE = "tool implementations"


class UnknownToolError(ToolPolicyError, KeyError):
    """Asked about a tool id the registry does not know."""

    code = "unknown-tool"

    def __init__(self, tool_id: str, known: Iterable[str]) -> None:
        super().__init__(tool_id)
        from policy.suggest import did_you_mean

        names = sorted(known)
        hint = did_you_mean(tool_id, names)
        self.message = f"unknown tool id '{tool_id}'{hint}; known tools: {', '.join(names)}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class _Collection:
    """A registered collection: its definition and its member tools that are registered."""

    definition: ToolCollectionDefinition
    tool_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _SettingsFacts:
    """A tool's resolved settings and what they make of it: configured or not."""

    settings: ResolvedSettings
    values: Mapping[str, str]
    state: ToolConfigurationState


@dataclass(frozen=True, slots=True)
class _SwitchOff:
    """Whether the organization switched a tool off: the DataTools.DisabledToolIds entries that
    name it or its collection (`misspelled`: those read as it although no tool has their id),
    and the tool's own verdict (`Tool.switch_off_gate`)."""

    disabled_by: tuple[str, ...]
    misspelled: tuple[str, ...]
    disabled_setting: ManagedSetting | None
    gate_passed: bool

    @property
    def active(self) -> bool:
        return not self.disabled_by and self.gate_passed


class _OnFirstUse:
    """The settings facts of a tool that reads a secret, resolved when first asked for.

    Reading the OS keyring starts its backend detection (which may spawn processes), so a
    command that never looks at such a tool's settings never touches the keyring. Two threads
    asking at once both resolve the same facts; the first assignment stands.
    """

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], _SettingsFacts]) -> None:
        self._make: Callable[[], _SettingsFacts] | None = make
        self._value: _SettingsFacts | None = None

    def get(self) -> _SettingsFacts:
        if self._value is None:
            assert self._make is not None
            self._value = self._make()
        return self._value

    @property
    def done(self) -> bool:
        return self._value is not None


class _UnreadSecrets:
    """What is known of a tool that reads a secret before the keyring is read: its settings
    with the keyring's secrets unread (every other field as resolved), which fields the keyring
    would be asked for, and, worked out when first asked, its configuration state when that is
    the same whatever the keyring holds for them (None: only reading the keyring tells)."""

    __slots__ = ("_state", "definition", "names", "settings", "tool")

    def __init__(
        self,
        definition: ToolDefinition,
        tool: Tool,
        settings: ResolvedSettings,
        names: Sequence[str],
    ) -> None:
        self.definition, self.tool, self.settings = definition, tool, settings
        self.names = tuple(names)
        self._state: tuple[ToolConfigurationState | None] | None = None

    @property
    def state(self) -> ToolConfigurationState | None:
        if self._state is None:
            self._state = (
                _state_whatever_the_keyring_holds(
                    self.definition, self.tool, self.settings, self.names
                ),
            )
        return self._state[0]


class _SecretEvidence(Evidence):
    """A keyring secret's evidence (`policy.redaction.MASK` and "user keyring", or not set),
    read from the keyring when first looked at: a decision shown without its evidence (the
    matrix of `policy explain --all`, `policy diff`) reads no secret. Equal to, hashed,
    shown and pickled as the `Evidence` it stands for."""

    __slots__ = ("_read",)

    def __init__(self, key: str, read: Callable[[], Evidence]) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "_read", read)

    def _evidence(self) -> Evidence:
        read: Callable[[], Evidence] = object.__getattribute__(self, "_read")
        return read()

    value = property(lambda self: self._evidence().value)
    source = property(lambda self: self._evidence().source)
    origin = property(lambda self: self._evidence().origin)
    location = property(lambda self: self._evidence().location)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _SecretEvidence):
            other = other._evidence()
        return self._evidence() == other

    def __hash__(self) -> int:
        return hash(self._evidence())

    def __repr__(self) -> str:
        return repr(self._evidence())

    def __reduce__(self) -> tuple[type[Evidence], tuple[object, ...]]:
        known = self._evidence()
        return Evidence, (known.key, known.value, known.source, known.origin, known.location)


_SECRET_SET = "set"
"""Any text that is not blank: what a secret the keyring holds stands as while it is unread."""
_MOST_SECRETS_TRIED = 4
"""A tool with more keyring secrets than this has its state read with them (2^n states tried)."""


_JUDGING_MEMBERS = ("setting_problem", "validate_configuration")
"""The members through which a tool judges its settings' values (`policy.resolve.values_state`)."""


def _judges_secrets_by_presence(tool: Tool) -> bool:
    """Whether the checks the tool runs are those of the class that states
    `_secrets_judged_by_presence`: a subclass that judges settings its own way (overrides
    `setting_problem` or `validate_configuration` below that class) may judge what a secret
    is, so its keyring is read, whatever it inherited."""
    for kind in type(tool).__mro__:
        own = vars(kind)
        if "_secrets_judged_by_presence" in own:
            return own["_secrets_judged_by_presence"] is True
        if any(name in own for name in _JUDGING_MEMBERS):
            return False
    return False


def _state_whatever_the_keyring_holds(
    definition: ToolDefinition, tool: Tool, settings: ResolvedSettings, names: Sequence[str]
) -> ToolConfigurationState | None:
    """The configuration state of a tool whose `names` secrets are unread, if the keyring
    cannot change it. Only for a tool that judges its secrets by whether they are set
    (`_secrets_judged_by_presence`, the built-in tools: a value that is not blank counts, what
    it is does not): its state is then one of those with each secret set or not, and when all
    of them agree, that is it. None: the keyring must be read to know."""
    if not _judges_secrets_by_presence(tool) or len(names) > _MOST_SECRETS_TRIED:
        return None
    if settings.misspelled:
        return configuration_state(definition, settings, tool)
    values = settings.values_for_tool()
    states = [
        values_state(
            definition,
            {**values, **{name: _SECRET_SET for i, name in enumerate(names) if chosen >> i & 1}},
            tool,
        )
        for chosen in range(2 ** len(names))
    ]
    return states[0] if all(state == states[0] for state in states) else None


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """Everything a decision needs about one tool, computed once per configuration."""

    definition: ToolDefinition
    tool: Tool
    available: bool
    visible_in: frozenset[Component]
    collection_id: str
    switch_off: _SwitchOff
    settings_facts: _SettingsFacts | _OnFirstUse
    notes: tuple[str, ...]
    """What resolution refused (locked plaintext secrets and the like); known without a keyring."""
    minimum: MinimumConfidence
    untailored: bool
    visibility_evidence: tuple[Evidence, ...]
    """Resolution would only hand back the registered definition (a plain `DefinedTool`)."""
    effects: ToolEffects = UNDECLARED
    """What its calls and results do, with where that is declared (`policy.flow`)."""
    unread: _UnreadSecrets | None = None
    """For a tool that reads a secret from the keyring: what is known before it is read."""

    def _settled(self) -> _SettingsFacts:
        facts = self.settings_facts
        return facts.get() if isinstance(facts, _OnFirstUse) else facts

    @property
    def resolved_at_build(self) -> bool:
        """Its settings were resolved with the catalog (not one that waits to read a secret)."""
        return not isinstance(self.settings_facts, _OnFirstUse)

    @property
    def settings(self) -> ResolvedSettings:
        return self._settled().settings

    @property
    def values(self) -> Mapping[str, str]:
        return self._settled().values

    @property
    def state(self) -> ToolConfigurationState:
        """Configured or not; known without the keyring when it cannot change it."""
        unread = self.unread
        if unread is not None and unread.state is not None:
            return unread.state
        return self._settled().state

    @property
    def settings_evidence(self) -> tuple[Evidence, ...]:
        """What its settings show as evidence: each misspelled entry, then every field's value
        and source; a keyring secret's is read only when it is looked at (`_SecretEvidence`)."""
        unread, facts = self.unread, self.settings_facts
        if unread is None or (isinstance(facts, _OnFirstUse) and facts.done):
            settings = self.settings
            return (
                *(m.evidence() for m in settings.misspelled),
                *(s.evidence() for s in settings.fields.values()),
            )
        return (
            *(m.evidence() for m in unread.settings.misspelled),
            *(
                _SecretEvidence(field.key, functools.partial(self._field_evidence, name))
                if name in unread.names
                else field.evidence()
                for name, field in unread.settings.fields.items()
            ),
        )

    def _field_evidence(self, name: str) -> Evidence:
        return self.settings.fields[name].evidence()

    @property
    def active(self) -> bool:
        """Not switched off by the organization (whatever else keeps it from being offered)."""
        return self.switch_off.active


TOOL_EFFECTS = "DataTools.ToolEffects"
FLOW_RULE = "DataTools.FlowRule"


def tool_effects(tool: Tool, configuration: PolicyConfiguration) -> ToolEffects:
    """A tool's effects: `DataTools.ToolEffects` for its id, else what the tool declares (its
    definition, an MCP server's `Effects` or its annotations), else all four."""
    tool_id = tool.definition.id
    setting = configuration.setting(TOOL_EFFECTS)
    if setting is not None and tool_id in setting.value:
        line = setting.entry_locations.get(tool_id, setting.origin.location)
        where = Origin(setting.origin.plugin_id, setting.origin.plugin_name, line)
        return configured_effects(setting.value[tool_id], f'{TOOL_EFFECTS}["{tool_id}"]', where)
    return tool.effects


def flow_rule(configuration: PolicyConfiguration) -> FlowRule:
    """`DataTools.FlowRule` in force (OFF when not set)."""
    setting = configuration.setting(FLOW_RULE)
    return FlowRule(setting.value) if setting is not None and setting.value else FlowRule.OFF


def _warning(code: str, message: str) -> Finding:
    return Finding(Severity.WARNING, code, message)


def _visibility_evidence(definition: ToolDefinition) -> tuple[Evidence, ...]:
    shown = definition.visible_in
    value: dict[str, object] = {"chat": shown.chat, "assistants": shown.assistants}
    if shown.allowed_components or shown.denied_components:
        value = {
            "allowed_components": [str(c) for c in shown.allowed_components],
            "denied_components": [str(c) for c in shown.denied_components],
        }
    return (Evidence("visible_in", value, "tool definition"),)


def _collection_id_problem(
    collection_id: str, tools: Mapping[str, ToolDefinition], registered: Mapping[str, object]
) -> str:
    """Why a collection cannot be registered under this ID ("" when it can)."""
    if not collection_id.strip():
        return "its ID is empty"
    if collection_id in tools:
        return "a tool already has this ID"
    if collection_id in registered:
        return "the ID is already registered"
    return ""


def _member_problem(
    tool_id: str, tools: Mapping[str, ToolDefinition], collection_of: Mapping[str, str]
) -> str:
    """Why a tool cannot join a collection ("" when it can)."""
    if tool_id not in tools:
        return "it is not registered"
    if tools[tool_id].activation is not ToolActivation.SELECTION:
        return "nobody selects the tool (it offers itself from the chat)"
    if tool_id in collection_of:
        return f"it already belongs to collection '{collection_of[tool_id]}'"
    return ""


def _is_untailored(tool: Tool) -> bool:
    kind = type(tool)
    return (
        kind.resolve_function is DefinedTool.resolve_function
        and kind.resolve_instructions is DefinedTool.resolve_instructions
    )


def _safely_available(tool: Tool) -> bool:
    try:
        return bool(tool.is_available())
    except Exception:  # a tool that cannot say is not offered
        _log.exception(
            "Tool '%s' failed to say whether it is available (is_available); not offered",
            tool.definition.id,
        )
        return False


def _settings_facts(
    definition: ToolDefinition, tool: Tool, settings: ResolvedSettings
) -> _SettingsFacts:
    state = configuration_state(definition, settings, tool)
    return _SettingsFacts(settings, MappingProxyType(settings.values_for_tool()), state)


def _mcp_namespaces(
    implementations: Mapping[str, Tool], configuration: PolicyConfiguration
) -> Callable[[ToolDefinition], str | None]:
    """Why a definition's id is not its tool's to take (`policy.mcp.id_refusal`): the MCP
    servers configured, and those whose tools an app passes, own their `<Name>__` ids."""
    listed = [t for t in implementations.values() if hasattr(t, "server")]
    if not configuration.mcp_servers and not listed:
        return lambda definition: None
    from policy.mcp import McpTool, id_refusal

    servers = [
        *configuration.mcp_servers,
        *(t.server for t in listed if isinstance(t, McpTool)),
    ]

    def refusal(definition: ToolDefinition) -> str | None:
        tool = implementations.get(definition.implementation_key)
        return None if tool is None else id_refusal(definition.id, tool, servers)

    return refusal


class ToolCatalog:
    """The registered tools of one configuration: definitions, collections, settings and what
    they make of each tool (configured, switched off, minimum confidence), and the selection
    rules. Computed once, when the configuration changes; everything after is a lookup."""

    def __init__(
        self,
        tools: Sequence[Tool],
        configuration: PolicyConfiguration,
        user: UserSettings,
        *,
        definition_sources: Sequence[DefinitionSource] = (),
        collections: Sequence[ToolCollectionDefinition] = (),
        secret_reader: SecretReader | None = None,
    ) -> None:
        self.configuration = configuration
        self.user = user
        findings: list[Finding] = []
        implementations = self._register_implementations(tools, findings)
        self.refused: dict[str, str] = {}
        """Why each invalid definition was skipped, by id: a decision about it says so."""
        definitions = self._register_definitions(
            implementations, definition_sources, findings, self.refused, configuration
        )
        self._collections, self._collection_of = self._register_collections(
            collections, definitions, findings
        )
        self._disabled, self._disabled_setting = disabled_tool_ids(configuration)
        self._misspelled = misspelled_tool_ids(
            configuration, {*(d.id for d in definitions), *self._collections}
        )
        self._facts: dict[str, ToolFacts] = {}
        for definition in definitions:
            tool = implementations[definition.implementation_key]
            facts = self._tool_facts(definition, tool, secret_reader)
            self._facts[definition.id] = facts
            findings.extend(_warning("tool-setting-refused", note) for note in facts.notes)
        self.findings: tuple[Finding, ...] = tuple(findings)
        self.ordered = tuple(
            sorted(self._facts.values(), key=lambda f: f.tool.display_name.casefold())
        )
        """Every registered tool's facts, by display name."""
        self._tool_ids = tuple(f.definition.id for f in self.ordered)
        self._by_function = {f.definition.function.name: f.tool for f in self._facts.values()}
        self.data_source_search_id = next(
            (f.definition.id for f in self.ordered if f.tool.searches_chat_data_sources), None
        )
        """The tool through which the model searches the chat's data sources, if one is
        registered (`Tool.searches_chat_data_sources`)."""
        self._prepare()

    def _prepare(self) -> None:
        """What a subclass computes once the catalog is built (the decider: its caches)."""
        self._request_extras: RequestExtras | None = None

    @staticmethod
    def _register_implementations(
        tools: Sequence[Tool], findings: list[Finding]
    ) -> dict[str, Tool]:
        implementations: dict[str, Tool] = {}
        for tool in tools:
            lacking = missing_members(tool)
            if lacking:
                findings.append(
                    _warning(
                        "incomplete-tool",
                        f"Skipping tool implementation {type(tool).__name__}: it lacks the Tool "
                        f"members {', '.join(lacking)} (extend policy.DefinedTool, which gives "
                        "every optional member its default)",
                    )
                )
                continue
            findings.extend(
                _warning(
                    "misspelled-tool-member",
                    f"Tool implementation {type(tool).__name__} has a member '{name}', which is "
                    f"no Tool member and is never read; did you mean '{meant}'?",
                )
                for name, meant in misspelled_members(type(tool))
            )
            key = tool.definition.implementation_key
            if not key.strip():
                findings.append(
                    _warning(
                        "blank-implementation-key",
                        f"Skipping tool implementation {type(tool).__name__}: its implementation "
                        "key is empty",
                    )
                )
            elif key in implementations:
                findings.append(
                    _warning(
                        "duplicate-implementation",
                        f"Skipping tool implementation {type(tool).__name__}: the implementation "
                        f"key '{key}' is already registered",
                    )
                )
            else:
                implementations[key] = tool
        return implementations

    @staticmethod
    def _register_definitions(
        implementations: Mapping[str, Tool],
        sources: Sequence[DefinitionSource],
        findings: list[Finding],
        refused: dict[str, str],
        configuration: PolicyConfiguration,
    ) -> list[ToolDefinition]:
        """The accepted definitions; `refused` gets why each invalid one was skipped, so a
        decision about its id can say so instead of "unknown"."""
        own = DefinitionSource(
            _IMPLEMENTATIONS_SOURCE, tuple(t.definition for t in implementations.values())
        )
        namespace_refusal = _mcp_namespaces(implementations, configuration)
        accepted: list[ToolDefinition] = []
        ids: set[str] = set()
        names: set[str] = set()
        for source in (own, *sources):
            for definition in source.definitions:
                prefix = f"Skipping tool definition '{definition.id}' from source '{source.name}'"
                issue = validate_definition(definition) or namespace_refusal(definition)
                if issue:
                    findings.append(_warning("invalid-tool-definition", f"{prefix}: {issue}"))
                    refused.setdefault(definition.id, issue)
                elif definition.implementation_key not in implementations:
                    findings.append(
                        _warning(
                            "unknown-implementation",
                            f"{prefix}: no implementation is registered under "
                            f"'{definition.implementation_key}'",
                        )
                    )
                elif definition.id in ids:
                    findings.append(
                        _warning(
                            "duplicate-tool-id",
                            f"{prefix}: a tool with this ID is already registered",
                        )
                    )
                elif definition.function.name in names:
                    findings.append(
                        _warning(
                            "duplicate-function-name",
                            f"{prefix}: the function name '{definition.function.name}' is "
                            "already registered",
                        )
                    )
                else:
                    accepted.append(definition)
                    ids.add(definition.id)
                    names.add(definition.function.name)
        return accepted

    @staticmethod
    def _register_collections(
        collections: Sequence[ToolCollectionDefinition],
        definitions: Sequence[ToolDefinition],
        findings: list[Finding],
    ) -> tuple[dict[str, _Collection], dict[str, str]]:
        by_id = {d.id: d for d in definitions}
        registered: dict[str, _Collection] = {}
        collection_of: dict[str, str] = {}
        for declared in collections:
            prefix = f"Skipping tool collection '{declared.id}'"
            problem = _collection_id_problem(declared.id, by_id, registered)
            if problem:
                findings.append(_warning("invalid-collection", f"{prefix}: {problem}"))
                continue
            members: list[str] = []
            for tool_id in dict.fromkeys(declared.tool_ids):
                why = _member_problem(tool_id, by_id, collection_of)
                if why:
                    findings.append(
                        _warning(
                            "collection-member-left-out",
                            f"Tool '{tool_id}' is left out of collection '{declared.id}': {why}",
                        )
                    )
                else:
                    members.append(tool_id)
            if not members:
                findings.append(
                    _warning("invalid-collection", f"{prefix}: none of its tools is registered")
                )
                continue
            for tool_id in members:
                collection_of[tool_id] = declared.id
            registered[declared.id] = _Collection(declared, tuple(members))
        return registered, collection_of

    # --- precomputation -------------------------------------------------------------------------

    def _settings_ids(self, tool_id: str) -> tuple[str, ...]:
        collection_id = self._collection_of.get(tool_id)
        if collection_id is None:
            return (tool_id,)
        return (collection_id, *self._collections[collection_id].tool_ids)

    def _tool_facts(
        self, definition: ToolDefinition, tool: Tool, secret_reader: SecretReader | None
    ) -> ToolFacts:
        collection_id = self._collection_of.get(definition.id, definition.id)
        settings_ids = self._settings_ids(definition.id)
        misspelled = tuple(m for i in settings_ids for m in self._misspelled.get(i, ()))
        disabled_by = tuple(i for i in (*settings_ids, *misspelled) if i in self._disabled)
        gate = tool.switch_off_gate
        switch_off = _SwitchOff(
            disabled_by, misspelled, self._disabled_setting, gate is None or gate.passed
        )
        secrets_asked: list[str] = []

        def unread_secret(_tool_id: str, field_name: str) -> None:
            secrets_asked.append(field_name)

        settings = resolve_tool_settings(definition, self.configuration, self.user, unread_secret)
        settings_facts: _SettingsFacts | _OnFirstUse = (
            _OnFirstUse(
                lambda: _settings_facts(
                    definition,
                    tool,
                    resolve_tool_settings(definition, self.configuration, self.user, secret_reader),
                )
            )
            if secrets_asked
            else _settings_facts(definition, tool, settings)
        )
        unread = (
            _UnreadSecrets(definition, tool, settings, secrets_asked) if secrets_asked else None
        )
        collection = self._collections.get(collection_id)
        default = (
            collection.definition.minimum_provider_confidence
            if collection is not None
            else definition.minimum_provider_confidence
        )
        minimum = effective_minimum_confidence(
            settings_ids,
            default,
            self.configuration,
            self.user,
            "collection default" if collection is not None else "tool default",
        )
        if misspelled:
            strict = effective_minimum_confidence(
                misspelled, ConfidenceLevel.NONE, self.configuration, self.user
            )
            if strict.level > minimum.level:
                minimum = MinimumConfidence(
                    strict.level,
                    f"a misspelled entry ({', '.join(misspelled)}), read as {definition.id} "
                    "until it is fixed",
                    (*minimum.evidence, *strict.evidence),
                )
        floor = tool.minimum_confidence_floor
        if floor > minimum.level:
            said = tool.minimum_confidence_floor_evidence or Evidence(
                "minimum_provider_confidence",
                floor.name,
                "the tool always requires at least this level",
            )
            minimum = MinimumConfidence(floor, "tool floor", (*minimum.evidence, said))
        return ToolFacts(
            definition=definition,
            tool=tool,
            available=_safely_available(tool),
            visible_in=visible_components(definition.visible_in),
            collection_id=collection_id,
            switch_off=switch_off,
            settings_facts=settings_facts,
            notes=settings.notes,
            minimum=minimum,
            untailored=_is_untailored(tool),
            visibility_evidence=_visibility_evidence(definition),
            effects=tool_effects(tool, self.configuration),
            unread=unread,
        )

    # --- selection ----------------------------------------------------------------------------

    def is_known(self, tool_or_collection_id: str) -> bool:
        return tool_or_collection_id in self._facts or tool_or_collection_id in self._collections

    def collection_id(self, tool_id: str) -> str:
        """A tool's collection id; a collection id or an unknown id comes back unchanged."""
        return self._collection_of.get(tool_id, tool_id)

    def normalize_selection(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Collection ids, de-duplicated in first-seen order; context tools dropped; unknown kept;
        a tool brings the companions it declares along (search_confluence: read_web_page)."""
        result: dict[str, None] = {}
        for ident in ids:
            facts = self._facts.get(ident)
            if facts is not None and facts.definition.activation is ToolActivation.CONTEXT:
                continue
            result[self.collection_id(ident)] = None
        for ident in tuple(result):
            for companion in self._companions(ident):
                result.setdefault(self.collection_id(companion), None)
        return tuple(result)

    def _companions(self, ident: str) -> tuple[str, ...]:
        """The tool ids a tool (or each tool of a collection) declares as selected along."""
        collection = self._collections.get(ident)
        found: list[str] = []
        for tool_id in collection.tool_ids if collection is not None else (ident,):
            facts = self._facts.get(tool_id)
            declared = facts.tool.companion_tool_ids if facts else ()
            found.extend(c for c in declared if c in self._facts)
        return tuple(found)

    @property
    def request_extras(self) -> RequestExtras:
        """What the tools' settings tell every request: each tool's `request_extras(settings)`,
        merged in catalog order once, when first asked (a declaration that fails adds nothing)."""
        if self._request_extras is None:
            self._request_extras = self._declared_extras()
        return self._request_extras

    def _declared_extras(self) -> RequestExtras:
        merged = RequestExtras()
        for facts in self.ordered:
            try:
                declared = facts.tool.request_extras(facts.values)
            except Exception:  # a broken declaration costs this tool's extras only
                _log.exception(
                    "Tool '%s' failed to declare its request extras", facts.definition.id
                )
                continue
            if isinstance(declared, RequestExtras):
                merged = merged.merged(declared)
        return merged

    def expand_selection(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Normalize, then each collection becomes its tools in listed order."""
        result: dict[str, None] = {}
        for ident in self.normalize_selection(ids):
            collection = self._collections.get(ident)
            for tool_id in collection.tool_ids if collection is not None else (ident,):
                result[tool_id] = None
        return tuple(result)

    def default_tool_ids(self, component: Component) -> tuple[str, ...]:
        """The component's default selection (user's stored choice unless locked), normalized."""
        managed = self.configuration.setting(DEFAULT_TOOL_IDS_BY_COMPONENT)
        managed_map: Mapping[str, Sequence[str]] = (
            managed.value if managed is not None and isinstance(managed.value, Mapping) else {}
        )
        locked, organization = managed_layer(managed, managed_map.get(component.value, ()))
        chosen = (
            resolve_setting(
                locked=locked,
                user=self.user.default_tool_ids_by_component.get(component.value),
                organization=organization,
            ).value
            or ()
        )
        return self.normalize_selection(chosen)

    # --- catalog and settings --------------------------------------------------------

    @property
    def tools_enabled(self) -> bool:
        """Tools are switched on at all: the catalog alone knows no switch (the decider does)."""
        return True

    def catalog(self, component: Component | None = None) -> tuple[CatalogEntry, ...]:
        """One entry per collection or standalone tool, sorted by display name.

        For a component: only selectable tools visible there. Without one (the app settings
        list): every available tool, context tools included, so they can be switched off. An
        entry is active only while tools are switched on at all.
        """
        tools_on = self.tools_enabled
        grouped: dict[str, list[ToolFacts]] = {}
        for facts in self.ordered:
            if not facts.available:
                continue
            if component is not None and (
                component not in facts.visible_in
                or facts.definition.activation is not ToolActivation.SELECTION
            ):
                continue
            grouped.setdefault(facts.collection_id, []).append(facts)
        entries: list[CatalogEntry] = []
        for entry_id, members in grouped.items():
            collection = self._collections.get(entry_id)
            if collection is not None:
                order = {t: i for i, t in enumerate(collection.tool_ids)}
                members.sort(key=lambda f: order[f.definition.id])
            first = members[0]
            unconfigured = next((f.state for f in members if not f.state.is_configured), None)
            declared = collection.definition if collection is not None else None
            entries.append(
                CatalogEntry(
                    id=entry_id,
                    display_name=(declared.display_name if declared else "")
                    or first.tool.display_name,
                    description_for_llm=(declared.description_for_llm if declared else "")
                    or first.definition.function.description_for_llm,
                    tool_ids=tuple(f.definition.id for f in members),
                    configuration_state=unconfigured or first.state,
                    is_active=tools_on and first.active,
                    minimum_provider_confidence=first.minimum.level,
                    is_collection=collection is not None,
                )
            )
        return tuple(sorted(entries, key=lambda e: e.display_name.casefold()))

    def definitions(self, component: Component | None = None) -> tuple[ToolDefinition, ...]:
        """Available definitions (visible in `component` if given), by display name."""
        return tuple(
            f.definition
            for f in self.ordered
            if f.available and (component is None or component in f.visible_in)
        )

    def definition(self, tool_id: str) -> ToolDefinition:
        return self._facts_of(tool_id).definition

    def tool(self, tool_id: str) -> Tool:
        return self._facts_of(tool_id).tool

    def tool_named(self, function_name: str) -> Tool | None:
        """The registered tool whose function has this name, offered or not (None: unknown).

        A model may call a tool this request did not offer; its trace still masks what the
        tool's definition calls sensitive."""
        return self._by_function.get(function_name)

    def facts(self, tool_id: str) -> ToolFacts | None:
        """What the checks need about a registered tool (None: not registered)."""
        return self._facts.get(tool_id)

    def _facts_of(self, tool_id: str) -> ToolFacts:
        facts = self._facts.get(tool_id)
        if facts is None:
            raise UnknownToolError(tool_id, self._facts)
        return facts

    @property
    def tool_ids(self) -> tuple[str, ...]:
        """Every registered tool id, available or not, by display name (made once: the gateway
        asks it for every call)."""
        return self._tool_ids

    def collection_tool_ids(self, collection_id: str) -> tuple[str, ...]:
        collection = self._collections.get(collection_id)
        return collection.tool_ids if collection is not None else ()

    def settings(self, tool_id: str) -> ResolvedSettings:
        """Every field of the tool, resolved, with its source and provenance (secrets masked)."""
        return self._facts_of(tool_id).settings

    def configuration_state(self, tool_id: str) -> ToolConfigurationState:
        return self._facts_of(tool_id).state

    def effects(self, tool_id: str) -> ToolEffects:
        """A tool's effects with where they come from (definition, MCP annotations, plugin.lua
        file:line, or nothing declared: all four); computed once per configuration."""
        return self._facts_of(tool_id).effects

    def effective_minimum_confidence(self, tool_id: str) -> MinimumConfidence:
        """The minimum that applies to the tool (its collection's), with source and evidence."""
        facts = self._facts.get(tool_id)
        if facts is not None:
            return facts.minimum
        collection = self._collections.get(tool_id)
        if collection is not None:
            return self._facts[collection.tool_ids[0]].minimum
        return effective_minimum_confidence(
            (tool_id,), ConfidenceLevel.NONE, self.configuration, self.user
        )
