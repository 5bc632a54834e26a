"""MCP servers as the policy sees them: their configuration, their tools' definitions, pins.

An organization declares servers in `CONFIG["MCP_SERVERS"]`; each tool a server lists becomes a
tool of the registry with the id `<server name>__<tool name>`, governed like any other. A server
name never holds `__` nor ends in `_`, so an id splits at its first `__` into exactly one server
and one tool: two servers cannot list the same id, and every id starting `<server name>__` is
that server's (`id_refusal`: the registry refuses any other tool under it). What is
decided here needs no network: listings arrive from the runtime (`runtime.mcp`) or from the last
listing cached in a state directory, so `policy explain` works offline.

A definition's fingerprint covers everything the model reads (name, title, description, schemas,
annotations): a server that rewrites a description after approval changes the fingerprint, and the
tool is not offered until an administrator pins the new one (`policy mcp pin`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from policy._dataclass import dataclass
from policy.config.mcp_servers import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    FINGERPRINT_PREFIX,
    MESSAGE_BYTES_RANGE,
    SERVER_NAME_PATTERN,
    SERVER_NAME_RULE,
)
from policy.config.mcp_servers import McpAuthType as McpAuthType
from policy.config.mcp_servers import McpTransport as McpTransport
from policy.configuration import SecretValue
from policy.decision import Evidence
from policy.definitions import ToolDefinition, ToolFunction, ToolVisibility
from policy.flow import ToolEffects, annotation_effects, configured_effects
from policy.provenance import Origin
from policy.tools import DefinedTool, Tool, ToolGate
from policy.vocabulary import ConfidenceLevel, ToolActivation, ToolOutboundData

TOOL_ID_SEPARATOR = "__"
_MAX_EARLIER_DEFINITIONS = 32
"""Definitions a server listed before and lists no more, kept for diffs beyond the pinned ones."""
UNCONFIGURED_LISTING_DAYS = 30
"""How long the cached listing of a server the configuration no longer names is kept."""
_CACHE_FOLDER = "mcp"


@dataclass(frozen=True, slots=True)
class McpAuth:
    """An MCP server's `Auth`: STATIC (its headers) or TOKEN_EXCHANGE for `audience`."""

    type: McpAuthType = McpAuthType.STATIC
    audience: str = ""


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One entry of `CONFIG["MCP_SERVERS"]` (or a server an app passes in code).

    `env` and `headers` values that are secrets stay `SecretValue`s until the runtime connects.
    An empty `allowed_tools` admits every tool; `denied_tools` wins over it. Globs match MCP
    tool names (`fnmatch`, case-sensitive).
    """

    id: str
    name: str
    transport: McpTransport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str | SecretValue] = field(default_factory=dict, repr=False)
    url: str = ""
    headers: Mapping[str, str | SecretValue] = field(default_factory=dict, repr=False)
    minimum_provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    allowed_tools: tuple[str, ...] = ()
    denied_tools: tuple[str, ...] = ()
    read_only_only: bool = False
    require_pins: bool = False
    pins: Mapping[str, str] = field(default_factory=dict)
    effects: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """MCP tool name → the effects the organization gives it (`Effects`), over its annotations."""
    sensitive_arguments: tuple[str, ...] = ()
    require_approval: tuple[str, ...] = ()
    """Globs on MCP tool names whose every call waits for a person's approval."""
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    """The most a message from the server may hold (a result, a listing page); one longer is
    cut off while it arrives and its call fails."""
    auth: McpAuth = field(default_factory=lambda: McpAuth())
    """Whose identity the server sees (`Auth`): the entry's headers, or the caller's."""
    origin: Origin | None = None
    by_organization: bool = True

    @property
    def connection(self) -> tuple[object, ...]:
        """What a session to this server is opened with (command, URL, headers, auth, ...):
        entries of one id that agree on it are one server, listed and called once."""
        return (
            self.id,
            self.transport,
            self.command,
            self.args,
            tuple(sorted(self.env.items())),
            self.url,
            tuple(sorted(self.headers.items())),
            self.auth,
            self.timeout_seconds,
            self.max_message_bytes,
        )

    def __post_init__(self) -> None:
        if self.auth.type is McpAuthType.TOKEN_EXCHANGE and not self.auth.audience:
            raise ValueError(f"MCP server {self.name}: TOKEN_EXCHANGE needs an Audience")
        if not SERVER_NAME_PATTERN.fullmatch(self.name):
            raise ValueError(f"MCP server name {self.name!r} is not valid: {SERVER_NAME_RULE}")
        low, high = MESSAGE_BYTES_RANGE
        if not low <= self.max_message_bytes <= high:
            raise ValueError(
                f"MCP server {self.name}: max_message_bytes {self.max_message_bytes} is not "
                f"between {low} and {high}"
            )

    @property
    def endpoint(self) -> str:
        """What to show of where it runs: the command, or the URL without user info or query."""
        if self.transport is McpTransport.STDIO:
            return " ".join((self.command, *self.args))
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(self.url)
            port = f":{parts.port}" if parts.port is not None else ""
        except ValueError:
            return "(an unreadable address)"
        return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


def mcp_tool_id(server_name: str, tool_name: str) -> str:
    """The registry id (and function name) of a server's tool."""
    return f"{server_name}{TOOL_ID_SEPARATOR}{tool_name}"


def id_refusal(tool_id: str, tool: Tool, servers: Iterable[McpServerConfig]) -> str | None:
    """Why `tool` may not be registered under `tool_id`: the id is in the namespace of an MCP
    server (`<Name>__...`) it does not come from. An app's or a package's tool never takes an
    id an MCP server's tool has or may list, whether that server is reachable or not."""
    name, separator, _ = tool_id.partition(TOOL_ID_SEPARATOR)
    owner = next((s for s in servers if s.name == name), None) if separator else None
    if owner is None or (isinstance(tool, McpTool) and tool.server.id == owner.id):
        return None
    return (
        f"its id is in the namespace of MCP server {owner.name} ({owner.id}): ids starting "
        f'"{owner.name}{TOOL_ID_SEPARATOR}" belong to that server\'s tools only'
    )


@dataclass(frozen=True, slots=True)
class McpToolListing:
    """One tool as a server listed it: exactly what the model would read."""

    name: str
    description: str = ""
    title: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)

    def canonical(self) -> dict[str, Any]:
        """The fingerprinted fields as plain JSON data."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": _plain(self.input_schema),
            "outputSchema": _plain(self.output_schema),
            "annotations": _plain(self.annotations),
        }

    @property
    def fingerprint(self) -> str:
        """`sha256:` of the canonical JSON (sorted keys, no spaces, UTF-8)."""
        text = json.dumps(
            self.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return FINGERPRINT_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def read_only(self) -> bool:
        return self.annotations.get("readOnlyHint") is True

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> McpToolListing:
        """From `canonical()` data (the cache) or a server's `Tool` as JSON (camelCase keys)."""
        annotations = data.get("annotations") or {}
        output = data.get("outputSchema")
        return cls(
            name=str(data.get("name", "")),
            title=str(data.get("title") or ""),
            description=str(data.get("description") or ""),
            input_schema=dict(data.get("inputSchema") or {}),
            output_schema=dict(output) if isinstance(output, Mapping) else None,
            annotations={k: v for k, v in dict(annotations).items() if v is not None},
        )


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class McpServerListing:
    """What one server answered to `tools/list` (all pages), or why it could not be asked.

    `known_definitions` holds every definition seen from this server by fingerprint, so a changed
    tool can be shown as a diff against the one that was pinned.
    """

    server_id: str
    server_name: str
    tools: tuple[McpToolListing, ...] = ()
    error: str = ""
    listed_at: str = ""
    from_cache: bool = False
    known_definitions: Mapping[str, McpToolListing] = field(default_factory=dict, repr=False)
    unreachable: str = ""
    """Why the server could not be listed just now, when this is its cached listing instead."""

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def status(self) -> str:
        """Where the tools come from, as every command shows it: `listed live`, `cached at
        <time>` (with why the server was not asked or not reached) or `not listed: <error>`."""
        if not self.ok:
            return f"not listed: {self.error}"
        if not self.from_cache:
            return "listed live"
        cached = f"cached at {self.listed_at or 'an unknown time'}"
        return f"{cached} (not reachable now: {self.unreachable})" if self.unreachable else cached

    def document(self) -> dict[str, Any]:
        """The listing's status as JSON data (in the `mcp_servers` rows of every report)."""
        return {
            "listing": self.status,
            "source": "error" if not self.ok else "cache" if self.from_cache else "live",
            "listed_at": self.listed_at or None,
            "error": self.error or self.unreachable or None,
            "tools": [mcp_tool_id(self.server_name, t.name) for t in self.tools],
        }


def not_listed(server: McpServerConfig, why: str) -> McpServerListing:
    """A server whose tools are unknown: a row with the reason, never silence."""
    return McpServerListing(server.id, server.name, error=why)


def _no_cached_listing(server: McpServerConfig, state_dir: Path | None) -> str:
    """Why a server has no listing when only the cache was read (`--offline`, or a library
    caller that lists nothing itself)."""
    if state_dir is None:
        return f"no listing of MCP server {server.name} is cached (no --state-dir)"
    return f"no listing of MCP server {server.name} is cached in {state_dir}"


class PinState(StrEnum):
    """A listed tool against the server's `Pins`."""

    APPROVED = "approved"
    CHANGED = "changed"
    UNPINNED = "unpinned"


def pin_state(server: McpServerConfig, tool: McpToolListing) -> PinState:
    pinned = server.pins.get(tool.name)
    if pinned is None:
        return PinState.UNPINNED
    return PinState.APPROVED if pinned == tool.fingerprint else PinState.CHANGED


@dataclass(frozen=True, slots=True)
class _KeptOut:
    """Which rule of the server entry keeps a tool out, and the sentence explain shows."""

    rule: str
    """"DeniedTools", "AllowedTools" or "ReadOnlyOnly"."""
    message: str


def kept_out(server: McpServerConfig, tool: McpToolListing) -> _KeptOut | None:
    """Why the server entry keeps this tool out (AllowedTools, DeniedTools, ReadOnlyOnly)."""
    denied = next((g for g in server.denied_tools if fnmatch.fnmatchcase(tool.name, g)), None)
    if denied is not None:
        return _KeptOut(
            "DeniedTools",
            f'DeniedTools of MCP server {server.name} matches "{tool.name}" ("{denied}")',
        )
    if server.allowed_tools and not any(
        fnmatch.fnmatchcase(tool.name, g) for g in server.allowed_tools
    ):
        globs = ", ".join(f'"{g}"' for g in server.allowed_tools)
        return _KeptOut(
            "AllowedTools",
            f'AllowedTools of MCP server {server.name} ({globs}) does not match "{tool.name}"',
        )
    if server.read_only_only and not tool.read_only:
        return _KeptOut(
            "ReadOnlyOnly",
            f"MCP server {server.name} admits only read-only tools (ReadOnlyOnly), and "
            f'"{tool.name}" is not annotated readOnlyHint=true',
        )
    return None


def definition_diff(before: McpToolListing, after: McpToolListing) -> str:
    """A readable unified diff of two definitions' canonical JSON."""
    import difflib  # only a changed definition needs it

    old = json.dumps(before.canonical(), indent=2, sort_keys=True, ensure_ascii=False)
    new = json.dumps(after.canonical(), indent=2, sort_keys=True, ensure_ascii=False)
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), "pinned", "current", lineterm="", n=1
    )
    return "\n".join(lines)


_WORD_DIFF_CONTEXT = 4
"""Unchanged words shown on either side of a change in `definition_word_diff`."""


def definition_word_diff(before: McpToolListing, after: McpToolListing) -> dict[str, str]:
    """Each fingerprinted field that differs, by its name in the definition, as the words of
    the field (a schema as compact JSON) with the removed ones as `[-…-]` and the added ones as
    `{+…+}`, a few unchanged words around each change and `…` for the rest: a reviewer sees at
    once whether a change is only an environment detail (a time zone, a path) or new words."""
    old, new = before.canonical(), after.canonical()
    return {
        name: _word_diff(_words_of(old[name]), _words_of(new[name]))
        for name in old
        if old[name] != new[name]
    }


def _words_of(value: Any) -> list[str]:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text.split()


def _word_diff(old: list[str], new: list[str]) -> str:
    if old == new:
        return "(only white space changed)"
    import difflib  # only a changed definition needs it

    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    shown: list[str] = []
    groups = list(matcher.get_grouped_opcodes(_WORD_DIFF_CONTEXT))
    for group in groups:
        first, last = group[0], group[-1]
        if first[1] > 0 or first[3] > 0:
            shown.append("…")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                shown.extend(old[i1:i2])
                continue
            if i2 > i1:
                shown.append(f"[-{' '.join(old[i1:i2])}-]")
            if j2 > j1:
                shown.append(f"{{+{' '.join(new[j1:j2])}+}}")
        if group is groups[-1] and (last[2] < len(old) or last[4] < len(new)):
            shown.append("…")
    return " ".join(shown)


class McpTool(DefinedTool):
    """A server's tool as the registry sees it; the runtime adds execution (`runtime.mcp`).

    The server entry's confidence applies as a floor (per-tool keys may ask for more); the entry's
    tool filters act as a switch-off and its pins as the approval of the definition.
    """

    returns_untrusted_external_content = True

    def __init__(
        self,
        server: McpServerConfig,
        listing: McpToolListing,
        known: Mapping[str, McpToolListing] | None = None,
        listed: str = "",
    ) -> None:
        tool_id = mcp_tool_id(server.name, listing.name)
        definition = ToolDefinition(
            id=tool_id,
            implementation_key=f"mcp:{server.id}:{listing.name}",
            visible_in=ToolVisibility(chat=True, assistants=False),
            activation=ToolActivation.SELECTION,
            function=ToolFunction(
                name=tool_id,
                description_for_llm=listing.description,
                strict=False,
                parameters=dict(listing.input_schema) or {"type": "object", "properties": {}},
            ),
        )
        super().__init__(
            definition,
            display_name=listing.title or listing.name,
            outbound_data=ToolOutboundData.CONFIGURED_SERVICE,
        )
        self.server = server
        self.listing = listing
        self.listed = listed
        """Where its definition comes from (`McpServerListing.status`), shown as evidence."""
        self.minimum_confidence_floor = server.minimum_provider_confidence
        self.minimum_confidence_floor_evidence = Evidence(
            "MinimumProviderConfidence",
            server.minimum_provider_confidence.name,
            f"MCP server {server.name}: a floor for all its tools",
            server.origin,
        )
        self.switch_off_gate = self._switch_off_gate()
        self.approval_gate = self._approval_gate(known or {})
        self.sensitive_trace_argument_names = frozenset(server.sensitive_arguments)

    @property
    def effects(self) -> ToolEffects:
        """The server entry's `Effects` for it, else its pinned annotations read as effects
        (absent hints the conservative way)."""
        configured = self.server.effects.get(self.listing.name)
        if configured is not None:
            return configured_effects(
                configured,
                f'MCP_SERVERS {self.server.name} Effects["{self.listing.name}"]',
                self.server.origin,
            )
        return annotation_effects(self.listing.annotations)

    def _server_evidence(self) -> Evidence:
        return Evidence(
            "MCP server",
            f"{self.server.name} ({self.server.id})",
            "MCP_SERVERS",
            self.server.origin,
        )

    def _switch_off_gate(self) -> ToolGate | None:
        rule = kept_out(self.server, self.listing)
        if rule is None:
            return None
        return ToolGate(False, f"The organization keeps it out: {rule.message}.", self._evidence())

    def _evidence(self) -> tuple[Evidence, ...]:
        annotations = json.dumps(_plain(self.listing.annotations), sort_keys=True)
        return (
            self._server_evidence(),
            *(
                (Evidence("listing", _shown_status(self.listed), "MCP server"),)
                if self.listed
                else ()
            ),
            Evidence("annotations", annotations, "MCP server"),
            Evidence("sha256", self.listing.fingerprint, "MCP server"),
        )

    def _approval_gate(self, known: Mapping[str, McpToolListing]) -> ToolGate:
        state = pin_state(self.server, self.listing)
        current = self.listing.fingerprint
        pinned = self.server.pins.get(self.listing.name, "")
        evidence = (
            *self._evidence(),
            Evidence("pin", pinned or "(none)", "Pins", self.server.origin),
            Evidence("pin state", state.value, "MCP server"),
        )
        if state is PinState.APPROVED:
            return ToolGate(True, "Its definition matches the pinned fingerprint.", evidence)
        if state is PinState.UNPINNED:
            if not self.server.require_pins:
                return ToolGate(
                    True,
                    "Its definition is not pinned, and the server does not require pins.",
                    evidence,
                )
            return ToolGate(
                False,
                f"Its definition is not pinned, and MCP server {self.server.name} requires pins "
                f"(RequirePins); review it and pin {current} (policy mcp pin).",
                evidence,
            )
        before = known.get(pinned)
        change = (
            definition_diff(before, self.listing)
            if before is not None
            else "(the pinned definition was never listed here, so no diff can be shown)"
        )
        return ToolGate(
            False,
            f"Its definition changed since it was pinned (pinned {pinned}, now {current}); "
            "it is not offered until an administrator reviews and pins it again.",
            (*evidence, Evidence("change", change, "MCP server")),
        )


def _shown_status(status: str) -> str:
    """A listing's status as evidence: it may quote an error naming the server's address."""
    from policy.secrets import without_user_info

    return without_user_info(status)


_T = TypeVar("_T", bound=McpTool)


def mcp_tools(
    servers: Sequence[McpServerConfig],
    listings: Mapping[str, McpServerListing],
    kind: type[_T] = McpTool,  # type: ignore[assignment]
) -> tuple[_T, ...]:
    """The registry tools of every listed server, in server then listing order; `kind` is the
    class to build (the runtime's adds execution)."""
    tools: list[_T] = []
    for server in servers:
        listing = listings.get(server.id)
        if listing is None or not listing.ok:
            continue
        tools.extend(
            kind(server, t, listing.known_definitions, listing.status) for t in listing.tools
        )
    return tuple(tools)


def pin_fragment(
    servers: Sequence[McpServerConfig], listings: Mapping[str, McpServerListing]
) -> str:
    """The Lua an administrator reviews and deploys: every listed tool's current fingerprint.

    Names and errors come from servers and plugins: they are written as Lua literals and one-line
    comments (`policy.export`), so none can end a comment early or escape a string."""
    from policy.export import lua_comment, lua_string

    lines = [
        "-- Pins of MCP tool definitions, as listed now. Review each definition",
        "-- (policy mcp list) before deploying; a changed definition is never offered unpinned.",
    ]
    for index, server in enumerate(servers, start=1):
        listing = listings.get(server.id)
        lines.append(lua_comment(f"MCP server {server.name} ({server.id})"))
        if listing is None or not listing.ok:
            reason = listing.error if listing is not None else "not listed"
            lines.append(lua_comment(f"not listed: {reason}"))
            continue
        lines.append(f'-- in its CONFIG["MCP_SERVERS"] entry (entry {index} here), set:')
        lines.append('["Pins"] = {')
        for tool in sorted(listing.tools, key=lambda t: t.name):
            lines.append(f"    [{lua_string(tool.name)}] = {lua_string(tool.fingerprint)},")
        lines.append("},")
    return "\n".join(lines) + "\n"


# --- the last listing of each server, kept in a state directory ---------------------------------


def listing_cache_folder(state_dir: Path) -> Path:
    """Where `policy mcp list` caches each server's listing in a state directory: a change
    there changes the MCP tools a policy loaded with that state directory has."""
    return state_dir / _CACHE_FOLDER


def cache_path(state_dir: Path, server_id: str) -> Path:
    return listing_cache_folder(state_dir) / f"{server_id}.json"


def _read_cached_listing(state_dir: Path, server: McpServerConfig) -> McpServerListing | None:
    """The last successful listing of a server, or None when there is none, it is unreadable,
    or it was listed at another endpoint (the entry's Command, Args or Url changed since: those
    tools are another server's)."""
    try:
        data = json.loads(cache_path(state_dir, server.id).read_text(encoding="utf-8"))
        if data.get("endpoint", server.endpoint) != server.endpoint:
            return None
        tools = tuple(McpToolListing.from_data(t) for t in data["tools"])
        seen = {k: McpToolListing.from_data(v) for k, v in dict(data.get("seen", {})).items()}
        return McpServerListing(
            server.id,
            server.name,
            tools,
            listed_at=str(data.get("listed_at", "")),
            from_cache=True,
            known_definitions=seen,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def known_after(
    earlier: Mapping[str, McpToolListing], listing: McpServerListing, pinned: Iterable[str] = ()
) -> dict[str, McpToolListing]:
    """The definitions a server's history keeps after `listing`, oldest first: every one listed
    now, every `pinned` one seen before (the diff of a changed tool needs it), and the newest
    `_MAX_EARLIER_DEFINITIONS` others. A server that rewrites its definitions at every listing
    cannot grow the history, in memory or in the cache, without bound."""
    merged = dict(earlier)
    for fingerprint, definition in listing.known_definitions.items():
        merged.pop(fingerprint, None)
        merged[fingerprint] = definition
    current = {t.fingerprint: t for t in listing.tools}
    pins = set(pinned)
    before = [(k, v) for k, v in merged.items() if k not in current]
    others = [(k, v) for k, v in before if k not in pins][-_MAX_EARLIER_DEFINITIONS:]
    return {**dict(others), **{k: v for k, v in before if k in pins}, **current}


def write_cached_listing(
    state_dir: Path, listing: McpServerListing, endpoint: str = "", pinned: Iterable[str] = ()
) -> McpServerListing:
    """Store a successful listing (its definitions added to those seen, `known_after`) with the
    `endpoint` it was listed at; returns it with the definitions known from earlier listings, so
    diffs can name what changed."""
    import os
    import tempfile

    path = cache_path(state_dir, listing.server_id)
    seen: dict[str, McpToolListing] = {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        seen = {k: McpToolListing.from_data(v) for k, v in dict(data.get("seen", {})).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    seen = known_after(seen, listing, pinned)
    document = {
        "server": listing.server_name,
        **({"endpoint": endpoint} if endpoint else {}),
        "listed_at": listing.listed_at,
        "tools": [t.canonical() for t in listing.tools],
        "seen": {k: v.canonical() for k, v in seen.items()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".listing-")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(document, out, ensure_ascii=False, indent=1)
    os.replace(temporary, path)
    return McpServerListing(
        listing.server_id,
        listing.server_name,
        listing.tools,
        listed_at=listing.listed_at,
        from_cache=listing.from_cache,
        known_definitions=seen,
    )


def forget_unconfigured_listings(
    state_dir: Path, servers: Iterable[McpServerConfig], now: datetime
) -> tuple[str, ...]:
    """Delete the cached listings of servers not among `servers` that were last listed more than
    `UNCONFIGURED_LISTING_DAYS` ago (or at a time that cannot be read); returns their server ids.

    Not at once: a state directory may serve commands run with fewer plugins (an `--org`
    left out, a candidate in `policy diff`), and a server still configured elsewhere is listed
    again within the listing TTL whenever it is used, so only a server no command has listed
    for that long is gone for good. A server configured here never loses its cache."""
    configured = {s.id for s in servers}
    forgotten: list[str] = []
    for path in sorted(listing_cache_folder(state_dir).glob("*.json")):
        if path.stem in configured:
            continue
        try:
            listed_at = str(json.loads(path.read_text(encoding="utf-8")).get("listed_at", ""))
        except (OSError, ValueError, AttributeError):
            listed_at = ""
        age = listed_age_seconds(McpServerListing(path.stem, "", listed_at=listed_at), now)
        if age is None or age > UNCONFIGURED_LISTING_DAYS * 86_400:
            try:
                path.unlink()
            except OSError:
                continue
            forgotten.append(path.stem)
    return tuple(forgotten)


def cached_listings(
    state_dir: Path | None, servers: Iterable[McpServerConfig]
) -> dict[str, McpServerListing]:
    """Every server's last cached listing; a server without one gets a `not_listed` row."""
    found = {}
    for server in servers:
        listing = _read_cached_listing(state_dir, server) if state_dir is not None else None
        found[server.id] = listing or not_listed(server, _no_cached_listing(server, state_dir))
    return found


def listed_age_seconds(listing: McpServerListing, now: datetime) -> float | None:
    """How old a listing is by its `listed_at` (None when unreadable, or later than `now`: a
    clock that went back makes no listing fresh)."""
    try:
        listed = datetime.fromisoformat(listing.listed_at)
    except ValueError:
        return None
    if listed.tzinfo is None:
        return None
    age = (now - listed).total_seconds()
    return age if age >= 0 else None
