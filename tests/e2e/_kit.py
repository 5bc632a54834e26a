"""What the end-to-end tests share: the example organization, the example tools, loopback providers.

The policy is loaded from examples/organization through real Lua; the providers are the
organization's own entries (or, for Anthropic, one an app user configured) with their address
pointed at the loopback provider server, exactly as an administrator's Hostname would.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from policy import Policy
from policy.configuration import ProviderConfig
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool
from policy.vocabulary import ConfidenceLevel, ProviderKind, ToolOutboundData
from runtime.execution import ToolExecutionContext, ToolExecutionResult
from runtime.providers import ProviderClient, RetryPolicy, create_client
from tests.servers.provider_server import ProviderServer

ROOT = Path(__file__).resolve().parents[2]
ORGANIZATION = ROOT / "examples" / "organization"
VLLM_ID = "79cb8e25-0940-4280-964a-0a57c61d6ee7"
OPENAI_ID = "16e70c4d-b7aa-4c16-b770-2737343f1b32"
API_KEY = "sk-e2e-0123456789abcdef"
NOTES_URL = "https://notes.example.org/q3-plan"
FAST_RETRIES = RetryPolicy(
    max_attempts=3, initial_backoff_seconds=0.0, max_backoff_seconds=0.0, max_retry_after_seconds=1
)


def load_example_tools() -> ModuleType:
    """examples/clock_tool.py, imported from its file the way an app would ship it."""
    spec = importlib.util.spec_from_file_location("clock_tool", ROOT / "examples" / "clock_tool.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class InternalNotesTool(DefinedTool):
    """An app's tool whose answer is confidential: the chat must stay with HIGH providers after.

    It remembers the addresses each call was told were given to the model.
    """

    def __init__(self) -> None:
        super().__init__(
            ToolDefinition(
                id="internal_notes",
                implementation_key="internal_notes",
                function=ToolFunction(name="internal_notes", description_for_llm="Read notes."),
                effects=("PRIVATE_DATA",),  # the app's own confidential notes, read only
            ),
            display_name="Internal notes",
            outbound_data=ToolOutboundData.NONE,
        )
        self.given: list[frozenset[str]] = []

    @property
    def sensitive_trace_argument_names(self) -> frozenset[str]:
        return frozenset()

    @property
    def returns_untrusted_external_content(self) -> bool:
        return False

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        self.given.append(context.given_web_addresses)
        return ToolExecutionResult(
            text_content=f"Q3 plan: hire two engineers. Details: {NOTES_URL}",
            required_provider_confidence=ConfidenceLevel.HIGH,
        )


def at_loopback(provider: ProviderConfig, server: ProviderServer) -> ProviderConfig:
    return dataclasses.replace(provider, hostname=server.base_url)


def organization_provider(
    policy: Policy, provider_id: str, server: ProviderServer
) -> ProviderConfig:
    return at_loopback(policy.provider(provider_id), server)


def anthropic_provider(server: ProviderServer) -> ProviderConfig:
    """An Anthropic entry as a user would add it; the organization's policy still decides."""
    return ProviderConfig(
        id="claude",
        name="Claude",
        kind=ProviderKind.ANTHROPIC,
        model="claude-sonnet-4-5",
        hostname=server.base_url,
    )


def client(provider: ProviderConfig) -> ProviderClient:
    return create_client(provider, API_KEY, retry=FAST_RETRIES)
