"""toolpolicy's runtime: provider adapters, the tool-calling loop, the executor and built-in tools.

An app answers each user message with one call:

    >>> from policy import load_policy
    >>> from runtime import ChatRuntime, Chat, ChatMessage, Role, FinalAnswer
    >>> policy = load_policy(org=["examples/organization"])
    >>> assistant = ChatRuntime(policy)
    >>> chat = Chat.open("chat-1")
    >>> async for event in assistant.respond(chat, policy.providers[0],
    ...                                      [ChatMessage(Role.USER, "What time is it?")]):
    ...     ...

Importing this package is cheap: every name below loads its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy._runtime_seam import lazy_attributes

if TYPE_CHECKING:
    from policy import ToolPolicyError
    from policy._runtime_seam import OutboundDataRestriction, ProviderFacts
    from runtime.approvals import Approval, ApprovalError, PendingApproval
    from runtime.arguments import ArgumentError, ArgumentReader
    from runtime.chat import (
        CallCountStore,
        Chat,
        ChatHolding,
        ChatRecord,
        ChatRequirementError,
        ChatStore,
        ChatStoreError,
        HoldingKind,
        MemoryChatStore,
        SqliteChatStore,
        open_chat_store,
    )
    from runtime.chat_postgres import PostgresChatStore
    from runtime.data_sources import Passage, PassagePage, SearchableDataSource
    from runtime.decision_log import (
        CallbackSink,
        DecisionSink,
        JsonLinesSink,
        LineSink,
        OpenTelemetrySink,
        QueuedSink,
    )
    from runtime.execution import (
        ContentQuotingError,
        ExecutableTool,
        ToolExecutionBlocked,
        ToolExecutionContext,
        ToolExecutionResult,
        ToolServices,
        missing_members,
        returns_untrusted_content,
        sensitive_argument_names,
    )
    from runtime.executor import InjectionSeen, ToolExecutor, ToolInvocationTrace, TraceStatus
    from runtime.loop import (
        FinalAnswer,
        InvalidToolCallingResponse,
        LoopEvent,
        LoopLimits,
        SequentialToolCallingLoop,
        TextDeltaEvent,
        ToolCallFinished,
        ToolCallingLoop,
        ToolCallStarted,
        ToolRoundStarted,
    )
    from runtime.mcp import McpExecutableTool, McpServerError, McpSessions
    from runtime.mcp_gateway import GatewayCall, McpGateway
    from runtime.mcp_listing import current_mcp_listings
    from runtime.messages import (
        ChatMessage,
        RequestedCall,
        Role,
        Source,
        SourceOrigin,
        StopReason,
        Usage,
    )
    from runtime.people_settings import StoredUserSettings
    from runtime.policy_watch import PolicyWatcher, ReloadResult
    from runtime.providers import (
        ProviderClient,
        ProviderError,
        RetryPolicy,
        Timeouts,
        create_client,
    )
    from runtime.retrieval_overrides import RetrievalOverrides
    from runtime.schema import ParameterSchemaBuilder
    from runtime.session import (
        ChatRuntime,
        ResponseEvent,
        SettingsBySubject,
        ToolsOffered,
        respond,
    )
    from runtime.tools import builtin_executable_tools
    from runtime.tools._common import guard_of
    from runtime.web.addresses import AddressClass
    from runtime.web.guard import PromptInjectionGuard
    from runtime.web.guard_model import ModelInjectionFilter

_LAZY: dict[str, str] = {
    "ToolPolicyError": "policy.errors",
    "OutboundDataRestriction": "policy.vocabulary",
    "ProviderFacts": "policy.provider_facts",
    "AddressClass": "runtime.web.addresses",
    "PromptInjectionGuard": "runtime.web.guard",
    "ModelInjectionFilter": "runtime.web.guard_model",
    "Passage": "runtime.data_sources",
    "PassagePage": "runtime.data_sources",
    "Approval": "runtime.approvals",
    "ApprovalError": "runtime.approvals",
    "PendingApproval": "runtime.approvals",
    "ArgumentError": "runtime.arguments",
    "ArgumentReader": "runtime.arguments",
    "RequestedCall": "runtime.messages",
    "RetrievalOverrides": "runtime.retrieval_overrides",
    "ParameterSchemaBuilder": "runtime.schema",
    "sensitive_argument_names": "runtime.execution",
    "missing_members": "runtime.execution",
    "returns_untrusted_content": "runtime.execution",
    "ChatHolding": "runtime.chat",
    "HoldingKind": "runtime.chat",
    "InjectionSeen": "runtime.executor",
    "guard_of": "runtime.tools._common",
    "Chat": "runtime.chat",
    "CallCountStore": "runtime.chat",
    "StoredUserSettings": "runtime.people_settings",
    "SettingsBySubject": "runtime.session",
    "ChatRecord": "runtime.chat",
    "ChatRequirementError": "runtime.chat",
    "ChatStore": "runtime.chat",
    "MemoryChatStore": "runtime.chat",
    "SqliteChatStore": "runtime.chat",
    "ChatStoreError": "runtime.chat",
    "open_chat_store": "runtime.chat",
    "PostgresChatStore": "runtime.chat_postgres",
    "McpExecutableTool": "runtime.mcp",
    "McpServerError": "runtime.mcp",
    "McpSessions": "runtime.mcp",
    "McpGateway": "runtime.mcp_gateway",
    "current_mcp_listings": "runtime.mcp_listing",
    "GatewayCall": "runtime.mcp_gateway",
    "ExecutableTool": "runtime.execution",
    "ContentQuotingError": "runtime.execution",
    "ToolExecutionBlocked": "runtime.execution",
    "ToolExecutionContext": "runtime.execution",
    "ToolExecutionResult": "runtime.execution",
    "ToolServices": "runtime.execution",
    "SearchableDataSource": "runtime.data_sources",
    "CallbackSink": "runtime.decision_log",
    "DecisionSink": "runtime.decision_log",
    "JsonLinesSink": "runtime.decision_log",
    "QueuedSink": "runtime.decision_log",
    "OpenTelemetrySink": "runtime.decision_log",
    "LineSink": "runtime.decision_log",
    "ToolExecutor": "runtime.executor",
    "ToolInvocationTrace": "runtime.executor",
    "TraceStatus": "runtime.executor",
    "FinalAnswer": "runtime.loop",
    "InvalidToolCallingResponse": "runtime.loop",
    "LoopEvent": "runtime.loop",
    "LoopLimits": "runtime.loop",
    "SequentialToolCallingLoop": "runtime.loop",
    "TextDeltaEvent": "runtime.loop",
    "ToolCallFinished": "runtime.loop",
    "ToolCallStarted": "runtime.loop",
    "ToolRoundStarted": "runtime.loop",
    "ToolCallingLoop": "runtime.loop",
    "ChatMessage": "runtime.messages",
    "Role": "runtime.messages",
    "Source": "runtime.messages",
    "SourceOrigin": "runtime.messages",
    "StopReason": "runtime.messages",
    "Usage": "runtime.messages",
    "PolicyWatcher": "runtime.policy_watch",
    "ReloadResult": "runtime.policy_watch",
    "ProviderClient": "runtime.providers",
    "ProviderError": "runtime.providers",
    "RetryPolicy": "runtime.providers",
    "Timeouts": "runtime.providers",
    "create_client": "runtime.providers",
    "ChatRuntime": "runtime.session",
    "ResponseEvent": "runtime.session",
    "ToolsOffered": "runtime.session",
    "respond": "runtime.session",
    "builtin_executable_tools": "runtime.tools",
}

__all__ = [
    "AddressClass",
    "Approval",
    "ApprovalError",
    "ArgumentError",
    "ArgumentReader",
    "CallCountStore",
    "CallbackSink",
    "Chat",
    "ChatHolding",
    "ChatMessage",
    "ChatRecord",
    "ChatRequirementError",
    "ChatRuntime",
    "ChatStore",
    "ChatStoreError",
    "ContentQuotingError",
    "DecisionSink",
    "ExecutableTool",
    "FinalAnswer",
    "GatewayCall",
    "HoldingKind",
    "InjectionSeen",
    "InvalidToolCallingResponse",
    "JsonLinesSink",
    "LineSink",
    "LoopEvent",
    "LoopLimits",
    "McpExecutableTool",
    "McpGateway",
    "McpServerError",
    "McpSessions",
    "MemoryChatStore",
    "ModelInjectionFilter",
    "OpenTelemetrySink",
    "OutboundDataRestriction",
    "ParameterSchemaBuilder",
    "Passage",
    "PassagePage",
    "PendingApproval",
    "PolicyWatcher",
    "PostgresChatStore",
    "PromptInjectionGuard",
    "ProviderClient",
    "ProviderError",
    "ProviderFacts",
    "QueuedSink",
    "ReloadResult",
    "RequestedCall",
    "ResponseEvent",
    "RetrievalOverrides",
    "RetryPolicy",
    "Role",
    "SearchableDataSource",
    "SequentialToolCallingLoop",
    "SettingsBySubject",
    "Source",
    "SourceOrigin",
    "SqliteChatStore",
    "StopReason",
    "StoredUserSettings",
    "TextDeltaEvent",
    "Timeouts",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolCallingLoop",
    "ToolExecutionBlocked",
    "ToolExecutionContext",
    "ToolExecutionResult",
    "ToolExecutor",
    "ToolInvocationTrace",
    "ToolPolicyError",
    "ToolRoundStarted",
    "ToolServices",
    "ToolsOffered",
    "TraceStatus",
    "Usage",
    "builtin_executable_tools",
    "create_client",
    "current_mcp_listings",
    "guard_of",
    "missing_members",
    "open_chat_store",
    "respond",
    "returns_untrusted_content",
    "sensitive_argument_names",
]


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
