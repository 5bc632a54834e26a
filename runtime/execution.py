"""What a tool gets when it runs and what it gives back. Tools never learn which adapter ran them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from policy import (
    ConfidenceLevel,
    DataSecurity,
    ProviderKind,
    RequestExtras,
    Tool,
    ToolDefinition,
    ToolPolicyError,
)
from policy._runtime_seam import (
    NO_EXTRAS,
    EarlierProviderNames,
    OutboundDataRestriction,
    ProviderFacts,
    given_provider,
)
from policy._runtime_seam import missing_members as policy_missing_members
from runtime.messages import Source

if TYPE_CHECKING:
    from policy import Effect
    from runtime.chat import Chat
    from runtime.data_sources import SearchableDataSource
    from runtime.retrieval_overrides import RetrievalOverrides
    from runtime.web.guard import PromptInjectionGuard


class ToolExecutionBlocked(ToolPolicyError):
    """An intentional policy block: the model gets the message as is, the trace says BLOCKED."""

    code = "tool-blocked"


class ContentQuotingError(Exception):
    """A tool's failure whose message quotes what its upstream wrote (an MCP server's error
    text): content, like a result. The model and the trace read `summary: content`; what is
    logged without content logging (the decision log's `status_message`, the executor's log
    line) reads `summary` only."""

    def __init__(self, summary: str, content: str = "") -> None:
        super().__init__(f"{summary}: {content}" if content else summary)
        self.summary = summary
        self.content = content


@dataclass(frozen=True, slots=True)
class ToolExecutionResult:
    """A tool's answer plus what it demands of the chat (only for what actually reached the model)."""

    text_content: str | None = None
    json_content: Any = None
    sources: tuple[Source, ...] = ()
    required_provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    required_data_security: DataSecurity = DataSecurity.NOT_SPECIFIED
    required_outbound_data_restriction: OutboundDataRestriction | None = None
    outbound_data_source_id: str = ""
    """The mailbox/data source whose content caused the restriction (named in later refusals)."""
    brought: tuple[Effect, ...] | None = None
    """What this result brought into the chat for the flow rule (`policy.flow`): None — what
    the tool's effects say its results bring (UNTRUSTED_CONTENT, PRIVATE_DATA), unless the
    result is empty; `()` — nothing (a search that found nothing). Only what reached the model
    counts, like the confidence requirement."""
    structured_content: dict[str, Any] | None = None
    """A JSON object for a program rather than the model (an MCP tool's `structuredContent`,
    valid against its output schema): the MCP gateway hands it to its client as structured
    content; the model reads what the text says of it. Masked and filtered like the JSON."""
    injection_filtered: bool = False
    """True when the tool itself passed every outside text of this result (text, JSON values,
    source titles) through the context's prompt-injection guard (`runtime.guard_of(context)`).
    For a tool that returns untrusted content and leaves this False, the executor filters the
    result, so no text is filtered twice and none reaches the model unfiltered."""

    def to_model_content(self) -> str:
        """Compact JSON with non-ASCII kept literal, else the text."""
        import json

        if self.json_content is not None:
            return json.dumps(self.json_content, ensure_ascii=False, separators=(",", ":"))
        return self.text_content or ""


_S = TypeVar("_S")


@dataclass(frozen=True, slots=True, init=False)
class ToolServices:
    """The shared objects a running tool may use, one typed field each, plus each tool's own.

    An app passes its own with `ChatRuntime(policy, services=ToolServices(guard=...))`; the
    runtime adds what the configuration and the request give (the chat's data sources, what the
    tools' settings tell each other, the MCP sessions, the chat of the call). A field left at its
    default means "use the built-in behaviour" (e.g. no guard: the structural injection filter).

    A tool that needs an object of its own (web_search's `SearchEndpoints`, an MCP tool's
    `McpSessions`) finds it among `tool_services` by its class: `services.of(SearchEndpoints)`.
    The keywords of earlier versions are still taken and land there: `search_endpoints=` and
    `mcp_sessions=` in `tool_services`, `wiki_base_url=` in `request_extras`.
    """

    guard: PromptInjectionGuard | None
    """The prompt-injection guard every piece of outside text passes; None → the built-in one."""
    retrieval_overrides: RetrievalOverrides | None
    """How web retrieval resolves, classifies and verifies (tests route names to loopback)."""
    data_sources: tuple[SearchableDataSource, ...]
    """The chat's searchable data sources."""
    request_extras: RequestExtras
    """What the tools' settings tell the other tools (`Tool.request_extras`: the configured wiki
    read_web_page may read under a strict outbound restriction); the runtime fills it from the
    policy, a field the app set stays as set."""
    tool_services: tuple[object, ...]
    """Each tool's own services object, found by its class with `of` (the first of a class)."""
    chat: Chat | None
    """The chat of the call (set by the executor)."""

    def __init__(
        self,
        guard: PromptInjectionGuard | None = None,
        retrieval_overrides: RetrievalOverrides | None = None,
        search_endpoints: object | None = None,
        data_sources: Sequence[SearchableDataSource] = (),
        wiki_base_url: str = "",
        mcp_sessions: object | None = None,
        chat: Chat | None = None,
        *,
        request_extras: RequestExtras = NO_EXTRAS,
        tool_services: Sequence[object] = (),
    ) -> None:
        earlier = tuple(s for s in (search_endpoints, mcp_sessions) if s is not None)
        if wiki_base_url:
            request_extras = RequestExtras(wiki_base_url=wiki_base_url).merged(request_extras)
        for name, value in (
            ("guard", guard),
            ("retrieval_overrides", retrieval_overrides),
            ("data_sources", tuple(data_sources)),
            ("request_extras", request_extras),
            ("tool_services", (*tool_services, *earlier)),
            ("chat", chat),
        ):
            object.__setattr__(self, name, value)

    def of(self, kind: type[_S]) -> _S | None:
        """The tool's own services object of class `kind` (None: the tool's built-in default)."""
        for item in self.tool_services:
            if isinstance(item, kind):
                return item
        return None

    def with_defaults(self, *defaults: object) -> ToolServices:
        """These services plus each of `defaults` whose class none of `tool_services` has (what
        the app gave stays)."""
        missing = tuple(d for d in defaults if self.of(type(d)) is None)
        return replace(self, tool_services=(*self.tool_services, *missing)) if missing else self


_NO_SERVICES = ToolServices()


def given_services(services: object, receiver: str) -> ToolServices:
    """The app's `services` argument, refused with a TypeError naming its type unless it is a
    `ToolServices` (None: the built-in behaviour), so a dict or a guard passed by mistake fails
    where it is given instead of inside the first tool call."""
    if services is None:
        return _NO_SERVICES
    if isinstance(services, ToolServices):
        return services
    kind = type(services)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    raise TypeError(
        f"{receiver}: services must be a runtime.ToolServices or None, not {name}; "
        "pass e.g. services=ToolServices(guard=...)"
    )


@dataclass(frozen=True, slots=True, init=False)
class ToolExecutionContext(EarlierProviderNames):
    """Everything a running tool may look at.

    Built with `provider=ProviderFacts(...)`; `provider_kind=`, `provider_confidence=` and
    `provider_trusted=` are still taken in its place, and read back as properties.
    """

    definition: ToolDefinition
    call_id: str
    settings: Mapping[str, str] = field(repr=False)
    provider: ProviderFacts
    """The provider the result goes to: kind, confidence, whether the organization trusts it."""
    chat_id: str = ""
    outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED
    given_web_addresses: frozenset[str] = frozenset()
    """Request keys of addresses given word for word to the model (system prompt, user messages
    and attachments, earlier tool results) — see `runtime.web.addresses.request_key`."""
    services: ToolServices = _NO_SERVICES
    """The shared objects a tool may use (guard, data sources, retrieval overrides, ...)."""
    offered_tool_names: frozenset[str] = frozenset()
    """The function names of every tool offered in this request: the guard knows a text that
    asks to call one of them by name addresses the agent."""

    def __init__(
        self,
        definition: ToolDefinition,
        call_id: str,
        settings: Mapping[str, str],
        *,
        provider: ProviderFacts | None = None,
        chat_id: str = "",
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
        given_web_addresses: frozenset[str] = frozenset(),
        services: ToolServices = _NO_SERVICES,
        offered_tool_names: frozenset[str] = frozenset(),
        provider_kind: ProviderKind | None = None,
        provider_confidence: ConfidenceLevel | None = None,
        provider_trusted: bool = False,
    ) -> None:
        facts = given_provider(
            "ToolExecutionContext", provider, provider_kind, provider_confidence, provider_trusted
        )
        for name, value in (
            ("definition", definition),
            ("call_id", call_id),
            ("settings", settings),
            ("provider", facts),
            ("chat_id", chat_id),
            ("outbound_restriction", outbound_restriction),
            ("given_web_addresses", given_web_addresses),
            ("services", services),
            ("offered_tool_names", offered_tool_names),
        ):
            object.__setattr__(self, name, value)


@runtime_checkable
class ExecutableTool(Tool, Protocol):
    """A policy Tool that can also run: the `Tool` protocol plus `execute`.

    What the executor asks beyond `execute` — `sensitive_trace_argument_names` and
    `returns_untrusted_external_content` — are members of the `Tool` protocol, defaulted by
    `DefinedTool` (none, False).
    """

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult: ...


def sensitive_argument_names(tool: Tool) -> frozenset[str]:
    """The argument names a trace masks for this tool (its `sensitive_trace_argument_names`)."""
    return frozenset(tool.sensitive_trace_argument_names)


def returns_untrusted_content(tool: Tool) -> bool:
    """Whether the executor must see a tool's results filtered for prompt injections: the tool
    declares `returns_untrusted_external_content` (its results bring text from outside the
    organization's control: web pages, mails, tickets, an MCP server's answers)."""
    return tool.returns_untrusted_external_content is True


def missing_members(tool: object) -> tuple[str, ...]:
    """The members of `ExecutableTool` this object lacks (extend `DefinedTool` to get all but
    `execute`)."""
    return policy_missing_members(tool, ExecutableTool)
