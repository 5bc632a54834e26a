"""Every error the runtime raises to an app on purpose, in one place, under `ToolPolicyError`.

An app catches `ToolPolicyError` (from here, `runtime` or `policy`) to tell "a provider, a
server, the chat store or the policy said no" from a bug; `ProviderError` catches every provider
failure. Each sets a `code`, stable across versions. The errors are defined next to the code
that raises them and importable from here (loaded on first use, so importing this module stays
cheap); the policy side's own subclasses are in `policy.errors`.

    ToolPolicyError                     error                 (policy.errors has the policy's)
    ├── ProviderError                   provider              any provider failure
    │   ├── ProviderConfigurationError  provider-configuration  no client from this entry
    │   ├── ProviderAuthError           provider-auth         HTTP 401/403
    │   ├── ProviderModelNotFound       provider-model-not-found  HTTP 404
    │   ├── ProviderRequestRejected     provider-request-rejected  another 4xx
    │   ├── ProviderRateLimited         provider-rate-limited  429 after the allowed retries
    │   ├── ProviderUnavailable         provider-unavailable  5xx, timeouts, broken connections
    │   └── ProviderProtocolError       provider-protocol     not the expected event stream
    ├── InvalidToolCallingResponse      invalid-tool-calling-response  a silent first round
    ├── ChatRequirementError            chat-requirement      a provider the chat rules out
    ├── ChatStoreError                  chat-store            the chat store cannot be used
    ├── ApprovalError                   approval              approvals no waiting call matches
    ├── ToolExecutionBlocked            tool-blocked          a tool refused by the policy
    ├── ArgumentError                   argument              also ValueError; a bad model argument
    ├── McpServerError                  mcp-server            also ContentQuotingError
    ├── SignInUnavailable               sign-in-unavailable   the identity provider's keys unreadable
    ├── WebPageAccessBlocked            web-access-blocked    a web target refused on purpose
    ├── WebRetrievalError               web-retrieval         loading a page failed
    │   └── WebRetrievalTimedOut        web-retrieval         its overall timeout ran out
    ├── SearchBackendError              search-backend        a search backend could not answer
    │   └── EriServerError              eri-server            an ERI v1 data source's server
    ├── InjectionFilterError            injection-filter      the filtering service is unusable
    ├── ConfigurationArchiveError       configuration-archive  also ValueError; a refused archive
    └── CaBundleError                   ca-bundle             also ValueError; unusable PEM bundle

    ContentQuotingError  (Exception)  what a tool raises when its message quotes its upstream
                                      (an MCP server's error text): the executor shows the
                                      quoted part only where content may appear.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy._runtime_seam import lazy_attributes

if TYPE_CHECKING:
    from policy import ToolPolicyError
    from runtime.approvals import ApprovalError
    from runtime.arguments import ArgumentError
    from runtime.chat import ChatRequirementError, ChatStoreError
    from runtime.config_fetch import CaBundleError, ConfigurationArchiveError
    from runtime.data_sources.eri import EriServerError
    from runtime.execution import ContentQuotingError, ToolExecutionBlocked
    from runtime.loop import InvalidToolCallingResponse
    from runtime.mcp import McpServerError
    from runtime.providers.errors import (
        ProviderAuthError,
        ProviderConfigurationError,
        ProviderError,
        ProviderModelNotFound,
        ProviderProtocolError,
        ProviderRateLimited,
        ProviderRequestRejected,
        ProviderUnavailable,
    )
    from runtime.signin._errors import SignInUnavailable
    from runtime.tools.web_search.backends import SearchBackendError
    from runtime.web.guard_http import InjectionFilterError
    from runtime.web.retrieval import WebPageAccessBlocked, WebRetrievalError, WebRetrievalTimedOut

_DEFINED_IN = {
    "ToolPolicyError": "policy.errors",
    "ApprovalError": "runtime.approvals",
    "ArgumentError": "runtime.arguments",
    "CaBundleError": "runtime.config_fetch",
    "ChatRequirementError": "runtime.chat",
    "ChatStoreError": "runtime.chat",
    "ConfigurationArchiveError": "runtime.config_fetch",
    "ContentQuotingError": "runtime.execution",
    "InjectionFilterError": "runtime.web.guard_http",
    "InvalidToolCallingResponse": "runtime.loop",
    "McpServerError": "runtime.mcp",
    "SignInUnavailable": "runtime.signin._errors",
    "ProviderAuthError": "runtime.providers.errors",
    "ProviderConfigurationError": "runtime.providers.errors",
    "ProviderError": "runtime.providers.errors",
    "ProviderModelNotFound": "runtime.providers.errors",
    "ProviderProtocolError": "runtime.providers.errors",
    "ProviderRateLimited": "runtime.providers.errors",
    "ProviderRequestRejected": "runtime.providers.errors",
    "ProviderUnavailable": "runtime.providers.errors",
    "SearchBackendError": "runtime.tools.web_search.backends",
    "EriServerError": "runtime.data_sources.eri",
    "ToolExecutionBlocked": "runtime.execution",
    "WebPageAccessBlocked": "runtime.web.retrieval",
    "WebRetrievalError": "runtime.web.retrieval",
    "WebRetrievalTimedOut": "runtime.web.retrieval",
}

__all__ = [
    "ApprovalError",
    "ArgumentError",
    "CaBundleError",
    "ChatRequirementError",
    "ChatStoreError",
    "ConfigurationArchiveError",
    "ContentQuotingError",
    "EriServerError",
    "InjectionFilterError",
    "InvalidToolCallingResponse",
    "McpServerError",
    "ProviderAuthError",
    "ProviderConfigurationError",
    "ProviderError",
    "ProviderModelNotFound",
    "ProviderProtocolError",
    "ProviderRateLimited",
    "ProviderRequestRejected",
    "ProviderUnavailable",
    "SearchBackendError",
    "SignInUnavailable",
    "ToolExecutionBlocked",
    "ToolPolicyError",
    "WebPageAccessBlocked",
    "WebRetrievalError",
    "WebRetrievalTimedOut",
]


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _DEFINED_IN, __all__)
